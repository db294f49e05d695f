// The served pages for browser suites: a fresh build of the page bundles and the SDK, and the fetch
// handler on a real HTTP server on 127.0.0.1 when a suite needs its own store and clock.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { toNodeListener } from '../../lib/adapter/node.ts';
import { ROOT } from './server.ts';

declare const Deno: unknown;

/** Development-mode client configuration, served in place of the generated config.js. */
export const DEV_CONFIG_SCRIPT = `window.WATCHTOWER_CONFIG = ${JSON.stringify({ mode: 'dev', issuer: '', clientId: '', publishableKey: '', scope: '' })};`;

/** Builds the page bundles and the SDK, so a suite never runs against stale files (config.js is left alone). */
/**
 * A page of `url` in a fresh browser context, signed in in development mode as `user` (the dev
 * client configuration served in place of config.js), once the page's app shows.
 */
export async function openSignedIn(browser: Browser, url: string, user: string, scheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme, bypassCSP: true, acceptDownloads: true });
  ctx.setDefaultTimeout(15_000);
  await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG_SCRIPT }));
  await ctx.addInitScript((u) => localStorage.setItem('service_idp_user_id', u), user);
  const page = await ctx.newPage();
  await page.goto(url);
  await page.locator('#app').waitFor({ state: 'visible' });
  return page;
}

interface Violation { id: string; impact: string; help: string; nodes: { target: string[] }[] }
let axeSource: string | undefined;

/** axe's serious and critical violations on the page as it is, one line each (id, help, targets). */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: (axeSource ??= readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')) });
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Violation[] }> } }).axe;
    return (await axe.run(document, { resultTypes: ['violations'] })).violations;
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

export function buildPages(): void {
  const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
  const scripts = ['scripts/build-pages.mjs', 'scripts/build-sdk.mjs'].filter((s) => existsSync(join(ROOT, s)));
  for (const script of scripts) {
    const r = spawnSync(node, script.includes('pages') ? [script, '--skip-config'] : [script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`${script} failed (${r.status}): ${r.stderr || r.stdout || r.error}`);
  }
  if (!existsSync(join(ROOT, 'dist/sdk/watchtower.js'))) throw new Error('dist/sdk/watchtower.js is missing: the SDK build did not produce it');
}

/** Serves a fetch handler over HTTP on 127.0.0.1 at a free port. */
export async function serveHandler(handler: (r: Request) => Promise<Response>): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(toNodeListener(handler, { onError: () => {} }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
