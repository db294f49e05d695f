// Property: a user's rollups read again and again as they change (events coming to open parts,
// late ones to days merged already, parts frozen, days merged ahead of reads, segments dropped,
// parts a store adds on top) answer every read with the distinct sessions per name, goal and
// property that computeStats finds in the same events. Merged days count their sessions that no
// other part holds as numbers (lib/rollup/cross-days.ts); a session missed as crossing would be
// counted twice.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { recentsOf } from '../lib/live-window.ts';
import { assembleStats, planStats } from '../lib/rollup/assemble.ts';
import { CrossDays } from '../lib/rollup/cross-days.ts';
import { HourRollup, rollupRow } from '../lib/rollup/hour.ts';
import { WithParts } from '../lib/rollup/user.ts';
import { computeStats, rangeProblem, type StatsRange } from '../lib/stats.ts';
import { SegmentsModel } from './helpers/segments-model.ts';

const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);
const H = 3_600_000;
const D = 86_400_000;
const DAY0 = Date.parse('2026-05-20T00:00:00.000Z');
const UUIDS = Array.from({ length: 40 }, (_, i) => `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`);

// Times over five days, many near midnights (sessions spanning them).
const time = fc.oneof(
  fc.integer({ min: -4 * D, max: D - 1 }).map((o) => DAY0 + o),
  fc.tuple(fc.integer({ min: -4, max: 0 }), fc.integer({ min: -2 * H, max: 2 * H })).map(([d, o]) => DAY0 + d * D + o),
);
const rawEvent = fc.record({
  type: fc.constantFrom('pageload', 'pageload', 'custom', 'click', 'error'),
  // Enough sessions that many stay within one day (counted as numbers), the others cross.
  session: fc.nat({ max: 39 }),
  route: fc.constantFrom('/', '/a', '/b/c'),
  name: fc.constantFrom('signup', 'checkout'),
  plan: fc.option(fc.constantFrom('free', 'pro'), { nil: undefined }),
  browser: fc.constantFrom('Chrome', 'Firefox', null),
  at: time,
});
type Raw = typeof rawEvent extends fc.Arbitrary<infer T> ? T : never;

const GOALS = [
  { id: 'g1', name: 'any page', page: '/**', event: null },
  { id: 'g2', name: 'a', page: '/a', event: null },
  { id: 'g3', name: 'signed up', page: null, event: 'signup' },
];

const op = fc.oneof(
  { arbitrary: fc.array(rawEvent, { minLength: 1, maxLength: 12 }).map((events) => ({ kind: 'add' as const, events })), weight: 4 },
  { arbitrary: fc.constant({ kind: 'seal' as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'idle' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'drop' as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      from: fc.integer({ min: -5 * 24, max: 0 }).chain((h) => fc.constantFrom(DAY0 + h * H, DAY0 + h * H + 1_800_000)),
      to: fc.option(time, { nil: undefined }),
      interval: fc.constantFrom('day' as const, 'day' as const, 'hour' as const),
      property: fc.boolean(),
      extra: fc.array(rawEvent, { maxLength: 6 }),
    }),
    weight: 4,
  },
);

let n = 0;
function stored(r: Raw, uuids: boolean): StoredEvent {
  const sessionId = uuids || r.session < 20 ? UUIDS[r.session] : `s${r.session}`;
  const raw: RawEvent = { type: r.type, sessionId, route: r.route, url: `https://x${r.route}`, name: r.name, data: r.plan ? { plan: r.plan } : {} };
  const e = normalise(raw, { now: r.at, owner: 'u', newId: () => `e${++n}` });
  if (r.browser) e.client = { browser: r.browser, os: null, device: null } as StoredEvent['client'];
  return e;
}

