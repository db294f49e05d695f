// The served pages in a real browser (headless Chromium through playwright-core) against the real
// server (server.ts as a child process): development sign-in, the demo app feeding the live
// dashboard, sign-out, the page guard, HTML injection, per-user isolation, screenshots.
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DASHBOARD_CLIENT_ID, OIDC_SCOPE, startOidc, type OidcServer } from './helpers/oidc.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages } from './helpers/pages.ts';
import { computeStats } from '../lib/stats.ts';
import { readState, spanOf } from '../pages/src/lib/range.ts';
import { sampleEvents } from '../pages/src/lib/sample.ts';

const SUITE_LIMIT_MS = 300_000;
const DEV_CONFIG = { mode: 'dev', issuer: '', clientId: '', publishableKey: '', scope: '' };
const configScript = (config: object) => `window.WATCHTOWER_CONFIG = ${JSON.stringify(config)};`;

/** A port free right now, so the provider can be told the dashboard's redirect URI before it starts. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

if (browserSuiteRuns('Browser tests')) register();

function register() {
  let server: RunningServer;
  let browser: Browser;
  let provider: { oidc: OidcServer; server: RunningServer; config: object } | null = null;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const shots = mkdtempSync(join(tmpdir(), 'watchtower-pages-'));
  let watchdog: ReturnType<typeof setTimeout> | undefined;

  const url = (path: string) => server.url + path;
  const uid = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}`;

  async function newContext(viewport = { width: 1280, height: 900 }, config: object = DEV_CONFIG): Promise<BrowserContext> {
    const ctx = await browser.newContext({ viewport });
    contexts.push(ctx);
    ctx.setDefaultTimeout(10_000);
    await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: configScript(config) }));
    ctx.on('page', watch);
    return ctx;
  }

  // Any script error or failed page asset is a test failure, reported at the end of the test.
  function watch(page: Page) {
    page.on('pageerror', (err) => problems.push(`page error on ${page.url()}: ${err.message}`));
    page.on('dialog', (d) => {
      problems.push(`unexpected dialog on ${page.url()}: ${d.message()}`);
      void d.dismiss();
    });
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().includes('/api/')) problems.push(`${r.status()} for ${r.url()}`);
    });
  }

  // The demo's own deliberate errors are page errors too; a test names the ones it caused.
  const expected = (pattern: RegExp) => {
    for (let i = problems.length - 1; i >= 0; i--) if (problems[i]!.startsWith('page error') && pattern.test(problems[i]!)) problems.splice(i, 1);
  };
  const noProblems = () => assert.equal(problems.splice(0), [], 'no page errors, dialogs or missing assets');

  async function signIn(ctx: BrowserContext, userId: string): Promise<Page> {
    const page = await ctx.newPage();
    await page.goto(url('/login/'));
    await page.locator('#idp-sign-in [data-form=sign-in] input[name=userId]').fill(userId);
    const synced = page.waitForResponse((r) => r.url().endsWith('/api/users/sync') && r.request().method() === 'POST');
    await page.locator('#idp-sign-in [data-form=sign-in] button[type=submit]').click();
    await page.waitForURL(url('/dashboard'));
    assert.is((await synced).status(), 200, 'POST /api/users/sync after sign-in');
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.locator('.status-ok').waitFor();
    return page;
  }

  const post = (events: Record<string, unknown>[]) =>
    fetch(url('/api/events'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ events }) }).then(async (r) => {
      assert.is(r.status, 200);
      return (await r.json()) as { accepted: number };
    });

  const kpi = (page: Page, name: string) => page.locator(`[data-kpi=${name}]`).textContent();

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`pages tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping the browser and the server`);
      void browser?.close();
      void server?.stop('SIGKILL');
      void provider?.server.stop('SIGKILL');
      void provider?.oidc.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    server = await startServer();
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    for (const ctx of contexts) await ctx.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.stop();
    await provider?.server.stop();
    await provider?.oidc.close();
    console.log(`Dashboard screenshots: ${shots}`);
  });

  test('/ redirects to /landing/, which shows the script tag and links to sign in, the demo and the preview', async () => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    await page.goto(url('/'));
    assert.is(page.url(), url('/landing/'));
    assert.match((await page.locator('#snippet').textContent()) ?? '', `<script src="${server.url}/sdk/watchtower.js"`);
    for (const href of ['/login/', '/demo/', '/dashboard-demo/']) assert.ok(await page.locator(`a[href="${href}"]`).count(), href);
    noProblems();
  });

  test('an unauthenticated visit to /dashboard lands on /login/, the shell never shown', async () => {
    const html = await (await fetch(url('/dashboard'))).text();
    assert.match(html, /<div id="app" hidden>/, 'the shell is hidden until the session is confirmed');
    const ctx = await newContext();
    const page = await ctx.newPage();
    await page.goto(url('/dashboard'));
    await page.waitForURL(url('/login/'));
    assert.match((await page.locator('#idp-sign-in').textContent()) ?? '', /Development mode/);
    assert.is(await page.locator('#idp-sign-up form').count(), 1, 'a sign-up form in #idp-sign-up');
    noProblems();
  });

  test('dev mode end to end: sign in, use the demo app, the event is live on the dashboard within 5 s and in the stats after reload', async () => {
    const ctx = await newContext();
    const user = uid('alice');
    const dashboard = await signIn(ctx, user);
    assert.is(await dashboard.evaluate(() => localStorage.getItem('service_idp_user_id')), user);
    assert.is(await dashboard.locator('#user-id').textContent(), user);
    assert.is(await kpi(dashboard, 'totalEvents'), '0');

    const demo = await ctx.newPage();
    await demo.goto(url('/demo/'));
    assert.match((await demo.locator('#demo-status').textContent()) ?? '', user);
    await demo.locator('#demo-click').click();
    const clickedAt = Date.now();
    await dashboard.locator('.feed-item[data-type=click]').first().waitFor({ timeout: 5_000 });
    const took = Date.now() - clickedAt;
    assert.ok(took < 5_000, `live feed after ${took} ms`);

    await demo.locator('#demo-custom').click();
    await demo.locator('#demo-feedback-4').click();
    await demo.locator('#demo-error').click();
    await demo.locator('#demo-reject').click();
    await dashboard.locator('.feed-item[data-type=error]').nth(1).waitFor({ timeout: 5_000 });
    expected(/reading 'items'|Payment service timed out/);

    // The slow page busies the main thread for 1.5 s before load: a long pageload for its route.
    await demo.locator('#demo-slow').click();
    await demo.waitForURL(url('/demo/slow/'));
    await dashboard.locator('.feed-item[data-type=pageload]').filter({ hasText: '/demo/slow/' }).waitFor({ timeout: 8_000 });

    await dashboard.reload();
    await dashboard.locator('#app').waitFor({ state: 'visible' });
    await dashboard.locator('.panel-types li[data-type=click]').waitFor();
    const slow = dashboard.locator('.panel-latency tbody tr').filter({ has: dashboard.locator('th', { hasText: /^\/demo\/slow\/$/ }) });
    const p50 = Number(((await slow.locator('td').nth(1).textContent()) ?? '').replace(/\D/g, ''));
    assert.ok(p50 >= 1500, `slow page p50 ${p50} ms`);
    assert.ok(await dashboard.locator('.panel-latency canvas').count(), 'latency chart drawn');
    assert.ok(Number(await kpi(dashboard, 'totalEvents')) >= 6, 'totals counted');
    assert.is(await kpi(dashboard, 'totalErrors'), '2');
    assert.is(await kpi(dashboard, 'feedbackAverage'), '4 / 5');
    for (const type of ['click', 'custom', 'feedback', 'error']) {
      assert.is(await dashboard.locator(`.panel-types li[data-type=${type}]`).count(), 1, `events by type lists ${type}`);
    }
    assert.ok(await dashboard.locator('.panel-versions canvas').count(), 'errors-by-version chart drawn');
    assert.ok(await dashboard.locator('.panel-activity canvas').count(), 'activity chart drawn');
    const errorTexts = await dashboard.locator('.panel-errors .err-msg').allTextContents();
    assert.ok(errorTexts.some((t) => /items/.test(t)) && errorTexts.some((t) => /Payment service/.test(t)), errorTexts.join(' | '));

    // The demo tagged its events with the signed-in id, so the API returns them to that user.
    const res = await fetch(url('/api/events?type=click'), { headers: { 'x-idp-user-id': user } });
    const { events } = (await res.json()) as { events: { user_id: string; appName: string }[] };
    assert.ok(events.length >= 1);
    assert.ok(events.every((e) => e.user_id === user && e.appName === 'demo-notes'));

    // A signed-in visitor opening /login/ goes to the dashboard.
    await demo.goto(url('/login/'));
    await demo.waitForURL(url('/dashboard'));
    noProblems();
  });

  test('dev mode sign-up records the email and display name through POST /api/users/sync', async () => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    await page.goto(url('/login/'));
    const form = page.locator('#idp-sign-up [data-form=sign-up]');
    const user = uid('grace');
    await form.locator('input[name=userId]').fill(user);
    await form.locator('input[name=email]').fill('grace@example.com');
    await form.locator('input[name=displayName]').fill('Grace <b>H</b>');
    const synced = page.waitForResponse((r) => r.url().endsWith('/api/users/sync'));
    await form.locator('button[type=submit]').click();
    const response = await synced;
    assert.is(response.status(), 200);
    assert.equal(response.request().postDataJSON(), { idpUserId: user, email: 'grace@example.com', displayName: 'Grace <b>H</b>' });
    assert.is(response.request().headers()['x-idp-user-id'], user);
    await page.locator('#app').waitFor({ state: 'visible' });
    assert.is(await page.locator('#user-name').textContent(), 'Grace <b>H</b>');
    noProblems();
  });

  test('filters by type and version narrow the events table', async () => {
    const ctx = await newContext();
    const user = uid('filter');
    const page = await signIn(ctx, user);
    await post([
      { type: 'click', userId: user, deployVersion: '1.0.0', data: { text: 'one' } },
      { type: 'error', userId: user, deployVersion: '2.0.0', message: 'two' },
      { type: 'click', userId: user, deployVersion: '2.0.0', data: { text: 'three' } },
    ]);
    await page.locator('.panel-events tbody tr').nth(2).waitFor();
    await page.locator('select[name=type]').selectOption('click');
    await page.waitForFunction(() => document.querySelectorAll('.panel-events tbody tr').length === 2);
    await page.locator('select[name=version]').selectOption('2.0.0');
    await page.waitForFunction(() => document.querySelectorAll('.panel-events tbody tr').length === 1);
    assert.match((await page.locator('.panel-events tbody').textContent()) ?? '', /three/);
    noProblems();
  });

  test('an error message with HTML shows as text and runs nothing', async () => {
    const ctx = await newContext();
    const user = uid('mallory');
    const page = await signIn(ctx, user);
    const message = '<img src=x onerror="window.__injected=1;alert(1)"> broke';
    const stack = 'Error: <script>window.__injected=2</script>\n    at <b onmouseover=alert(3)>x</b>';
    await post([{ type: 'error', userId: user, message, deployVersion: '<i>1</i>', data: { stack, text: '<svg onload=alert(4)>' } }]);
    await page.locator('.feed-item[data-type=error]').waitFor({ timeout: 5_000 });
    assert.match((await page.locator('.feed-item .feed-text').first().textContent()) ?? '', message);
    await page.reload();
    await page.locator('.panel-errors details summary').first().click();
    assert.is(await page.locator('.panel-errors .err-msg').first().textContent(), message);
    assert.is(await page.locator('.panel-errors pre.stack').first().textContent(), stack);
    assert.is(await page.locator('.dash img, .dash script, .dash svg, .dash b').count(), 0, 'no element made from event data');
    assert.is(await page.evaluate(() => (window as { __injected?: number }).__injected), undefined);
    noProblems();
  });

  test('a second user sees none of the first user’s events, live or stored', async () => {
    const first = uid('ann');
    const second = uid('ben');
    const a = await signIn(await newContext(), first);
    const b = await signIn(await newContext(), second);
    await post([
      { type: 'click', userId: first, data: { text: 'only for ann' } },
      { type: 'error', userId: first, message: 'ann’s error', deployVersion: '9.9.9' },
    ]);
    await a.locator('.feed-item[data-type=error]').waitFor({ timeout: 5_000 });
    await b.waitForTimeout(500);
    assert.is(await b.locator('.feed-item').count(), 0, 'nothing in the second user’s live feed');
    await b.reload();
    await b.locator('#app').waitFor({ state: 'visible' });
    assert.is(await kpi(b, 'totalEvents'), '0');
    assert.is(await kpi(b, 'totalErrors'), '0');
    assert.not.match((await b.locator('.dash').textContent()) ?? '', /ann/);
    noProblems();
  });

  test('the live feed reconnects after the stream fails', async () => {
    const ctx = await newContext();
    const user = uid('retry');
    let attempts = 0;
    await ctx.route('**/api/events/stream', (route) => (++attempts === 1 ? route.abort('connectionreset') : route.continue()));
    const page = await ctx.newPage();
    await page.goto(url('/login/'));
    await page.locator('[data-form=sign-in] input[name=userId]').fill(user);
    await page.locator('[data-form=sign-in] button[type=submit]').click();
    await page.locator('.status-ok').waitFor({ timeout: 8_000 });
    assert.ok(attempts >= 2, `${attempts} stream attempts`);
    await post([{ type: 'custom', userId: user, data: { name: 'after-reconnect' } }]);
    await page.locator('.feed-item[data-type=custom]').waitFor({ timeout: 5_000 });
    noProblems();
  });

  test('dashboard screenshots at desktop and phone width; sign-out returns to /login/', async () => {
    const user = uid('screens');
    const now = Date.now();
    const events: Record<string, unknown>[] = [];
    const routes: [string, number][] = [['/', 380], ['/notes', 620], ['/search', 1100]];
    for (let i = 0; i < 60; i++) {
      const [route, base] = routes[i % routes.length]!;
      const version = ['1.3.2', '1.4.0', '2.0.0'][i % 3];
      const common = { userId: user, sessionId: `s${i % 7}`, deployVersion: version, route, timestamp: new Date(now - (60 - i) * 20_000).toISOString() };
      events.push({ ...common, type: 'pageload', data: { duration: Math.round(base * (0.7 + ((i * 37) % 60) / 100)), ttfb: 60 + ((i * 13) % 90) } });
      if (i % 2 === 0) events.push({ ...common, type: 'click', data: { text: 'Save' } });
      if (i % 7 === 0) events.push({ ...common, type: 'error', message: `TypeError: cannot read 'items' of null (#${i})`, data: { stack: 'TypeError: cannot read\n    at addToCart (app.js:112:17)' } });
      if (i % 5 === 0) events.push({ ...common, type: 'feedback', data: { rating: [5, 4, 4, 3, 5, 2][i % 6] } });
      if (i % 9 === 0) events.push({ ...common, type: 'custom', data: { name: 'note_saved' } });
    }
    await post(events);

    const desktop = await signIn(await newContext({ width: 1280, height: 900 }), user);
    await desktop.locator('.panel-latency canvas').waitFor();
    await post([
      { type: 'pageload', userId: user, route: '/notes', deployVersion: '2.0.0', sessionId: 's1', data: { duration: 640, ttfb: 88 } },
      { type: 'click', userId: user, route: '/notes', deployVersion: '2.0.0', sessionId: 's1', data: { text: 'Share' } },
      { type: 'feedback', userId: user, deployVersion: '2.0.0', sessionId: 's1', data: { rating: 5 } },
    ]);
    await desktop.locator('.feed-item').nth(2).waitFor({ timeout: 5_000 });
    await desktop.screenshot({ path: join(shots, 'dashboard-desktop.png'), fullPage: true });

    const phone = await signIn(await newContext({ width: 390, height: 844 }), user);
    await phone.locator('.panel-latency canvas').waitFor();
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no horizontal scrolling at phone width (${overflow} px too wide)`);
    await phone.screenshot({ path: join(shots, 'dashboard-phone.png'), fullPage: true });
    assert.ok(existsSync(join(shots, 'dashboard-desktop.png')) && existsSync(join(shots, 'dashboard-phone.png')));

    await desktop.locator('#sign-out').click();
    await desktop.waitForURL(url('/login/'));
    assert.is(await desktop.evaluate(() => localStorage.getItem('service_idp_user_id')), null);
    await desktop.goto(url('/dashboard'));
    await desktop.waitForURL(url('/login/'));
    noProblems();
  });

  test('/dashboard-demo/ draws the sample events without signing in, every range computed in the page', async () => {
    const ctx = await newContext();
    const page = await ctx.newPage();
    // The page's clock held still, so the test's copy of the sample (which ends at that moment) and
    // the range's hours are exactly the page's.
    const now = Date.now();
    await page.clock.setFixedTime(now);
    await page.goto(url('/dashboard-demo/?range=30d'));
    await page.locator('.panel-activity canvas').waitFor();
    await page.locator('.grid[aria-busy=false]').waitFor();
    const expected = computeStats(sampleEvents(now), now, spanOf(readState('?range=30d'), now)!);
    assert.ok(expected.totalEvents > 1000, `a month of sample events (${expected.totalEvents})`);
    assert.is(await kpi(page, 'totalEvents'), expected.totalEvents.toLocaleString('en-US'));
    assert.is(await kpi(page, 'totalErrors'), expected.totalErrors.toLocaleString('en-US'));
    assert.match((await page.locator('[data-delta=totalEvents]').textContent()) ?? '', /^[▲▼] [+−]\d/);
    // Custom event properties, chosen in the panel: the values computeStats counts for that key.
    const props = page.locator('.panel-properties');
    await props.locator('select[name=event]').selectOption('note_saved');
    await page.waitForURL(/event=note_saved/);
    await props.locator('select[name=property]').selectOption('format');
    await page.waitForURL(/property=format/);
    const asked = computeStats(sampleEvents(now), now, { ...spanOf(readState('?range=30d'), now)!, property: { keys: true, key: 'format', event: 'note_saved' } });
    const values = asked.properties!.format!;
    assert.equal(values.map((r) => r.name).sort(), ['checklist', 'markdown', 'plain']);
    assert.equal(asked.propertyKeys!.map((r) => r.name).sort(), ['format', 'pinned', 'words'], 'the keys of the event chosen');
    await page.waitForFunction((n) => document.querySelectorAll('.panel-properties tbody tr').length === n, values.length);
    assert.equal(await props.locator('tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('th, td')].slice(0, 3).map((c) => c.textContent!.trim()))),
      values.map((r) => [r.name, r.events.toLocaleString('en-US'), r.sessions.toLocaleString('en-US')]));
    await page.locator('.range-picker label', { hasText: 'All' }).click();
    await page.waitForFunction((n) => document.querySelector('[data-kpi=totalEvents]')!.textContent === n, sampleEvents(now).length.toLocaleString('en-US'));
    assert.is(page.url(), url('/dashboard-demo/?range=all&property=format&event=note_saved'), 'the choice of property kept for the next range');
    noProblems();
  });

  test('/projects/: create a project, copy its script tag and DSN, rename, rotate the key, delete; pages send CSP and nosniff', async () => {
    const ctx = await newContext();
    const user = uid('proj');
    const dash = await signIn(ctx, user);
    const page = await ctx.newPage();
    const first = await page.goto(url('/projects/'));
    const headers = first!.headers();
    assert.match(headers['content-security-policy'] ?? '', /script-src 'self'.*frame-ancestors 'none'/);
    assert.is(headers['x-content-type-options'], 'nosniff');
    assert.ok(headers['referrer-policy']);
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.locator('#create input[name=name]').fill('Shop');
    await page.locator('#create input[name=origins]').fill('https://shop.example');
    await page.locator('#create button[type=submit]').click();
    const card = page.locator('[data-project]');
    await card.waitFor();
    const id = (await card.getAttribute('data-project'))!;
    const key = (await card.locator('.key').textContent())!;
    assert.match(key, /^[0-9a-f]{32}$/);
    assert.is(await card.locator('.snippet').textContent(), `<script src="${server.url}/sdk/watchtower.js"\n        data-key="${key}" data-app-name="shop" defer></script>`);
    assert.is(await card.locator('.dsn').textContent(), `http://${key}@${new URL(server.url).host}/${id}`);

    // The key works: an event sent with it (no user named) reaches the owner's dashboard.
    const sent = await fetch(url(`/api/events?key=${key}`), { method: 'POST', body: JSON.stringify({ type: 'from_project' }) });
    assert.is(sent.status, 200);
    await dash.reload();
    await dash.locator('.panel-types li[data-type=from_project]').waitFor();

    await card.locator('input[name=name]').fill('Shop EU');
    await card.locator('[data-action=save]').click();
    await page.locator('[data-project] h2', { hasText: 'Shop EU' }).waitFor();
    await page.locator('[data-project] [data-action=rotate]').click();
    await page.locator('[data-project] .key').filter({ hasNotText: key }).waitFor();
    assert.is((await fetch(url(`/api/events?key=${key}`), { method: 'POST', body: '{"type":"x"}' })).status, 401, 'the old key stops');
    const bad = page.locator('#create');
    await bad.locator('input[name=name]').fill('Bad');
    await bad.locator('input[name=origins]').fill('not-an-origin');
    await bad.locator('button[type=submit]').click();
    await page.locator('#create-error').filter({ hasText: 'allowedOrigins' }).waitFor();
    await page.locator('[data-project] [data-action=delete]').click();
    await page.locator('[data-project] [data-action=delete]').click();
    await page.locator('#projects .empty').waitFor();
    noProblems();
  });

  // Provider mode: a real OpenID Connect provider (oidc-provider) on 127.0.0.1 as the issuer, and a
  // server that verifies its tokens and no longer trusts the development header.
  async function startProvider() {
    if (provider) return provider;
    const port = await freePort();
    const back = `http://127.0.0.1:${port}/login/`;
    const oidc = await startOidc({ redirectUris: [back], postLogoutRedirectUris: [back] });
    try {
      const s = await startServer({ PORT: String(port), IDP_JWT_ISSUER: oidc.issuer });
      const config = { mode: 'provider', issuer: oidc.issuer, clientId: DASHBOARD_CLIENT_ID, publishableKey: '', scope: `openid ${OIDC_SCOPE}` };
      return (provider = { oidc, server: s, config });
    } catch (err) {
      await oidc.close();
      throw err;
    }
  }

  async function providerSignIn(login: string): Promise<{ page: Page; bearer: string }> {
    const p = await startProvider();
    const ctx = await newContext(undefined, p.config);
    const page = await ctx.newPage();
    await page.goto(p.server.url + '/dashboard');
    await page.waitForURL(p.server.url + '/login/');
    await page.locator('#idp-sign-in [data-action=sign-in]').click();
    await page.waitForURL((u) => u.href.startsWith(p.oidc.issuer + '/interaction/'));
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('any');
    await page.locator('button[type=submit]').click();
    // The provider asks for consent to the dashboard client once per user.
    await page.waitForURL((u) => u.href.startsWith(p.oidc.issuer + '/interaction/') || u.href.startsWith(p.server.url));
    if (page.url().startsWith(p.oidc.issuer)) await page.locator('button[type=submit]').click();
    const synced = await page.waitForRequest((r) => r.url() === p.server.url + '/api/users/sync');
    await page.waitForURL(p.server.url + '/dashboard');
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.locator('.status-ok').waitFor();
    assert.is((await synced.response())?.status(), 200, 'POST /api/users/sync with the token');
    const bearer = (await synced.allHeaders()).authorization ?? '';
    return { page, bearer };
  }

  test('provider mode: sign-in through the OIDC provider (code + PKCE), API calls carry a verified Bearer token', async () => {
    const p = await startProvider();
    const login = uid('ada');
    const { page, bearer } = await providerSignIn(login);
    assert.match(bearer, /^Bearer ey/, 'a JWT access token');
    assert.is(await page.locator('#user-id').textContent(), login);
    assert.is(await page.evaluate(() => localStorage.getItem('service_idp_user_id')), login, 'the signed-in id is kept for the same-origin demo');
    const stored = await page.evaluate(() => ({
      local: Object.keys(localStorage).map((k) => localStorage.getItem(k) ?? '').join(' '),
      session: Object.keys(sessionStorage).map((k) => sessionStorage.getItem(k) ?? '').join(' '),
    }));
    assert.not.match(stored.local, /ey[A-Za-z0-9_-]{10,}\./, 'no token in localStorage');
    assert.match(stored.session, /ey[A-Za-z0-9_-]{10,}\./, 'tokens in sessionStorage');

    // The server verifies the token; the development header alone no longer signs anyone in.
    assert.is((await fetch(p.server.url + '/api/stats', { headers: { authorization: bearer } })).status, 200);
    assert.is((await fetch(p.server.url + '/api/stats', { headers: { 'x-idp-user-id': login } })).status, 401);

    // The demo app sends the signed-in user's access token with its events (its userId field alone
    // would claim nothing); they arrive live and after a reload. Opened from the dashboard, the tab
    // gets a copy of the dashboard's sessionStorage, where the tokens are.
    const [demo] = await Promise.all([page.context().waitForEvent('page'), page.evaluate(() => void window.open('/demo/'))]);
    await demo.waitForLoadState();
    const sent = demo.waitForRequest((r) => r.url() === p.server.url + '/api/events' && r.method() === 'POST');
    await demo.locator('#demo-custom').click();
    assert.is((await (await sent).allHeaders()).authorization, bearer, 'the batch carries the token');
    await page.locator('.feed-item[data-type=custom]').waitFor({ timeout: 5_000 });
    await page.reload();
    await page.locator('.panel-types li[data-type=custom]').waitFor();
    noProblems();
  });

  test('provider mode: a second user sees none of the first user’s events; sign-out ends the provider session', async () => {
    const p = await startProvider();
    const first = uid('cy');
    const second = uid('di');
    const a = await providerSignIn(first);
    const b = await providerSignIn(second);
    // Forged ownership: naming the first user, without their token or a key, from any Origin (the
    // service's own included), lands on nobody's dashboard; it is stored unowned.
    for (const origin of [p.server.url, 'https://elsewhere.example', null]) {
      const forged = await fetch(p.server.url + '/api/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(origin ? { origin } : {}) },
        body: JSON.stringify({ events: [{ type: 'forged', userId: first, message: 'not from the first user' }] }),
      });
      assert.is(forged.status, 200);
    }
    const post = await fetch(p.server.url + '/api/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: a.bearer },
      body: JSON.stringify({ events: [{ type: 'error', message: 'first user only' }] }),
    });
    assert.is(post.status, 200);
    await a.page.locator('.feed-item[data-type=error]').waitFor({ timeout: 5_000 });
    const own = await fetch(p.server.url + '/api/events', { headers: { authorization: a.bearer } });
    assert.equal(((await own.json()) as { events: { type: string }[] }).events.map((e) => e.type), ['error'], 'the forged events reached nobody');
    await b.page.waitForTimeout(500);
    assert.is(await b.page.locator('.feed-item').count(), 0);
    await b.page.reload();
    await b.page.locator('#app').waitFor({ state: 'visible' });
    assert.is(await kpi(b.page, 'totalEvents'), '0');
    const read = await fetch(p.server.url + '/api/events', { headers: { authorization: b.bearer } });
    assert.equal(((await read.json()) as { events: unknown[] }).events, []);

    await a.page.locator('#sign-out').click();
    // The provider's end-session page asks before it signs out.
    await a.page.waitForURL((u) => u.href.startsWith(p.oidc.issuer));
    await a.page.locator('button[name=logout]').click();
    await a.page.waitForURL(p.server.url + '/login/');
    assert.is(await a.page.evaluate(() => Object.keys(sessionStorage).length), 0, 'tokens forgotten');
    await a.page.goto(p.server.url + '/dashboard');
    await a.page.waitForURL(p.server.url + '/login/');
    noProblems();
  });

  test.run();
}
