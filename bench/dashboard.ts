// `npm run bench:dashboard`: the first render of the dashboard in headless Chromium for a user with
// 1,000,000 events (BENCH_EVENTS) received over the last 60 days, with the 30-day range (so the
// page asks for ~500k events' statistics and the ~500k of the 30 days before for the comparison).
// Two deployments hold the same events: the sqlite store (filled through the store with its clock
// following the events, then served by server.ts as in production), and the memory store, which
// answers ranges from rollups (in this process, filled the same way, capacity raised to hold them). Each round opens a fresh browser context
// (cold page cache) and reads the Performance API: the `dashboard-rendered` mark (numbers on
// screen, from navigation start), the largest contentful paint, the layout shifts, and the
// resource timing of the stats requests. Baseline, in the same run: the same page for a user with
// no events. Target: first render under 1 s at 1M. Also the cost of the breakdowns and web vitals
// to a 30-day stats request (with and without them, same rollups). BENCH_DEPLOYMENTS=memory leaves
// the sqlite deployment out. Writes section bench:dashboard of BENCHMARKS.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFiles } from '../lib/adapter/node.ts';
import { createHandler } from '../lib/handler.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { buildPages, DEV_CONFIG_SCRIPT, serveHandler } from '../test/helpers/pages.ts';
import { NO_RECENTS } from '../lib/live-window.ts';
import { assembleStats, planStats } from '../lib/rollup/assemble.ts';
import { rollupRow } from '../lib/rollup/hour.ts';
import { UserRollups } from '../lib/rollup/user.ts';
import { historyEvent, USERS_PREFIX } from './history-data.ts';
import { machine, median, spread, start, writeSection } from './lib.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const DAYS = 60;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const STATS_ROUNDS = 15;
const BATCH = 500;
const DAY = 86_400_000;
const USER = USERS_PREFIX + '0';
const EMPTY = 'bench-empty-user';

const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-dashboard-'));
const path = join(dir, 'watchtower.sqlite');

