// `npm run bench:history`: the sqlite store holding months of history. Loads BENCH_EVENTS
// (20,000,000) events for a handful of users spread over 90 days, the store's clock injected so
// that sealing and retention see the time the events say, then measures what a user of the
// dashboard and an operator notice: memory, start-up, statistics and paging over ranges, how long
// a read waits while the store seals or drops a segment, disk per event, and a burst of 1,000,000
// events within 5 minutes. Figures go to BENCHMARKS.md (section bench:history) when the full
// 20M run finishes. BENCH_EVENTS, BENCH_USERS (5), BENCH_DAYS (90), BENCH_ROUNDS (3),
// BENCH_BURST (1,000,000), BENCH_REPLAY_EVENTS (100,000) scale it down for a quick look.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredEvent } from '../lib/event.ts';
import { createHandler } from '../lib/handler.ts';
import { DEFAULT_DEDUPE_DAYS } from '../lib/store/defaults.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { ThreadMemory } from '../lib/store/sqlite/protocol.ts';
import type { Store } from '../lib/store/types.ts';
import { machine, median, spread, writeSection } from './lib.ts';
import { historyEvent, USERS_PREFIX } from './history-data.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 20_000_000);
const USERS = Number(process.env.BENCH_USERS ?? 5);
const DAYS = Number(process.env.BENCH_DAYS ?? 90);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BURST = Number(process.env.BENCH_BURST ?? 1_000_000);
const REPLAY = Number(process.env.BENCH_REPLAY_EVENTS ?? 100_000);
const BATCH = 500;
const IN_FLIGHT = 4;
const DAY = 86_400_000;
const REQUESTS = 50;

const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-history-'));
const path = join(dir, 'watchtower.sqlite');
const log = (m: string) => console.log(`  [store] ${m}`);
const mib = (b: number) => (b / 1048576).toFixed(0);
const f1 = (n: number) => n.toFixed(1);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
let peakRss = 0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);

// The clock the store sees: it follows the events being loaded, then stands at the end of the span.
const end = Date.UTC(2026, 10, 1);
const begin = end - DAYS * DAY;
let clock = begin;
const openStore = () => openSqliteStore({ path, retentionDays: DAYS, log, now: () => clock });

/** The health's memory figures in MiB: each thread's heap and what it holds outside it. */
function memoryParts(memory: unknown): string {
  const { rssBytes, main, worker } = memory as { rssBytes: number; main: ThreadMemory; worker: ThreadMemory };
  const known = main.heapTotalBytes + main.externalBytes + worker.heapTotalBytes + worker.externalBytes;
  return `main heap ${mib(main.heapUsedBytes)} used of ${mib(main.heapTotalBytes)}, outside it ${mib(main.externalBytes)}; ` +
    `worker heap ${mib(worker.heapUsedBytes)} used of ${mib(worker.heapTotalBytes)}, outside it ${mib(worker.externalBytes)} (database files, sql.js's memory); ` +
    `the rest (the runtime) ${mib(rssBytes - known)} MiB`;
}

const makeBatch = (start: number, stop: number, from: number, step: number, first: number) => {
  const batch = [];
  for (let i = start; i < stop; i++) batch.push(historyEvent(first + i, Math.floor(from + i * step), USERS));
  return batch;
};

/** The batches `load` would generate on the way, made beforehand (see readsWhileSealing). */
function prepare(count: number, from: number, to: number, first: number) {
  const step = (to - from) / count;
  return Array.from({ length: Math.ceil(count / BATCH) }, (_, k) => makeBatch(k * BATCH, Math.min(count, (k + 1) * BATCH), from, step, first));
}

/**
 * Loads `count` events received evenly from `from` to `to`, in batches, a few in flight: as fast
 * as the store takes them, or `rate` events a second (each batch sent no sooner than its turn).
 * The batches are generated on the way unless `made` holds them (from prepare).
 */
