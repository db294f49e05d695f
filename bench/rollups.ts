// `npm run bench:rollups`: what rollups cost at 20,000,000 events (5 users, 90 days, 20 routes),
// fed straight into hour rollups (no event objects), each user-hour frozen as a sealed segment's
// would be: memory held (heap after GC plus typed-array buffers), encode and decode time and bytes,
// and assembleStats for all time, the last 30 days and the last 7 days by hour (p50 of repeated
// calls, the first call apart). The data follows bench/history-data.ts (types, log-normal page
// loads, a release a week, 20 routes) with sessions of ~20 events interleaved ~40 at a time and
// session ids shaped like the SDK's (UUIDv7, which parts keep as 16 bytes). Figures go to BENCHMARKS.md (section
// bench:rollups) on a full run. BENCH_EVENTS, BENCH_USERS, BENCH_DAYS scale it down.
import { loadavg } from 'node:os';
import { LiveWindow } from '../lib/live-window.ts';
import { assembleStats, planStats } from '../lib/rollup/assemble.ts';
import { encodePart, FrozenHour } from '../lib/rollup/codec.ts';
import { HourRollup, type RollupRow } from '../lib/rollup/hour.ts';
import { UserRollups } from '../lib/rollup/user.ts';
import { normalise, type RawEvent } from '../lib/event.ts';
import type { StatsRange } from '../lib/stats.ts';
import { machine, median, spread, writeSection } from './lib.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 20_000_000);
const USERS = Number(process.env.BENCH_USERS ?? 5);
const DAYS = Number(process.env.BENCH_DAYS ?? 90);
const CALLS = 50;
const ROUNDS = 3;
const H = 3_600_000;
const DAY = 86_400_000;
const ROUTES = Array.from({ length: 20 }, (_, i) => `/app/${['home', 'search', 'product', 'cart', 'checkout'][i % 5]}/${Math.floor(i / 5)}`);
const TYPES = ['pageload', 'pageload', 'pageload', 'page_view', 'page_view', 'click', 'click', 'click', 'interaction', 'custom', 'error', 'performance', 'feedback'];

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc (npm run bench:rollups does)');
const settle = () => {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers, rss: m.rss };
};
const mib = (b: number) => (b / 1048576).toFixed(0);

let seed = 42;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const normal = () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
const hex = (n: number) => Math.floor(rand() * 16 ** n).toString(16).padStart(n, '0');
const sessionId = (at: number) =>
  `${at.toString(16).padStart(12, '0').slice(0, 8)}-${at.toString(16).padStart(12, '0').slice(8)}-7${hex(3)}-${(8 + Math.floor(rand() * 4)).toString(16)}${hex(3)}-${hex(12)}`;

/** One user's live sessions: each event picks one; a session ends after ~20 events (geometric). */
class Sessions {
  private live = Array.from({ length: 40 }, () => ({ id: sessionId(0), left: 1 + Math.floor(-20 * Math.log(rand() || 1e-12)) }));
  pick(at: number): string {
    const i = Math.floor(rand() * this.live.length);
    const s = this.live[i];
    if (--s.left <= 0) this.live[i] = { id: sessionId(at), left: 1 + Math.floor(-20 * Math.log(rand() || 1e-12)) };
    return s.id;
  }
}

function row(at: number, sessions: Sessions): RollupRow {
  const type = TYPES[Math.floor(rand() * TYPES.length)];
  const pageload = type === 'pageload';
  const r = rowWithoutBreakdowns(at, sessions, type, pageload);
  return { ...r, dims: [r.route, pageload ? 'direct' : null, 'Chrome', 'Windows', 'desktop', r.version] };
}

function rowWithoutBreakdowns(at: number, sessions: Sessions, type: string, pageload: boolean): RollupRow {
  return {
    receivedMs: at,
    type,
    version: `1.${Math.floor(at / (7 * DAY)) % 100}.0`,
    session: sessions.pick(at),
    // Route popularity falls off (a few routes take most loads).
    route: pageload ? ROUTES[Math.min(19, Math.floor(-4 * Math.log(rand() || 1e-12)))] : null,
    duration: pageload ? Math.round(Math.exp(6.8 + 0.6 * normal())) : null,
    rating: type === 'feedback' ? 1 + Math.floor(rand() * 5) : null,
    dims: [null, null, 'Chrome', 'Windows', 'desktop', null],
    props: null,
    vital: null,
  };
}

