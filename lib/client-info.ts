// What a request's User-Agent says about the client, reduced to four short fields for the
// dashboard's breakdowns (browsers, operating systems, devices). The raw string is never kept: with
// its exact versions and device models it singles people out far better than these fields do.
import { BROWSER_MAP, parse } from 'bowser';
import { isBotAgent, MAX_USER_AGENT } from './bots.ts';

export type Device = 'desktop' | 'mobile' | 'tablet' | 'tv' | 'bot';

/**
 * The stored form, e.g. `{ browser: 'Chrome', browserVersion: '131', os: 'Windows', device: 'desktop' }`.
 * `browserVersion` is the major version only, and absent when unknown. There is no OS version:
 * browsers freeze it in the user agent (Chrome says Windows NT 10.0 on Windows 11, every macOS
 * reads 10.15.7), so it would be wrong more often than right.
 */
export interface ClientInfo {
  browser: string | null;
  browserVersion?: string;
  os: string | null;
  device: Device | null;
}

const UNKNOWN: ClientInfo = Object.freeze({ browser: null, os: null, device: null });

/** bowser's names, shortened where the long form only clutters a breakdown. */
const RENAME: Record<string, string> = {
  'Microsoft Edge': 'Edge',
  'Samsung Internet for Android': 'Samsung Internet',
};
// bowser's last resort names the browser after whatever leads the string (`Foo/1.0 (…)` → `Foo`):
// text of the client's choosing, of any length. Only names bowser's own parsers give are kept (the
// extras are the few it writes without its map).
const KNOWN_BROWSERS = new Set([...Object.values(BROWSER_MAP), 'Miui', 'Opera Touch', 'PlayStation 4', 'SlimerJS']);
const DEVICES = new Set<string>(['desktop', 'mobile', 'tablet', 'tv', 'bot']);
// bowser gives no platform for some desktop systems (Chrome OS).
const DESKTOP_OS = new Set(['Windows', 'macOS', 'Linux', 'Chrome OS']);
// A bot bowser does not name: the program that leads the string (`curl/8.5.0`,
// `python-requests/2.32.3`), or the one a crawler declares as `(compatible; UptimeRobot/2.0; …)`.
const LEADING_PRODUCT = /^(?!Mozilla\/)([A-Za-z][\w.-]{0,31})\/v?(\d+)/;
const COMPATIBLE_PRODUCT = /\(compatible; ?([A-Za-z][\w.-]{0,31})\/v?(\d+)/;

/** Pure: a user agent → browser, major version, OS and kind of device. */
export function parseClientInfo(userAgent: string): ClientInfo {
  const ua = userAgent.slice(0, MAX_USER_AGENT);
  if (!ua.trim()) return UNKNOWN;
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(ua);
  } catch {
    return UNKNOWN;
  }
  const bot = isBotAgent(ua);
  const known = KNOWN_BROWSERS.has(parsed.browser.name ?? '');
  let browser = known ? parsed.browser.name! : null;
  let version = known ? parsed.browser.version : undefined;
  if (!browser && bot) {
    const m = LEADING_PRODUCT.exec(ua) ?? COMPATIBLE_PRODUCT.exec(ua);
    if (m) [browser, version] = [m[1], m[2]];
  }
  const os = parsed.os.name || null;
  const type = parsed.platform.type ?? '';
  const device: Device | null = bot ? 'bot' : DEVICES.has(type) ? (type as Device) : os && DESKTOP_OS.has(os) ? 'desktop' : null;
  const major = /^\d+/.exec(version ?? '')?.[0];
  const name = browser && (RENAME[browser] ?? browser);
  // One key order for every result, so stored events share one shape.
  return name && major ? { browser: name, browserVersion: major, os, device } : { browser: name, os, device };
}

/**
 * Most ingest requests come from a few hundred distinct user agents, so results are cached by the
 * string. The cache is bounded because the header is whatever the client sends: one distinct value
 * per request would otherwise grow it until the process runs out of memory. At this size it holds
 * at most about 1 MB (keys are cut at MAX_USER_AGENT characters); the least recently used goes first.
 */
export const CLIENT_INFO_CACHE_SIZE = 1000;
const cache = new Map<string, ClientInfo>();

/**
 * `parseClientInfo`, cached. The result is frozen and shared by every request with the same user
 * agent: copy it before changing it. No user agent → all fields null.
 */
export function clientInfo(userAgent: string | null | undefined): ClientInfo {
  if (!userAgent) return UNKNOWN;
  const key = userAgent.slice(0, MAX_USER_AGENT);
  let info = cache.get(key);
  if (info) {
    // Re-inserted so that Map order is least recently used first.
    cache.delete(key);
  } else {
    info = Object.freeze(parseClientInfo(key));
    if (cache.size >= CLIENT_INFO_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  cache.set(key, info);
  return info;
}

/** How many user agents the cache holds now (for tests and health figures). */
export const clientInfoCacheSize = (): number => cache.size;
