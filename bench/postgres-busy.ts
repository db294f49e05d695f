// PostgreSQL statistics on busy days, loaded the way users send events: BENCH_EVENTS (5,000,000)
// events of one user through POST /api/events in batches of 50, over BENCH_DAYS (90) days in
// daily rushes, three of those days with BENCH_BUSY (300,000) events received within a minute:
// 60 days ago, 30 days ago and today (still open). Past days are sent through the handler in
// this process with its clock moved back; then a server process (`server.ts`) opens the database,
// compacts the closed days at start, and receives today's burst over HTTP. Reads go over HTTP to
// that server: ranged statistics with breakdowns and vitals (`from` = now − 30 days to the
// millisecond, so that its edge hour is the busy hour of 30 days ago; `from` in the middle of
// that burst; the last hour; 7 days by day) and all time, right after the burst and again after
// BENCH_SETTLE_S (60) s of background work. The server's RSS is read from /proc after each.
// Closed busy days before compaction are measured in this process, before the server starts.
// BENCH_KEEP_DB=1 keeps the database, for EXPLAIN, and a copy of it as the server found it
// (`<name>_loaded`), which bench:postgres-burst-memory replays today's burst on.
import postgres from 'postgres';
import { createHandler } from '../lib/handler.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { createTestDatabase } from '../test/helpers/postgres.ts';
import { AGENTS, BATCH, CONCURRENCY, HEADERS, send, VITALS } from './busy-data.ts';
import { machine, median, npmStart, start, writeSection } from './lib.ts';
import { rssOf } from './proc.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 5_000_000);
const BUSY = Number(process.env.BENCH_BUSY ?? 300_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 90);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const SETTLE_S = Number(process.env.BENCH_SETTLE_S ?? 60);
const MIN = 60_000, HOUR = 3_600_000, DAY = 86_400_000;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];
const f1 = (n: number) => n.toFixed(1);
const int = (n: number) => Math.round(n).toLocaleString('en-US');

/** p50 and p95 of `runs` answers to `path` after one warm-up; every answer must be 200. */
async function timed(get: (path: string) => Promise<Response>, path: string, runs = RUNS): Promise<{ p50: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t = performance.now();
    const res = await get(path);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
    if (i > 0) times.push(performance.now() - t);
  }
  return { p50: median(times), p95: pct(times, 95) };
}

// --- Load -------------------------------------------------------------------------------------

