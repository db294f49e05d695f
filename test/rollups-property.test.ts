// Property: statistics assembled from rollups equal computeStats over the same raw events, for
// random events (fractional, negative and huge durations, times on hour and day boundaries, in or
// out of receive order), split into random tagged parts of which some are frozen (encoded and
// decoded), after removing the oldest events, for random ranges (cutting hours and days, both
// intervals, none) and random `now`s; with clients, referrers, versions and web vitals, whose
// breakdowns and vitals summary come with every range.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { LiveWindow, recentsOf } from '../lib/live-window.ts';
import { assembleStats, planStats } from '../lib/rollup/assemble.ts';
import { HourRollup, rollupRow } from '../lib/rollup/hour.ts';
import { UserRollups } from '../lib/rollup/user.ts';
import { computeStats, rangeProblem, type StatsRange } from '../lib/stats.ts';

const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);
const H = 3_600_000;
const D = 86_400_000;
const DAY0 = Date.parse('2026-05-16T00:00:00.000Z');

// Times over three days, dense around one midnight, a third on or next to an hour boundary.
const time = fc.oneof(
  fc.integer({ min: -2 * D, max: D }).map((o) => DAY0 + o),
  fc.integer({ min: -3 * H, max: 3 * H }).map((o) => DAY0 + o),
  fc.tuple(fc.integer({ min: -48, max: 24 }), fc.constantFrom(-1, 0, 1)).map(([h, d]) => DAY0 + h * H + d),
);
const duration = fc.oneof(
  fc.integer({ min: 0, max: 3000 }),
  fc.integer({ min: 0, max: 12_000 }).map((q) => q / 4),
  fc.double({ min: -5, max: 70_000, noNaN: true }),
  fc.constantFrom(1e7, 0.5, 1.5, -0.5, 'slow', undefined),
);
const rawEvent = fc.record({
  type: fc.constantFrom('pageload', 'pageload', 'pageload', 'error', 'click', 'feedback', 'custom', 'custom', 'performance', 'performance', 'performance', 'weird'),
  sessionId: fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'lone\ud800'), { nil: undefined }),
  deployVersion: fc.option(fc.constantFrom('1.0', '2.0'), { nil: undefined }),
  route: fc.option(fc.constantFrom('/', '/a', '/b/c'), { nil: undefined }),
  url: fc.option(fc.constantFrom('https://x/p?q=1', '/rel', 'not a url', 'https://x/p?utm_source=News&utm_medium=email',
    '/l?utm_campaign=spring&utm_source=ads&utm_source=dup', 'https://x/?utm_medium=&utm_campaign=%20Launch'), { nil: undefined }),
  environment: fc.option(fc.constantFrom('production', 'staging', 'Production', ' ', 'e'.repeat(65)), { nil: undefined }),
  name: fc.option(fc.constantFrom('signup', 'checkout', '', 7), { nil: undefined }),
  duration,
  ttfb: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
  rating: fc.constantFrom(1, 2, 3, 4, 5, 0, 2.5, '3'),
  at: time,
  tag: fc.integer({ min: 0, max: 2 }),
  referrer: fc.option(fc.constantFrom('https://a.example', 'https://b.example/path?q=1', 'android-app://x', ''), { nil: undefined }),
  client: fc.option(fc.record({
    browser: fc.constantFrom('Chrome', 'Firefox', null),
    os: fc.constantFrom('Windows', 'iOS', null),
    device: fc.constantFrom('desktop', 'mobile', null),
    country: fc.constantFrom('DE', 'US', null, undefined),
  }), { nil: undefined }),
  vital: fc.constantFrom('LCP', 'INP', 'CLS', 'FCP', 'TTFB', 'cls', 'FID', undefined),
  // Custom event properties (compared in few runs here, whose ranges hold few custom events;
  // properties.test.ts compares them on data full of them): scalars of every kind, a key too long, a nested value (never counted),
  // a long value (cut), and more keys than are counted.
  props: fc.option(fc.dictionary(
    fc.constantFrom('plan', 'plan', 'n', 'n', 'ok', 'ok', 'k'.repeat(41), 'nested', 'long', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'name', 'nul'),
    fc.oneof(fc.constantFrom('free', 'pro', ' pro ', '', 'x'.repeat(120), 'nul\u0000'), fc.integer({ min: -2, max: 3 }), fc.constantFrom(1.5, true, false, null, { a: 1 }, [1])),
    { maxKeys: 14 },
  ), { nil: undefined, freq: 8 }),
  vitalValue: fc.oneof(fc.integer({ min: 0, max: 6000 }), fc.double({ min: -1, max: 5, noNaN: true }), fc.constantFrom(0.1, 0.25, 0.1004, 2500, 2500.5, 'x')),
});
// A range's ends: any time, or the receive time of one of the events (give or take 1 ms).
const end = fc.oneof(time.map((t) => ({ t })), fc.tuple(fc.nat(), fc.constantFrom(-1, 0, 0, 1)).map(([i, d]) => ({ event: i, d })));
const range = fc.option(
  fc.record({ from: end, to: fc.option(end, { nil: undefined }), interval: fc.option(fc.constantFrom('hour' as const, 'day' as const), { nil: undefined }) }, { requiredKeys: ['from'] }),
  { nil: undefined },
);
type End = { t: number } | { event: number; d: number };
const at = (e: End, times: number[]) => ('t' in e ? e.t : times.length ? times[e.event % times.length] + e.d : DAY0);

