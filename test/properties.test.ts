// Custom event properties (docs/api.md#properties): which pairs of `data` count (the bounds), the
// answer's cut-off, and, as a property, that the answer assembled from rollups (open, frozen and
// merged parts) equals one computed here straight from the raw events, by rules written out again
// rather than through lib/properties.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { BREAKDOWN_LIMIT } from '../lib/breakdowns.ts';
import { customEventName } from '../lib/event-fields.ts';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { recentsOf } from '../lib/live-window.ts';
import { MAX_PROPERTIES, MAX_PROPERTY_VALUE, PROPERTY_NAMES_CAP, propertiesOf, propertyName, propertyNamesHeld, parseProperty, type PropertyQuery } from '../lib/properties.ts';
import { assembleStats, planStats } from '../lib/rollup/assemble.ts';
import { encodePart, FrozenHour } from '../lib/rollup/codec.ts';
import { asHour, HourRollup, rollupRow, type RollupPart } from '../lib/rollup/hour.ts';
import { UserRollups } from '../lib/rollup/user.ts';
import { computeStats, rangeProblem, type StatsRange } from '../lib/stats.ts';
import { app } from './helpers/app.ts';
import { canCollect, heapGrowth } from './helpers/heap.ts';

const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);
const H = 3_600_000;
const NOW = Date.parse('2026-05-16T12:00:00.000Z');
let seq = 0;
const ev = (raw: RawEvent, at = NOW - 1000): StoredEvent => normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: 'u', newId: () => `q${++seq}` });
const pairs = (e: StoredEvent) => (propertiesOf(e.type, (e.name as string | undefined) ?? 'unknown', e.data) ?? []).map(parseProperty);

test('the pairs counted: scalars of custom events, in order, bounded in keys, key length and value length', () => {
  const data: Record<string, unknown> = {
    plan: ' pro ', n: 3, ratio: 1.5, ok: true, no: false, none: null, nested: { a: 1 }, list: [1], empty: ' ',
    ['k'.repeat(41)]: 'key too long', ['k'.repeat(40)]: 'longest key', 'bad\nkey': 'control', long: 'v'.repeat(150), nul: 'a\u0000b',
    a: 1, b: 2, c: 3, d: 4, e: 5,
  };
  const got = pairs(ev({ type: 'custom', name: 'buy', data }));
  assert.equal(got.map((p) => [p.key, p.value]), [
    ['plan', 'pro'], ['n', '3'], ['ratio', '1.5'], ['ok', 'true'], ['no', 'false'],
    ['k'.repeat(40), 'longest key'], ['long', 'v'.repeat(MAX_PROPERTY_VALUE)], ['nul', 'a\uFFFDb'], ['a', '1'], ['b', '2'],
  ], 'the first ten that count; nested values, null, blanks, long or control keys are skipped; long values cut');
  assert.is(got.length, MAX_PROPERTIES);
  assert.ok(got.every((p) => p.event === 'buy'));
  assert.equal(pairs(ev({ type: 'click', data: { plan: 'pro' } })), [], 'only custom events');
  assert.equal(pairs(ev({ type: 'custom', data: { plan: 'pro' } })).map((p) => p.event), ['unknown'], 'an unnamed one counts under "unknown"');
  // The event name's own characters cannot shift the split between name and value.
  const odd = pairs(ev({ type: 'custom', name: 'a\u001f3\u001fb', data: { k: 'v\u001fw' } }))[0];
  assert.equal(odd, { key: 'k', event: 'a\u001f3\u001fb', value: 'v\u001fw' });
});

test('names are made once and held bounded: past the bound each name is still its pairs', () => {
  for (let i = 0; i < PROPERTY_NAMES_CAP * 2 + 500; i++) {
    const event = `ev${i % 3}`;
    const names = propertiesOf('custom', event, { a: `v${i}`, b: i % 50, c: i % 2 === 0 })!;
    assert.equal(names.map(parseProperty), [
      { key: 'a', event, value: `v${i}` }, { key: 'b', event, value: String(i % 50) }, { key: 'c', event, value: String(i % 2 === 0) },
    ]);
    assert.ok(propertyNamesHeld() <= PROPERTY_NAMES_CAP);
  }
  assert.equal(propertiesOf('custom', 'ev0', { a: 'v0' }), [propertyName('a', 'ev0', 'v0')], 'made again after the names were let go');
});