test('reads of changing rollups count distinct sessions as computeStats does, merged days and all', () => {
  let reads = 0, viewed = 0;
  fc.assert(
    fc.property(fc.boolean(), fc.array(op, { minLength: 2, maxLength: 30 }), (uuids, ops) => {
      // The newest segment takes events, older ones are frozen.
      const model = new SegmentsModel();
      const { rollups } = model;
      for (const o of ops) {
        if (o.kind === 'add') for (const r of o.events) model.add(stored(r, uuids));
        else if (model.apply(o)) continue;
        else if (o.kind === 'read') {
          const events = model.events();
          const extra = o.extra.map((r) => stored(r, uuids));
          const now = DAY0 + D + 1;
          const range: StatsRange = { from: o.from, to: o.to, interval: o.interval, goals: GOALS, ...(o.property ? { property: { key: 'plan', keys: true } } : {}) };
          if (rangeProblem(range, now) !== null) continue;
          const plan = planStats(now, range);
          // Parts a store adds on top (rows of segments without parts): whole hours only.
          const [h0, h1] = plan.fullHours;
          const onTop = extra.filter((e) => {
            const h = Math.floor(Date.parse(e.receivedAt) / H);
            return h >= h0 && h < h1;
          });
          const source = onTop.length ? new WithParts(rollups, HourRollup.fromRows(onTop.map((e) => rollupRow(e)))) : rollups;
          const all = [...events, ...onTop];
          const inSpans = (t: number) => plan.rawSpans.some(([a, b]) => t >= a && t < b);
          const edges = HourRollup.fromRows(all.map((e) => rollupRow(e)).filter((row) => inSpans(row.receivedMs)));
          const got = assembleStats({ plan, rollups: source, edges, recents: recentsOf(all, now, plan.range) });
          const want = computeStats(all, now, range);
          assert.equal(got.breakdowns, want.breakdowns);
          assert.equal(got.goals, want.goals);
          assert.equal(got.properties, want.properties);
          assert.equal(got.propertyKeys, want.propertyKeys);
          reads++;
          if (plan.range!.bucketMs >= D) viewed++;
        }
      }
    }),
    { numRuns: RUNS },
  );
  assert.ok(reads > RUNS && viewed > RUNS / 2, `${reads} reads, ${viewed} by day`);
});

test('CrossDays: a session held by two merged days crosses in both; dropping one keeps it marked; the table is rebuilt from the days held', () => {
  const a = HourRollup.fromRows([row(UUIDS[0], 0), row(UUIDS[1], 0)])[0];
  const b = HourRollup.fromRows([row(UUIDS[1], 24), row(UUIDS[2], 24)])[0];
  const cross = new CrossDays();
  const day = (p: HourRollup) => Math.floor(p.hour / 24);
  cross.add(day(a), a);
  cross.add(day(b), b);
  const va = cross.view(cross.heldOf(a)!), vb = cross.view(cross.heldOf(b)!);
  assert.equal([...va.crossing], [0, 1]);
  assert.equal([...vb.crossing], [1, 0]);
  // A part read beside them (another day) that holds UUIDS[0] marks it in day 0; its own day is not marked.
  const [ofDay1, ofDay2] = HourRollup.fromRows([row(UUIDS[0], 48), row(UUIDS[2], 24)]);
  cross.markLoose(ofDay1, false);
  cross.markLoose(ofDay2, false);
  assert.equal([...cross.view(cross.heldOf(a)!).crossing], [1, 1]);
  assert.equal([...cross.view(cross.heldOf(b)!).crossing], [1, 0], 'a part of day 1 read by hours: day 1 is not in that read');
  cross.markLoose(ofDay1, true);
  assert.equal([...cross.view(cross.heldOf(b)!).crossing], [1, 1], 'a part on top of a day read whole');
  cross.remove(day(a));
  assert.equal(cross.heldOf(a), null);
  assert.equal([...cross.view(cross.heldOf(b)!).crossing], [1, 1]);
});

test('CrossDays: sessions of days no longer held are dropped from the table, and marks are made again from the days held', () => {
  const cross = new CrossDays(0);
  const parts = [0, 1, 2].map((d) => HourRollup.fromRows([row(UUIDS[d], 24 * d), row(UUIDS[d + 1], 24 * d), row(`s${d}`, 24 * d)])[0]);
  const day = (p: HourRollup) => Math.floor(p.hour / 24);
  for (const p of parts) cross.add(day(p), p);
  assert.equal(cross.tableSize, 7);
  assert.equal([...cross.view(cross.heldOf(parts[1])!).crossing], [1, 1, 0]);
  cross.remove(day(parts[0]));
  cross.remove(day(parts[2]));
  assert.equal(cross.tableSize, 3, 'rebuilt from day 1 alone');
  assert.equal([...cross.view(cross.heldOf(parts[1])!).crossing], [0, 0, 0], 'nothing else holds its sessions now');
  cross.add(day(parts[2]), parts[2]);
  assert.equal([...cross.view(cross.heldOf(parts[1])!).crossing], [0, 1, 0]);
  assert.equal([...cross.view(cross.heldOf(parts[2])!).crossing], [1, 0, 0]);
});

function row(session: string, hour: number) {
  return rollupRow(normalise({ type: 'pageload', sessionId: session, route: '/' } as RawEvent, { now: DAY0 + hour * H, owner: 'u', newId: () => `r${++n}` }));
}

test.run();
