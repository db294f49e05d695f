// The SDK in a real browser (headless Chromium through playwright-core) against the real server
// (server.ts as a child process). The monitored page is served by a small server of its own on
// another port, so the SDK runs cross-origin, as in a customer's app. (Pages fulfilled by request
// routing have no network address, and Chromium's local network access checks then block their
// requests to 127.0.0.1.)
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page, Request as PwRequest } from 'playwright-core';
import { ROOT, startServer, type RunningServer } from './helpers/server.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';

declare const Deno: unknown;

const SUITE_LIMIT_MS = 120_000;

interface StoredEvent {
  id: string;
  type: string;
  user_id: string | null;
  appName: string | null;
  referrer?: string;
  environment?: string;
  utm?: Record<string, string>;
  client?: { browser: string | null; os: string | null; device: string | null };
  projectId?: string;
  url: string | null;
  route: string | null;
  sessionId: string | null;
  data: Record<string, unknown>;
}

if (browserSuiteRuns('SDK browser tests')) register();

function register() {
  let server: RunningServer;
  let browser: Browser;
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const contexts: BrowserContext[] = [];
  let appServer: Server;
  let appOrigin = '';
  const pages = new Map<string, string>();
  let appPort = 0;

  const uid = (name: string) => `sdk-${name}-${Math.random().toString(36).slice(2, 8)}`;
  /** The customer app's origin: same host, other name, so another origin than the server's. */
  const app = (path: string) => `${appOrigin}/app${path}`;

  /** A monitored page; `head` configures the SDK, `body` is the page's own script. */
  function html(head: string, body = ''): string {
    return `<!doctype html><html><head><meta charset="utf-8"><title>SDK test</title>${head}</head>
<body><main id="shop"><form class="signup wide"><input name="email" id="email"><textarea id="draft"></textarea>
<button type="button" class="btn primary"><span>  Save
   note </span></button></form><a id="away" href="${app('/other.html')}">Leave</a></main>
<script>${body}</script></body></html>`;
  }
  const sdkTag = (attrs = '') => `<script src="${server.url}/sdk/watchtower.js"${attrs}></script>`;
  const initTag = (options: Record<string, unknown>) => `${sdkTag()}<script>Watchtower.init(${JSON.stringify(options)})</script>`;

  /** A fresh browser context (own storage); `served` maps paths under /app to page HTML. */
  async function newContext(served: Record<string, string>): Promise<BrowserContext> {
    pages.clear();
    for (const [path, body] of Object.entries(served)) pages.set('/app' + path, body);
    const ctx = await browser.newContext();
    contexts.push(ctx);
    ctx.setDefaultTimeout(10_000);
    return ctx;
  }

  /** Every request the page makes to the server's API, with its body. */
  function apiRequests(page: Page | BrowserContext) {
    const seen: { path: string; method: string; body: string; at: number }[] = [];
    (page as Page).on('request', (r: PwRequest) => {
      const u = new URL(r.url());
      if (u.origin === server.url && u.pathname.startsWith('/api/')) seen.push({ path: u.pathname, method: r.method(), body: r.postData() ?? '', at: Date.now() });
    });
    return seen;
  }

  async function eventsOf(user: string): Promise<StoredEvent[]> {
    const r = await fetch(`${server.url}/api/events?limit=1000`, { headers: { 'x-idp-user-id': user } });
    assert.is(r.status, 200);
    return ((await r.json()) as { events: StoredEvent[] }).events;
  }

  /** Polls the user's events until `done` holds; fails after `ms`. */
  async function waitForEvents(user: string, done: (events: StoredEvent[]) => boolean, ms = 8000): Promise<StoredEvent[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const events = await eventsOf(user);
      if (done(events)) return events;
      if (Date.now() > deadline) throw new Error(`events of ${user} after ${ms} ms: ${JSON.stringify(events.map((e) => [e.type, e.data]))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`SDK browser tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping the browser and the server`);
      void browser?.close();
      void server?.stop('SIGKILL');
    }, SUITE_LIMIT_MS);
    // Built here so the browser never runs a stale bundle.
    const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
    const built = spawnSync(node, ['scripts/build-sdk.mjs', '--quiet'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    if (built.status !== 0) throw new Error(`SDK build failed: ${built.stderr || built.error}`);
    // Headless Chromium says `HeadlessChrome` in its user agent, a bot to the ingest filter:
    // these tests are that bot, so the server keeps bots' events.
    server = await startServer({ SERVICE_KEEP_BOTS: 'true' });
    appServer = createServer((req, res) => {
      const body = pages.get(new URL(req.url ?? '/', 'http://x').pathname);
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(body ?? 'not found');
    });
    await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
    appPort = (appServer.address() as { port: number }).port;
    appOrigin = `http://127.0.0.1:${appPort}`;
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    for (const ctx of contexts) await ctx.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.stop();
    appServer?.closeAllConnections();
    await new Promise((resolve) => (appServer ? appServer.close(resolve) : resolve(undefined)));
  });

  test('script tag with data-* attributes: pageload with numeric timings, clicks batched within ~2 s, no input values', async () => {
    const user = uid('tag');
    const ctx = await newContext({ '/page.html': html(sdkTag(` data-app-name="shop" data-deploy-version="2.0.0" data-user-id="${user}"`)) });
    const page = await ctx.newPage();
    const api = apiRequests(page);
    await page.goto(app('/page.html?token=SECRET#frag'), { waitUntil: 'load' });
    await page.fill('#email', 'hunter2@example.com');
    await page.fill('#draft', 'private draft words');
    const clickedAt = Date.now();
    for (let i = 0; i < 3; i++) await page.click('button.btn span');
    const events = await waitForEvents(user, (e) => e.filter((x) => x.type === 'click').length >= 3 && e.some((x) => x.type === 'pageload'));
    const arrivedIn = Date.now() - clickedAt;
    assert.ok(arrivedIn < 4000, `clicks arrived after ${arrivedIn} ms`);

    const load = events.find((e) => e.type === 'pageload')!;
    for (const k of ['duration', 'ttfb', 'domContentLoaded', 'loadComplete', 'transferSize']) assert.type(load.data[k], 'number', k);
    assert.ok((load.data.duration as number) > 0, 'duration > 0');
    assert.ok((load.data.loadComplete as number) >= (load.data.domContentLoaded as number));
    assert.is(load.url, app('/page.html'), 'query string and fragment stripped');
    assert.is(load.route, '/app/page.html');
    assert.is(load.appName, 'shop');

    const clicks = events.filter((e) => e.type === 'click');
    assert.equal(clicks.map((c) => c.data), Array(3).fill({ target: 'main#shop > form.signup.wide > button.btn.primary', text: 'Save note' }));
    assert.is(new Set(events.map((e) => e.sessionId)).size, 1, 'one session');

    // The driver reports requests a little after they are made: wait until it has reported all 4
    // events. Where the 2 s flush falls among the clicks depends on timing, so batching is checked
    // as "4 events in at most 2 requests", not as which event went with which.
    const sentEvents = () => api.filter((r) => r.path === '/api/events').flatMap((r) => JSON.parse(r.body).events as StoredEvent[]);
    for (const deadline = Date.now() + 5000; sentEvents().length < 4 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    assert.is(sentEvents().length, 4);
    const posts = api.filter((r) => r.path === '/api/events');
    assert.ok(posts.length <= 2, `batched: ${posts.length} requests for 4 events`);
    const wire = api.map((r) => r.body).join('\n');
    for (const secret of ['hunter2', 'private draft', 'SECRET']) assert.not.ok(wire.includes(secret), `${secret} never leaves the page`);
    await page.close();
  });

  test('a thrown error and an unhandled rejection arrive with message, source, line, col and stack', async () => {
    const user = uid('err');
    const script = `function explodeOnPurpose() { null.boom(); }
setTimeout(explodeOnPurpose, 50);
function rejectOnPurpose() { return Promise.reject(new Error('rejected on purpose')); }
setTimeout(rejectOnPurpose, 80);`;
    const ctx = await newContext({ '/errors.html': html(initTag({ appName: 'shop', userId: user, flushInterval: 500 }), script) });
    const page = await ctx.newPage();
    await page.goto(app('/errors.html'));
    const events = await waitForEvents(user, (e) => e.filter((x) => x.type === 'error').length >= 2);
    const errors = events.filter((e) => e.type === 'error');
    const thrown = errors.find((e) => String(e.data.stack).includes('explodeOnPurpose'));
    const rejected = errors.find((e) => e.data.message === 'rejected on purpose');
    assert.ok(thrown, JSON.stringify(errors.map((e) => e.data)));
    assert.ok(rejected, JSON.stringify(errors.map((e) => e.data)));
    assert.match(String(thrown.data.message), /null|boom/);
    assert.is(thrown.data.source, app('/errors.html'));
    assert.type(thrown.data.line, 'number');
    assert.type(thrown.data.col, 'number');
    assert.match(String(rejected.data.stack), /rejectOnPurpose/);
    assert.is(rejected.data.source, app('/errors.html'));
    assert.type(rejected.data.line, 'number');
    assert.is(rejected.data.mechanism, 'onunhandledrejection');
    await page.close();
  });

  test('breadcrumbs: a click, a navigation, a failed fetch and a failed XHR, and console warnings come with the next error, in order', async () => {
    const user = uid('crumbs');
    const ctx = await newContext({ '/crumbs.html': html(initTag({ userId: user, flushInterval: 300, pageload: false, breadcrumbs: 5 })) });
    const page = await ctx.newPage();
    await page.goto(app('/crumbs.html?token=SECRET'));
    await page.click('button.primary');
    await page.evaluate(async () => {
      history.pushState({}, '', '/app/checkout?step=2');
      await fetch('/app/missing.json?token=SECRET').catch(() => {});
      await new Promise((resolve) => {
        const x = new XMLHttpRequest();
        x.open('POST', '/app/nothing-here');
        // A task later: the SDK's own loadend listener, added by send(), runs after this one.
        x.addEventListener('loadend', () => setTimeout(resolve));
        x.send('{}');
      });
      console.warn('cart is stale', { items: 2 });
      console.error(new Error('checkout failed'));
      setTimeout(() => { throw new Error('after the crumbs'); });
    });
    const events = await waitForEvents(user, (e) => e.some((x) => x.type === 'error'));
    const error = events.find((e) => e.type === 'error')!;
    const crumbs = error.data.breadcrumbs as { at: string; category: string; message: string; level: string; data?: Record<string, unknown> }[];
    // At most 5 kept: the oldest (the click) is gone.
    assert.equal(crumbs.map((c) => [c.category, c.level, c.message]), [
      ['navigation', 'info', app('/checkout')],
      ['http', 'error', 'GET /app/missing.json 404'],
      ['http', 'error', 'POST /app/nothing-here 404'],
      ['console', 'warning', 'cart is stale {"items":2}'],
      ['console', 'error', 'checkout failed'],
    ]);
    assert.equal(crumbs[0].data, { from: app('/crumbs.html'), to: app('/checkout') }, 'no query string in a crumb');
    assert.ok(crumbs.every((c, i) => i === 0 || c.at >= crumbs[i - 1].at), 'in time order');
    assert.not.match(JSON.stringify(crumbs), /SECRET/);
    assert.ok(!JSON.stringify(crumbs).includes('/api/events'), 'the SDK\'s own batches are not crumbs');
    await page.close();
  });

  test('breadcrumbs: clicks are crumbs too; none kept with breadcrumbs: 0', async () => {
    const user = uid('crumbs0'), other = uid('crumbs1');
    const ctx = await newContext({
      '/on.html': html(initTag({ userId: user, flushInterval: 300, pageload: false })),
      '/off.html': html(initTag({ userId: other, flushInterval: 300, pageload: false, breadcrumbs: 0 })),
    });
    for (const [path, owner] of [['/on.html', user], ['/off.html', other]]) {
      const page = await ctx.newPage();
      await page.goto(app(path));
      await page.click('button.primary');
      await page.evaluate(() => setTimeout(() => { throw new Error('boom'); }));
      const events = await waitForEvents(owner, (e) => e.some((x) => x.type === 'error'));
      const error = events.find((e) => e.type === 'error')!;
      if (owner === user) {
        assert.equal((error.data.breadcrumbs as { category: string; message: string }[]).map((c) => [c.category, c.message]), [['click', 'main#shop > form.signup.wide > button.btn.primary "Save note"']]);
      } else assert.is(error.data.breadcrumbs, undefined);
      await page.close();
    }
  });

  test('navigating away delivers the queue with sendBeacon to /api/beacon', async () => {
    const user = uid('beacon');
    const ctx = await newContext({
      '/page.html': html(initTag({ userId: user, flushInterval: 60_000, pageload: false })),
      '/other.html': '<!doctype html><p>elsewhere</p>',
    });
    // Requests made while a document unloads escape the browser driver's request events, so the
    // page logs its own calls to sendBeacon and fetch (then makes them for real) in localStorage.
    await ctx.addInitScript(`(() => {
      const log = (entry) => localStorage.setItem('sent', JSON.stringify([...JSON.parse(localStorage.getItem('sent') || '[]'), entry]));
      const beacon = navigator.sendBeacon.bind(navigator);
      navigator.sendBeacon = (url, body) => { const ok = beacon(url, body); log({ via: 'beacon', url, ok, n: JSON.parse(body).events.length }); return ok; };
      const realFetch = window.fetch;
      window.fetch = (url, init) => { log({ via: 'fetch', url: String(url) }); return realFetch(url, init); };
    })();`);
    const page = await ctx.newPage();
    await page.goto(app('/page.html'));
    await page.evaluate(() => (window as unknown as { Watchtower: { track(n: string, d: object): void } }).Watchtower.track('before_leaving', { n: 1 }));
    await page.click('button');
    await page.click('#away');
    await page.waitForURL(app('/other.html'));
    const events = await waitForEvents(user, (e) => e.length >= 3);
    assert.equal(events.map((e) => e.type).sort(), ['click', 'click', 'custom'], 'the click on the link itself included');
    assert.is(events.find((e) => e.type === 'custom')!.data.name, 'before_leaving');
    const sent = JSON.parse((await page.evaluate(`localStorage.getItem('sent')`)) as string) as { via: string; url: string; ok?: boolean; n?: number }[];
    assert.equal(sent, [{ via: 'beacon', url: `${server.url}/api/beacon`, ok: true, n: 3 }], 'one beacon with the 3 events, no fetch');
    await page.close();
  });

  test('data-key: the ingest key in the query string of batches and beacons, no custom header', async () => {
    const user = uid('key');
    // A real project of the user's: its key, not the page's data-user-id, makes the events theirs.
    const created = await fetch(server.url + '/api/projects', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-idp-user-id': user },
      body: JSON.stringify({ name: 'shop', allowedOrigins: [new URL(app('/')).origin] }),
    });
    assert.is(created.status, 201);
    const { key, id } = (await created.json()) as { key: string; id: string };
    const ctx = await newContext({
      // A long interval: the test says when to send, so the batch and the beacon never race.
      '/page.html': html(sdkTag(` data-key="${key}" data-user-id="someone-else" data-flush-interval="60000" data-clicks="false"`)),
      '/other.html': '<!doctype html><p>elsewhere</p>',
    });
    // As in the beacon test: the page logs its own sendBeacon calls, which escape request events.
    await ctx.addInitScript(`(() => {
      const beacon = navigator.sendBeacon.bind(navigator);
      navigator.sendBeacon = (url, body) => { localStorage.setItem('beacon', String(url)); return beacon(url, body); };
    })();`);
    const page = await ctx.newPage();
    // Waited for rather than collected: the driver reports requests a little after they are made.
    const posted = page.waitForRequest((r) => r.url().startsWith(server.url + '/api/'));
    await page.goto(app('/page.html'));
    await page.waitForFunction('Watchtower.status()?.queued > 0');
    await page.evaluate('Watchtower.flush()');
    const request = await posted;
    await waitForEvents(user, (e) => e.some((x) => x.type === 'pageload'));
    const encoded = encodeURIComponent(key);
    assert.is(request.url(), `${server.url}/api/events?key=${encoded}`);
    const headers = await request.allHeaders();
    assert.match(headers['content-type'], /^text\/plain/, 'a CORS-simple content type');
    const custom = Object.keys(headers).filter((h) => !/^(content-type|content-length|accept|accept-language|accept-encoding|referer|origin|user-agent|host|connection|sec-.*)$/.test(h));
    assert.equal(custom, [], 'no header that would need a preflight');
    await page.evaluate(() => (window as unknown as { Watchtower: { track(n: string): void } }).Watchtower.track('leaving'));
    await page.click('#away');
    await page.waitForURL(app('/other.html'));
    const events = await waitForEvents(user, (e) => e.some((x) => x.type === 'custom'));
    assert.is(await page.evaluate(`localStorage.getItem('beacon')`), `${server.url}/api/beacon?key=${encoded}`);
    assert.ok(events.every((e) => e.projectId === id), 'every keyed event carries the project');
    await page.close();
  });

  test('referrer: the origin of another site only; nothing after a same-site navigation', async () => {
    const user = uid('ref');
    const tag = sdkTag(` data-user-id="${user}" data-clicks="false" data-flush-interval="100"`);
    const ctx = await newContext({
      // `unsafe-url` makes the browser hand the full referring URL to the page, so what arrives
      // is the SDK's own reduction, not the browser's default policy.
      '/from.html': `<!doctype html><meta name="referrer" content="unsafe-url"><a id="go" href="${app('/page.html')}">go</a>`,
      '/page.html': html(tag),
      '/other.html': `<!doctype html><html><head>${tag}</head><body><p>elsewhere</p></body></html>`,
    });
    const page = await ctx.newPage();
    // Another host name for the same app server: another site to the SDK.
    const elsewhere = `http://localhost:${appPort}`;
    await page.goto(`${elsewhere}/app/from.html?q=private+search#frag`);
    await page.click('#go');
    await page.waitForURL(app('/page.html'));
    assert.is(await page.evaluate('document.referrer'), `${elsewhere}/app/from.html?q=private+search`, 'the browser gave the full URL');
    const first = await waitForEvents(user, (e) => e.some((x) => x.type === 'pageload'));
    const load = first.find((e) => e.type === 'pageload')!;
    assert.is(load.referrer, elsewhere);
    // The browser itself, as its User-Agent says: headless Chromium on Linux, a bot the server keeps here.
    assert.equal([load.client?.browser, load.client?.os, load.client?.device], ['Chrome', 'Linux', 'bot']);

    await page.click('#away');
    await page.waitForURL(app('/other.html'));
    assert.is(await page.evaluate('document.referrer'), app('/page.html'));
    const all = await waitForEvents(user, (e) => e.filter((x) => x.type === 'pageload').length >= 2);
    const second = all.find((e) => e.type === 'pageload' && e.url === app('/other.html'))!;
    assert.ok(second, JSON.stringify(all.map((e) => [e.type, e.url])));
    assert.not.ok('referrer' in second, 'same-site navigation reports no referrer');
    assert.not.ok(JSON.stringify(all).includes('private'), 'the referring path and query are never sent');
    await page.close();
  });

  test('environment and campaign: data-environment on every event; utm_* kept in the page URL with stripQuery, the rest of the query not', async () => {
    const query = '?token=SECRET&utm_source=Newsletter&utm_medium=email&utm_campaign=Launch%20Day&utm_source=second#frag';
    const campaign = { source: 'newsletter', medium: 'email', campaign: 'launch day' };
    for (const strip of [true, false]) {
      const user = uid(strip ? 'utm' : 'utm-full');
      const ctx = await newContext({ '/page.html': html(sdkTag(` data-user-id="${user}" data-environment="staging" data-flush-interval="100"${strip ? '' : ' data-strip-query="false"'}`)) });
      const page = await ctx.newPage();
      const api = apiRequests(page);
      await page.goto(app(`/page.html${query}`), { waitUntil: 'load' });
      await page.click('button.btn span');
      const events = await waitForEvents(user, (e) => e.some((x) => x.type === 'pageload') && e.some((x) => x.type === 'click'));
      assert.ok(events.every((e) => e.environment === 'staging'), 'every event carries the environment');
      const load = events.find((e) => e.type === 'pageload')!;
      assert.equal(load.utm, campaign, `${strip ? 'stripped' : 'full'} URL: the campaign, lower-cased, the first of a repeated parameter`);
      if (strip) {
        assert.is(load.url, app('/page.html?utm_source=Newsletter&utm_medium=email&utm_campaign=Launch%20Day&utm_source=second'), 'only the utm_* parameters are kept');
        assert.not.ok(api.map((r) => r.body).join('\n').includes('SECRET'), 'the rest of the query never leaves the page');
      } else {
        assert.is(load.url, app(`/page.html${query}`), 'stripQuery off: the URL as it is');
      }
      await page.close();
    }
  });

  test('server answers 503 twice: the events still arrive, exactly once', async () => {
    const user = uid('retry');
    const ctx = await newContext({ '/page.html': html(initTag({ userId: user, flushInterval: 200, pageload: false, clicks: false })) });
    const page = await ctx.newPage();
    const attempts: string[] = [];
    await page.route(`${server.url}/api/events`, async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      attempts.push(route.request().postData() ?? '');
      if (attempts.length <= 2) {
        return route.fulfill({ status: 503, headers: { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'Retry-After', 'retry-after': '1' }, body: '{"error":"busy"}' });
      }
      return route.continue();
    });
    await page.goto(app('/page.html'));
    const started = Date.now();
    await page.evaluate(() => {
      const w = (window as unknown as { Watchtower: { track(n: string, d: object): void } }).Watchtower;
      w.track('order_placed', { total: 42 });
      w.track('receipt_shown', {});
    });
    await waitForEvents(user, (e) => e.length >= 2, 10_000);
    const elapsed = Date.now() - started;
    assert.is(attempts.length, 3, 'two refusals, one success');
    assert.ok(elapsed >= 1800, `Retry-After: 1 honoured twice (${elapsed} ms)`);
    const ids = attempts.map((b) => (JSON.parse(b).events as StoredEvent[]).map((e) => e.id).join());
    assert.is(new Set(ids).size, 1, 'the same ids on every attempt');
    await new Promise((r) => setTimeout(r, 1500));
    const later = await eventsOf(user);
    assert.equal(later.map((e) => e.data.name).sort(), ['order_placed', 'receipt_shown'], 'each stored once');
    assert.is(attempts.length, 3, 'nothing sent after the success');
    await page.close();
  });

  test('offline then online: the queue persisted by a closed page is delivered on the next visit', async () => {
    const user = uid('offline');
    // After pagehide, the driver lifts its offline emulation from the closing page, which may then
    // get an `online` event and, as it should, send its queue. So the first page also posts to a
    // port nobody listens on: whatever it tries while closing, nothing can arrive from it.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const nowhere = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const options = { userId: user, flushInterval: 200, pageload: false, clicks: false };
    const ctx = await newContext({ '/first.html': html(initTag({ ...options, endpoint: nowhere })), '/page.html': html(initTag(options)) });
    const first = await ctx.newPage();
    await first.goto(app('/first.html'));
    await ctx.setOffline(true);
    await first.evaluate(() => {
      const w = (window as unknown as { Watchtower: { track(n: string, d: object): void } }).Watchtower;
      w.track('written_offline', { n: 1 });
      w.track('written_offline', { n: 2 });
    });
    await first.waitForTimeout(1200);
    const stored = await first.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('watchtower_queue:')).map((k) => localStorage.getItem(k)));
    assert.is(stored.length, 1, 'queue persisted in localStorage');
    assert.match(stored[0]!, /written_offline/);
    // With runBeforeUnload, close() returns before the page is gone: wait for it (pagehide ran).
    await Promise.all([first.waitForEvent('close'), first.close({ runBeforeUnload: true })]);
    assert.equal(await eventsOf(user), [], 'nothing arrived while offline');

    await ctx.setOffline(false);
    const next = await ctx.newPage();
    await next.goto(app('/page.html'));
    const events = await waitForEvents(user, (e) => e.length >= 2);
    assert.equal(events.map((e) => e.data.n).sort(), [1, 2]);
    await next.waitForTimeout(500);
    assert.is((await eventsOf(user)).length, 2, 'each once');
    assert.equal(await next.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('watchtower_queue:'))), [], 'storage emptied once delivered');
    await next.close();
  });

  test('sampled out (sampleRate 0) or Do Not Track respected: no request at all', async () => {
    const script = `setTimeout(function () { null.boom(); }, 10); Watchtower.track('ignored', {});`;
    const ctx = await newContext({
      '/sampled.html': html(initTag({ userId: uid('sampled'), sampleRate: 0, flushInterval: 100 }), script),
      '/dnt.html': html(initTag({ userId: uid('dnt'), respectDoNotTrack: true, flushInterval: 100 }), script),
      '/other.html': '<!doctype html><p>elsewhere</p>',
    });
    // A string: a function would be sent as transpiled, with helpers the page does not have.
    await ctx.addInitScript(`if (location.pathname.endsWith('/dnt.html')) Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', { get: () => true });`);
    for (const path of ['/sampled.html', '/dnt.html']) {
      const page = await ctx.newPage();
      const api = apiRequests(page);
      await page.goto(app(path));
      assert.is(await page.evaluate('navigator.globalPrivacyControl === true'), path === '/dnt.html');
      assert.is(await page.evaluate('Watchtower.status()'), null, 'the SDK is idle');
      await page.click('button');
      await page.waitForTimeout(600);
      await page.click('#away');
      await page.waitForURL(app('/other.html'));
      await page.waitForTimeout(300);
      assert.equal(api, [], `${path}: no request to the API`);
      assert.is(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('watchtower_queue:')).length), 0);
      await page.close();
    }
  });

  test('feedback, captureError, setUser and flush() through window.Watchtower', async () => {
    const user = uid('api');
    const other = uid('api-other');
    const ctx = await newContext({ '/page.html': html(initTag({ userId: user, flushInterval: 60_000, pageload: false, clicks: false })) });
    const page = await ctx.newPage();
    await page.goto(app('/page.html'));
    await page.evaluate(async (otherUser) => {
      const w = (window as unknown as { Watchtower: Record<string, (...a: unknown[]) => unknown> }).Watchtower;
      w.feedback(5, 'Great app');
      w.feedback(9, 'out of range, ignored');
      try {
        JSON.parse('{oops');
      } catch (e) {
        w.captureError(e, { step: 'parse' });
      }
      await w.flush();
      w.setUser(otherUser);
      w.track('after_switch', {});
      await w.flush();
    }, other);
    const mine = await waitForEvents(user, (e) => e.length >= 2);
    const fb = mine.find((e) => e.type === 'feedback')!;
    assert.equal(fb.data, { rating: 5, comment: 'Great app' });
    const err = mine.find((e) => e.type === 'error')!;
    assert.is(err.data.step, 'parse');
    assert.is(err.data.name, 'SyntaxError');
    assert.type(err.data.stack, 'string');
    assert.is(mine.length, 2);
    const theirs = await waitForEvents(other, (e) => e.length >= 1);
    assert.is(theirs[0].data.name, 'after_switch');
    await page.close();
  });

  test('the vitals script reports web vitals as performance events', async () => {
    const user = uid('vitals');
    const head = `${initTag({ userId: user, flushInterval: 60_000, clicks: false, pageload: false })}<script src="${server.url}/sdk/watchtower-vitals.js"></script>`;
    const ctx = await newContext({ '/page.html': html(head, `document.querySelector('main').insertAdjacentHTML('afterbegin', '<h1>Largest heading of the page</h1>')`), '/other.html': '<!doctype html><p>elsewhere</p>' });
    const page = await ctx.newPage();
    await page.goto(app('/page.html'), { waitUntil: 'load' });
    await page.click('button');
    await page.waitForTimeout(300);
    await page.click('#away');
    await page.waitForURL(app('/other.html'));
    const events = await waitForEvents(user, (e) => ['TTFB', 'FCP', 'LCP'].every((n) => e.some((x) => x.type === 'performance' && x.data.name === n)));
    for (const e of events.filter((x) => x.type === 'performance')) {
      assert.type(e.data.value, 'number', String(e.data.name));
      assert.ok(['good', 'needs-improvement', 'poor'].includes(String(e.data.rating)), String(e.data.rating));
    }
    await page.close();
  });
}

test.run();