if (canCollect) {
  test('a value or event name cut to its bound holds nothing of the long string it was cut from', async () => {
    const held: string[] = [];
    const grown = await heapGrowth(() => {
      for (let i = 0; i < 200; i++) {
        const long = String(i).padEnd(250_000, 'x');
        held.push(...propertiesOf('custom', customEventName(long, null, {})!, { k: long })!);
      }
    });
    assert.is(held.length, 200);
    // 200 strings of 250,000 characters would be 50 MB; the names themselves take ~60 KB.
    assert.ok(grown < 10_000_000, `heap grew ${grown} bytes`);
  });
}

test('the answer: a key\'s values over all events or one, the keys, sorted by events, at most BREAKDOWN_LIMIT rows', () => {
  const events = [
    ev({ type: 'custom', name: 'buy', sessionId: 's1', data: { plan: 'pro', n: 1 } }),
    ev({ type: 'custom', name: 'buy', sessionId: 's2', data: { plan: 'pro' } }),
    ev({ type: 'custom', name: 'trial', sessionId: 's1', data: { plan: 'pro' } }),
    ev({ type: 'custom', name: 'trial', sessionId: 's3', data: { plan: 'free' } }),
    ev({ type: 'custom', name: 'buy', sessionId: 's4', data: { plan: 'team' } }, NOW - 2 * H),
  ];
  const ask = (property: PropertyQuery) => computeStats(events, NOW, { from: NOW - H, property });
  assert.equal(ask({ key: 'plan' }).properties, { plan: [{ name: 'pro', events: 3, sessions: 2 }, { name: 'free', events: 1, sessions: 1 }] });
  assert.equal(ask({ key: 'plan', event: 'buy' }).properties, { plan: [{ name: 'pro', events: 2, sessions: 2 }] });
  assert.equal(ask({ keys: true }).propertyKeys, [{ name: 'plan', events: 4, sessions: 3 }, { name: 'n', events: 1, sessions: 1 }]);
  assert.equal(ask({ key: 'absent' }).properties, { absent: [] });
  assert.not.ok('properties' in computeStats(events, NOW, { from: NOW - H }), 'not asked: not answered');
  assert.not.ok('properties' in computeStats(events, NOW, { property: { key: 'plan' } }), 'without a range: none');
  // 150 values: the 100 with most events, each counted exactly.
  const many = Array.from({ length: 150 }, (_, i) => Array.from({ length: 1 + (i % 7) }, () => ev({ type: 'custom', name: 'x', data: { v: `v${i}` } }))).flat();
  const rows = computeStats(many, NOW, { from: NOW - H, property: { key: 'v' } }).properties!.v;
  assert.is(rows.length, BREAKDOWN_LIMIT);
  assert.equal(rows[0], { name: 'v104', events: 7, sessions: 0 });
  assert.ok(rows.every((r, i) => i === 0 || rows[i - 1].events > r.events || (rows[i - 1].events === r.events && rows[i - 1].name < r.name)));
  assert.is(rows.filter((r) => r.events === 7).length, 21, 'every value with most events is listed');
});

// ---- property: rollups against a reference written from the raw events --------------------------

const KEYS = ['plan', 'plan', 'n', 'ok', 'k'.repeat(41), 'nested', 'long', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'name'];
const value = fc.oneof(fc.constantFrom('free', 'pro', ' pro ', '', ' ', 'x'.repeat(120), 'n\u0000ul', 'é'), fc.integer({ min: -2, max: 3 }),
  fc.constantFrom(1.5, -0, 1e21, true, false, null, { a: 1 }, [1]));
const rawEvent = fc.record({
  type: fc.constantFrom('custom', 'custom', 'custom', 'pageload', 'click'),
  name: fc.option(fc.constantFrom('buy', 'trial', ' buy ', ''), { nil: undefined }),
  sessionId: fc.option(fc.constantFrom('s1', 's2', 's3', 's4'), { nil: undefined }),
  data: fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 15 }),
  at: fc.integer({ min: -30 * H, max: 0 }).map((o) => NOW + o),
  tag: fc.integer({ min: 0, max: 2 }),
});
const query: fc.Arbitrary<PropertyQuery> = fc.constantFrom({ key: 'plan' }, { key: 'plan', event: 'buy' }, { keys: true }, { keys: true, event: 'trial', key: 'n' },
  { key: 'long' }, { key: 'name' }, { key: 'ok', event: 'unknown' }, { key: 'k'.repeat(41) }, { key: 'i' });

