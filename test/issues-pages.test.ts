// The Issues and Alerts pages in headless Chromium against the handler served on 127.0.0.1:
// hostile event text stays text, the list filters by status, an issue shows its symbolicated stack
// with original source lines, resolve and reopen work, and an alert rule is created, tested against
// a real webhook receiver (its delivery shown) and deleted.
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loadAlertConfig } from '../lib/alerts/config.ts';
import { createHandler, type FetchHandler } from '../lib/handler.ts';
import { toNodeListener } from '../lib/adapter/node.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { runtimeFiles } from './helpers/app.ts';
import { type Bundle, buildApp, lineOf } from './helpers/bundle.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { ROOT } from './helpers/server.ts';

declare const Deno: unknown;

const DEV_CONFIG = `window.WATCHTOWER_CONFIG = ${JSON.stringify({ mode: 'dev', issuer: '', clientId: '', publishableKey: '', scope: '' })};`;
/** The webhook receiver listens on 127.0.0.1, an internal destination these tests allow. */
const INTERNAL_WEBHOOKS = loadAlertConfig({ ALERT_ALLOW_PRIVATE_WEBHOOKS: 'true' });
const HOSTILE = `<img src=x onerror="window.__pwned=1">"'&<script>window.__pwned=2</script>`;

if (browserSuiteRuns('Issues and Alerts page tests')) register();