async function load(store: Store, count: number, from: number, to: number, first: number, rate = Infinity, made?: StoredEvent[][]): Promise<number> {
  const t0 = performance.now();
  const step = (to - from) / count;
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const at = next;
      next = Math.min(count, next + BATCH);
      const due = t0 + (at / rate) * 1000 - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      const k = at / BATCH;
      const batch = made ? made[k] : makeBatch(at, next, from, step, first);
      if (made) made[k] = [];
      clock = Math.max(clock, Math.floor(from + next * step));
      await store.insert(batch);
      if (at % 1_000_000 < BATCH) console.log(`  loaded ${(first + at).toLocaleString()} (${mib(process.memoryUsage().rss)} MiB RSS)`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return (performance.now() - t0) / 1000;
}

async function timed(fn: () => Promise<unknown>, n = REQUESTS): Promise<number[]> {
  await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

function diskBytes(): number {
  let total = 0;
  for (const name of readdirSync(dir)) total += statSync(join(dir, name)).size;
  return total;
}

console.log(`bench:history — ${TOTAL.toLocaleString()} events, ${USERS} users, ${DAYS} days, in ${dir}`);
let store = await openStore();
let handler = createHandler({ store, log: () => {}, now: () => clock });
const user = `${USERS_PREFIX}0`;
const get = async (p: string) => {
  const res = await handler(new Request('http://bench.test' + p, { headers: { 'x-idp-user-id': user } }));
  if (res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  return res.text();
};

// 1. The load, oldest first, the clock following it.
const loadSeconds = await load(store, TOTAL, begin, end - 60_000, 0);
const peakLoad = peakRss;
await store.flush();
const loadedHealth = await store.health();
const held = loadedHealth.eventCount;
// What deduplication holds after the load: 8-byte hashes of the keys of sealed segments within
// the dedupe window, and the hot segment's ids exactly.
const { dedupeFilterBytes, hotEvents } = loadedHealth.segments as { dedupeFilterBytes: number; hotEvents: number };
const disk = diskBytes();
globalThis.gc?.();
await new Promise((r) => setTimeout(r, 1000));
const rssLoaded = process.memoryUsage().rss;
const memoryLoaded = memoryParts((await store.health()).memory);
console.log(`loaded ${held.toLocaleString()} in ${loadSeconds.toFixed(0)} s; ${mib(disk)} MiB on disk; RSS ${mib(rssLoaded)} MiB`);

// 2. Reads through the real handler, in-process.
const iso = (t: number) => new Date(t).toISOString();
const statsAll = await timed(() => get('/api/stats'));
const stats30 = await timed(() => get(`/api/stats?from=${iso(clock - 30 * DAY)}&to=${iso(clock)}`));
// The dashboard's comparison: the 30 days before the last 30, in whole hours as the dashboard asks
// (pages/src/lib/range.ts). It ends in the past, so the live window cannot answer its recents.
const hourEnd = Math.ceil(clock / 3_600_000) * 3_600_000;
const statsPrevious = await timed(() => get(`/api/stats?from=${iso(hourEnd - 60 * DAY)}&to=${iso(hourEnd - 30 * DAY)}`));
const newest = await timed(() => get('/api/events?limit=100'));
const back60 = await timed(() => get(`/api/events?limit=100&until=${iso(clock - 60 * DAY)}`));
// Type filters walk the user's rows (segments keep no index by type): one type in 13 here.
const newestErrors = await timed(() => get('/api/events?limit=100&type=error'));

// 3. How long a read waits while the store seals a segment and retention drops one: reads in a
// loop while a day's worth of events arrives and the clock crosses into a new day. Twice: with
// the events loaded as fast as the store takes them, where a read also waits for every event
// acknowledged before it (read-your-writes) to be applied, and at half that rate.
const perDay = Math.round(TOTAL / DAYS);
let loaded = TOTAL;
async function readsWhileSealing(rate = Infinity): Promise<{ waits: number[]; seconds: number }> {
  // Generated before the reads start: generating 4 batches of 500 at a time on the way held the
  // main thread, which also answers the reads, for 25–80 ms at a stretch (in a timed run the
  // slowest reads matched those stalls, not the worker's messages).
  const made = prepare(perDay, clock, clock + DAY, loaded);
  const waits: number[] = [];
  let reading = true;
  const reader = (async () => {
    for (let i = 0; reading; i++) {
      const t = performance.now();
      await get(i % 2 ? '/api/stats' : '/api/events?limit=100');
      waits.push(performance.now() - t);
    }
  })();
  const seconds = await load(store, perDay, clock, clock + DAY, loaded, rate, made);
  clock += 2 * DAY;
  await load(store, BATCH, clock - 1000, clock, loaded + perDay);
  loaded += perDay + BATCH;
  await new Promise((r) => setTimeout(r, 5000));
  reading = false;
  await reader;
  return { waits, seconds };
}
const saturated = await readsWhileSealing();
const halfRate = Math.round(perDay / saturated.seconds / 2);
const paced = await readsWhileSealing(halfRate);

// 4. A burst: BURST events received within 5 minutes, then the dashboard refreshes.
clock += DAY;
const burstSeconds = await load(store, BURST, clock - 5 * 60_000, clock, loaded);
const burstStats = await timed(() => get('/api/stats'));
// After reads that opened old segments and a seal that swapped the hot one: what the cache's
// budget and sql.js's grown heap keep.
globalThis.gc?.();
await new Promise((r) => setTimeout(r, 1000));
const rssRead = process.memoryUsage().rss;
const memoryRead = memoryParts((await store.health()).memory);
await store.close();

// 5. Start-up with a journal of REPLAY events: a child process appends them and dies without closing.
const startups: number[] = [];
const replayed: number[] = [];
/** The first reads after each start-up, while the replayed rows are still being written. */
const firstStats: number[] = [];
const firstPage: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/history-crash.ts'], {
      env: { ...process.env, HISTORY_DB: path, HISTORY_EVENTS: String(REPLAY), HISTORY_NOW: String(clock), HISTORY_USERS: String(USERS), HISTORY_DAYS: String(DAYS) },
      stdio: 'inherit',
    });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`journal writer exited ${code}`))));
  });
  const t0 = performance.now();
  store = await openStore();
  startups.push(performance.now() - t0);
  replayed.push(((await store.health()).startup as { replayedEntries: number }).replayedEntries);
  handler = createHandler({ store, log: () => {}, now: () => clock });
  let t = performance.now();
  await get('/api/stats');
  firstStats.push(performance.now() - t);
  t = performance.now();
  await get('/api/events?limit=100');
  firstPage.push(performance.now() - t);
  await store.close();
}
clearInterval(rssTimer);
rmSync(dir, { recursive: true, force: true });