/** The answer by the documented rules, from the raw events, sharing nothing with lib/properties.ts. */
function reference(events: readonly StoredEvent[], from: number, to: number, q: PropertyQuery) {
  const values = new Map<string, { events: number; sessions: Set<string> }>();
  const keys = new Map<string, { events: number; sessions: Set<string> }>();
  const add = (m: typeof values, name: string, session: string | null) => {
    const row = m.get(name) ?? { events: 0, sessions: new Set<string>() };
    m.set(name, row);
    row.events++;
    if (session) row.sessions.add(session);
  };
  for (const e of events) {
    const t = Date.parse(e.receivedAt);
    if (e.type !== 'custom' || t < from || t >= to) continue;
    const event = typeof e.name === 'string' && e.name !== '' ? e.name.replaceAll('\u0000', '\uFFFD') : 'unknown';
    if (q.event !== undefined && event !== q.event) continue;
    let kept = 0;
    for (const [key, v] of Object.entries(e.data)) {
      if (kept === 10) break;
      if (key.length === 0 || key.length > 40 || /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(key)) continue;
      const s = typeof v === 'string' ? v.trim().slice(0, 100).trim() : typeof v === 'number' ? String(v) : typeof v === 'boolean' ? String(v) : '';
      if (s === '') continue;
      kept++;
      if (q.keys) add(keys, key, e.sessionId);
      if (key === q.key) add(values, s.replaceAll('\u0000', '\uFFFD'), e.sessionId);
    }
  }
  const rows = (m: typeof values) => [...m].map(([name, r]) => ({ name, events: r.events, sessions: r.sessions.size }))
    .sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).slice(0, 100);
  return { ...(q.key !== undefined ? { properties: { [q.key]: rows(values) } } : {}), ...(q.keys ? { propertyKeys: rows(keys) } : {}) };
}

test('property: properties assembled from open, frozen and merged rollups equal the reference from raw events', () => {
  let nonEmpty = 0;
  fc.assert(
    fc.property(fc.array(rawEvent, { minLength: 30, maxLength: 120 }), fc.integer({ min: -32 * H, max: -1 }), fc.integer({ min: 1, max: 32 * H }), query,
      fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), fc.boolean(), fc.nat(20),
      (raws, fromOffset, length, q, frozen, mergeDay, removed) => {
        const added = raws.map((r) => ev({ type: r.type, name: r.name, sessionId: r.sessionId, data: r.data }, r.at));
        const rollups = new UserRollups();
        added.forEach((e, i) => rollups.add(rollupRow(e), raws[i].tag));
        // The oldest taken back, as the memory store evicts, before some tags are frozen.
        added.slice(0, removed).forEach((e, i) => rollups.remove(rollupRow(e), raws[i].tag));
        const events = added.slice(removed);
        frozen.forEach((f, tag) => f && rollups.freeze(tag));
        const range: StatsRange = { from: NOW + fromOffset, to: Math.min(NOW + fromOffset + length, NOW + 1), property: q };
        if (rangeProblem(range, NOW + 1) !== null) return;
        const plan = planStats(NOW + 1, range);
        const inSpans = (t: number) => plan.rawSpans.some(([a, b]) => t >= a && t < b);
        let edges: RollupPart[] = HourRollup.fromRows(events.map((e) => rollupRow(e)).filter((row) => inSpans(row.receivedMs)));
        // Parts of several hours merged into one (as a store's closed days are), then frozen.
        if (mergeDay && edges.length > 1) {
          const merged = new HourRollup(edges[0].hour);
          for (const p of edges) merged.merge(asHour(p, edges[0].hour));
          edges = [FrozenHour.decode(encodePart(merged))];
        }
        const got = assembleStats({ plan, rollups, edges, recents: recentsOf(events, NOW + 1, plan.range) });
        const want = reference(events, range.from!, range.to!, q);
        assert.equal({ properties: got.properties, propertyKeys: got.propertyKeys }, { properties: undefined, propertyKeys: undefined, ...want });
        const ref = computeStats(events, NOW + 1, range);
        assert.equal([ref.properties, ref.propertyKeys], [got.properties, got.propertyKeys], 'computeStats agrees');
        if (Object.values(want.properties ?? {}).some((r) => r.length) || want.propertyKeys?.length) nonEmpty++;
      }),
    { numRuns: RUNS },
  );
  assert.ok(nonEmpty > RUNS / 4, `properties with values compared in ${nonEmpty} runs`);
});

