// `npm run bench:store`: the sqlite store at 100,000 and then 1,000,000 events for one user. Inserts
// through the store (journal + fsync, group commit), measures GET /api/stats and GET /api/events
// through the real handler at both sizes, a 1M snapshot with ingestion running beside it, journal
// replay at start, and RSS (the process's, so the database worker thread is included).
// Writes its figures into BENCHMARKS.md (section bench:store).
import { cpSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalise, uuidv7, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { createHandler } from '../lib/handler.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { eventData, machine, spread, writeSection } from './lib.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SMALL = Math.min(TOTAL, 100_000);
const REPLAY = Number(process.env.BENCH_REPLAY_EVENTS ?? 100_000);
const USER = 'bench-user';
const BATCH = 500;
const IN_FLIGHT = 4;
const DAY = 86_400_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-store-'));
const path = join(dir, 'watchtower.sqlite');
const logs: string[] = [];
const log = (m: string) => {
  logs.push(m);
  console.log(`  [store] ${m}`);
};
let peakRss = 0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const mib = (b: number) => (b / 1048576).toFixed(0);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const f1 = (n: number) => n.toFixed(1);

// A realistic mix: 20 routes, ~20k sessions, 5 versions, received over the last 30 days (oldest first).
const start = Date.now() - 30 * DAY;
const span = 30 * DAY;
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const TYPES = ['pageload', 'pageload', 'pageload', 'click', 'click', 'interaction', 'error', 'performance', 'feedback', 'custom', 'page_view'];
function makeEvent(i: number, at: number): StoredEvent {
  const type = TYPES[Math.floor(rand() * TYPES.length)];
  const data = eventData(type, rand);
  const raw: RawEvent = {
    id: uuidv7(at),
    type,
    sessionId: `sess-${Math.floor(rand() * 20_000)}`,
    deployVersion: `1.${Math.floor(rand() * 5)}.0`,
    route: `/route/${Math.floor(rand() * 20)}`,
    url: `https://app.example.com/route/${i % 20}`,
    appName: 'bench-app',
    data,
  };
  return normalise(raw, { now: at, owner: USER });
}

async function insertMany(store: Store, count: number, from: number, to: number) {
  const t0 = performance.now();
  let next = 0;
  const step = (to - from) / count;
  const lane = async () => {
    while (next < count) {
      const begin = next;
      next = Math.min(count, next + BATCH);
      const batch: StoredEvent[] = [];
      for (let i = begin; i < next; i++) batch.push(makeEvent(i, Math.floor(from + i * step)));
      await store.insert(batch);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return (performance.now() - t0) / 1000;
}

async function timed(fn: () => Promise<unknown>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

console.log(`bench:store — ${TOTAL.toLocaleString()} events for one user in ${dir}`);
const mainHeapBeforeOpen = process.memoryUsage().heapUsed;
const store = await openSqliteStore({ path, retentionDays: 0, maxEvents: TOTAL * 2, log });
const handler = createHandler({ store, log: () => {} });
const get = async (p: string) => {
  const res = await handler(new Request('http://bench.test' + p, { headers: { 'x-idp-user-id': USER } }));
  if (res.status !== 200) throw new Error(`${p}: ${res.status}`);
  return res.text();
};
// Events are dated oldest first over the whole span, so the first SMALL are the first part of it.
const spanStep = (span - DAY) / TOTAL;
let insertSeconds = await insertMany(store, SMALL, start, start + SMALL * spanStep);
await get('/api/stats');
const smallStatsMs = await timed(() => get('/api/stats'), 50);
const smallListMs = await timed(() => get('/api/events'), 50);
insertSeconds += await insertMany(store, TOTAL - SMALL, start + SMALL * spanStep, start + span - DAY);
const afterInsert = await store.health();
console.log(`inserted in ${insertSeconds.toFixed(1)} s; health ${JSON.stringify(afterInsert)}`);

await get('/api/stats');
const statsMs = await timed(() => get('/api/stats'), 50);
const statsBody = JSON.parse(await get('/api/stats')) as { totalEvents: number; latencyByRoute: Record<string, unknown> };
if (statsBody.totalEvents !== TOTAL) throw new Error(`stats counted ${statsBody.totalEvents}`);
const listMs = await timed(() => get('/api/events'), 50);
const listTypeMs = await timed(() => get('/api/events?type=error&limit=100'), 50);
const listVersionMs = await timed(() => get('/api/events?version=1.3.0&limit=100'), 50);
const { rss: rssAfterLoad, heapUsed: mainHeapAfterLoad } = process.memoryUsage();
const rssPeakDuringLoad = peakRss;
peakRss = 0;

// Snapshots of the full database while single-event ingestion keeps going beside it, ROUNDS times.
// Open loop: an insert is due every 5 ms whether or not the previous one finished, and its latency
// counts from when it was due, so a stalled process shows up in every request it delayed (no
// coordinated omission).
const snapshotRounds: { totalMs: number; heldMs: number; p50: number; p99: number; max: number; inserts: number }[] = [];
let ingested = 0;
for (let round = 0; round < ROUNDS; round++) {
  const ingestLatency: { due: number; ms: number }[] = [];
  let ingesting = true;
  const pending: Promise<void>[] = [];
  const ingestLoop = (async () => {
    const t0 = performance.now();
    for (let i = 0; ingesting; i++) {
      const due = t0 + i * 5;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(store.insert([makeEvent(TOTAL + ingested++, Date.now())]).then(() => void ingestLatency.push({ due, ms: performance.now() - due })));
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  const snapT0 = performance.now();
  await store.flush();
  const totalMs = performance.now() - snapT0;
  await new Promise((r) => setTimeout(r, 300));
  ingesting = false;
  await ingestLoop;
  await Promise.all(pending);
  const during = ingestLatency.filter((x) => x.due >= snapT0 && x.due <= snapT0 + totalMs).map((x) => x.ms);
  const { lastSnapshot } = (await store.health()) as unknown as { lastSnapshot: { heldMs: number } };
  snapshotRounds.push({ totalMs, heldMs: lastSnapshot.heldMs, p50: pct(during, 50), p99: pct(during, 99), max: Math.max(...during), inserts: during.length });
  console.log(`snapshot round ${round + 1}: ${JSON.stringify(snapshotRounds.at(-1))}`);
}
const snapshotSize = statSync(path).size;
const rssPeakSnapshot = peakRss;

// Journal replay at start: REPLAY more events after the snapshot, then open a copy of the files as
// a crash leaves them (the store still running), ROUNDS times, each from a fresh copy (opening
// compacts the copy in the background).
await insertMany(store, REPLAY, Date.now() - 1000, Date.now());
const crashDir = mkdtempSync(join(tmpdir(), 'watchtower-bench-replay-'));
cpSync(dir, crashDir, { recursive: true });
await store.close();
const startupRounds: { openMs: number; replayMs: number; replayed: number; events: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const copy = mkdtempSync(join(tmpdir(), 'watchtower-bench-open-'));
  cpSync(crashDir, copy, { recursive: true });
  const openT0 = performance.now();
  const reopened = await openSqliteStore({ path: join(copy, 'watchtower.sqlite'), retentionDays: 0, maxEvents: TOTAL * 2, log });
  const openMs = performance.now() - openT0;
  const h = (await reopened.health()) as unknown as { eventCount: number; startup: { replayMs: number; replayedEntries: number } };
  startupRounds.push({ openMs, replayMs: h.startup.replayMs, replayed: h.startup.replayedEntries, events: h.eventCount });
  console.log(`start-up round ${round + 1}: ${JSON.stringify(startupRounds.at(-1))}`);
  await reopened.close();
  rmSync(copy, { recursive: true, force: true });
}
clearInterval(rssTimer);
rmSync(dir, { recursive: true, force: true });
rmSync(crashDir, { recursive: true, force: true });

// Logged when the file is in place, which for the last one can be well after the inserts ended.
const duringInsertSnapshots = logs.filter((l) => l.startsWith('snapshot (journal size')).length;
const rows = [
  ['GET /api/stats at 100,000 events p50 / p99', `${f1(pct(smallStatsMs, 50))} / ${f1(pct(smallStatsMs, 99))} ms`],
  ['GET /api/events (limit 100) at 100,000 events p50 / p99', `${f1(pct(smallListMs, 50))} / ${f1(pct(smallListMs, 99))} ms`],
  ['insert 1M events (batches of 500, 4 in flight, journal + fsync), one run', `${insertSeconds.toFixed(1)} s = ${Math.round(TOTAL / insertSeconds).toLocaleString()} events/s (${duringInsertSnapshots} size-triggered snapshots included)`],
  ['GET /api/stats (1 user, 1M events, 20 routes) p50 / p99', `${f1(pct(statsMs, 50))} / ${f1(pct(statsMs, 99))} ms`],
  ['GET /api/events (limit 100) p50 / p99', `${f1(pct(listMs, 50))} / ${f1(pct(listMs, 99))} ms`],
  ['GET /api/events?type=error p50', `${f1(pct(listTypeMs, 50))} ms`],
  ['GET /api/events?version=… p50', `${f1(pct(listVersionMs, 50))} ms`],
  [`snapshot of 1M events (write + fsync every 2 MiB + rename), ${ROUNDS} rounds: total / database held (reads wait)`, `${spread(snapshotRounds.map((r) => r.totalMs))} / ${spread(snapshotRounds.map((r) => r.heldMs))} ms`],
  ['snapshot file size', `${mib(snapshotSize)} MiB`],
  ['single-event ingest while each snapshot ran (open loop, one due every 5 ms): p50 / p99 / max', `${spread(snapshotRounds.map((r) => r.p50), 1)} / ${spread(snapshotRounds.map((r) => r.p99), 1)} / ${spread(snapshotRounds.map((r) => r.max), 1)} ms (${snapshotRounds.map((r) => r.inserts).join(', ')} inserts)`],
  [`start-up on the snapshot + a journal of ${REPLAY.toLocaleString()} events, ${ROUNDS} rounds: total / journal replay`, `${spread(startupRounds.map((r) => r.openMs))} / ${spread(startupRounds.map((r) => r.replayMs))} ms (${startupRounds[0].replayed.toLocaleString()} entries; ${startupRounds[0].events.toLocaleString()} events)`],
  ['RSS (main thread + database worker) after loading 1M events / peak while loading (a size-triggered snapshot included) / peak during the 1M snapshots', `${mib(rssAfterLoad)} MiB / ${mib(rssPeakDuringLoad)} MiB / ${mib(rssPeakSnapshot)} MiB`],
  ['main thread JS heap in use before opening the store / after loading 1M events (garbage not yet collected included; the dedupe set of 1M (owner, id) keys is ~75 MB of it)', `${mib(mainHeapBeforeOpen)} MiB / ${mib(mainHeapAfterLoad)} MiB`],
];
const md = `## Store (sqlite) at 1,000,000 events

\`npm run bench:store\` — one process, the sqlite store in a temp dir, ${SMALL.toLocaleString()} then ${TOTAL.toLocaleString()} events for one user (20 routes, ~20k sessions, 11 types, received over 30 days); requests go through the real handler in-process (no sockets). The database (sql.js) lives on a worker thread; the main thread journals, fsyncs and acknowledges, deciding what is new with an in-memory set of the stored (owner, id) keys, so a snapshot, which holds the worker's database while it writes the file out, delays reads — they queue behind it in the worker — but not acknowledgements. Targets: stats p50 < 50 ms at 1M; RSS < 1.5 GB at 1M, during a snapshot included; ingest p99 < 100 ms while a 1M snapshot runs (open loop: one insert due every 5 ms, latency counted from its due time). Snapshot and start-up figures are medians of ${ROUNDS} rounds with (min–max); request latencies are percentiles of 50 requests; the 1M load is one run. This machine is shared; run-to-run spread is large. ${machine()}.

| measure | figure |
|---|---|
${rows.map(([k, v]) => `| ${k} | ${v} |`).join('\n')}
`;
console.log('\n' + md);
if (TOTAL === 1_000_000) writeSection('store', md);
process.exit(0);