function register() {
  let handler: FetchHandler;
  let server: Server;
  let hookServer: Server;
  let base = '';
  let hookUrl = '';
  const hooks: string[] = [];
  let browser: Browser;
  let context: BrowserContext;
  let bundle: Bundle;
  const problems: string[] = [];

  const api = (path: string, init: { method?: string; body?: unknown; user?: string } = {}) =>
    handler(new Request(base + path, {
      method: init.method ?? 'GET',
      headers: { 'x-idp-user-id': init.user ?? 'pat', 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }));

  test.before(async () => {
    // The test's own build of the page bundles, so it never runs against stale files.
    const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
    const built = spawnSync(node, ['scripts/build-pages.mjs', '--skip-config'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    if (built.status !== 0) throw new Error(`build-pages failed: ${built.stderr || built.stdout}`);

    const records = createMemoryRecords();
    await records.put([{ kind: 'project', id: '7', userId: 'pat', body: { name: 'shop' } }]);
    handler = createHandler({ store: createMemoryStore(), records, files: runtimeFiles, log: () => {}, monitoring: { processEveryMs: 50, alertTickMs: 50, alerts: INTERNAL_WEBHOOKS } });
    server = createServer(toNodeListener(handler));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    hookServer = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        hooks.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook`;

    // An esbuild bundle's real error, as served from https://shop.example.com/assets/, with its map uploaded.
    bundle = await buildApp('external');
    let stack = '';
    try {
      (await import(pathToFileURL(`${bundle.dir}/${bundle.script}`).href)).onBuyClick();
    } catch (e) {
      stack = ((e as Error).stack ?? '').replaceAll(pathToFileURL(`${bundle.dir}/`).href, 'https://shop.example.com/assets/');
    }
    assert.is((await api('/api/projects/7/sourcemaps', { method: 'POST', body: { release: '3.0.0', url: `~/assets/${bundle.script}`, map: bundle.map } })).status, 201);
    const events = [
      { type: 'error', message: 'Uncaught TypeError: coupon FREESHIP is not valid for a total of 14', deployVersion: '3.0.0', sessionId: 's1', data: { stack } },
      { type: 'error', message: HOSTILE, deployVersion: '3.0.0', sessionId: 's2' },
      { type: 'error', message: HOSTILE, deployVersion: '3.0.1', sessionId: 's3' },
    ];
    assert.is((await api('/api/events', { method: 'POST', body: { events } })).status, 200);
    await handler.monitor.flush();

    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    await context.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG }));
    // Signed in (development mode) on the service's pages; about:blank has no storage to write.
    await context.addInitScript(() => {
      if (location.protocol === 'http:') localStorage.setItem('service_idp_user_id', 'pat');
    });
    context.on('page', (page: Page) => {
      page.on('pageerror', (err) => problems.push(`page error on ${page.url()}: ${err.message}`));
      page.on('dialog', (d) => {
        problems.push(`unexpected dialog: ${d.message()}`);
        void d.dismiss();
      });
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
      });
    });
  });

  test.after(async () => {
    await browser?.close().catch(() => {});
    await handler?.close();
    for (const s of [server, hookServer]) {
      s?.closeAllConnections();
      await new Promise((resolve) => (s ? s.close(resolve) : resolve(undefined)));
    }
    bundle?.remove();
  });

  const noProblems = () => assert.equal(problems.splice(0), []);

  test('the dashboard links to Issues and Alerts', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    await page.waitForSelector('#app:not([hidden])');
    assert.ok(await page.locator('nav a[href="/issues/"]').isVisible());
    assert.ok(await page.locator('nav a[href="/alerts/"]').isVisible());
    await page.close();
    noProblems();
  });

  test('Issues: the list with counts, sparklines and versions; hostile messages stay text', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/issues/`);
    await page.waitForSelector('#app:not([hidden]) tr[data-issue]').catch(async (e) => {
      throw new Error(`${e.message}\n${problems.join('\n')}\n${await page.locator('body').innerText()}`);
    });
    const rows = page.locator('tr[data-issue]');
    assert.is(await rows.count(), 2);
    const hostile = rows.filter({ hasText: 'onerror' });
    assert.is(await hostile.locator('.issue-title').textContent(), HOSTILE);
    assert.is(await hostile.locator('[data-count]').textContent(), '2');
    assert.ok((await hostile.textContent())!.includes('3.0.0 → 3.0.1'));
    assert.is(await page.locator('#issues img, #issues script').count(), 0, 'no element came from event text');
    assert.is(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.is(await page.locator('svg.sparkline').count(), 2);
    assert.is(await page.locator('[data-status-filter="unresolved"]').textContent(), 'Unresolved (2)');
    await page.close();
    noProblems();
  });

  test('Issues: the symbolicated stack with source lines; resolve, then the list filters; reopen', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/issues/`);
    await page.click('tr[data-issue] a:has-text("coupon FREESHIP")');
    await page.waitForSelector('ol.frames');
    const top = page.locator('li.frame').first();
    assert.is(await top.locator('.frame-fn').textContent(), 'applyCoupon');
    assert.match((await top.locator('.frame-file').textContent())!, new RegExp(`sourcemap-app/cart\\.ts:${lineOf('cart.ts', 'throw new TypeError')}:`));
    assert.match((await top.locator('.src-line.current').textContent())!, /throw new TypeError/);
    assert.match((await top.locator('.frame-minified').textContent())!, new RegExp(`minified: .* at https://shop\\.example\\.com/assets/${bundle.script.replace('.', '\\.')}:1:`));
    assert.is(await page.locator('tr[data-event]').count(), 1);

    await page.click('[data-action="resolve"]');
    await page.waitForSelector('[data-action="reopen"]');
    assert.is(await page.locator('.issue-actions [data-status]').getAttribute('data-status'), 'resolved');

    await page.goto(`${base}/issues/`);
    await page.waitForSelector('tr[data-issue]');
    assert.is(await page.locator('tr[data-issue]').count(), 1, 'the resolved issue left the unresolved list');
    assert.is(await page.locator('[data-status-filter="resolved"]').textContent(), 'Resolved (1)');
    await page.click('[data-status-filter="resolved"]');
    await page.waitForURL(/status=resolved/);
    await page.click('tr[data-issue] a');
    await page.click('[data-action="reopen"]');
    await page.waitForSelector('[data-action="resolve"]');
    assert.is(await page.locator('.issue-actions [data-status]').getAttribute('data-status'), 'new');

    await page.fill('input[name="resolvedInVersion"]', '3.0.5');
    await page.click('[data-action="resolve-in-version"]');
    await page.waitForSelector('[data-action="reopen"]');
    assert.is(await page.locator('.issue-actions [data-status]').textContent(), 'resolved in 3.0.5');
    await page.close();
    noProblems();
  });

  test('Issues: the latest event\'s breadcrumbs in order before the error, its page, and the project by name', async () => {
    const created = await api('/api/projects', { method: 'POST', body: { name: 'Checkout app' } });
    assert.is(created.status, 201, await created.clone().text());
    const project = (await created.json()) as { id: string; key: string };
    const breadcrumbs = [
      { at: '2026-11-20T10:00:01.000Z', category: 'click', message: 'main > button.buy "Buy"', level: 'info' },
      { at: '2026-11-20T10:00:02.000Z', category: 'navigation', message: '/checkout', level: 'info' },
      { at: '2026-11-20T10:00:03.000Z', category: 'http', message: 'POST /api/pay 502', level: 'error' },
      { at: '2026-11-20T10:00:04.000Z', category: 'console', message: '<img src=x onerror=alert(1)>', level: 'warning' },
    ];
    const sent = await handler(new Request(`${base}/api/events?key=${project.key}`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: [{ type: 'error', message: 'PaymentError: card declined', route: '/checkout', sessionId: 's9', data: { breadcrumbs } }] }),
    }));
    assert.is(sent.status, 200, await sent.clone().text());
    await handler.monitor.flush();
    const page = await context.newPage();
    await page.goto(`${base}/issues/`);
    await page.click('tr[data-issue] a:has-text("card declined")');
    await page.waitForSelector('ol.crumbs');
    const items = page.locator('ol.crumbs li');
    assert.equal(await items.evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-category'), li.querySelector('.details')?.textContent])), [
      ['click', 'main > button.buy "Buy"'], ['navigation', '/checkout'], ['http', 'POST /api/pay 502'],
      ['console', '<img src=x onerror=alert(1)>'], ['error', 'PaymentError: card declined'],
    ]);
    assert.is(await page.locator('ol.crumbs img').count(), 0, 'a crumb\'s message stays text');
    assert.is(await page.locator('tr[data-event] td').nth(4).textContent(), '/checkout', 'the Page column shows the route');
    assert.is(await page.locator('.facts dt:has-text("Project") + dd').textContent(), 'Checkout app');
    await page.close();
    noProblems();
  });

  test('Issues: search box, filters and sort in the URL; tags, users and releases; older and newer events; library frames folded; axe-clean light and dark', async () => {
    const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
    const stack = 'TypeError: total is NaN\n    at computeTotal (https://shop.example.com/assets/app.js:10:5)\n' +
      '    at sum (https://shop.example.com/node_modules/lodash/sum.js:3:9)\n    at reduce (https://shop.example.com/node_modules/lodash/reduce.js:7:2)\n' +
      '    at render (https://shop.example.com/assets/app.js:20:1)';
    const bug = (fields: Record<string, unknown>) => ({ type: 'error', message: 'TypeError: total is NaN', data: { stack }, ...fields });
    for (const events of [
      [bug({ environment: 'staging', deployVersion: '4.0.0', userId: 'ada', sessionId: 'n1' })],
      [bug({ environment: 'production', deployVersion: '4.1.0', userId: 'bob', sessionId: 'n2' })],
      [bug({ environment: 'production', deployVersion: '4.1.0', userId: 'cy', sessionId: 'n3', route: '/basket' })],
    ]) {
      const res = await handler(new Request(`${base}/api/events`, { method: 'POST', headers: { 'x-idp-user-id': 'pat', 'content-type': 'application/json', 'user-agent': firefox }, body: JSON.stringify({ events }) }));
      assert.is(res.status, 200);
      await new Promise((r) => setTimeout(r, 5));
    }
    await handler.monitor.flush();

    const page = await context.newPage();
    await page.goto(`${base}/issues/?status=all`);
    await page.waitForSelector('form[role="search"]');
    await page.fill('input[name="query"]', 'TOTAL is');
    await page.click('form[role="search"] button[type="submit"]');
    await page.waitForURL(/query=TOTAL\+is/);
    await page.waitForSelector('tr[data-issue]');
    assert.equal(await page.locator('tr[data-issue] .issue-title').allTextContents(), ['TypeError: total is NaN']);
    assert.is(await page.inputValue('input[name="query"]'), 'TOTAL is', 'the search box shows what was asked');
    await page.fill('input[name="query"]', '');
    await page.fill('input[name="environment"]', 'production');
    await page.fill('input[name="browser"]', 'Firefox');
    await page.click('form[role="search"] button[type="submit"]');
    await page.waitForURL(/environment=production/);
    assert.match(page.url(), /browser=Firefox/);
    assert.match(page.url(), /status=all/, 'the status tab rides along');
    await page.waitForSelector('tr[data-issue]');
    assert.equal(await page.locator('tr[data-issue] .issue-title').allTextContents(), ['TypeError: total is NaN'], 'only its events came with an environment');
    await page.selectOption('select[name="sort"]', 'users');
    await page.waitForURL(/sort=users/);
    await page.fill('input[name="environment"]', 'qa');
    await page.click('form[role="search"] button[type="submit"]');
    await page.waitForURL(/environment=qa/);
    await page.waitForSelector('text=No issues here.');
    await checkAxe(page.url(), 'the searched list');

    await page.goto(`${base}/issues/?query=total`);
    await page.click('tr[data-issue] a');
    await page.waitForSelector('nav.event-nav');
    const fact = (name: string) => page.locator(`.facts dt:text-is("${name}") + dd`).textContent();
    assert.equal([await fact('Users'), await fact('Sessions'), await fact('First release'), await fact('Last release')], ['3', '3', '4.0.0', '4.1.0']);
    assert.equal(await page.locator('[data-tag="environment"] li').evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-value'), li.querySelector('.num')?.textContent])),
      [['production', '2 (67%)'], ['staging', '1 (33%)']]);
    assert.equal(await page.locator('[data-tag="browser"] li').getAttribute('data-value'), 'Firefox');
    assert.equal(await page.locator('[data-tag="page"] li').getAttribute('data-value'), '/basket');
    assert.equal(await page.locator('table.activity tbody tr').first().locator('td').allTextContents(), ['3', '3', '3']);

    // The latest event: nothing newer; the library frames folded behind their toggle.
    assert.ok(await page.locator('[data-nav="newer"]').isDisabled());
    assert.is(await page.locator('tr[data-event][aria-current="true"] td').nth(2).textContent(), '4.1.0');
    const library = page.locator('li.frame:not(.in-app)');
    assert.is(await library.count(), 2);
    assert.equal(await library.evaluateAll((lis) => lis.map((li) => (li as HTMLElement).hidden)), [true, true]);
    assert.ok(await page.locator('li.frame.in-app').first().isVisible());
    const toggle = page.locator('[data-action="library-frames"]');
    assert.is(await toggle.textContent(), 'Show 2 library frames');
    await checkAxe(page.url(), 'the issue');
    await toggle.click();
    assert.is(await toggle.getAttribute('aria-expanded'), 'true');
    assert.ok(await library.first().isVisible());

    await page.click('[data-nav="older"]');
    await page.waitForURL(/before=/);
    await page.waitForSelector('[data-nav="newer"]:not([disabled])');
    assert.is(await page.locator('tr[data-event][aria-current="true"] td').nth(1).textContent(), 'TypeError: total is NaN');
    assert.is(await page.locator('tr[data-event][aria-current="true"] td').nth(2).textContent(), '4.1.0');
    await page.click('[data-nav="older"]');
    await page.waitForSelector('[data-nav="older"][disabled]');
    assert.is(await page.locator('tr[data-event][aria-current="true"] td').nth(2).textContent(), '4.0.0', 'the oldest: first release');
    await page.click('[data-nav="newer"]');
    await page.waitForSelector('[data-nav="older"]:not([disabled])');
    await page.close();
    noProblems();
  });

  test('Issues: older and newer go past the 10 latest events, to the issue\'s first one and back', async () => {
    const message = 'RangeError: stock below zero';
    for (let i = 0; i < 14; i++) {
      const events = [{ type: 'error', message, data: { stack: `${message}\n    at reserve (https://shop.example.com/assets/app.js:5:5)` }, route: `/item/${i}` }];
      const res = await handler(new Request(`${base}/api/events`, { method: 'POST', headers: { 'x-idp-user-id': 'pat', 'content-type': 'application/json' }, body: JSON.stringify({ events }) }));
      assert.is(res.status, 200);
    }
    await handler.monitor.flush();
    const page = await context.newPage();
    await page.goto(`${base}/issues/?query=stock`);
    await page.click('tr[data-issue] a');
    await page.waitForSelector('nav.event-nav');
    assert.is(await page.locator('tr[data-event]').count(), 10, 'the table lists the 10 latest');
    const shownRoute = () => page.locator('.event-nav .err-meta').textContent();
    for (let i = 12; i >= 0; i--) {
      await page.click('[data-nav="older"]');
      await page.waitForFunction((n) => document.querySelector('.event-nav .err-meta')?.textContent?.startsWith(n), i < 4 ? 'An older event of 14' : `Event ${i + 1} of 14`);
    }
    assert.ok(await page.locator('[data-nav="older"]').isDisabled(), 'the first event: nothing older');
    // The breadcrumbs panel ends with the shown error, and the Page column is not there: check the route via the API answer.
    const before = new URL(page.url()).searchParams.get('before')!;
    const shown = await (await api(`/api/issues/${new URL(page.url()).searchParams.get('id')}?before=${before}`)).json();
    assert.is(shown.latestEvent.route, '/item/0');
    await page.click('[data-nav="newer"]');
    await page.waitForFunction(() => document.querySelector('.event-nav .err-meta')?.textContent?.startsWith('An older event of 14'));
    assert.ok(await page.locator('[data-nav="older"]').isEnabled());
    assert.match((await shownRoute())!, /of 14/);
    await page.close();
    noProblems();
  });

  /** axe-core on `url` in light and dark: no serious or critical violation. */
  async function checkAxe(url: string, what: string): Promise<void> {
    const { readFileSync } = await import('node:fs');
    const axeSource = readFileSync(`${ROOT}/node_modules/axe-core/axe.min.js`, 'utf8');
    for (const colorScheme of ['light', 'dark'] as const) {
      // axe is injected inline, which the pages' Content-Security-Policy forbids: this context bypasses it.
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme, bypassCSP: true });
      await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG }));
      await ctx.addInitScript(() => localStorage.setItem('service_idp_user_id', 'pat'));
      const page = await ctx.newPage();
      await page.goto(url);
      await page.waitForFunction(() => document.getElementById('guard')?.hidden === true);
      await page.addScriptTag({ content: axeSource });
      const found = await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run(d: Document, o: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
        return (await axe.run(document, { resultTypes: ['violations'] })).violations;
      });
      await ctx.close();
      const serious = found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
      assert.equal(serious, [], `${what} (${colorScheme})`);
    }
  }

  test('Alerts: e-mail shown disabled; create a rule, send a test to a real webhook, see the delivery, delete it', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/alerts/`);
    await page.waitForSelector('#app:not([hidden])');
    assert.is(await page.locator('[data-email-channel]').getAttribute('data-email-channel'), 'disabled');
    assert.match((await page.locator('[data-email-channel]').textContent())!, /E-mail is disabled/);

    await page.selectOption('select[name="on"]', 'error_spike');
    assert.ok(await page.locator('input[name="threshold"]').isVisible());
    await page.fill('input[name="threshold"]', '25');
    await page.fill('input[name="webhook"]', hookUrl);
    await page.fill('input[name="project"]', '7');
    await page.fill('input[name="environment"]', 'production');
    await page.click('.alert-form button[type="submit"]');
    await page.waitForSelector('section[data-rule]');
    assert.match((await page.locator('section[data-rule] h3').textContent())!, /in project 7 \(production only\)/);
    assert.is((await (await api('/api/alerts')).json()).alerts[0].environment, 'production');
    assert.match((await page.locator('.dev-badge').textContent())!, /secret \(shown only now\): [0-9a-f]{64}/);
    assert.match((await page.locator('section[data-rule] h3').textContent())!, /An error spike, more than 25 errors in 5 minutes in project 7/);

    await page.click('section[data-rule] [data-action="test"]');
    await page.waitForSelector('[data-delivery-status="sent"]');
    assert.is(hooks.length, 1);
    assert.is(JSON.parse(hooks[0]).test, true);

    // A rule the service refuses says why.
    await page.selectOption('select[name="on"]', 'new_issue');
    await page.click('.alert-form button[type="submit"]');
    await page.waitForSelector('.problem:not([hidden])');
    assert.match((await page.locator('#alerts > .problem').textContent())!, /could not be created: .*"webhook" or "email" is required/);
    problems.splice(0); // the 400 of that refusal is expected

    await page.click('section[data-rule] [data-action="delete"]');
    await page.waitForSelector('text=No rules yet.');
    assert.equal((await (await api('/api/alerts')).json()).alerts, []);
    await page.close();
    noProblems();
  });
}

test.run();