let n = 0;
type Raw = typeof rawEvent extends fc.Arbitrary<infer T> ? T : never;
const toStored = (r: Raw): StoredEvent => {
  const raw: RawEvent = { type: r.type, sessionId: r.sessionId, deployVersion: r.deployVersion, route: r.route, url: r.url, referrer: r.referrer, environment: r.environment, name: r.name };
  raw.data = r.type === 'feedback' ? { rating: r.rating }
    : r.type === 'performance' ? { name: r.vital, value: r.vitalValue }
    : { ...r.props, duration: r.duration, ttfb: r.ttfb };
  const e = normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: r.at, owner: 'u', newId: () => `p${++n}` });
  // As POST /api/events sets it from the User-Agent.
  if (r.client) e.client = r.client as StoredEvent['client'];
  return e;
};

/** What a stats request may ask of properties: a key's values, of one event or all, and the keys. */
const propertyQuery = fc.constantFrom(undefined, { key: 'plan' }, { key: 'n', event: 'signup' }, { keys: true }, { keys: true, key: 'ok', event: 'checkout' },
  { key: 'k'.repeat(41) }, { key: 'long' }, { key: 'name', event: 'unknown' }, { key: 'nul', keys: true });

/** Goals over the generator's routes and custom event names, some matching nothing. */
const GOALS = [
  { id: 'g1', name: 'any page', page: '/**', event: null },
  { id: 'g2', name: 'below b', page: '/b/*', event: null },
  { id: 'g3', name: 'a', page: '/a', event: null },
  { id: 'g4', name: 'signed up', page: null, event: 'signup' },
  { id: 'g5', name: 'nothing', page: null, event: 'never' },
];