// 1. The stores: TOTAL events of one user, evenly over DAYS days ending now.
const end = Date.now();
const begin = end - DAYS * DAY;
let clock = begin;
async function fill(store: Store, label: string) {
  const t0 = performance.now();
  const step = (end - begin) / TOTAL;
  for (let at = 0; at < TOTAL; at += BATCH) {
    const batch = [];
    for (let i = at; i < Math.min(TOTAL, at + BATCH); i++) batch.push(historyEvent(i, Math.floor(begin + i * step), 1));
    clock = Math.floor(begin + Math.min(TOTAL, at + BATCH) * step);
    await store.insert(batch);
    if (at % 200_000 === 0) console.log(`  ${label}: loaded ${at.toLocaleString()} events`);
  }
  console.log(`${label}: loaded ${TOTAL.toLocaleString()} events in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
// BENCH_DEPLOYMENTS=memory leaves the sqlite deployment out (its fill takes most of the run).
const withSqlite = (process.env.BENCH_DEPLOYMENTS ?? 'sqlite,memory').split(',').includes('sqlite');
if (withSqlite) {
  const sqlite = await openSqliteStore({ path, retentionDays: 90, maxEvents: TOTAL * 2, log: () => {}, now: () => clock });
  await fill(sqlite, 'sqlite');
  await sqlite.close();
}
const memory = createMemoryStore({ capacity: TOTAL * 2 });
await fill(memory, 'memory');

// 1b. What the breakdowns cost a stats request: the memory store's answer for the last 30 days
// (its rollups, its live window), and the assembly alone over the same rollups, built here the way
// the memory store builds them, with and without the breakdowns and vitals.
const statsRange = { from: end - 30 * DAY, to: end };
const timed = async (f: () => unknown) => {
  const ms: number[] = [];
  for (let r = 0; r < STATS_ROUNDS; r++) {
    const t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  return ms;
};
const own = new UserRollups();
for (let i = 0; i < TOTAL; i++) own.add(rollupRow(historyEvent(i, Math.floor(begin + (i * (end - begin)) / TOTAL), 1)));
const plan = planStats(end, statsRange, end);
const assemble = (breakdowns: boolean) => assembleStats({ plan, rollups: own, edges: [], recents: NO_RECENTS, breakdowns });
const statsTimes = {
  store: await timed(() => memory.stats(USER, end, statsRange)),
  with: await timed(() => assemble(true)),
  without: await timed(() => assemble(false)),
};
console.log(`stats p50, 30 days: memory store ${median(statsTimes.store).toFixed(1)} ms; assembly with breakdowns ${median(statsTimes.with).toFixed(1)} ms, without ${median(statsTimes.without).toFixed(1)} ms`);

// 2. The server as in production, on that database.
buildPages();
const server = !withSqlite ? null : await start(process.execPath, ['--import', 'tsx', 'server.ts'], {
  SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: path, SERVICE_RETENTION_DAYS: '90', SERVICE_MAX_EVENTS: String(TOTAL * 2), SERVICE_RATE_LIMIT: '0',
});
const inProcess = await serveHandler(createHandler({ store: memory, files: nodeFiles, log: () => {} }));
const browser = await launchChromium();

interface Round { rendered: number; lcp: number; cls: number; stats: number; total: string }

async function firstRender(origin: string, user: string, query: string): Promise<Round> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ctx.route('**/assets/config.js', (route) => route.fulfill({ status: 200, contentType: 'application/javascript', body: DEV_CONFIG_SCRIPT }));
  await ctx.addInitScript((id) => {
    localStorage.setItem('service_idp_user_id', id);
    // Observed from the start, so the shifts and paints of the first render are all counted.
    const w = window as unknown as { __cls: number; __lcp: number };
    w.__cls = 0;
    w.__lcp = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as (PerformanceEntry & { value: number; hadRecentInput: boolean })[]) if (!e.hadRecentInput) w.__cls += e.value;
    }).observe({ type: 'layout-shift', buffered: true });
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__lcp = Math.max(w.__lcp, e.startTime);
    }).observe({ type: 'largest-contentful-paint', buffered: true });
  }, user);
  const page = await ctx.newPage();
  await page.goto(`${origin}/dashboard${query}`);
  await page.waitForFunction(() => performance.getEntriesByName('dashboard-rendered').length > 0, undefined, { timeout: 60_000 });
  // Two frames, so the paint of the first render has happened and been reported.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const round = await page.evaluate(() => {
    const w = window as unknown as { __cls: number; __lcp: number };
    const stats = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/stats')) as PerformanceResourceTiming[];
    return {
      rendered: performance.getEntriesByName('dashboard-rendered')[0]!.startTime,
      lcp: w.__lcp,
      cls: w.__cls,
      // The range's own request, the first one sent (the period before's follows it).
      stats: stats.length ? stats[0]!.responseEnd - stats[0]!.requestStart : 0,
      total: document.querySelector('[data-kpi=totalEvents]')!.textContent ?? '',
    };
  });
  // The comparison with the period before is asked for after the first render: let it finish, so
  // that the next round does not queue behind it on the server.
  await page.locator('.grid[aria-busy=false]').waitFor({ timeout: 120_000 });
  await ctx.close();
  return round;
}

const pages = [
  { name: 'baseline: a user with no events, last 30 days', user: EMPTY, query: '?range=30d' },
  { name: 'last 30 days', user: USER, query: '?range=30d' },
  { name: 'last 7 days', user: USER, query: '' },
  { name: 'all (no range)', user: USER, query: '?range=all' },
];
const deployments = [
  ...(server ? [{ name: 'sqlite (server.ts)', origin: server.url }] : []),
  { name: 'memory, rollups (in-process handler)', origin: inProcess.url },
];
const results = new Map<string, Round[]>();
const key = (d: string, p: string) => `${d} · ${p}`;
try {
  for (const d of deployments) {
    // Warm-up: the server's first requests load what it caches; the browser compiles the bundles.
    for (const p of pages) await firstRender(d.origin, p.user, p.query);
    for (let r = 0; r < ROUNDS; r++) {
      for (const p of pages) {
        const round = await firstRender(d.origin, p.user, p.query);
        const k = key(d.name, p.name);
        results.set(k, [...(results.get(k) ?? []), round]);
        console.log(`  ${k}: rendered at ${round.rendered.toFixed(0)} ms (stats ${round.stats.toFixed(0)} ms, CLS ${round.cls.toFixed(3)}, total ${round.total})`);
      }
    }
  }
} finally {
  await browser.close();
  await server?.stop();
  await inProcess.close();
  rmSync(dir, { recursive: true, force: true });
}

const rows: string[] = [];
const targets: string[] = [];
for (const d of deployments) {
  const base = median(results.get(key(d.name, pages[0]!.name))!.map((r) => r.rendered));
  for (const p of pages) {
    const rs = results.get(key(d.name, p.name))!;
    const rendered = rs.map((r) => r.rendered);
    rows.push(`| ${d.name} | ${p.name} | ${spread(rendered)} ms | ${(median(rendered) / base).toFixed(2)}× | ${spread(rs.map((r) => r.lcp))} ms | ${spread(rs.map((r) => r.stats))} ms | ${Math.max(...rs.map((r) => r.cls)).toFixed(3)} | ${rs[0]!.total} |`);
  }
  const t = median(results.get(key(d.name, pages[1]!.name))!.map((r) => r.rendered));
  targets.push(`${d.name}: ${t.toFixed(0)} ms, ${t < 1000 ? 'met' : 'not met'}`);
}
writeSection('dashboard', `## Dashboard first render

\`npm run bench:dashboard\` — headless Chromium against a user with ${TOTAL.toLocaleString('en-US')} events received evenly over the last ${DAYS} days, held by ${server ? 'two deployments: server.ts on the sqlite store (the database filled through the store beforehand), and' : 'one deployment (BENCH_DEPLOYMENTS=memory: the sqlite store was left out of this run):'} the fetch handler in the bench process on the memory store with its capacity raised to hold them (it answers ranges from rollups). Each round opens the signed-in dashboard in a fresh browser context and reads the Performance API: "rendered" is the \`dashboard-rendered\` mark the page sets once its first numbers are on screen (from navigation start, once the range's statistics and its latest 50 events are drawn; the comparison with the period before is asked for then and fills in after; each round waits for it before the next, so no request queues behind another round's), LCP the largest contentful paint, "stats" the range's stats request (request start to response end), CLS the layout shifts without input up to then. Medians of ${ROUNDS} rounds with (min–max), after one warm-up round per deployment; the ratio is against the baseline, the same page for a user without events on the same deployment, measured in the same run. Target: first render under 1 s with the 30-day range — ${targets.join('; ')}. ${machine()}.

| deployment | range | rendered | vs baseline | LCP | stats request | CLS (max) | events shown |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}

What the breakdowns and web vitals cost a stats request for the last 30 days (~500k events; every
event has a client and a version, page loads a referrer, performance events a vital), medians of
${STATS_ROUNDS} calls with (min–max), in the bench process: the memory store's whole answer, and
\`assembleStats\` alone over the same rollups built the memory store's way, with and without them
(the ratio is the cost of the breakdowns).

| measured | with breakdowns | without | ratio |
|---|---|---|---|
| memory store \`stats()\`, 30 days | ${spread(statsTimes.store, 1)} ms | – | – |
| \`assembleStats\` over the rollups, 30 days | ${spread(statsTimes.with, 1)} ms | ${spread(statsTimes.without, 1)} ms | ${(median(statsTimes.with) / median(statsTimes.without)).toFixed(2)}× |
`);
console.log(targets.join('\n'));