const rows = [
  [`load ${TOTAL.toLocaleString()} events (batches of ${BATCH}, ${IN_FLIGHT} in flight, journal + fsync), one run`, `${loadSeconds.toFixed(0)} s = ${Math.round(TOTAL / loadSeconds).toLocaleString()} events/s`],
  ['RSS (both threads) with everything held, after the load / peak while loading', `${mib(rssLoaded)} MiB / ${mib(peakLoad)} MiB (target < 600 MB)`],
  ['of which, after the load (the store\'s health figures)', memoryLoaded],
  ['RSS after the reads, the seal and the burst below', `${mib(rssRead)} MiB`],
  ['of which, after them', memoryRead],
  [`dedupe after the load: key filters of the sealed segments within the ${DEFAULT_DEDUPE_DAYS}-day window / ids of the hot segment`, `${mib(dedupeFilterBytes)} MiB for ${(dedupeFilterBytes / 8).toLocaleString()} keys / ${hotEvents.toLocaleString()} ids`],
  ['disk per event (every file of the store / events held)', `${Math.round(disk / held)} B (target < 250 B)`],
  [`start-up with ${TOTAL.toLocaleString()} held + a journal of ${REPLAY.toLocaleString()} events, ${ROUNDS} rounds`, `${spread(startups)} ms, journal entries replayed ${spread(replayed)} (target < 3 s)`],
  ['the first GET /api/stats and newest page after each start-up (its replayed rows still being written)', `${spread(firstStats, 1)} ms / ${spread(firstPage, 1)} ms`],
  ['GET /api/stats, all time, p50 / p99', `${f1(pct(statsAll, 50))} / ${f1(pct(statsAll, 99))} ms (target p50 < 30 ms)`],
  ['GET /api/stats, last 30 days, p50 / p99', `${f1(pct(stats30, 50))} / ${f1(pct(stats30, 99))} ms (target p50 < 30 ms)`],
  ['GET /api/stats, the 30 days before those, in whole hours (the dashboard\'s comparison), p50 / p99', `${f1(pct(statsPrevious, 50))} / ${f1(pct(statsPrevious, 99))} ms`],
  ['GET /api/events, newest page, p50 / p99', `${f1(pct(newest, 50))} / ${f1(pct(newest, 99))} ms (target p50 < 20 ms)`],
  ['GET /api/events, a page 60 days back, p50 / p99', `${f1(pct(back60, 50))} / ${f1(pct(back60, 99))} ms (target p50 < 100 ms)`],
  ['GET /api/events?type=error, newest page, p50 / p99', `${f1(pct(newestErrors, 50))} / ${f1(pct(newestErrors, 99))} ms`],
  [`longest read while a day (${perDay.toLocaleString()} events, loaded as fast as the store takes them) was sealed and retention dropped a day; median read`, `${f1(Math.max(...saturated.waits))} ms; ${f1(median(saturated.waits))} ms over ${saturated.waits.length} reads (target < 100 ms)`],
  [`the same, the day's events loaded at half that rate (${halfRate.toLocaleString()} events/s)`, `${f1(Math.max(...paced.waits))} ms; ${f1(median(paced.waits))} ms over ${paced.waits.length} reads`],
  [`GET /api/stats right after ${BURST.toLocaleString()} events within 5 minutes (loaded in ${burstSeconds.toFixed(0)} s), p50 / p99`, `${f1(pct(burstStats, 50))} / ${f1(pct(burstStats, 99))} ms`],
];
const md = `## History (sqlite) at ${TOTAL.toLocaleString()} events

\`npm run bench:history\` — one process, the sqlite store in a temp dir, ${TOTAL.toLocaleString()} events for ${USERS} users received evenly over ${DAYS} days (the store's clock follows the load), retention ${DAYS} days; requests go through the real handler in-process (no sockets), ${REQUESTS} of each after one warm-up. Start-up is measured ${ROUNDS} times, each after a child process appended ${REPLAY.toLocaleString()} events to the journal and exited without closing the store. ${machine()}.

| measure | figure |
|---|---|
${rows.map(([k, v]) => `| ${k} | ${v} |`).join('\n')}
`;
console.log('\n' + md);
if (TOTAL === 20_000_000 && !process.env.BENCH_EVENTS) writeSection('history', md);
process.exit(0);