// ---- build: every user-hour rolled up, encoded, decoded and kept frozen, tagged by day ----------
const end = Date.UTC(2026, 10, 1);
const hours = DAYS * 24;
const firstHour = end / H - hours;
// Busier by day than by night: events per user-hour follow a daily wave around the mean.
const weights = Array.from({ length: hours }, (_, h) => 1 + 0.5 * Math.sin((2 * Math.PI * ((firstHour + h) % 24)) / 24));
const weightSum = weights.reduce((a, b) => a + b, 0);
const load = loadavg()[0];
const before = settle();
const users = Array.from({ length: USERS }, () => new UserRollups());
const sessions = Array.from({ length: USERS }, () => new Sessions());
let events = 0, encodedBytes = 0, sessionBytes = 0, parts = 0, addMs = 0, encodeMs = 0, decodeMs = 0;
const encoded: Uint8Array[] = [];
const t0 = performance.now();
for (let h = 0; h < hours; h++) {
  const hourStart = (firstHour + h) * H;
  const count = Math.round((TOTAL / USERS) * (weights[h] / weightSum));
  for (let u = 0; u < USERS; u++) {
    const times = Float64Array.from({ length: count }, () => hourStart + Math.floor(rand() * H)).sort();
    const rows = Array.from(times, (at) => row(at, sessions[u]));
    const a = performance.now();
    const part = new HourRollup(firstHour + h);
    for (const r of rows) part.add(r);
    const b = performance.now();
    const bytes = encodePart(part);
    const c = performance.now();
    const frozen = FrozenHour.decode(bytes);
    decodeMs += performance.now() - c;
    addMs += b - a;
    encodeMs += c - b;
    users[u].setPart(frozen, Math.floor(h / 24));
    events += count;
    encodedBytes += bytes.byteLength;
    parts++;
    // The ids are UUIDs: 16 bytes each in a part.
    sessionBytes += 16 * frozen.sessionCount;
    if (u === 0 && h < 48) encoded.push(bytes);
  }
  if (h % (24 * 10) === 0) console.log(`  [rollups] day ${h / 24}: ${events.toLocaleString('en-US')} events`);
}
const buildS = (performance.now() - t0) / 1000;
encoded.length = 0;
const held = settle();
const heapPerEvent = (held.heap - before.heap) / events;
const buffersPerEvent = (held.buffers - before.buffers) / events;
console.log(`  [rollups] ${events.toLocaleString('en-US')} events in ${parts} parts, built in ${buildS.toFixed(0)} s`);
console.log(`  [rollups] held: heap +${mib(held.heap - before.heap)} MiB, buffers +${mib(held.buffers - before.buffers)} MiB, rss ${mib(held.rss)} MiB`);

// Decode alone, as a start-up reading every part would: all parts of one user, again.
const reencoded: Uint8Array[] = [];
for (let day = 0; day < DAYS; day++) for (const p of users[0].parts(day)) reencoded.push((p as FrozenHour).encode());
const d0 = performance.now();
for (const bytes of reencoded) FrozenHour.decode(bytes);
const decodeAllMs = ((performance.now() - d0) / reencoded.length) * parts;

// ---- assemble: user 0, with a live window of its last events ----------------------------------
const window = new LiveWindow();
const lastHour = end - H;
for (let i = 0; i < 2000; i++) {
  const at = lastHour + Math.floor((i / 2000) * H);
  const r = row(at, sessions[0]);
  const raw: RawEvent = { type: r.type, sessionId: r.session ?? undefined, route: r.route ?? undefined, data: r.duration === null ? {} : { duration: r.duration } };
  window.add(normalise(raw, { now: at, owner: 'u0' }));
}
const now = end + 60_000;
function timeStats(name: string, range: StatsRange | undefined, edgeRows = 0) {
  // A `from` off the hour: the store reads that hour's events and rolls them up. The rows are made
  // beforehand (a store reads them from its database, which this does not measure).
  const plan0 = planStats(now, range, window.newest);
  const edgeSessions = new Sessions();
  const rows = plan0.rawSpans.flatMap(([a, b]) =>
    Array.from({ length: edgeRows }, (_, i) => row(a + Math.floor((i / edgeRows) * (b - a)), edgeSessions)));
  const once = () => {
    const t = performance.now();
    const plan = planStats(now, range, window.newest);
    const edges = HourRollup.fromRows(rows);
    const stats = assembleStats({ plan, rollups: users[0], edges, recents: window.recents(now, plan.range)! });
    return { ms: performance.now() - t, stats };
  };
  const first = once();
  const rounds = Array.from({ length: ROUNDS }, () => Array.from({ length: CALLS }, () => once().ms));
  const p50s = rounds.map(median);
  const max = Math.max(...rounds.flat());
  console.log(`  [rollups] ${name}: first ${first.ms.toFixed(1)} ms, p50 ${spread(p50s, 1)} ms (${first.stats.totalEvents.toLocaleString('en-US')} events)`);
  return { name, first: first.ms, p50s, max, events: first.stats.totalEvents };
}
const perUserHour = Math.round(TOTAL / USERS / hours);
const timings = [
  timeStats('all time (no range)', undefined),
  timeStats('last 30 days, from on the hour', { from: Math.floor((now - 30 * DAY) / H) * H }),
  timeStats(`last 30 days, from off the hour (rolls up ${perUserHour.toLocaleString('en-US')} raw events of the edge hour)`, { from: now - 30 * DAY }, perUserHour),
  timeStats('last 7 days by hour', { from: Math.floor((now - 7 * DAY) / H) * H, interval: 'hour' }),
];

