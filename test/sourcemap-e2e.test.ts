// Source maps end to end: an app built by esbuild (minified, hashed names, a map) runs in headless
// Chromium from a server of its own and reports its error to Watchtower over HTTP with a bearer
// token from a real key set; the package's CLI (bin/watchtower.mjs, run as `npx watchtower` would
// run it) uploads the build folder's map; the issue then shows the original file, line, function and
// source. An error of a release without maps keeps its minified frames, and nothing fails.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { createAuthenticator } from '../lib/auth.ts';
import { createHandler, type FetchHandler } from '../lib/handler.ts';
import { toNodeListener } from '../lib/adapter/node.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { type Bundle, buildApp, lineOf } from './helpers/bundle.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { startJwks, type JwksServer } from './helpers/jwks.ts';
import { ROOT } from './helpers/server.ts';

declare const Deno: unknown;

if (browserSuiteRuns('Source-map end-to-end tests')) register();

/** Runs the CLI with Node, as npx does; resolves with its exit code and output. */
function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
  const child = spawn(node, [join(ROOT, 'bin/watchtower.mjs'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

const listen = (server: Server) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

function register() {
  let app: Bundle;
  let jwks: JwksServer;
  let handler: FetchHandler;
  let watchtower: Server;
  let site: Server;
  let wt = '';
  let origin = '';
  let browser: Browser;
  let token = '';

  test.before(async () => {
    app = await buildApp('linked');
    jwks = await startJwks(['rsa']);
    token = await jwks.sign({ sub: 'u1', exp: Math.floor(Date.now() / 1000) + 3600 });
    const records = createMemoryRecords();
    await records.put([{ kind: 'project', id: '7', userId: 'u1', body: { name: 'shop' } }]);
    // keepBots: the app runs in headless Chromium, a bot to the ingest filter.
    handler = createHandler({ store: createMemoryStore(), records, keepBots: true, auth: createAuthenticator({ trustHeader: false, issuer: jwks.issuer, jwksUrl: jwks.jwksUrl }), log: () => {} });
    watchtower = createServer(toNodeListener(handler));
    wt = await listen(watchtower);
    // The monitored app's own server: its page reports errors to Watchtower, with the release in ?release=.
    site = createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><meta charset="utf-8"><title>shop</title><button id="buy">Buy</button>
<script>
addEventListener('error', (e) => {
  window.reported = fetch(${JSON.stringify(wt)} + '/api/events', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + ${JSON.stringify(token)} },
    body: JSON.stringify({ type: 'error', message: e.message, deployVersion: new URLSearchParams(location.search).get('release'), data: { stack: e.error.stack } }),
  }).then((r) => r.status);
});
</script>
<script type="module" src="/assets/${app.script}"></script>`);
        return;
      }
      const file = url.pathname.startsWith('/assets/') ? url.pathname.slice('/assets/'.length) : '';
      if (file !== app.script && file !== app.mapName) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': file.endsWith('.mjs') ? 'text/javascript' : 'application/json' });
      res.end(await readFile(`${app.dir}/${file}`));
    });
    origin = await listen(site);
    browser = await launchChromium();
  });

  test.after(async () => {
    await browser?.close().catch(() => {});
    await handler?.close();
    for (const s of [watchtower, site]) {
      s?.closeAllConnections();
      await new Promise((resolve) => (s ? s.close(resolve) : resolve(undefined)));
    }
    await jwks?.close();
    app?.remove();
  });

  /** Loads the app for a release, clicks Buy, and waits until Watchtower has the error as an issue. */
  async function throwIn(release: string): Promise<string> {
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    try {
      await page.goto(`${origin}/?release=${release}`, { waitUntil: 'load' });
      await page.click('#buy');
      await page.waitForFunction(() => (window as unknown as { reported?: unknown }).reported !== undefined);
      assert.is(await page.evaluate(() => (window as unknown as { reported: Promise<number> }).reported), 200);
    } finally {
      await page.close();
    }
    await handler.monitor.flush();
    const res = await handler(new Request(`${wt}/api/issues?version=${release}`, { headers: { authorization: `Bearer ${token}` } }));
    const { issues } = await res.json();
    assert.is(issues.length, 1, `one issue for release ${release}`);
    return issues[0].id;
  }

  const issue = async (id: string) => (await handler(new Request(`${wt}/api/issues/${id}`, { headers: { authorization: `Bearer ${token}` } }))).json();

  test('the CLI uploads the build folder; the issue shows the original file, line, function and source', async () => {
    const refused = await cli(['sourcemaps', 'upload', '--url', wt, '--project', '7', '--release', '2.3.0', app.dir], { WATCHTOWER_TOKEN: 'not-a-token' });
    assert.is(refused.code, 1, 'a bad token is refused and the CLI says so');
    assert.match(refused.out, /refused \(401\)/);

    const uploaded = await cli(['sourcemaps', 'upload', '--url', wt, '--project', '7', '--release', '2.3.0', '--prefix', '~/assets/', app.dir], { WATCHTOWER_TOKEN: token });
    assert.is(uploaded.code, 0, uploaded.out);
    assert.match(uploaded.out, new RegExp(`uploaded ${app.mapName} for ~/assets/${app.script.replace(/[.]/g, '\\.')} \\(release 2\\.3\\.0\\)`));

    const { issue: shown, frames } = await issue(await throwIn('2.3.0'));
    const [top, caller, handlerFrame] = frames;
    assert.ok(top.file.endsWith('sourcemap-app/cart.ts'), top.file);
    assert.is(top.line, lineOf('cart.ts', 'throw new TypeError'));
    assert.is(top.function, 'applyCoupon');
    assert.match(top.context.line, /throw new TypeError/);
    assert.is(top.minified.file, `${origin}/assets/${app.script}`);
    assert.equal([caller.function, handlerFrame.function], ['checkout', 'onBuyClick']);
    assert.is(shown.culprit, `applyCoupon (${top.file})`);
    assert.is(shown.title, 'TypeError: coupon FREESHIP is not valid for a total of 14');
  });

  test('a release without an uploaded map: the minified frames, no error', async () => {
    const { frames } = await issue(await throwIn('2.4.0'));
    assert.ok(frames.length > 0);
    assert.is(frames[0].minified, null);
    assert.is(frames[0].file, `${origin}/assets/${app.script}`);
    assert.is(frames[0].line, 1);
    assert.is(handler.monitor.processor.failed, 0);
  });
}

test.run();
