// The dashboard's time ranges in a real browser (headless Chromium) against the fetch handler on a
// real HTTP server, with a fixture of events received over the last two months (the handler's clock
// is moved back while they are ingested): every number follows the chosen range and equals what the
// API answers for it, the comparison with the previous period is right, the query string restores
// the view (reload, back/forward), and the CSV and NDJSON downloads hold the rows.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Stats } from '../lib/stats.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { app } from './helpers/app.ts';
import { browserSuiteRuns, launchChromium } from './helpers/browser.ts';
import { buildPages, DEV_CONFIG_SCRIPT, serveHandler } from './helpers/pages.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const USER = 'range-user';
const SUITE_LIMIT_MS = 150_000;

/** Batches of the fixture: how long before the start of the suite each was received, and what it holds. */
const FIXTURE: { ago: number; events: Record<string, unknown>[] }[] = [
  { ago: 55 * DAY, events: [{ type: 'click', sessionId: 'a', data: { text: 'old' } }] },
  { ago: 20 * DAY, events: [{ type: 'custom', sessionId: 'b', data: { name: 'signup' } }, { type: 'pageload', sessionId: 'b', route: '/c', data: { duration: 500 } }] },
  {
    ago: 10 * DAY, events: [
      { type: 'pageload', sessionId: 'c', route: '/a', data: { duration: 200 } },
      { type: 'error', sessionId: 'c', deployVersion: '1.0', message: 'old failure' },
      { type: 'error', sessionId: 'c', deployVersion: '2.0', message: 'other failure' },
      { type: 'click', sessionId: 'c', data: { text: 'Save' } },
    ],
  },
  {
    ago: 3 * DAY, events: [
      { type: 'pageload', sessionId: 'd', route: '/b', data: { duration: 300 } },
      { type: 'click', sessionId: 'd', data: { text: 'Share' } },
      { type: 'feedback', sessionId: 'd', data: { rating: 4 } },
    ],
  },
  {
    ago: HOUR, events: [
      { type: 'pageload', sessionId: 'e', route: '/a', data: { duration: 100 } },
      // Event data can be anything; a spreadsheet must not run it as a formula.
      { type: 'error', sessionId: 'e', deployVersion: '1.0', message: '=HYPERLINK("http://evil.example","x")' },
      { type: 'click', sessionId: 'e', data: { text: 'Buy, "now"' } },
    ],
  },
];
/**
 * A second user's events for the breakdowns and web vitals: browsers (from the User-Agent),
 * referrers, versions and vitals, spread so that each range shows other rows.
 */
const BD_USER = 'breakdown-user';
const UA = {
  chrome: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  iphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
};
// Client addresses (behind a trusted proxy) of known countries: 84.200.69.80 is in Germany,
// 1.1.1.1 registered in Australia (test/geo.test.ts).
const BD_FIXTURE: { ago: number; ua: string; from?: string; events: Record<string, unknown>[] }[] = [
  { ago: 20 * DAY, ua: UA.chrome, from: '84.200.69.80', events: [
    { type: 'pageload', sessionId: 'p', route: '/old', deployVersion: '1.0', referrer: 'https://search.example/q?secret=1', data: { duration: 900 },
      environment: 'staging', url: 'https://shop.example/old?utm_source=Newsletter&utm_medium=email&utm_campaign=winter' },
    { type: 'performance', sessionId: 'p', route: '/old', data: { name: 'LCP', value: 5200 } },
  ] },
  { ago: 3 * DAY, ua: UA.iphone, from: '1.1.1.1', events: [
    { type: 'pageload', sessionId: 'q', route: '/', deployVersion: '2.0', referrer: 'https://news.example', data: { duration: 400 },
      environment: 'production', url: 'https://shop.example/?utm_source=ads&utm_medium=cpc&utm_campaign=spring' },
    { type: 'custom', sessionId: 'q', route: '/', name: 'signup', environment: 'production' },
    { type: 'pageload', sessionId: 'q', route: '/pricing', deployVersion: '2.0', data: { duration: 700 } },
    { type: 'performance', sessionId: 'q', route: '/', data: { name: 'LCP', value: 3100 } },
    { type: 'performance', sessionId: 'q', route: '/', data: { name: 'CLS', value: 0.02 } },
  ] },
  { ago: HOUR, ua: UA.chrome, events: [
    { type: 'pageload', sessionId: 'r', route: '/', deployVersion: '2.1', data: { duration: 250 }, environment: 'production' },
    { type: 'custom', sessionId: 'r', route: '/', eventName: 'signup', environment: 'production' },
    { type: 'custom', sessionId: 's', route: '/', data: { name: 'share' } },
    { type: 'pageload', sessionId: 's', route: '/', deployVersion: '2.1', referrer: 'https://news.example/story/1', data: { duration: 350 } },
    { type: 'performance', sessionId: 'r', route: '/', data: { name: 'LCP', value: 1800 } },
    { type: 'performance', sessionId: 'r', route: '/', data: { name: 'INP', value: 640 } },
    { type: 'performance', sessionId: 's', route: '/', data: { name: 'TTFB', value: 300 } },
  ] },
];
const countWithin = (ms: number) => FIXTURE.filter((b) => b.ago < ms).reduce((n, b) => n + b.events.length, 0);

