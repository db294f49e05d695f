// Property: the PostgreSQL store's statistics, with breakdowns and web vitals, equal computeStats
// over the same events, for random ranges (ends to the millisecond, on and next to hour and day
// boundaries, inside busy hours before, in and after their burst; hourly, daily and default
// buckets; no range), random `now`s and with or without a project, over days in every state the
// store keeps them in:
//   - today, open: a burst of thousands of events within one minute of one hour, and scattered ones;
//   - closed days compacted (day rows, events moved into blocks), a busy one among them, and late
//     inserts into compacted days after their compaction (counters beside the day rows);
//   - closed days not compacted yet (counters and event rows), a busy one among them.
// Two users share session ids, routes and projects: the other user's events never change the
// answer. The data is loaded once, checked, then more is inserted (late events, more of the busy
// open hour), compacted again (the uncompacted days become compacted; a closed day given a burst
// after it is not) and checked again; the store caches the compacted days it read in between.
//
// Compaction closes the days before the real today (as the store's background compaction does
// after the first hour of a day), so the events are placed around the real clock at the start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import type { ClientInfo } from '../lib/client-info.ts';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, DAY_MS, HOUR_MS, rangeProblem, type StatsRange } from '../lib/stats.ts';
import { COMPACT_AFTER_MS, compactClosedDays, foldOpenDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { seededRandom } from './helpers/seeded.ts';

/** Ranges checked in each of the two phases. */
const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 80);
const MINUTE = 60_000;
const BURST_MS = MINUTE;

if (await postgresAvailable('PostgreSQL statistics property test')) {
  register();
}

/** What the events of a check's range include (each kind must come up in the random runs). */
type Kind = 'openBurst' | 'compactedBurst' | 'uncompactedBurst' | 'lateIntoCompacted' | 'uncompactedDay';

interface Burst { name: string; start: number; end: number; hour: number }

/** One end of a range: a time, or a distance before `now`. */
type End = { t: number } | { beforeNow: number };
interface RangeSpec { from: End; to?: End; interval?: 'hour' | 'day' }
interface Check { now: number; range: StatsRange | undefined; user: string; project: string | undefined }

const GOALS = [
  { id: 'g1', name: 'items', page: '/item/*', event: null },
  { id: 'g2', name: 'checkout page', page: '/checkout', event: null },
  { id: 'g3', name: 'any page', page: '/**', event: null },
  { id: 'g4', name: 'signed up', page: null, event: 'signup' },
  { id: 'g5', name: 'e7', page: null, event: 'e7' },
];

/**
 * Where two answers differ, as paths with both values (at most 12): for a failure's message, which
 * uvu's full diff of two answers of thousands of events would drown.
 */
function differences(actual: unknown, expected: unknown, path = '', out: string[] = []): string[] {
  if (out.length >= 12 || actual === expected || (Number.isNaN(actual) && Number.isNaN(expected))) return out;
  const brief = (v: unknown) => {
    if (v && typeof v === 'object' && 'id' in v && 'receivedAt' in v) return `event ${String(v.id)} received ${String(v.receivedAt)}`;
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 160 ? s.slice(0, 160) + '...' : s;
  };
  if (actual && expected && typeof actual === 'object' && typeof expected === 'object' && Array.isArray(actual) === Array.isArray(expected)
      && !('id' in actual && 'id' in expected && actual.id !== expected.id)) {
    const a = actual as Record<string, unknown>, e = expected as Record<string, unknown>;
    if (Array.isArray(actual) && Array.isArray(expected) && actual.length !== expected.length) {
      out.push(`${path}.length: store ${actual.length}, computeStats ${expected.length}`);
    }
    for (const key of new Set([...Object.keys(a), ...Object.keys(e)])) {
      // Keys as JSON where they hold more than a name (a route, a lone surrogate).
      const at = /^[\w-]+$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (key in a !== key in e) out.push(`${at}: store ${key in a ? brief(a[key]) : 'absent'}, computeStats ${key in e ? brief(e[key]) : 'absent'}`);
      else differences(a[key], e[key], at, out);
      if (out.length >= 12) break;
    }
    return out;
  }
  out.push(`${path || 'answer'}: store ${brief(actual)}, computeStats ${brief(expected)}`);
  return out;
}