const held2 = settle();
const perEvent = heapPerEvent + buffersPerEvent;
const md = `## Rollups

\`npm run bench:rollups\` — ${events.toLocaleString('en-US')} events for ${USERS} users over ${DAYS} days (${parts.toLocaleString('en-US')} user-hours, ~${perUserHour.toLocaleString('en-US')} events each, 20 routes, sessions of ~20 events with UUIDv7 ids as the SDK makes them, ~40 live at once per user), rolled up per user and hour and kept as frozen parts (encoded, then decoded), as a segmented store holds sealed history. Node, one process. ${machine()}; load average ${load.toFixed(1)} at the start (the machine is shared: other work slows the single-threaded assembly).

| | |
|---|---|
| Memory held by the rollups (after GC) | ${mib(held.heap - before.heap)} MiB heap + ${mib(held.buffers - before.buffers)} MiB typed-array buffers = ${mib(held.heap - before.heap + held.buffers - before.buffers)} MiB, **${perEvent.toFixed(1)} B per event** (process RSS then ${mib(held2.rss)} MiB) |
| Encoded parts | ${mib(encodedBytes)} MiB, ${(encodedBytes / events).toFixed(1)} B per event, ${(encodedBytes / parts / 1024).toFixed(1)} KiB per user-hour; session ids (16 bytes each) are ${((sessionBytes / encodedBytes) * 100).toFixed(0)}% of it |
| Rolling up (HourRollup.add) | ${((addMs * 1000) / events).toFixed(2)} µs per event |
| Encode | ${((encodeMs * 1000) / parts).toFixed(0)} µs per user-hour, ${(encodedBytes / 1048576 / (encodeMs / 1000)).toFixed(0)} MiB/s |
| Decode | ${((decodeMs * 1000) / parts).toFixed(0)} µs per user-hour; every part of the data set: ${(decodeAllMs / 1000).toFixed(2)} s |

\`assembleStats\` for one user (${(events / USERS / 1e6).toFixed(1)}M events), with the live window supplying the recents: the first call (which fills the per-day session counts), then p50 of ${CALLS} calls, median of ${ROUNDS} rounds (min–max). Target: p50 < 30 ms for all time and for 30 days.

| request | first call ms | p50 ms | max ms |
|---|---|---|---|
${timings.map((t) => `| ${t.name} | ${t.first.toFixed(1)} | ${spread(t.p50s, 1)} | ${t.max.toFixed(1)} |`).join('\n')}

- Memory: the first version held 102 MiB here (5.3 B per event), 71% of the bytes session ids. Parts now keep ids that are UUIDs (as the SDK's are) as 16 bytes instead of 36 characters, and share route, type and version strings across parts. What is left on the heap, ~2 KB per user-hour, is each part's object and its typed-array views; the buffers are the encoded bytes themselves.
- Time: all time adds the per-ms duration counts of every hour and route into one scratch array; 30 days a third of them. Distinct sessions per day are unions of the day's hours, cached until a part of that day changes: the first request over 30 days computes 30 unions, later ones reuse them (a store can warm them at start).
- A \`from\` off the hour costs rolling up that hour's raw events (here ~${perUserHour.toLocaleString('en-US')}); reading them from the store's database comes on top and is not measured here.
`;
console.log(md);
if (TOTAL === 20_000_000 && USERS === 5 && DAYS === 90) writeSection('rollups', md);