if (browserSuiteRuns('Dashboard range tests')) register();

function register() {
  let browser: Browser;
  let server: { url: string; close(): Promise<void> };
  let send: ReturnType<typeof app>['send'];
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  let watchdog: ReturnType<typeof setTimeout> | undefined;

  test.before(async () => {
    watchdog = setTimeout(() => {
      console.error(`dashboard tests: still running after ${SUITE_LIMIT_MS / 1000} s; stopping the browser and the server`);
      void browser?.close();
      void server?.close();
    }, SUITE_LIMIT_MS);
    buildPages();
    // The real clock, except while the fixture is ingested "in the past".
    let at: number | null = null;
    const started = Date.now();
    const built = app({ store: createMemoryStore(), now: () => at ?? Date.now(), trustProxy: true });
    send = built.send;
    // Both users' batches oldest first: the clock only moves forward (the rate limiter counts on it).
    const batches = [
      ...FIXTURE.map((b) => ({ ...b, user: USER, ua: undefined as string | undefined })),
      ...BD_FIXTURE.map((b) => ({ ...b, user: BD_USER })),
    ].sort((a, b) => b.ago - a.ago);
    for (const batch of batches) {
      at = started - batch.ago;
      const events: Record<string, unknown>[] = batch.events.map((e) => ({ ...e, userId: batch.user }));
      if (batch.user === USER) events.push({ type: 'click', userId: 'someone-else' });
      const headers: Record<string, string> = batch.ua ? { 'user-agent': batch.ua } : {};
      const from = (batch as { from?: string }).from;
      if (from) headers['x-forwarded-for'] = from;
      assert.is((await send('POST', '/api/events', { body: { events }, headers })).status, 200);
    }
    at = null;
    server = await serveHandler(built.handler);
    browser = await launchChromium();
  });

  test.after(async () => {
    clearTimeout(watchdog);
    for (const ctx of contexts) await ctx.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
  });

  /** A signed-in (development mode) page at `path`, once the dashboard has drawn its numbers. */
  async function open(path: string, viewport = { width: 1280, height: 900 }, user = USER): Promise<{ page: Page; statsRequests: string[] }> {
    const ctx = await browser.newContext({ viewport, acceptDownloads: true });
    contexts.push(ctx);
    ctx.setDefaultTimeout(10_000);
    await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG_SCRIPT }));
    await ctx.addInitScript((user) => {
      localStorage.setItem('service_idp_user_id', user);
      // Layout shifts not caused by input, from the first paint on (the test of stability reads it).
      const w = window as unknown as { __shift: number };
      w.__shift = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries() as (PerformanceEntry & { value: number; hadRecentInput: boolean })[]) if (!e.hadRecentInput) w.__shift += e.value;
      }).observe({ type: 'layout-shift', buffered: true });
    }, user);
    const page = await ctx.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    const statsRequests: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/stats')) statsRequests.push(r.url());
    });
    await page.goto(server.url + path);
    await page.locator('#app').waitFor({ state: 'visible' });
    await settled(page);
    return { page, statsRequests };
  }

  const settled = (page: Page) => page.locator('.grid[aria-busy=false]').waitFor();
  const kpi = async (page: Page, name: string) => (await page.locator(`[data-kpi=${name}]`).textContent()) ?? '';
  const deltaOf = async (page: Page, name: string) => ((await page.locator(`[data-delta=${name}]`).textContent()) ?? '').replace(' compared with the previous period', '');
  const api = async <T>(path: string, user = USER): Promise<T> => {
    const r = await send('GET', path, { headers: { 'x-idp-user-id': user } });
    assert.is(r.status, 200, path);
    return (await r.json()) as T;
  };
  const noProblems = () => assert.equal(problems.splice(0), [], 'no page errors');

  async function choose(page: Page, label: string) {
    await page.locator('.range-picker label', { hasText: label }).click();
    await settled(page);
  }

  /** The stats the page asked for last: the current period's (the later `from`) and the API's answer to it. */
  async function currentStats(requests: string[]): Promise<{ url: URL; stats: Stats }> {
    const last = requests.slice(-2).map((u) => new URL(u));
    const url = last.length === 2 && last[0]!.searchParams.get('from') && last[1]!.searchParams.get('from')
      ? last.sort((a, b) => Date.parse(b.searchParams.get('from')!) - Date.parse(a.searchParams.get('from')!))[0]!
      : last[last.length - 1]!;
    return { url, stats: await api<Stats>(url.pathname + url.search) };
  }

  /** Every number on the page equals the API's answer for the range the page asked for. */
  async function assertShows(page: Page, stats: Stats) {
    const n = (x: number) => x.toLocaleString('en-US');
    assert.is(await kpi(page, 'totalEvents'), n(stats.totalEvents));
    assert.is(await kpi(page, 'totalErrors'), n(stats.totalErrors));
    assert.is(await kpi(page, 'activeUsers'), n(stats.activeUsers));
    assert.is(await kpi(page, 'averageLatency'), stats.averageLatency ? `${n(stats.averageLatency)} ms` : '–');
    assert.is(await kpi(page, 'feedbackAverage'), stats.analytics.feedbackTotal ? `${n(stats.analytics.feedbackAverage)} / 5` : '–');
    const rows = (selector: string) => page.locator(selector).evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    const routes = Object.entries(stats.latencyByRoute).sort((x, y) => y[1].p95 - x[1].p95).map(([r, s]) => [r, n(s.count), n(s.p50), n(s.p95), n(s.avg)]);
    assert.equal(await rows('.panel-latency > .table-wrap tbody tr'), routes.length ? routes : [['No page loads in this range.']]);
    const versions = Object.entries(stats.errorsByVersion).sort((x, y) => x[0].localeCompare(y[0], undefined, { numeric: true })).map(([v, c]) => [v, n(c)]);
    assert.equal(await rows('.panel-versions tbody tr'), versions.length ? versions : [['No errors.']]);
    const types = Object.entries(stats.eventsByType).sort((x, y) => y[1] - x[1]).map(([t, c]) => [t, n(c)]);
    assert.equal(await page.locator('.panel-types li[data-type]').evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-type'), li.querySelector('strong')!.textContent])), types);
    assert.equal((await rows('.panel-activity details tbody tr')).map((r) => r.slice(1)), stats.analytics.activitySeries.values.map((v, i) => [n(v), n(stats.analytics.userSeries.values[i]!)]));
    assert.is(await page.locator('.panel-errors .err-msg').count(), stats.recentErrors.length);
    const filtered = (await page.locator('select[name=type]').inputValue()) || (await page.locator('select[name=version]').inputValue());
    if (!filtered) assert.is(await page.locator('.panel-events tbody tr').count(), Math.max(1, Math.min(50, stats.totalEvents)));
  }

  test('choosing a range changes every number to what the API answers for that range', async () => {
    const { page, statsRequests } = await open('/dashboard');
    // The default range is the last 7 days.
    assert.ok(await page.locator('input[name=range][value="7d"]').isChecked());
    const expected: [string, string, number][] = [
      ['24 hours', '24h', countWithin(DAY)],
      ['30 days', '30d', countWithin(30 * DAY)],
      ['90 days', '90d', countWithin(90 * DAY)],
      ['All', 'all', countWithin(Infinity)],
      ['7 days', '7d', countWithin(7 * DAY)],
    ];
    assert.equal(expected.map((e) => e[2]), [3, 12, 13, 13, 6], 'the fixture spreads over the ranges');
    for (const [label, key, total] of expected) {
      await choose(page, label);
      const { url, stats } = await currentStats(statsRequests);
      assert.is(stats.totalEvents, total, `${label}: the API's total`);
      if (key === 'all') assert.is(url.search, '', 'all: stats without a range');
      else {
        const span = Date.parse(url.searchParams.get('to')!) - Date.parse(url.searchParams.get('from')!);
        assert.is(span, { '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY, '90d': 90 * DAY }[key], `${label}: the span asked for`);
        assert.is(url.searchParams.get('interval'), key === '24h' ? 'hour' : 'day');
      }
      await assertShows(page, stats);
      assert.is(new URL(page.url()).searchParams.get('range'), key === '7d' ? null : key, 'the range is in the URL');
    }
    noProblems();
  });

  test('the headline numbers compare with the previous period of the same length', async () => {
    const { page } = await open('/dashboard');
    // Last 7 days: 6 events, 1 error, page loads of 300 and 100 ms (avg 200), one 4-star rating.
    // The 7 days before: 4 events, 2 errors, one 200 ms page load, no feedback.
    assert.is(await deltaOf(page, 'totalEvents'), '▲ +50%');
    assert.is(await deltaOf(page, 'totalErrors'), '▼ −50%');
    assert.is(await page.locator('[data-delta=totalErrors]').getAttribute('class'), 'kpi-delta delta-good', 'fewer errors is good');
    assert.is(await deltaOf(page, 'averageLatency'), 'no change');
    assert.is(await deltaOf(page, 'feedbackAverage'), 'no previous data');
    // The last 24 hours against the 24 before them, which hold nothing: no percentage at all.
    await choose(page, '24 hours');
    for (const k of ['totalEvents', 'totalErrors', 'averageLatency']) assert.is(await deltaOf(page, k), 'no previous data', k);
    // 30 days: 12 events against 1 (55 days ago).
    await choose(page, '30 days');
    assert.is(await deltaOf(page, 'totalEvents'), '▲ +1100%');
    // Everything stored has no previous period.
    await choose(page, 'All');
    assert.is(await deltaOf(page, 'totalEvents'), '');
    noProblems();
  });

  test('the URL restores the range, filters and route; back and forward move between views', async () => {
    const { page, statsRequests } = await open('/dashboard?range=30d&type=click&route=%2Fc');
    assert.ok(await page.locator('input[name=range][value="30d"]').isChecked());
    assert.is(await page.locator('select[name=type]').inputValue(), 'click');
    assert.is(await page.locator('select[name=route]').inputValue(), '/c');
    assert.is(await kpi(page, 'totalEvents'), '12');
    const types = await page.locator('.panel-events tbody tr td:nth-child(2)').allTextContents();
    assert.equal(types, ['click', 'click', 'click'], 'the type filter narrows the events of the range');
    await assertShows(page, (await currentStats(statsRequests)).stats);

    await choose(page, '24 hours');
    assert.is(new URL(page.url()).search, '?range=24h&type=click&route=%2Fc');
    assert.is(await kpi(page, 'totalEvents'), '3');
    await page.goBack();
    await settled(page);
    await page.waitForFunction(() => (document.querySelector('input[name=range][value="30d"]') as HTMLInputElement).checked);
    await page.waitForFunction(() => document.querySelector('[data-kpi=totalEvents]')!.textContent === '12');
    await page.goForward();
    await page.waitForFunction(() => document.querySelector('[data-kpi=totalEvents]')!.textContent === '3');

    // A custom range: the UTC day of the batch 3 days ago, which holds its 3 events and nothing else.
    const day = new Date(Date.now() - 3 * DAY).toISOString().slice(0, 10);
    await page.locator('.range-picker label', { hasText: 'Custom' }).click();
    await page.locator('input[name=from]').fill(day);
    await page.locator('input[name=to]').fill(day);
    await page.locator('.custom-range button[type=submit]').click();
    await settled(page);
    await page.waitForFunction(() => document.querySelector('[data-kpi=totalEvents]')!.textContent === '3' && location.search.includes('custom'));
    assert.is(new URL(page.url()).search, `?range=custom&from=${day}&to=${day}&type=click&route=%2Fc`);
    const { url, stats } = await currentStats(statsRequests);
    assert.is(url.searchParams.get('from'), `${day}T00:00:00.000Z`);
    assert.is(stats.totalEvents, 3);
    assert.equal(Object.keys(stats.latencyByRoute), ['/b']);
    await assertShows(page, stats);
    const reopened = await open(`/dashboard${new URL(page.url()).search}`);
    assert.is(await reopened.page.locator('input[name=from]').inputValue(), day);
    assert.is(await kpi(reopened.page, 'totalEvents'), '3');
    noProblems();
  });

  test('a table downloads as CSV with its rows; the range’s events as NDJSON and as CSV, formula-safe', async () => {
    const { page } = await open('/dashboard?range=30d');
    const parse = (csv: string) => csv.trimEnd().split('\r\n');
    const latency = page.waitForEvent('download');
    await page.locator('[data-csv="latency per route"]').click();
    const file = await latency;
    assert.is(file.suggestedFilename(), 'watchtower-latency-per-route.csv');
    const lines = parse(readFileSync((await file.path())!, 'utf8'));
    const shown = await page.locator('.panel-latency > .table-wrap tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent).join(',')));
    assert.equal(lines, shown, 'the CSV holds the header and every row of the table');
    assert.is(lines.length, 4, 'three routes in 30 days');

    const events = page.waitForEvent('download');
    await page.locator('[data-csv="events"]').click();
    const eventLines = parse(readFileSync((await (await events).path())!, 'utf8'));
    assert.is(eventLines.length, 1 + 12);
    assert.ok(eventLines.some((l) => l.includes(`"'=HYPERLINK(""http://evil.example"",""x"")"`)), 'a formula is written as text');

    await choose(page, '7 days');
    const nd = page.waitForEvent('download');
    await page.locator('[data-export=ndjson]').click();
    const ndFile = await nd;
    assert.match(ndFile.suggestedFilename(), /^watchtower-events-\d{4}-\d\d-\d\d-to-\d{4}-\d\d-\d\d\.ndjson$/);
    const exported = readFileSync((await ndFile.path())!, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { user_id: string; type: string });
    assert.is(exported.length, 6);
    assert.ok(exported.every((e) => e.user_id === USER));

    await page.locator('select[name=type]').selectOption('click');
    await settled(page);
    const csv = page.waitForEvent('download');
    await page.locator('[data-export=csv]').click();
    const csvLines = parse(readFileSync((await (await csv).path())!, 'utf8'));
    assert.is(csvLines[0], 'receivedAt,timestamp,type,deployVersion,appName,route,url,sessionId,message,severity,referrer,id,data');
    assert.is(csvLines.length, 1 + 2, 'the clicks of the last 7 days');
    assert.ok(csvLines.slice(1).every((l) => l.split(',')[2] === 'click'));
    assert.ok(csvLines.some((l) => l.includes('"{""text"":""Buy, \\""now\\""""}"')), 'quotes and commas inside a cell are quoted');
    noProblems();
  });

  test('the breakdown tables and the web-vitals panel show what the API answers for the chosen range; a table downloads as CSV', async () => {
    const { page, statsRequests } = await open('/dashboard', undefined, BD_USER);
    const rows = (selector: string) => page.locator(selector).evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    const n = (x: number) => x.toLocaleString('en-US');
    const tables = [['pages', 'Top pages'], ['referrers', 'Referrers'], ['browsers', 'Browsers'], ['os', 'Operating systems'], ['devices', 'Device types'], ['versions', 'App versions'],
      ['environments', 'Environments'], ['utmSources', 'Campaign sources'], ['utmMediums', 'Campaign mediums'], ['utmCampaigns', 'Campaigns'],
      ['countries', 'Countries'], ['customEvents', 'Custom events']] as const;
    // Countries by name in the browser's language (en-US here), not by code.
    const countryNames: Record<string, string> = { DE: 'Germany', AU: 'Australia', unknown: 'Unknown' };
    const empty: Record<string, string> = { utmSources: 'No page loads with utm_source in this range.', utmMediums: 'No page loads with utm_medium in this range.',
      utmCampaigns: 'No page loads with utm_campaign in this range.', customEvents: 'No custom events in this range.' };
    const seen = new Set<string>();
    for (const label of ['24 hours', '7 days', '30 days']) {
      await choose(page, label);
      const { url } = await currentStats(statsRequests);
      const stats = await api<Stats>(url.pathname + url.search, BD_USER);
      const b = stats.breakdowns!;
      for (const [key] of tables) {
        const want = b[key]!.map((r) => [key === 'countries' ? countryNames[r.name] : r.name, n(r.events), n(r.sessions), ...('p75' in r ? [r.p75 === null ? '—' : n(r.p75 as number)] : [])]);
        assert.equal(await rows(`.panel-bd-${key} tbody tr`), want.length ? want : [[empty[key]]], `${label}: ${key}`);
        seen.add(`${key}:${want.length}`);
      }
      for (const name of ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'] as const) {
        const m = stats.vitals!.metrics[name];
        const tile = page.locator(`.vitals [data-vital=${name}]`);
        const value = m.p75 === null ? '–' : name === 'CLS' ? m.p75.toFixed(3) : `${n(m.p75)} ms`;
        assert.is(await tile.locator('.vital-value').textContent(), value, `${label}: ${name} p75`);
        const [good, poor] = { LCP: [2500, 4000], INP: [200, 500], CLS: [0.1, 0.25], FCP: [1800, 3000], TTFB: [800, 1800] }[name];
        const rating = m.p75 === null ? 'No data' : m.p75 <= good ? 'Good' : m.p75 > poor ? 'Poor' : 'Needs improvement';
        assert.is(await tile.locator('.vital-rating').textContent(), rating, `${label}: ${name} rated in words`);
      }
      const pages = stats.vitals!.pages.map((p) => p.name);
      assert.equal((await rows('.panel-vitals tbody tr')).map((r) => r[0]), pages.length ? pages : ['No web vitals in this range.']);
    }
    // The ranges showed different rows: 24 hours has one browser, 30 days two.
    assert.ok(seen.has('browsers:1') && seen.has('browsers:2') && seen.has('referrers:3'), [...seen].join(' '));
    assert.ok(seen.has('utmSources:0') && seen.has('utmSources:1') && seen.has('utmSources:2') && seen.has('countries:3'), [...seen].join(' '));
    // 30 days, by hand: the countries by name, the custom events by whichever field named them.
    assert.equal(await rows('.panel-bd-countries tbody tr'), [['Unknown', '7', '2'], ['Australia', '5', '1'], ['Germany', '2', '1']]);
    assert.equal(await rows('.panel-bd-customEvents tbody tr'), [['signup', '2', '2'], ['share', '1', '1']]);
    assert.equal(await rows('.panel-bd-utmCampaigns tbody tr'), [['spring', '1', '1'], ['winter', '1', '1']]);
    // The fixture's numbers, checked by hand for 30 days: LCP 5200, 3100 and 1800 → p75 5,200 ms, poor.
    assert.is(await page.locator('.vitals [data-vital=LCP] .vital-value').textContent(), '5,200 ms');
    assert.equal(await rows('.panel-bd-referrers tbody tr'), [['direct', '2', '2'], ['https://news.example', '2', '2'], ['https://search.example', '1', '1']],
      'referrers reduced to their origin; equal counts by name');

    const download = page.waitForEvent('download');
    await page.locator('[data-csv="top pages"]').click();
    const file = await download;
    assert.is(file.suggestedFilename(), 'watchtower-top-pages.csv');
    const lines = readFileSync((await file.path())!, 'utf8').trimEnd().split('\r\n');
    assert.equal(lines, ['Page,Views,Sessions,p75 load ms', '/,3,3,400', '/old,1,1,900', '/pricing,1,1,700']);
    noProblems();
  });

  test('readable at 375 px: nothing wider than the screen', async () => {
    const { page } = await open('/dashboard?range=30d', { width: 375, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no horizontal scrolling at 375 px (${overflow} px too wide)`);
    noProblems();
  });

  // Last: it adds events to the user.
  test('nothing moves when data arrives: first render, then a live refresh of a range that ends now', async () => {
    // A tall window, so that every panel is in view and any shift counts.
    const { page } = await open('/dashboard?range=24h', { width: 1280, height: 2600 });
    await page.locator('.status-ok').waitFor();
    assert.is(await page.evaluate(() => (window as unknown as { __shift: number }).__shift), 0, 'no layout shift on the first render');
    const r = await send('POST', '/api/events', { body: { events: [
      { type: 'click', userId: USER, sessionId: 'live' },
      { type: 'error', userId: USER, sessionId: 'live', deployVersion: '1.0', message: 'live failure' },
      { type: 'pageload', userId: USER, sessionId: 'live', route: '/a', data: { duration: 40 } },
    ] } });
    assert.is(r.status, 200);
    // The feed shows them at once; the numbers follow within the 2 s refresh.
    await page.locator('.feed-item[data-type=error]').waitFor();
    await page.waitForFunction(() => document.querySelector('[data-kpi=totalEvents]')!.textContent === '6', undefined, { timeout: 10_000 });
    await settled(page);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    assert.is(await page.evaluate(() => (window as unknown as { __shift: number }).__shift), 0, 'no layout shift when the live refresh redraws');
    noProblems();
  });

  test.run();
}