/** Characters beyond ASCII as \u escapes (U+FFFD and a lone surrogate look alike printed). */
const printable = (s: string) => s.replace(/[^\x20-\x7e\n]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function register() {
  let db: TestDatabase;
  let store: Store;
  test.before(async () => {
    db = await createTestDatabase();
    // The test folds the open day itself and counts the folds: the store's own upkeep (every 10 s
    // after 1,000 events) would add folds of its own whenever the run is slow enough to let it.
    store = await openPostgresStore({ url: db.url, connectTimeout: 3, max: 3, upkeepIntervalMs: 3_600_000 });
  });
  test.after(async () => {
    await store?.close().catch(() => {});
    await db?.drop();
  });

  test('stats with breakdowns and vitals equal computeStats over open, compacted and uncompacted days, busy hours, late inserts, two users', async () => {
    const started = Date.now();
    const seed = Number(process.env.WATCHTOWER_STATS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = seededRandom(seed);
    const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const context = `(data seed ${seed}; WATCHTOWER_STATS_SEED=${seed} gives the same data around another clock)`;

    // The real clock, once: today is open, the days before it are closed (compacted by `compact`).
    const base = Date.now();
    const today = Math.floor(base / DAY_MS);
    const dayStart = (d: number) => (today + d) * DAY_MS;
    const A = 'ps-a', B = 'ps-b';
    const held = new Map<string, StoredEvent[]>([[A, []], [B, []]]);
    const kinds = new Map<StoredEvent, Kind>();

    // --- Events ---------------------------------------------------------------------------------
    const clients: ClientInfo[] = [
      { browser: 'Chrome', browserVersion: '131', os: 'Windows', device: 'desktop' },
      { browser: 'Safari', os: 'iOS', device: 'mobile' },
      { browser: 'Firefox', os: 'Linux', device: 'desktop' },
      { browser: 'Samsung Internet', os: 'Android', device: 'tablet' },
      { browser: 'Chrome', os: null, device: null },
      { browser: null, os: null, device: null },
    ];
    const duration = () => pick<unknown>([int(0, 5000), int(0, 300), int(0, 12_000) / 4, rnd() * 2000, 100, 100.5, 0, -0.5, 1e7, 'slow', undefined]);
    const vital = (): { name: unknown; value: unknown } => {
      const name = pick(['LCP', 'INP', 'CLS', 'FCP', 'TTFB', 'cls', 'lcp', 'FID', 7]);
      const value = String(name).toUpperCase() === 'CLS'
        ? pick<unknown>([rnd() / 2, 0.1, 0.25, 0.1004, 0.2505, 0, 1.5])
        : pick<unknown>([int(0, 6000), rnd() * 900, 2500, 2500.5, 4000, 200, 500.4, 1800, 800, -1, 'x']);
      return { name, value };
    };
    let n = 0;
    /** One event of `user` received at `at`, as POST /api/events would store it. */
    const make = (user: string, at: number, session: string | undefined): StoredEvent => {
      const type = pick(['pageload', 'pageload', 'pageload', 'pageload', 'performance', 'performance', 'performance', 'error', 'error', 'feedback', 'click', 'interaction', 'custom', 'login', 'weird']);
      const raw: Record<string, unknown> = { type, sessionId: session };
      raw.deployVersion = pick(['1.0', '1.0', '2.0', '3.0-beta', undefined, '']);
      // A long tail of pages and referrers: their breakdowns hold more than the 100 rows kept.
      const where = rnd();
      if (where < 0.45) raw.route = pick(['/', '/home', '/a/b', '/checkout', '/p/ü']);
      else if (where < 0.6) raw.route = `/item/${int(0, 140)}`;
      else if (where < 0.85) {
        raw.url = pick(['https://x.test/home?q=1', 'https://x.test/checkout#f', '/rel/path', 'not a url', 'https://x.test/?utm_source=News&utm_medium=cpc',
          `https://x.test/l?utm_campaign=c${int(0, 130)}&utm_source=s${int(0, 3)}`, '/p?utm_medium=&utm_source=a&utm_source=b']);
      }
      raw.environment = pick(['production', 'production', 'staging', 'Production', undefined, undefined, ' ']);
      if (type === 'custom') raw[pick(['name', 'eventName'])] = pick(['signup', 'checkout', `e${int(0, 120)}`, '']);
      raw.referrer = rnd() < 0.15 ? `https://r${int(0, 120)}.example/x`
        : pick(['https://search.example/q?x=1', 'https://news.example', 'http://blog.example:8080/a', 'android-app://x', '', undefined, undefined]);
      if (type === 'pageload') raw.data = { duration: duration(), ttfb: pick([12, 3.5, int(0, 400), undefined, 'x']) };
      else if (type === 'performance') raw.data = vital();
      else if (type === 'feedback') raw.data = { rating: pick([1, 2, 3, 4, 5, 5, 0, 2.5, '3']) };
      // Custom event properties: values of few and of many kinds, a nested one (never counted).
      else if (type === 'custom') raw.data = { plan: pick(['free', 'pro', ' pro ', 'nul\u0000']), n: int(0, 30), ok: pick([true, false]), deep: { plan: 'x' } };
      else if (type === 'error') raw.message = pick(['TypeError: x is undefined', 'boom']);
      if (rnd() < 0.15) raw.timestamp = new Date(at - int(0, 100_000)).toISOString();
      // Through JSON, as events arrive over HTTP (no undefined values).
      const e = normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: user, newId: () => `${user}-${seed}-${++n}` });
      // As the route sets them: the client from the User-Agent, the project from the key.
      if (rnd() < 0.85) e.client = { ...pick(clients), country: pick(['DE', 'US', 'JP', null]) };
      const p = rnd();
      if (p < 0.3) e.projectId = 'p1';
      else if (p < 0.4) e.projectId = 'p2';
      return e;
    };
    // Sessions: some seen on every day and by both users, some of one day, some of one burst.
    // (A lone surrogate, which PostgreSQL text cannot hold, is the next test's.)
    const shared = Array.from({ length: 6 }, (_, i) => `s-all-${i}`);
    const sessionOf = (local: string) => {
      const r = rnd();
      return r < 0.2 ? pick(shared) : r < 0.9 ? local : pick([undefined, '']) as string | undefined;
    };
    /** `count` events of `user` spread over a day (some on or next to its hour boundaries). */
    const scatter = (user: string, d: number, count: number, from = dayStart(d), to = dayStart(d) + DAY_MS) =>
      Array.from({ length: count }, () => {
        let at = from + Math.floor(rnd() * (to - from));
        if (rnd() < 0.15) at = Math.min(to - 1, Math.max(from, (Math.floor(at / HOUR_MS) + int(0, 1)) * HOUR_MS + int(-1, 1)));
        return make(user, at, sessionOf(`s-d${d}-${int(0, 40)}`));
      });
    /** `count` events of `user` received within the burst's minute, in receive order. */
    const inBurst = (user: string, b: Burst, count: number) =>
      Array.from({ length: count }, (_, i) => i === 0 ? b.start : i === 1 ? b.end - 1 : b.start + Math.floor(rnd() * BURST_MS))
        .sort((x, y) => x - y)
        .map((at) => make(user, at, sessionOf(`s-${b.name}-${int(0, 400)}`)));
    /** A burst in day `d` at a random minute of an hour of it, or starting at `start`. */
    const burstOf = (name: string, d: number, start?: number): Burst => {
      let s = start ?? dayStart(d) + int(1, 22) * HOUR_MS + int(0, 58 * MINUTE);
      // Within one hour.
      if (Math.floor(s / HOUR_MS) !== Math.floor((s + BURST_MS - 1) / HOUR_MS)) s = Math.floor((s + BURST_MS) / HOUR_MS) * HOUR_MS + 1;
      return { name, start: s, end: s + BURST_MS, hour: Math.floor(s / HOUR_MS) * HOUR_MS };
    };
    // Today's burst ends some minutes before the real now (at the start of the day if it is young).
    const open = burstOf('open', 0, Math.max(dayStart(0) + MINUTE + 123, base - 8 * MINUTE - 456));
    const compacted = burstOf('compacted', -2);
    const uncompacted = burstOf('uncompacted', -1);
    const bursts = [open, compacted, uncompacted];
    const quiet = burstOf('quiet', -5);

    /** Inserts in batches, in the order given (which is the order computeStats reads them in). */
    const insert = async (events: StoredEvent[], kind?: Kind) => {
      for (let i = 0; i < events.length; i += 400) {
        const batch = events.slice(i, i + 400);
        const stored = await store.insert(batch);
        assert.is(stored.length, batch.length, 'every event is new');
      }
      for (const e of events) {
        held.get(e.user_id!)!.push(e);
        if (kind) kinds.set(e, kind);
      }
    };
    /** Mixes two lists, keeping each one's order (a burst's events stay in receive order). */
    const interleave = (a: StoredEvent[], b: StoredEvent[]) => {
      const out: StoredEvent[] = [];
      let i = 0, j = 0;
      while (i < a.length || j < b.length) out.push(j >= b.length || (i < a.length && rnd() < a.length / (a.length + b.length)) ? a[i++] : b[j++]);
      return out;
    };
    const shuffled = (xs: StoredEvent[]) => {
      for (let i = xs.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [xs[i], xs[j]] = [xs[j], xs[i]];
      }
      return xs;
    };
    /** A compaction pass as it runs any time today after its first hour: every day before today closes. */
    const compact = () => db.query((sql) => compactClosedDays(sql, dayStart(0) + COMPACT_AFTER_MS));
    // Folds today's rows however few (the store folds an owner's day from FOLD_ROWS rows on).
    const fold = () => db.query((sql) => foldOpenDays(sql, dayStart(0) + COMPACT_AFTER_MS, undefined, 1));
    const foldsOf = async (user: string, d: number) => (await db.query((sql) =>
      sql<{ n: number }[]>`select count(*)::int as n from watchtower_rollup_days where user_id = ${user} and scope = '' and day = ${today + d}`))[0].n;
    const compactedDays = async (user: string) => (await db.query((sql) =>
      sql<{ day: number }[]>`select distinct day from watchtower_rollup_days where user_id = ${user} and scope = '' and day < ${today} order by day`)).map((r) => r.day - today);
    const countersOf = async (user: string, d: number) => (await db.query((sql) => sql<{ n: number }[]>`
      select count(*)::int as n from watchtower_rollups where user_id = ${user} and hour >= ${(today + d) * 24} and hour < ${(today + d) * 24 + 24}
        and kind not in ('s', 'S') and n > 0`))[0].n;

    // --- The checks -----------------------------------------------------------------------------
    let checks = 0;
    const coverage: string[] = [];
    const covered = new Map<Kind, number>();
    const check = async ({ now, range: asked, user, project }: Check, label: string) => {
      // Every range counts goals too: page patterns and custom event names of the generator's.
      // And custom event properties, in turn: a key's values (of one event), the keys.
      const property = [undefined, { key: 'plan' }, { key: 'n', keys: true }, { key: 'plan', event: 'signup' }][checks % 4];
      const range = asked && { ...asked, goals: GOALS, ...(property ? { property } : {}) };
      const problem = rangeProblem(range, now);
      if (problem !== null) throw new Error(`the test built a bad range ${JSON.stringify(range)}: ${problem}`);
      const events = held.get(user)!.filter((e) => project === undefined || e.projectId === project);
      const expected = computeStats(events, now, range);
      const actual = await store.stats(user, now, range, project);
      checks++;
      const within = (e: StoredEvent) => {
        const t = Date.parse(e.receivedAt);
        return range === undefined || (t >= range.from! && t < (range.to ?? now));
      };
      const seen = new Set<Kind>();
      for (const e of events) {
        const kind = kinds.get(e);
        if (kind && !seen.has(kind) && within(e)) seen.add(kind);
      }
      for (const kind of seen) covered.set(kind, (covered.get(kind) ?? 0) + 1);
      try {
        assert.equal(actual, expected);
      } catch {
        const iso = (t: number | undefined) => (t === undefined ? undefined : `${new Date(t).toISOString()} (${t})`);
        throw new Error(`${label}: stats of ${user}${project === undefined ? '' : ` in project ${project}`} at now ${iso(now)}, ` +
          `range ${range === undefined ? 'none' : JSON.stringify({ from: iso(range.from), to: iso(range.to), interval: range.interval })} ` +
          `differ from computeStats over ${events.length} events ${context}:\n  ${printable(differences(actual, expected).join('\n  '))}`);
      }
      // The callers count the answers that had breakdowns and vitals to compare.
      return expected;
    };

    /** Checks at the phase's edges, then random ranges. */
    const checkPhase = async (phase: string) => {
      const [T, Tm1, Tm2] = [dayStart(0), dayStart(-1), dayStart(-2)];
      const near = base + 30_000;
      const edges: Check[] = [
        { now: near, range: undefined, user: A, project: undefined },
        { now: near, range: undefined, user: B, project: 'p1' },
        { now: open.end, range: { from: open.start - 1 }, user: A, project: undefined },
        { now: open.end + 1, range: { from: open.start }, user: A, project: undefined },
        { now: open.end + 1234, range: { from: open.start + 1, interval: 'hour' }, user: A, project: 'p1' },
        { now: near, range: { from: open.hour, to: open.hour + HOUR_MS, interval: 'hour' }, user: A, project: undefined },
        { now: near, range: { from: open.hour + 1, to: open.hour + HOUR_MS - 1 }, user: A, project: undefined },
        { now: near, range: { from: open.start + BURST_MS / 2, to: open.start + BURST_MS / 2 + 1 }, user: A, project: undefined },
        { now: near, range: { from: T - 1, to: T + 1 }, user: A, project: undefined },
        { now: near, range: { from: T - 1, interval: 'day' }, user: A, project: undefined },
        { now: near, range: { from: compacted.start + 1, to: compacted.end - 1, interval: 'hour' }, user: A, project: undefined },
        { now: compacted.end + 2000, range: { from: compacted.hour }, user: A, project: undefined },
        { now: near, range: { from: Tm2, to: Tm1, interval: 'day' }, user: A, project: undefined },
        { now: near, range: { from: Tm2 + 1, to: Tm1 - 1, interval: 'hour' }, user: A, project: 'p2' },
        { now: uncompacted.end + 1, range: { from: uncompacted.start, to: uncompacted.end }, user: A, project: undefined },
        { now: near, range: { from: uncompacted.hour - 1, to: uncompacted.hour + HOUR_MS + 1, interval: 'hour' }, user: A, project: undefined },
        { now: near, range: { from: Tm1, to: T, interval: 'day' }, user: A, project: undefined },
        { now: near, range: { from: dayStart(-10), to: dayStart(1), interval: 'day' }, user: A, project: undefined },
        { now: near, range: { from: dayStart(-10), to: dayStart(1), interval: 'hour' }, user: B, project: undefined },
        { now: near + 2 * DAY_MS, range: { from: dayStart(-30) }, user: A, project: 'p1' },
      ];
      let withBreakdowns = 0, withVitals = 0;
      for (const [i, c] of edges.entries()) {
        const s = await check(c, `${phase}, edge case ${i}`);
        if (s.breakdowns?.pages.length) withBreakdowns++;
        if (s.vitals?.pages.length) withVitals++;
      }
      assert.ok(withBreakdowns >= 12 && withVitals >= 12, `${phase}: the edge cases compare breakdowns (${withBreakdowns}) and vitals (${withVitals})`);
      covered.clear();

      // Random ranges: ends anywhere, on or next to hour and day boundaries, around the bursts,
      // on or next to events, or some time before now.
      const times = [...held.values()].flat().map((e) => Date.parse(e.receivedAt));
      const first = dayStart(-10), last = dayStart(1);
      const at = fc.oneof(
        { weight: 2, arbitrary: fc.integer({ min: first, max: last }) },
        { weight: 2, arbitrary: fc.tuple(fc.integer({ min: first / HOUR_MS, max: last / HOUR_MS }), fc.constantFrom(-1, 0, 0, 1)).map(([h, d]) => h * HOUR_MS + d) },
        { weight: 1, arbitrary: fc.tuple(fc.integer({ min: -10, max: 1 }), fc.constantFrom(-1, 0, 0, 1)).map(([d, o]) => dayStart(d) + o) },
        {
          weight: 4,
          arbitrary: fc.tuple(fc.constantFrom(...bursts), fc.constantFrom('before', 'start', 'in', 'end', 'after', 'hour', 'next hour'), fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(-1, 0, 0, 1))
            .map(([b, where, f, d]) => d + ({
              before: b.hour + Math.floor(f * (b.start - b.hour)),
              start: b.start,
              in: b.start + Math.floor(f * BURST_MS),
              end: b.end,
              after: b.end + Math.floor(f * (b.hour + HOUR_MS - b.end)),
              hour: b.hour,
              'next hour': b.hour + HOUR_MS,
            })[where]),
        },
        { weight: 2, arbitrary: fc.tuple(fc.nat(times.length - 1), fc.constantFrom(-1, 0, 1)).map(([i, d]) => times[i] + d) },
      );
      const end: fc.Arbitrary<End> = fc.oneof(
        { weight: 5, arbitrary: at.map((t) => ({ t })) },
        { weight: 1, arbitrary: fc.constantFrom(1, 5 * MINUTE, HOUR_MS, 3 * HOUR_MS, DAY_MS, 3 * DAY_MS).map((beforeNow) => ({ beforeNow })) },
      );
      const spec: fc.Arbitrary<RangeSpec | undefined> = fc.option(
        fc.record({ from: end, to: fc.option(end, { nil: undefined }), interval: fc.option(fc.constantFrom('hour' as const, 'day' as const), { nil: undefined }) }, { requiredKeys: ['from'] }),
        { nil: undefined, freq: 8 },
      );
      // Near the real now (before or after the open burst's active window), just after a burst
      // (its sessions are the active ones; a past now in a compacted or uncompacted day), inside
      // the open burst, or two days on.
      const nowArb = fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: -5 * MINUTE, max: 5 * MINUTE }).map((d) => base + d) },
        { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...bursts), fc.integer({ min: 0, max: 3000 })).map(([b, d]) => b.end + d) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: BURST_MS - 1 }).map((d) => open.start + d) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: DAY_MS }).map((d) => base + 2 * DAY_MS + d) },
      );
      const resolve = (e: End, now: number) => ('t' in e ? e.t : now - e.beforeNow);
      const rangeOf = (s: RangeSpec | undefined, now: number): StatsRange | undefined => {
        if (s === undefined) return undefined;
        let from = resolve(s.from, now);
        let to = s.to === undefined ? undefined : resolve(s.to, now);
        if (to === undefined && from >= now) to = from + 1;
        if (to !== undefined && to < from) [from, to] = [to, from];
        if (to === from) to = from + 1;
        return { from, ...(to === undefined ? {} : { to }), ...(s.interval ? { interval: s.interval } : {}) };
      };
      await fc.assert(fc.asyncProperty(nowArb, spec, fc.constantFrom(A, A, A, B), fc.constantFrom(undefined, undefined, undefined, 'p1', 'p1', 'p2', 'p-none'),
        async (now, s, user, project) => {
          const range = rangeOf(s, now);
          const answer = await check({ now, range, user, project }, phase);
          if (answer.breakdowns?.pages.length) withBreakdowns++;
          if (answer.vitals?.pages.length) withVitals++;
        }), { numRuns: RUNS, includeErrorInReport: true });
      // Every kind of day and busy hour came up in the random ranges.
      const missing = (['openBurst', 'compactedBurst', 'uncompactedBurst', 'lateIntoCompacted', 'uncompactedDay'] as Kind[]).filter((k) => !covered.get(k));
      assert.equal(missing, [], `${phase}: random ranges covered ${JSON.stringify(Object.fromEntries(covered))}`);
      coverage.push(`${phase}: ${[...covered].map(([k, c]) => `${k} ${c}`).join(', ')}; breakdowns ${withBreakdowns}, vitals ${withVitals}`);
    };

    // --- Phase 1 --------------------------------------------------------------------------------
    // Closed days that will be compacted: a busy one (day -2), scattered ones; both users.
    for (const d of [-9, -8, -6, -3]) await insert(shuffled([...scatter(A, d, 120), ...scatter(B, d, 40)]));
    await insert(interleave(inBurst(A, compacted, 1500), inBurst(B, compacted, 100)), 'compactedBurst');
    await insert(shuffled([...scatter(A, -2, 200), ...scatter(B, -2, 40)]));
    // Today's morning (not compacted: open), inserted before the compaction.
    await insert(scatter(A, 0, 100, dayStart(0), Math.max(dayStart(0) + 1, open.hour)));
    assert.ok((await compact()) >= 5, 'the closed days are compacted');
    assert.equal(await compactedDays(A), [-9, -8, -6, -3, -2]);
    // Late inserts into compacted days, in and out of the busy hour, with new and old sessions.
    await insert(shuffled([...scatter(A, -2, 50, compacted.hour, compacted.hour + HOUR_MS), ...scatter(A, -2, 30), ...scatter(A, -6, 10), ...scatter(B, -2, 10)]), 'lateIntoCompacted');
    // Closed days not compacted: a busy one (yesterday) and a quiet one.
    await insert(interleave(inBurst(A, uncompacted, 1200), inBurst(B, uncompacted, 100)), 'uncompactedBurst');
    await insert(shuffled([...scatter(A, -1, 200), ...scatter(A, -4, 120), ...scatter(B, -1, 30), ...scatter(B, -4, 30)]), 'uncompactedDay');
    // Today's busy hour: thousands of events within one minute, the other user's among them, and
    // scattered events of the rest of the day (up to a few minutes after the real now).
    await insert(interleave(inBurst(A, open, 3000), inBurst(B, open, 300)), 'openBurst');
    // The open day's rows so far folded into its first fold rows; the events after are counters.
    assert.ok((await fold()) > 0, 'the open day folded');
    assert.is(await foldsOf(A, 0), 1);
    await insert(shuffled([...scatter(A, 0, 150, dayStart(0), base + 3 * MINUTE), ...scatter(A, 0, 40, open.hour, open.hour + HOUR_MS), ...scatter(B, 0, 60, dayStart(0), base + 3 * MINUTE)]));
    assert.ok((await countersOf(A, -2)) > 0 && (await countersOf(A, -1)) > 0, 'late and uncompacted days are counters');
    const loaded = Date.now();
    await checkPhase('phase 1');
    const phase1 = Date.now();

    // --- Phase 2 --------------------------------------------------------------------------------
    // More late events into compacted days, more into the busy open hour and yesterday; then a
    // compaction (yesterday and day -4 close; the late events of days -2 and -3 stay counters
    // beside their day rows), then late events into the day just compacted, and a busy closed day
    // not compacted (day -5).
    await insert(shuffled([...scatter(A, -2, 40, compacted.start, compacted.end), ...scatter(A, -3, 30), ...scatter(B, -3, 10)]), 'lateIntoCompacted');
    await insert(interleave(inBurst(A, open, 600), inBurst(B, open, 50)), 'openBurst');
    await fold();
    assert.is(await foldsOf(A, 0), 2, 'a second fold of the open day');
    await insert(shuffled([...scatter(A, 0, 40, open.hour, open.hour + HOUR_MS), ...scatter(A, 0, 40, dayStart(0), base + 3 * MINUTE)]));
    await insert(shuffled([...scatter(A, -1, 60, uncompacted.hour, uncompacted.hour + HOUR_MS), ...scatter(B, -1, 10)]), 'uncompactedBurst');
    await compact();
    assert.equal(await compactedDays(A), [-9, -8, -6, -4, -3, -2, -1]);
    assert.ok((await countersOf(A, -2)) === 0 && (await countersOf(A, -3)) === 0, 'late events of days compacted before are folded too');
    assert.ok((await foldsOf(A, -2)) === 2 && (await foldsOf(A, -3)) === 2, 'each in a second fold row of its day');
    for (const [e, kind] of kinds) {
      if (kind === 'uncompactedBurst') kinds.set(e, 'compactedBurst');
      else if (kind === 'uncompactedDay') kinds.delete(e);
    }
    await insert(shuffled([...scatter(A, -1, 50, uncompacted.start - MINUTE, uncompacted.end + MINUTE), ...scatter(B, -1, 10)]), 'lateIntoCompacted');
    // A closed day that was empty at the compaction takes a burst and scattered events.
    bursts.push(quiet);
    await insert(interleave(inBurst(A, quiet, 800), inBurst(B, quiet, 50)), 'uncompactedBurst');
    await insert(shuffled([...scatter(A, -5, 120), ...scatter(B, -5, 30)]), 'uncompactedDay');
    await insert(scatter(A, 0, 30, dayStart(0), base + 3 * MINUTE));
    const reloaded = Date.now();
    await checkPhase('phase 2');

    const secs = (ms: number) => (ms / 1000).toFixed(1);
    console.log(`  PostgreSQL stats property: ${held.get(A)!.length} + ${held.get(B)!.length} events, ${checks} checks; ` +
      `load ${secs(loaded - started)} s, phase 1 ${secs(phase1 - loaded)} s, load ${secs(reloaded - phase1)} s, phase 2 ${secs(Date.now() - reloaded)} s\n  ${coverage.join('\n  ')}`);
  });

  test.run();
}