const t0 = Date.now();
const today = Math.floor(t0 / DAY);
// The bursts of past days are at ten past the hour of this moment's time of day, so that "now −
// 30 days" computed when the reads begin falls in the same hour, after the burst.
const burstAt = (daysAgo: number) => Math.floor((t0 - daysAgo * DAY) / HOUR) * HOUR + 10 * MIN;
const BUSY_DAYS = [60, 30];
const db = await createTestDatabase();
console.log(`database ${db.name}; ${int(TOTAL)} events, ${int(BUSY)} a busy day`);
let clock = 0;
// The loading store also reads the closed busy days before compaction (below), which takes seconds
// per read on a slow machine: a longer operation timeout than a service's keeps that diagnostic
// from stopping the whole run.
const loadStore = await openPostgresStore({ url: db.url, log: (m) => console.log(`[load] ${m}`), operationTimeoutMs: 300_000 });
const loadHandler = createHandler({ store: loadStore, records: createMemoryRecords(), now: () => clock, rateLimit: { rate: 0, burst: 0 }, log: () => {}, monitoring: { processEveryMs: 3_600_000 } });
const viaHandler = async (at: number, agent: string, body: string) => {
  clock = at;
  const res = (await loadHandler(new Request('http://watchtower.test/api/events', { method: 'POST', headers: { ...HEADERS, 'user-agent': agent }, body })))!;
  if (res.status !== 202 && res.status !== 200) throw new Error(`ingest ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
};
// Every day but the busy ones: its share of the rest in rushes, most of it in its busiest hour.
const background = TOTAL - BUSY * (BUSY_DAYS.length + 1);
const perDay = Math.floor(background / (DAYS + 1));
const loadStart = performance.now();
for (let d = DAYS; d >= 0; d--) {
  const dayStart = (today - d) * DAY;
  if (BUSY_DAYS.includes(d)) {
    await send(BUSY, burstAt(d), burstAt(d) + MIN, viaHandler);
    continue;
  }
  // Today's rushes end before now (the burst comes later, over HTTP).
  const end = d === 0 ? t0 - 2 * MIN : dayStart + DAY;
  const peak = dayStart + Math.floor((end - dayStart) * 0.6);
  await send(Math.floor(perDay * 0.4), peak, Math.min(end, peak + 20 * MIN), viaHandler);
  await send(perDay - Math.floor(perDay * 0.4), dayStart, end, viaHandler);
}
const loadSeconds = (performance.now() - loadStart) / 1000;
console.log(`past days loaded in ${f1(loadSeconds)} s`);

// Closed busy days before compaction, in this process (its store compacts only hourly).
const inProcess = (path: string) => loadHandler(new Request(`http://watchtower.test${path}`, { headers: HEADERS }));
const iso = (ms: number) => new Date(ms).toISOString();
clock = Date.now();
// Seconds a read before compaction: fewer runs than the server's reads.
const UNCOMPACTED_RUNS = Math.min(RUNS, 5);
const uncompacted = {
  month: await timed(inProcess, `/api/stats?from=${iso(Date.now() - 30 * DAY)}`, UNCOMPACTED_RUNS),
  midBurst: await timed(inProcess, `/api/stats?from=${iso(burstAt(30) + 30_000)}`, UNCOMPACTED_RUNS),
  all: await timed(inProcess, '/api/stats', UNCOMPACTED_RUNS),
};
await loadHandler.close();
await loadStore.close();
// A service that took these days as they came compacted each an hour after it closed; here the
// loading process does it at once, so the server starts as such a service restarts. (A server
// starting over months of uncompacted days does it at start, and its memory peaks then: that is
// measured with BENCH_COMPACT_AT_START=1.)
const compactStart = performance.now();
if (process.env.BENCH_COMPACT_AT_START !== '1') {
  const loader = postgres(db.url, { max: 1, onnotice: () => {} });
  await compactClosedDays(loader, Date.now());
  await loader.end();
}
const compactedBy = process.env.BENCH_COMPACT_AT_START === '1' ? 'the server, at its start' : 'the loading process, before the server started (as a running service does each day an hour after it closes)';

// --- The server, then today's burst over HTTP --------------------------------------------------
if (process.env.BENCH_KEEP_DB === '1') {
  // Nothing is connected to it now: the copy is the database as the server finds it.
  await db.admin.unsafe(`create database ${db.name}_loaded template ${db.name}`);
}

// Started as `npm start` starts it (README, "Requirements"): glibc's malloc hands big blocks back
// to the system, and V8 collects before its heap is half again what was live.
const asStarted = npmStart();
const server = await start(process.execPath, [...asStarted.flags, '--import', 'tsx', 'server.ts'],
  { SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url, SERVICE_RATE_LIMIT: '0', SERVICE_RETENTION_DAYS: '0', ...asStarted.env });
const admin = postgres(db.url, { max: 1, onnotice: () => {} });
for (;;) {
  const [{ left }] = await admin<{ left: number }[]>`
    select count(*)::int as left from watchtower_event_days where day < ${Math.floor((Date.now() - COMPACT_AFTER_MS) / DAY)} and (compacted is null or events > moved)`;
  if (left === 0) break;
  await new Promise((r) => setTimeout(r, 500));
}
const compactSeconds = (performance.now() - compactStart) / 1000;
console.log(`closed days compacted in ${f1(compactSeconds)} s`);
const get = (path: string) => fetch(server.url + path, { headers: HEADERS });
const reads = () => ({
  month: `/api/stats?from=${iso(Date.now() - 30 * DAY)}`,
  midBurst: `/api/stats?from=${iso(burstAt(30) + 30_000)}`,
  hour: `/api/stats?from=${iso(Date.now() - HOUR)}`,
  week: `/api/stats?from=${iso(Date.now() - 7 * DAY)}&interval=day`,
  all: '/api/stats',
});
type Reads = Record<keyof ReturnType<typeof reads>, { p50: number; p95: number }>;
const measure = async (): Promise<Reads> => {
  const paths = reads();
  const out = {} as Reads;
  for (const key of Object.keys(paths) as (keyof Reads)[]) out[key] = await timed(get, paths[key]);
  return out;
};
const before = await measure();
const rssBefore = rssOf(server.child.pid!);
const burstStart = performance.now();
await send(BUSY, 0, 0, async (_at, agent, body) => {
  const res = await fetch(server.url + '/api/events', { method: 'POST', headers: { ...HEADERS, 'user-agent': agent }, body });
  if (res.status !== 202 && res.status !== 200) throw new Error(`ingest ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
});
const burstSeconds = (performance.now() - burstStart) / 1000;
console.log(`today's burst of ${int(BUSY)} in ${f1(burstSeconds)} s`);
const atOnce = await measure();
const rssAtOnce = rssOf(server.child.pid!);
await new Promise((r) => setTimeout(r, SETTLE_S * 1000));
const settled = await measure();
const rssSettled = rssOf(server.child.pid!);
await server.stop();
const bytes = (await admin<{ bytes: string }[]>`select pg_database_size(current_database())::text as bytes`)[0].bytes;
await admin.end();
if (process.env.BENCH_KEEP_DB === '1') console.log(`kept database ${db.url}, and ${db.name}_loaded as the server found it`);
else await db.drop();

// --- Report ------------------------------------------------------------------------------------

const cell = (m: { p50: number; p95: number }) => `${f1(m.p50)} ms (p95 ${f1(m.p95)})`;
const rows: [string, keyof Reads][] = [
  ['`from` = now − 30 days (edge hour: the busy hour of 30 days ago, after its burst)', 'month'],
  ['`from` in the middle of the burst of 30 days ago', 'midBurst'],
  ['`from` = now − 1 hour', 'hour'],
  ['`from` = now − 7 days, `interval=day`', 'week'],
  ['all time', 'all'],
];
const md = `## PostgreSQL statistics on busy days

\`npm run bench:postgres-busy\` (BENCH_EVENTS=${TOTAL}, BENCH_BUSY=${BUSY}). ${machine()}. PostgreSQL on the same two cores, default settings; the machine is shared, so compare rows of one run.

${int(TOTAL)} events of one user, sent as users send them: \`POST /api/events\` in batches of ${BATCH} (one visitor's session each, one of ${AGENTS.length} browsers, ${VITALS.length} web vitals, up to 40 routes), ${CONCURRENCY} requests in flight. ${DAYS} days of daily rushes (${int(perDay)} events a day, 40% of them within 20 minutes), and ${int(BUSY)} events within a minute on three days: 60 and 30 days ago (sent through the handler in process with its clock moved back: ${f1(loadSeconds)} s for the past days) and today, sent over HTTP to the server (${f1(burstSeconds)} s). The closed days were compacted by ${compactedBy}, in ${f1(compactSeconds)} s. Every read is \`GET /api/stats\` over HTTP (breakdowns and vitals included with a range), ${RUNS} runs after a warm-up.

| read | before today's burst | right after it | after ${SETTLE_S} s of background work | target |
|---|---|---|---|---|
${rows.map(([label, key]) => `| ${label} | ${cell(before[key])} | ${cell(atOnce[key])} | ${cell(settled[key])} | < 50 ms (< 100 ms right after) |`).join('\n')}

Closed busy days before compaction (in the loading process, before the server started; ${UNCOMPACTED_RUNS} runs after a warm-up): \`from\` = now − 30 days ${cell(uncompacted.month)}, \`from\` mid-burst ${cell(uncompacted.midBurst)}, all time ${cell(uncompacted.all)}.

Server memory: RSS ${int(rssBefore.rss)} MiB before the burst, ${int(rssAtOnce.rss)} MiB right after it and its reads, ${int(rssSettled.rss)} MiB after the settled reads (peak ${int(rssSettled.peak)} MiB); target < 250 MiB. Database size: ${int(Number(bytes) / 2 ** 20)} MiB.
`;
console.log(md);
writeSection('postgres-busy', md);
