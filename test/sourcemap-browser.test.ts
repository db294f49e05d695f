// Source maps end to end in a real browser: an app built by esbuild (minified, hashed file name, a
// linked map) runs in headless Chromium from a server of its own, fails on a click, and the stack
// the page saw is parsed and mapped back to the original file, line and function names.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser } from 'playwright-core';
import { groupEvent } from '../lib/issues/fingerprint.ts';
import { symbolicate } from '../lib/issues/sourcemap.ts';
import { parseStack } from '../lib/issues/stack.ts';
import { type Bundle, buildApp, lineOf } from './helpers/bundle.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';


if (browserSuiteRuns('Source-map browser tests')) register();

function register() {
  let app: Bundle;
  let server: Server;
  let origin = '';
  let browser: Browser;
  /** What the page's error listener saw. */
  let seen: { message: string; stack: string };

  test.before(async () => {
    app = await buildApp('linked');
    server = createServer(async (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><meta charset="utf-8"><title>shop</title><button id="buy">Buy</button>
<script>addEventListener('error', (e) => { window.seen = { message: e.message, stack: e.error.stack }; });</script>
<script type="module" src="/assets/${app.script}?v=7"></script>`);
        return;
      }
      const file = path.startsWith('/assets/') ? path.slice('/assets/'.length) : '';
      if (file !== app.script && file !== app.mapName) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': file.endsWith('.mjs') ? 'text/javascript' : 'application/json' });
      res.end(await readFile(`${app.dir}/${file}`));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    browser = await launchChromium();
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${origin}/`, { waitUntil: 'load' });
    await page.click('#buy');
    await page.waitForFunction(() => (window as unknown as { seen?: unknown }).seen !== undefined);
    seen = await page.evaluate(() => (window as unknown as { seen: { message: string; stack: string } }).seen);
  });

  test.after(async () => {
    await browser?.close().catch(() => {});
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    app?.remove();
  });

  /** The maps "uploaded" for release 2.3.0, under the ~/path name that matches any host. */
  const uploaded = (release: string, name: string) => (release === '2.3.0' && name === `~/assets/${app.script}` ? app.map : null);

  test('the page saw a minified stack', () => {
    const frames = parseStack(seen.stack);
    assert.is(frames[0].file, `${origin}/assets/${app.script}?v=7`, seen.stack);
    assert.is(frames[0].line, 1);
    assert.not.match(seen.stack, /applyCoupon|checkout|onBuyClick/);
  });

  test('symbolicated: original file, line and function names, with source context', async () => {
    const frames = await symbolicate(parseStack(seen.stack), '2.3.0', uploaded);
    const [top, caller, handler] = frames;
    assert.ok(top.file!.endsWith('sourcemap-app/cart.ts'), top.file!);
    assert.is(top.line, lineOf('cart.ts', 'throw new TypeError'));
    assert.is(top.function, 'applyCoupon');
    assert.match(top.context!.line, /throw new TypeError/);
    assert.is(top.minified!.file, `${origin}/assets/${app.script}?v=7`);
    assert.is(caller.function, 'checkout');
    assert.is(caller.line, lineOf('cart.ts', 'return applyCoupon('));
    assert.is(handler.function, 'onBuyClick', 'named where the click listener calls it');
    assert.ok(handler.file!.endsWith('sourcemap-app/main.ts'));
    assert.is(handler.line, lineOf('main.ts', 'return checkout('));

    const grouping = groupEvent({ message: seen.message, data: { stack: seen.stack } }, frames);
    assert.is(grouping.title, 'TypeError: coupon FREESHIP is not valid for a total of 14');
    assert.is(grouping.culprit, `applyCoupon (${top.file})`);
  });

  test('a release without maps: the minified frames, no error', async () => {
    const parsed = parseStack(seen.stack);
    const frames = await symbolicate(parsed, '2.4.0', uploaded);
    assert.equal(frames.map((f) => [f.function, f.file, f.line, f.column, f.minified]), parsed.map((f) => [f.function, f.file, f.line, f.column, null]));
  });
}

test.run();