test('GET /api/stats?property=: ingested events\' properties per project, keys, one event; bad parameters are 400 JSON', async () => {
  const { send, as } = app({ now: () => NOW });
  const project = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'shop' } })).json();
  const events = [
    { type: 'custom', name: 'signup', sessionId: 's1', data: { plan: 'pro', seats: 3 } },
    { type: 'custom', eventName: 'signup', sessionId: 's2', data: { plan: 'pro', seats: 1 } },
    { type: 'custom', data: { name: 'upgrade', plan: 'team', deep: { plan: 'no' } }, sessionId: 's1' },
    { type: 'click', data: { plan: 'not custom' } },
  ];
  assert.is((await send('POST', '/api/events', { headers: { ...as('alice'), 'x-watchtower-key': project.key }, body: { events } })).status, 200);
  await send('POST', '/api/events', { headers: as('alice'), body: { type: 'custom', name: 'signup', data: { plan: 'elsewhere' } } });
  const from = new Date(NOW - 3_600_000).toISOString();
  const get = async (query: string) => {
    const res = await send('GET', `/api/stats?from=${from}&to=${new Date(NOW + 1).toISOString()}&project=${project.id}${query}`, { headers: as('alice') });
    return { status: res.status, body: await res.json() };
  };
  const all = await get('&property=plan&propertyKeys=1');
  assert.is(all.status, 200);
  assert.equal(all.body.properties, { plan: [{ name: 'pro', events: 2, sessions: 2 }, { name: 'team', events: 1, sessions: 1 }] }, 'the project\'s only');
  assert.equal(all.body.propertyKeys, [{ name: 'plan', events: 3, sessions: 2 }, { name: 'name', events: 1, sessions: 1 }, { name: 'seats', events: 2, sessions: 2 }]
    .sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1)));
  assert.equal((await get('&property=seats&event=signup')).body.properties, { seats: [{ name: '1', events: 1, sessions: 1 }, { name: '3', events: 1, sessions: 1 }] });
  assert.not.ok('properties' in (await get('')).body, 'not asked, not answered');
  for (const [query, why] of [['&property=' + 'k'.repeat(41), 'too long'], ['&property=a%0Ab', 'control character'], ['&event=signup', 'event alone'],
    ['&propertyKeys=yes', 'not 1 or true'], ['&property=plan&event=%20signup', 'surrounding spaces'], ['&property=plan&event=' + 'e'.repeat(101), 'long event']]) {
    const res = await get(query);
    assert.is(res.status, 400, why);
    assert.is(res.body.code, 'invalid_query', why);
  }
  const noRange = await send('GET', '/api/stats?property=plan', { headers: as('alice') });
  assert.equal([noRange.status, (await noRange.json()).code], [400, 'invalid_query']);
  // A share link's holder is signed out: property values are whatever the app put in `data`
  // (often user ids or e-mail addresses), so the link answers none of them, asked or not.
  const share = await (await send('POST', `/api/projects/${project.id}/shares`, { headers: as('alice'), body: {} })).json();
  const shared = await send('GET', `/api/shared/${share.token}/stats?from=${from}&to=${new Date(NOW + 1).toISOString()}&property=plan&propertyKeys=1`);
  assert.is(shared.status, 200);
  const text = await shared.text();
  assert.is(JSON.parse(text).stats.totalEvents, 4, 'the link answers the project\'s statistics');
  for (const value of ['properties', 'propertyKeys', '"pro"', '"team"', 'seats']) assert.not.ok(text.includes(value), `no ${value} through a share link`);
});

test.run();
