// Which user agents are bots: crawlers, monitors, scripts and automated browsers, whose events are
// not people using the monitored app. The list is isbot's, maintained upstream; we only decide what
// to do with the answer.
import { isbot } from 'isbot';

/**
 * Longest user agent looked at. Real ones stay under 300 characters; the header is the client's to
 * fill, so the cost of checking (and the size of a cache key, lib/client-info.ts) is capped.
 */
export const MAX_USER_AGENT = 512;

/**
 * True for a user agent on isbot's list: search engine and AI crawlers (Googlebot, bingbot, GPTBot),
 * HTTP tools and libraries (curl, Wget, python-requests, Go-http-client, and the runtimes' own
 * fetch: `node`, `Deno/…`, `Bun/…`), headless and automated browsers (`HeadlessChrome`, Lighthouse,
 * Playwright, Selenium) and uptime monitors (Pingdom, UptimeRobot). A missing or empty user agent is
 * not called a bot: it says nothing about the sender, and dropping it would drop events from any
 * backend that simply sets no header.
 */
export function isBotAgent(userAgent: string | null | undefined): boolean {
  return typeof userAgent === 'string' && userAgent !== '' && isbot(userAgent.slice(0, MAX_USER_AGENT));
}
