// The real @sentry/browser SDK, unmodified, bundled with esbuild into a page that headless Chromium
// loads from one 127.0.0.1 port, reporting to a capturing server on another port (cross-origin, as
// in a customer's app). What it sends goes through the service's body reader and the Sentry
// protocol layer (docs/sentry.md). Skipped without a browser, like test/sdk-browser.test.ts.
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, Page } from 'playwright-core';
import type { RawEvent } from '../lib/event.ts';
import { validateEvents } from '../lib/schema.ts';
import { ROOT, startServer } from './helpers/server.ts';
import { capturedEvents, startSentryCapture, type SentryCapture } from './helpers/sentry-capture.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';

const KEY = 'fedcba9876543210fedcba9876543210';

type Mapped = RawEvent & { data: Record<string, any> };

if (browserSuiteRuns('Sentry browser SDK tests')) register();

function register() {
  let capture: SentryCapture;
  let browser: Browser;
  let pageServer: Server;
  let pageOrigin = '';
  let bundle = '';
  let config = {};

  /** 1-based line of the bundle that holds `needle`: where the browser reports the throw. */
  const bundleLine = (needle: string) => bundle.split('\n').findIndex((l) => l.includes(needle)) + 1;

  async function openPage(sdkConfig: Record<string, unknown>): Promise<Page> {
    config = sdkConfig;
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${pageOrigin}/app/page.html?token=SECRET#top`, { waitUntil: 'load' });
    return page;
  }

  test.before(async () => {
    const esbuild = await import('esbuild');
    const built = await esbuild.build({
      entryPoints: [ROOT + 'test/helpers/sentry-browser-page.ts'],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      target: 'es2020',
      logLevel: 'silent',
    });
    bundle = built.outputFiles[0].text;
    await esbuild.stop();
    capture = await startSentryCapture();
    pageServer = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/app/page.js') {
        res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' }).end(bundle);
      } else if (path === '/app/page.html') {
        const html = `<!doctype html><meta charset="utf-8"><title>Cart</title>
<script>window.SENTRY_TEST = ${JSON.stringify(config)}</script><script src="/app/page.js"></script><h1>Cart</h1>`;
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
    pageOrigin = `http://127.0.0.1:${(pageServer.address() as { port: number }).port}`;
    browser = await launchChromium();
  });

  test.after(async () => {
    await browser?.close().catch(() => {});
    await capture?.close();
    pageServer?.closeAllConnections();
    await new Promise((resolve) => (pageServer ? pageServer.close(resolve) : resolve(undefined)));
  });

  test('captureException, an uncaught error, captureMessage and feedback arrive, authenticate and map', async () => {
    const page = await openPage({ dsn: `http://${KEY}@${capture.origin.slice('http://'.length)}/42` });
    const before = capture.requests.length;
    const ids = await page.evaluate(() => {
      const t = (window as any).sentryTest;
      return { exception: t.captureException(), message: t.captureMessage(), feedback: t.feedback() };
    });
    await page.evaluate(() => (window as any).sentryTest.uncaught());
    const events = () => capturedEvents(capture.requests.slice(before)).map((c) => c.event as Mapped);
    await capture.waitFor(() => events().length >= 4);
    const requests = capture.requests.slice(before);
    for (const r of requests) {
      assert.is(r.error, undefined);
      assert.is(r.status, 200);
      assert.is(r.auth?.publicKey, KEY);
      assert.match(r.auth?.client ?? '', /^sentry\.javascript\.browser\/\d+\.\d+\.\d+$/);
    }
    assert.ok(requests.some((r) => r.ingest?.skipped.session), 'the SDK\'s session updates are counted as skipped');
    const all = events();
    const byId = (id: string) => all.find((e) => e.id === id)!;
    const pageUrl = `${pageOrigin}/app/page.html`;
    const bundleUrl = `${pageOrigin}/app/page.js`;

    const caught = byId(ids.exception);
    assert.is(caught.type, 'error');
    assert.is(caught.message, 'RangeError: coupon SPRING expired');
    assert.is(caught.severity, 'error');
    assert.is(caught.deployVersion, 'web@3.0.0');
    assert.is(caught.environment, 'production');
    assert.is(caught.url, pageUrl, 'query string and fragment stripped');
    assert.equal(caught.data.tags, { page: 'cart' });
    assert.is(caught.data.sdk.name, 'sentry.javascript.browser');
    assert.match(caught.data.userAgent, /Chrome/);
    assert.is(caught.data.frames[0].function, 'applyCoupon');
    assert.is(caught.data.frames[0].file, bundleUrl);
    assert.is(caught.data.frames[0].line, bundleLine('expired`'));
    assert.is(caught.data.source, bundleUrl);
    assert.is(caught.data.line, bundleLine('expired`'));
    assert.match(caught.data.stack.split('\n')[1], new RegExp(`^    at applyCoupon \\(${bundleUrl.replace(/[.]/g, '\\.')}:${bundleLine('expired`')}:\\d+\\)$`));

    const uncaught = all.find((e) => e.message === 'Error: cart failed to render');
    assert.ok(uncaught, JSON.stringify(all.map((e) => e.message)));
    assert.is(uncaught!.type, 'error');
    assert.is(uncaught!.data.handled, false, 'reported as unhandled');
    assert.is(uncaught!.data.frames[0].function, 'renderCart');
    assert.is(uncaught!.data.line, bundleLine('cart failed to render'));

    const message = byId(ids.message);
    assert.is(message.type, 'error');
    assert.is(message.message, 'search index stale');
    assert.is(message.severity, 'info');

    const feedback = byId(ids.feedback);
    assert.is(feedback.type, 'feedback');
    assert.is(feedback.message, 'Love the new cart');
    assert.is(feedback.data.name, 'Grace');
    assert.is(feedback.data.email, 'grace@example.com');
    assert.is(feedback.url, pageUrl);

    assert.is(validateEvents(all, 1 << 20).rejected, 0, 'every mapped event passes the service validation');
    await page.close();
  });

  test('against the real service: a project\'s DSN, an allowed origin, events on the owner\'s dashboard with the mapped fields', async () => {
    const server = await startServer();
    try {
      const headers = { 'content-type': 'application/json', 'x-idp-user-id': 'shop-owner' };
      const created = await fetch(server.url + '/api/projects', { method: 'POST', headers, body: JSON.stringify({ name: 'Cart', allowedOrigins: [pageOrigin] }) });
      const project = (await created.json()) as { id: string; key: string };
      const page = await openPage({ dsn: `http://${project.key}@127.0.0.1:${server.port}/${project.id}` });
      const ids = await page.evaluate(() => {
        const t = (window as any).sentryTest;
        return { exception: t.captureException(), message: t.captureMessage(), feedback: t.feedback() };
      });
      await page.evaluate(() => (window as any).sentryTest.uncaught());
      type Stored = Mapped & { user_id: string; projectId: string; source: string };
      let events: Stored[] = [];
      for (const deadline = Date.now() + 10_000; events.length < 4 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
        events = ((await (await fetch(`${server.url}/api/events?project=${project.id}`, { headers })).json()) as { events: Stored[] }).events;
      }
      const byId = (id: string) => {
        const found = events.find((e) => e.id === id);
        if (!found) throw new Error(`no ${id} in ${JSON.stringify(events.map((e) => e.message))}`);
        return found;
      };
      const bundleUrl = `${pageOrigin}/app/page.js`;
      const caught = byId(ids.exception);
      assert.equal([caught.type, caught.message, caught.severity, caught.user_id, caught.projectId], ['error', 'RangeError: coupon SPRING expired', 'error', 'shop-owner', project.id]);
      assert.equal([caught.deployVersion, caught.environment, caught.url], ['web@3.0.0', 'production', `${pageOrigin}/app/page.html`]);
      assert.equal([caught.source, caught.data.line, caught.data.frames[0].function], [bundleUrl, bundleLine('expired`'), 'applyCoupon']);
      assert.match(caught.data.stack, /^RangeError: coupon SPRING expired\n    at applyCoupon /);
      const uncaught = events.find((e) => e.message === 'Error: cart failed to render');
      assert.is(uncaught?.data.handled, false, 'the uncaught error arrived, as unhandled');
      assert.equal([byId(ids.message).message, byId(ids.message).severity], ['search index stale', 'info']);
      assert.equal([byId(ids.feedback).type, byId(ids.feedback).message, byId(ids.feedback).data.email], ['feedback', 'Love the new cart', 'grace@example.com']);
      assert.is(events.length, 4);

      // Once the project no longer lists the page's origin, the browser's posts are refused (403).
      await fetch(`${server.url}/api/projects/${project.id}`, { method: 'PATCH', headers, body: JSON.stringify({ allowedOrigins: ['https://shop.example'] }) });
      const refused = page.waitForResponse((r) => r.url().includes('/envelope/'));
      await page.evaluate(() => (window as any).sentryTest.captureMessage());
      assert.is((await refused).status(), 403);
      await page.close();
    } finally {
      await server.stop();
    }
  });

  test('the SDK\'s breadcrumbs (a console warning, a failed fetch) arrive with the error, mapped to our shape', async () => {
    const page = await openPage({ dsn: `http://${KEY}@${capture.origin.slice('http://'.length)}/45` });
    const before = capture.requests.length;
    const id = await page.evaluate(() => (window as any).sentryTest.afterCrumbs());
    await capture.waitFor(() => capture.requests.slice(before).some((r) => r.ingest?.events.some((e) => e.id === id)));
    const error = capture.requests.slice(before).flatMap((r) => r.ingest?.events ?? []).find((e) => e.id === id) as Mapped;
    const crumbs = error.data.breadcrumbs as { category: string; message: string; level?: string }[];
    const warn = crumbs.findIndex((c) => c.category === 'console' && c.message === 'stock low');
    const fetched = crumbs.findIndex((c) => c.category === 'http' && c.message === 'GET /app/missing.json 404');
    assert.ok(warn >= 0 && fetched > warn, JSON.stringify(crumbs));
    assert.is(crumbs[warn].level, 'warning');
    assert.not.match(JSON.stringify(crumbs), /SECRET/);
    await page.close();
  });

  test('with its tracing integration, the page load arrives as a pageload with its load time and TTFB, and its web vitals with LCP', async () => {
    const page = await openPage({ dsn: `http://${KEY}@${capture.origin.slice('http://'.length)}/44`, tracing: true });
    const before = capture.requests.length;
    const mapped = () => capture.requests.slice(before).flatMap((r) => r.ingest?.events ?? []) as Mapped[];
    // The SDK ends the page load's span once the page has been idle for a second, and sends the
    // vitals that can still change (LCP, CLS) when the page is hidden (a tab switched or closed).
    await capture.waitFor(() => mapped().some((e) => e.type === 'pageload'));
    // LCP is final once the user interacts (a trusted key press, as a person's would be) or the
    // page is hidden; the hidden state below is set by script, which web-vitals does not trust.
    await page.keyboard.press('Shift');
    await page.waitForTimeout(300);
    await page.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
      window.dispatchEvent(new Event('pagehide'));
      return (window as any).sentryTest.flush();
    });
    await capture.waitFor(() => ['CLS', 'LCP'].every((name) => mapped().some((e) => e.type === 'performance' && e.data.name === name)));
    const events = mapped();
    const pageload = events.find((e) => e.type === 'pageload')!;
    assert.is(pageload.route, '/app/page.html');
    assert.is(pageload.url, `${pageOrigin}/app/page.html`, 'query string and fragment stripped');
    assert.is(pageload.deployVersion, 'web@3.0.0');
    assert.ok(typeof pageload.data.duration === 'number' && pageload.data.duration > 0, `load time ${pageload.data.duration}`);
    assert.ok(typeof pageload.data.ttfb === 'number' && pageload.data.ttfb <= pageload.data.duration, `ttfb ${pageload.data.ttfb}`);
    const vitals = new Map(events.filter((e) => e.type === 'performance').map((e) => [e.data.name, e.data.value]));
    assert.ok(typeof vitals.get('FCP') === 'number' && vitals.get('FCP') > 0, `FCP ${JSON.stringify([...vitals])}`);
    assert.is(vitals.get('TTFB'), pageload.data.ttfb);
    // Layout shift and LCP arrive as spans of their own once the page is hidden; the page's largest
    // paint is its heading, painted after the first contentful paint or with it.
    assert.is(typeof vitals.get('CLS'), 'number');
    assert.ok(typeof vitals.get('LCP') === 'number' && vitals.get('LCP') >= vitals.get('FCP'), `LCP ${JSON.stringify([...vitals])}`);
    assert.is(validateEvents(events, 1 << 20).rejected, 0, 'every mapped event passes the service validation');
    await page.close();
  });

  test('through a tunnel the key comes from the envelope header\'s dsn alone', async () => {
    const page = await openPage({
      dsn: `http://${KEY}@${capture.origin.slice('http://'.length)}/43`,
      tunnel: `${capture.origin}/tunnel/api/43/envelope/`,
    });
    const before = capture.requests.length;
    const id = await page.evaluate(() => (window as any).sentryTest.captureException());
    await capture.waitFor((rs) => rs.slice(before).some((r) => r.ingest?.events.some((e) => e.id === id)));
    const r = capture.requests.slice(before).find((x) => x.ingest?.events.some((e) => e.id === id))!;
    assert.is(r.path, '/tunnel/api/43/envelope/');
    assert.equal(Object.keys(r.headers).filter((h) => h.includes('sentry')), [], 'no auth header');
    assert.is(typeof r.envelope?.header.dsn, 'string');
    assert.is(r.auth?.publicKey, KEY);
    assert.is(r.auth?.client, null);
    await page.close();
  });

  test.run();
}