test('stats assembled from rollups and the live window equal computeStats over the raw events', () => {
  let windowAnswered = 0, rawAnswered = 0, withBreakdowns = 0, withVitals = 0, converted = 0;
  fc.assert(
    fc.property(
      fc.array(rawEvent, { maxLength: 80 }), fc.boolean(), fc.nat(), fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      range, fc.oneof(time, fc.integer({ min: 0, max: 10 * 60_000 }).map((d) => -d - 1)), propertyQuery,
      (raws, inReceiveOrder, removeSeed, frozenTags, maybeRange, nowPick, property) => {
        if (inReceiveOrder) raws = [...raws].sort((a, b) => a.at - b.at);
        const events = raws.map(toStored);
        const rollups = new UserRollups();
        const window = new LiveWindow();
        events.forEach((e, i) => {
          rollups.add(rollupRow(e), raws[i].tag);
          window.add(e);
        });
        // Evict the oldest, as the memory store does, then seal some tags.
        const removed = events.length ? removeSeed % (events.length + 1) : 0;
        for (let i = 0; i < removed; i++) {
          rollups.remove(rollupRow(events[i]), raws[i].tag);
          window.remove(events[i]);
        }
        frozenTags.forEach((frozen, tag) => frozen && rollups.freeze(tag));
        const held = events.slice(removed);

        // A negative pick is "shortly after the newest event" (the usual request); else any time.
        const newest = Math.max(DAY0, ...raws.map((r) => r.at));
        const now = nowPick < 0 ? newest - nowPick - 1 : nowPick;
        const times = raws.map((x) => x.at);
        const asked = maybeRange && { ...maybeRange, from: at(maybeRange.from, times), to: maybeRange.to && at(maybeRange.to, times), goals: GOALS, ...(property ? { property } : {}) };
        const r: StatsRange | undefined = asked && rangeProblem(asked, now) === null ? asked : undefined;

        const plan = planStats(now, r, window.newest);
        const inSpans = (t: number) => plan.rawSpans.some(([a, b]) => t >= a && t < b);
        const edges = HourRollup.fromRows(held.map((e) => rollupRow(e)).filter((row) => inSpans(row.receivedMs)));
        const live = window.recents(now, plan.range);
        if (live) windowAnswered++;
        else rawAnswered++;
        const recents = live ?? recentsOf(held, now, plan.range);
        const want = computeStats(held, now, r);
        assert.equal(assembleStats({ plan, rollups, edges, recents }), want);
        if (want.breakdowns) {
          withBreakdowns++;
          if (want.vitals!.pages.length) withVitals++;
          if (want.goals!.some((g) => g.sessions > 0)) converted++;
        }
      },
    ),
    { numRuns: RUNS * 2 },
  );
  assert.ok(windowAnswered > RUNS / 4 && rawAnswered > RUNS / 10, `window ${windowAnswered}, raw ${rawAnswered}: both paths run`);
  // Vitals come up in about 22 of the 300 runs (19-24 seen); the bound only asks that they are
  // compared at all. RUNS / 10 failed once on 12 (chance about 1 in 20).
  assert.ok(withBreakdowns > RUNS / 4 && withVitals > RUNS / 30, `breakdowns ${withBreakdowns}, with vitals ${withVitals}: both compared`);
  // Goals convert in about 23 of the 300 runs (13-29 seen; RUNS / 10 failed on 13); the bound only
  // asks that conversions are compared at all. goals.test.ts compares them on data full of them.
  assert.ok(converted > RUNS / 30, `goals with conversions compared in ${converted} runs`);
});

test('planStats: whole hours from rollups, raw spans only for partial hours at the edges', () => {
  const at = DAY0 + 10 * H;
  assert.equal(planStats(at, undefined), { now: at, range: null, fullHours: [-Infinity, Infinity], rawSpans: [], goals: [], property: null });
  const cut = planStats(at, { from: DAY0 + 30 * 60_000, to: DAY0 + 5 * H + 1 });
  assert.equal([cut.fullHours, cut.rawSpans], [[DAY0 / H + 1, DAY0 / H + 5], [[DAY0 + 30 * 60_000, DAY0 + H], [DAY0 + 5 * H, DAY0 + 5 * H + 1]]]);
  const toNow = planStats(at + 123, { from: DAY0 }, at);
  assert.equal([toNow.fullHours, toNow.rawSpans], [[DAY0 / H, DAY0 / H + 11], []], 'nothing at or after to: the last hour is whole');
  const inside = planStats(at, { from: DAY0 + 60_000, to: DAY0 + 2 * 60_000 });
  assert.equal([inside.fullHours[0] === inside.fullHours[1], inside.rawSpans], [true, [[DAY0 + 60_000, DAY0 + 2 * 60_000]]]);
});

test.run();
