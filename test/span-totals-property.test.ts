// Property: a user's rollups read again and again over the same and shifted ranges, as late events
// come to merged (closed) days, parts are frozen, days merged when idle and segments dropped,
// answer every read as computeStats does over the same events; the route, type, version, feedback
// and vitals sums of the merged days then come from the span sums kept between reads
// (lib/rollup/span-totals.ts), which must be dropped whenever one of their days changes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { recentsOf } from '../lib/live-window.ts';
import { assembleStats, planStats } from '../lib/rollup/assemble.ts';
import { HourRollup, rollupRow } from '../lib/rollup/hour.ts';
import { SpanCache } from '../lib/rollup/span-totals.ts';
import { computeStats, rangeProblem, type StatsRange } from '../lib/stats.ts';
import { SegmentsModel } from './helpers/segments-model.ts';

const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);
const H = 3_600_000;
const D = 86_400_000;
const DAY0 = Date.parse('2026-06-10T00:00:00.000Z');
const NOW = DAY0 + D - 1;

// Times over six days, most in the last (open) one, the others late events to closed days (merged
// ones among them), some on hour and day boundaries.
const time = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: D - 2 }).map((o) => DAY0 + o), weight: 6 },
  { arbitrary: fc.integer({ min: -5 * D, max: -1 }).map((o) => DAY0 + o), weight: 1 },
  { arbitrary: fc.tuple(fc.integer({ min: -5, max: 0 }), fc.constantFrom(0, 1, H, D - 1)).map(([d, o]) => DAY0 + d * D + o), weight: 1 },
);
// Events over the six days first: a store's history before the changes below.
const history = fc.array(fc.record({ at: fc.integer({ min: -5 * D, max: D - 2 }).map((o) => DAY0 + o), session: fc.nat({ max: 9 }) }), { minLength: 5, maxLength: 60 });
const rawEvent = fc.record({
  type: fc.constantFrom('pageload', 'pageload', 'pageload', 'error', 'feedback', 'custom', 'performance', 'performance'),
  session: fc.nat({ max: 9 }),
  route: fc.constantFrom('/', '/a', '/b/c'),
  version: fc.option(fc.constantFrom('1.0', '2.0'), { nil: undefined }),
  // Whole ms, fractions, negative and past the dense range of the percentile walk.
  duration: fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(0.5, -3, 70_000, 1e7, undefined)),
  rating: fc.constantFrom(1, 2, 3, 4, 5),
  vital: fc.constantFrom('LCP', 'INP', 'CLS', 'TTFB'),
  vitalValue: fc.oneof(fc.integer({ min: 0, max: 6000 }), fc.constantFrom(0.1, 0.25, 2500, 70_000)),
  at: time,
});
type Raw = typeof rawEvent extends fc.Arbitrary<infer T> ? T : never;

// Few ranges, so that reads repeat one (a span kept) or shift it by a day or an hour.
const froms = [-5, -4, -3].flatMap((d) => [DAY0 + d * D, DAY0 + d * D + H, DAY0 + d * D + 1_800_000]);
const tos = [undefined, DAY0, DAY0 - D, DAY0 + 2 * H + 5];
const op = fc.oneof(
  { arbitrary: fc.array(rawEvent, { minLength: 1, maxLength: 10 }).map((events) => ({ kind: 'add' as const, events })), weight: 4 },
  { arbitrary: fc.constant({ kind: 'seal' as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'idle' as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'drop' as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      from: fc.constantFrom(...froms),
      to: fc.constantFrom(...tos),
      interval: fc.constantFrom('day' as const, 'day' as const, 'hour' as const),
      times: fc.integer({ min: 1, max: 3 }),
    }),
    weight: 5,
  },
);

let n = 0;
function stored(r: Raw): StoredEvent {
  const raw: RawEvent = { type: r.type, sessionId: `s${r.session}`, route: r.route, url: `https://x${r.route}`, deployVersion: r.version };
  raw.data = r.type === 'feedback' ? { rating: r.rating } : r.type === 'performance' ? { name: r.vital, value: r.vitalValue } : { duration: r.duration };
  return normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: r.at, owner: 'u', newId: () => `t${++n}` });
}

test('repeated and shifted reads with span sums kept answer as computeStats does while merged days change', () => {
  let reads = 0, hits = 0;
  fc.assert(
    fc.property(history, rawEvent, fc.array(op, { minLength: 3, maxLength: 40 }), (past, like, ops) => {
      // The newest segment takes events (late ones too), older ones are frozen.
      const model = new SegmentsModel();
      const { rollups } = model;
      // The history in two segments, sealed.
      for (const [i, p] of past.entries()) {
        const e = stored({ ...like, ...p, type: i % 3 ? 'pageload' : like.type, duration: like.duration === undefined ? i : like.duration });
        if (i === past.length >> 1) model.seal();
        model.add(e);
      }
      model.seal();
      for (const o of ops) {
        if (o.kind === 'add') for (const r of o.events) model.add(stored(r));
        else if (model.apply(o)) continue;
        else if (o.kind === 'read') {
          const events = model.events();
          const range: StatsRange = { from: o.from, to: o.to, interval: o.interval };
          if (rangeProblem(range, NOW) !== null) continue;
          const plan = planStats(NOW, range);
          const inSpans = (t: number) => plan.rawSpans.some(([a, b]) => t >= a && t < b);
          const edges = HourRollup.fromRows(events.map((e) => rollupRow(e)).filter((row) => inSpans(row.receivedMs)));
          const want = computeStats(events, NOW, range);
          for (let i = 0; i < o.times; i++) {
            const got = assembleStats({ plan, rollups, edges, recents: recentsOf(events, NOW, plan.range) });
            assert.equal(got, want);
            reads++;
          }
        }
      }
      hits += rollups.spans.hits;
      assert.ok(rollups.spans.bytes <= rollups.spans.limit, 'within the bound');
    }),
    { numRuns: RUNS },
  );
  assert.ok(hits > RUNS / 2, `${reads} reads, ${hits} from a span kept`);
});

test('SpanCache: a span is kept for the same days only, at most three, dropped with a day, within its byte limit', () => {
  const days = [0, 1, 2, 3].map((d) => HourRollup.fromRows([row(24 * d, 100 + d), row(24 * d, 100)])[0]);
  const cache = new SpanCache(() => Infinity);
  const a = cache.of([days[0], days[1]])!;
  assert.ok(cache.of([days[0], days[1]]) === a);
  assert.is(cache.hits, 1);
  assert.is(cache.of([days[0]]), null, 'one day: summed as it is');
  const other = HourRollup.fromRows([row(0, 100)])[0];
  assert.ok(cache.of([other, days[1]]) !== a, 'another part of the same day');
  assert.equal([...a.values], [100, 101]);
  assert.equal([...a.valueCounts], [3, 1]);
  assert.equal(a.routeCounts, [4]);
  cache.of([days[1], days[2]]);
  cache.of([days[2], days[3]]);
  assert.is(cache.size, 3, 'the least recently used went');
  assert.ok(cache.of([days[0], days[1]]) !== a);
  cache.dropDay(Math.floor(days[1].hour / 24));
  assert.is(cache.size, 1, 'the spans holding day 1 went');
  const small = new SpanCache(() => a.bytes * 1.5);
  small.of([days[0], days[1]]);
  small.of([days[1], days[2]]);
  assert.is(small.size, 1, 'two spans exceed the limit');
  assert.ok(small.bytes <= small.limit);
  let limit = Infinity;
  const shrinking = new SpanCache(() => limit);
  shrinking.of([days[0], days[1]]);
  shrinking.of([days[2], days[3]]);
  limit = shrinking.bytes - 1;
  shrinking.dropDay(-1);
  assert.is(shrinking.size, 1, 'a merged day dropped lowers the limit: the least recently used went');
  const none = new SpanCache(() => 0);
  assert.is(none.of([days[0], days[1]]), null, 'a span past the limit is not kept: the days are summed one by one');
  assert.is(none.size, 0);
});

function row(hour: number, duration: number) {
  return rollupRow(normalise({ type: 'pageload', sessionId: 's', route: '/', data: { duration } } as RawEvent, { now: DAY0 + hour * H, owner: 'u', newId: () => `r${++n}` }));
}

test.run();
