// Rollups: an hour's rollup taking and giving back events, its binary form, the per-user
// container with tagged parts and cached day counts, and percentiles over gathered counts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DIMENSIONS, LEGACY_DIMENSIONS, PART_DIMENSIONS } from '../lib/breakdowns.ts';
import { assembleStats, IdSet, planStats } from '../lib/rollup/assemble.ts';
import { encodePart, FrozenHour } from '../lib/rollup/codec.ts';
import { RouteDurations } from '../lib/rollup/durations.ts';
import { HourRollup, type RollupPart, type RollupRow } from '../lib/rollup/hour.ts';
import { SessionIds } from '../lib/rollup/session-ids.ts';
import { UserRollups } from '../lib/rollup/user.ts';
import { percentile } from '../lib/stats.ts';

const H = 3_600_000;
const T0 = Date.parse('2026-05-16T10:00:00.000Z');
const row = (over: Partial<RollupRow> = {}): RollupRow => ({
  receivedMs: T0, type: 'click', version: null, session: null, route: null, duration: null, rating: null,
  dims: [null, null, 'unknown', 'unknown', 'unknown', 'unknown', 'unknown', null, null, null, 'unknown', null], props: null, vital: null, ...over,
});
const pageload = (route: string, duration: number, over: Partial<RollupRow> = {}) =>
  row({ type: 'pageload', route, duration, dims: [route, 'direct', 'Chrome', 'Windows', 'desktop', 'unknown', 'prod', 'news', null, null, 'DE', null], ...over });
const vital = (page: string, metric: number, units: number, session: string | null = null) =>
  row({ type: 'performance', session, dims: [null, null, 'Firefox', 'Linux', 'desktop', '2.0', 'prod', null, null, null, 'FR', null], vital: { metric, units, page } });

/** Everything a part says, in plain data, for deep comparison. */
function contents(part: RollupPart) {
  const c = part.columns();
  const sessions: string[] = [];
  part.forEachSession((s) => sessions.push(s));
  const num = (xs: ArrayLike<number>) => Array.from(xs);
  return {
    hour: part.hour, total: part.total, sessionCount: part.sessionCount, sessions: sessions.sort(),
    types: c.types, typeCounts: num(c.typeCounts), versions: c.versions, versionCounts: num(c.versionCounts),
    feedback: num(c.feedback), routes: c.routes, routeCounts: num(c.routeCounts), routeSumMicros: num(c.routeSumMicros),
    routeEnds: num(c.routeEnds), values: num(c.values), valueCounts: num(c.valueCounts),
    breakdowns: breakdownsOf(part),
    vitalPages: c.vitalPages, vitalMetrics: num(c.vitalMetrics), vitalEnds: num(c.vitalEnds),
    vitalValues: num(c.vitalValues), vitalValueCounts: num(c.vitalValueCounts),
  };
}

/** Per dimension: name → [events, its sessions sorted] (session indices resolved). */
function breakdownsOf(part: RollupPart) {
  const c = part.columns();
  const sessions: string[] = [];
  part.forEachSession((s) => sessions.push(s));
  assert.ok([PART_DIMENSIONS, DIMENSIONS.length, LEGACY_DIMENSIONS].includes(c.dimEnds.length), 'all dimensions, or those kept before properties or the newer ones');
  return Array.from(c.dimEnds, (_, d) => {
    const out: Record<string, [number, string[]]> = {};
    for (let i = d ? c.dimEnds[d - 1] : 0; i < c.dimEnds[d]; i++) {
      const mine: string[] = [];
      for (let j = i ? c.dimSessionEnds[i - 1] : 0; j < c.dimSessionEnds[i]; j++) mine.push(sessions[c.dimSessions[j]]);
      out[c.dimNames[i]] = [c.dimCounts[i], mine.sort()];
    }
    return out;
  });
}

function sample(): HourRollup {
  const h = new HourRollup(T0 / H);
  h.add(row({ type: 'error', version: '1.0', session: 's1' }));
  h.add(row({ type: 'error', session: 's2', receivedMs: T0 + H - 1 }));
  h.add(row({ type: 'feedback', rating: 5, session: 's1' }));
  h.add(pageload('/a', 120.4, { session: 's3' }));
  h.add(pageload('/a', 119.6));
  h.add(pageload('/a', 70_000.25));
  h.add(pageload('/a', -3));
  h.add(pageload('/b', 1e300));
  h.add(pageload('/a', 80, { session: 's2', dims: ['/a', 'https://x.example', 'Safari', 'iOS', 'mobile', '1.0', 'staging', 'ads', 'cpc', 'spring', 'JP', null] }));
  h.add(vital('/a', 0, 2600, 's1'));
  h.add(vital('/a', 0, 2600, 's2'));
  h.add(vital('/a', 2, 120));
  h.add(vital('/', 0, 900, 's3'));
  return h;
}

test('an hour counts breakdown names with their sessions, and vital values per page and metric', () => {
  const c = contents(sample());
  const [pages, referrers, browsers, os, devices, versions] = c.breakdowns;
  assert.equal(pages, { '/a': [5, ['s2', 's3']], '/b': [1, []] });
  assert.equal(referrers, { direct: [5, ['s3']], 'https://x.example': [1, ['s2']] });
  assert.equal(browsers, { unknown: [3, ['s1', 's2']], Chrome: [5, ['s3']], Safari: [1, ['s2']], Firefox: [4, ['s1', 's2', 's3']] });
  assert.equal([Object.keys(os), Object.keys(devices)], [['Linux', 'Windows', 'iOS', 'unknown'], ['desktop', 'mobile', 'unknown']]);
  assert.equal(versions, { '1.0': [1, ['s2']], '2.0': [4, ['s1', 's2', 's3']], unknown: [8, ['s1', 's2', 's3']] });
  assert.equal([c.vitalPages, c.vitalMetrics, c.vitalEnds], [['/', '/a', '/a'], [0, 0, 2], [1, 2, 3]]);
  assert.equal([c.vitalValues, c.vitalValueCounts], [[900, 2600, 120], [1, 2, 1]]);
});

test('a part encoded before breakdowns (WTR1) reads as one without them', () => {
  const old = 'V1RSMQAAAAAAAAAAIBceQQAAAAAAAABAAgAAAAEAAAAFAAAAAQAAAAEAAAABAAAAAQAAAAEAAAAEAAAAFgAAAAIAAAAEAAAAAAAAAAIEAAAAAAAAAAAAAAEBAAAAAAAAAQAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAQAAAAAAAAAAAAAAAEz9QHgAAAAAAAAAAQAAAAAAAAAFCAcCAAAAAGVycm9ycGFnZWxvYWR1bmtub3duL2EAAAICAAAAAAAAczFzMgAAAAA=';
  const part = FrozenHour.decode(Uint8Array.from(atob(old), (ch) => ch.charCodeAt(0)));
  const c = contents(part);
  assert.equal([c.hour, c.total, c.types, c.versions, c.routes, c.values, c.sessions], [493_000, 2, ['error', 'pageload'], ['unknown'], ['/a'], [120], ['s1', 's2']]);
  assert.equal([c.breakdowns, c.vitalPages, c.vitalValues], [Array.from({ length: LEGACY_DIMENSIONS }, () => ({})), [], []]);
});

test('an hour counts types, versions, sessions, ratings and per route whole-ms durations and µs sums', () => {
  const c = contents(sample());
  assert.is(c.total, 13);
  assert.equal(c.types, ['error', 'feedback', 'pageload', 'performance']);
  assert.equal(c.typeCounts, [2, 1, 6, 4]);
  assert.equal(c.versions, ['1.0', 'unknown']);
  assert.equal(c.sessions, ['s1', 's2', 's3']);
  assert.equal(c.feedback, [0, 0, 0, 0, 1]);
  assert.equal(c.routes, ['/a', '/b']);
  assert.equal(c.routeCounts, [5, 1]);
  assert.equal(c.routeSumMicros, [120_400 + 119_600 + 70_000_250 - 3000 + 80_000, Number.MAX_SAFE_INTEGER]);
  assert.equal(c.values, [-3, 80, 120, 70_000, 1e300], '120.4 and 119.6 are both 120 ms');
  assert.equal(c.valueCounts, [1, 1, 2, 1, 1]);
  assert.equal(c.routeEnds, [4, 5]);
});

test('an hour refuses an event of another hour', () => {
  assert.throws(() => new HourRollup(T0 / H).add(row({ receivedMs: T0 + H })), /hour/);
});

test('removing every event added leaves an empty hour; removing some equals never adding them', () => {
  const rows = [row({ type: 'error', session: 'x' }), pageload('/a', 10.5, { session: 'x' }), pageload('/a', 11), row({ type: 'feedback', rating: 2 })];
  const h = new HourRollup(T0 / H);
  rows.forEach((r) => h.add(r));
  h.remove(rows[0]);
  h.remove(rows[1]);
  const only = new HourRollup(T0 / H);
  rows.slice(2).forEach((r) => only.add(r));
  assert.equal(contents(h), contents(only));
  h.remove(rows[2]);
  h.remove(rows[3]);
  assert.equal(contents(h), contents(new HourRollup(T0 / H)));
});

test('encode → decode gives back every column and session; decoding a frozen part again is the same', () => {
  const h = sample();
  const frozen = FrozenHour.decode(encodePart(h));
  assert.equal(contents(frozen), contents(h));
  assert.equal(contents(FrozenHour.decode(frozen.encode())), contents(h));
  assert.equal(contents(FrozenHour.decode(encodePart(new HourRollup(-5)))), contents(new HourRollup(-5)), 'an empty part, before 1970');
});

test('encode → decode keeps text UTF-8 cannot: lone surrogates, a leading BOM, NUL, long ids', () => {
  const h = new HourRollup(T0 / H);
  const odd = ['\ufefflead', 'lone \ud800', '\udc00x', 'nul\u0000', 'é😀', 'x'.repeat(70_000), ''];
  odd.forEach((s) => h.add(row({ session: s || null, type: s.slice(0, 5) || 'plain' })));
  h.add(pageload('\ud800route', 5));
  const back = FrozenHour.decode(encodePart(h));
  assert.equal(contents(back), contents(h));
  const plain = new HourRollup(T0 / H);
  plain.add(row({ session: '\ufeffonly-bom' }));
  assert.equal(contents(FrozenHour.decode(encodePart(plain))).sessions, ['\ufeffonly-bom'], 'UTF-8 path keeps the BOM');
});

test('sessions that are all lowercase UUIDs are kept as 16 bytes each; any other id keeps them as text', () => {
  const uuids = ['0198f3a2-7c41-7d2e-9b1a-0c5e8f7d6a43', '00000000-0000-7000-8000-000000000000', 'ffffffff-ffff-7fff-bfff-ffffffffffff'];
  const withIds = (ids: string[]) => {
    const h = new HourRollup(T0 / H);
    ids.forEach((s) => h.add(row({ session: s })));
    return h;
  };
  const packed = withIds(uuids);
  assert.equal(contents(FrozenHour.decode(encodePart(packed))), contents(packed));
  for (const odd of ['0198F3A2-7C41-7D2E-9B1A-0C5E8F7D6A43', '0198f3a27c417d2e9b1a0c5e8f7d6a43', 'plain']) {
    const mixed = withIds([...uuids, odd]);
    assert.equal(contents(FrozenHour.decode(encodePart(mixed))), contents(mixed), odd);
  }
  const many = Array.from({ length: 100 }, (_, i) => `0198f3a2-7c41-7d2e-9b1a-${String(i).padStart(12, '0')}`);
  const saved = encodePart(withIds([...many, 'plain'])).byteLength - encodePart(withIds(many)).byteLength;
  assert.ok(saved > 100 * 20, `saved ${saved} bytes on 100 ids`);
});

test('numbers take the smallest kind, and large counts survive', () => {
  const h = new HourRollup(T0 / H);
  for (let i = 0; i < 70_000; i++) h.add(pageload('/r', 5));
  h.add(pageload('/r', 300));
  const small = new HourRollup(T0 / H);
  small.add(pageload('/r', 5));
  small.add(pageload('/r', 300));
  assert.equal(contents(FrozenHour.decode(encodePart(h))), contents(h));
  assert.ok(encodePart(small).byteLength < 400, `${encodePart(small).byteLength} bytes for two pageloads`);
});

test('decode copies bytes out of a larger buffer (unaligned too) and refuses what is not a part', () => {
  const bytes = encodePart(sample());
  const big = new Uint8Array(bytes.byteLength + 3);
  big.set(bytes, 3);
  const part = FrozenHour.decode(big.subarray(3));
  assert.equal(contents(part), contents(sample()));
  assert.is.not(part.encode().buffer, big.buffer, 'does not keep the larger buffer alive');
  assert.throws(() => FrozenHour.decode(new Uint8Array(10)), /not a rollup part/);
  assert.throws(() => FrozenHour.decode(new Uint8Array(200)), /not a rollup part/);
  assert.throws(() => FrozenHour.decode(bytes.slice(0, bytes.byteLength - 16)), /not a rollup part/);
});

test('names are read on first use, but a part whose names do not match its columns is refused at decode', () => {
  const h = new HourRollup(T0 / H);
  for (const type of ['click', 'error', 'custom']) h.add(row({ type }));
  const bytes = encodePart(h);
  const lazy = FrozenHour.decode(bytes);
  assert.equal(lazy.columns().types, ['click', 'custom', 'error']);
  assert.is(lazy.columns(), lazy.columns(), 'read once');
  // One type fewer in the header: the one-byte counts still end within the same 8 bytes, so every
  // later column lies where it did and only the count of names is off.
  const bad = bytes.slice();
  const head = new DataView(bad.buffer);
  head.setUint32(24, head.getUint32(24, true) - 1, true);
  assert.throws(() => FrozenHour.decode(bad), /names do not match/);
});

test('merge adds a whole part: equal to one hour that took both parts\' events', () => {
  const a = sample();
  const b = new HourRollup(T0 / H);
  b.add(pageload('/a', 120, { session: 's9' }));
  b.add(row({ type: 'error', version: '1.0', session: 's1' }));
  const merged = new HourRollup(T0 / H);
  merged.merge(FrozenHour.decode(encodePart(a)));
  merged.merge(b);
  const both = sample();
  both.add(pageload('/a', 120, { session: 's9' }));
  both.add(row({ type: 'error', version: '1.0', session: 's1' }));
  assert.equal(contents(merged), contents(both));
  assert.throws(() => merged.merge(new HourRollup(0)), /hour/);
});

test('HourRollup.fromRows groups rows by hour, ascending', () => {
  const parts = HourRollup.fromRows([row({ receivedMs: T0 + H }), row(), row({ receivedMs: T0 + 1 })]);
  assert.equal(parts.map((p) => [p.hour, p.total]), [[T0 / H, 2], [T0 / H + 1, 1]]);
});

test('user rollups: tagged parts per hour, freeze, setPart, drop; hour and day sessions are unions', () => {
  const u = new UserRollups();
  const day = Math.floor(T0 / 86_400_000);
  u.add(row({ session: 'a' }), 1);
  u.add(row({ session: 'b', receivedMs: T0 + 10 }), 2);
  u.add(row({ session: 'a', receivedMs: T0 + H }), 2);
  assert.is(u.hourSessions(T0 / H), 2);
  assert.is(u.daySessions(day), 2);
  const frozen = u.freeze(2);
  assert.equal(frozen.map((p) => p.hour), [T0 / H, T0 / H + 1]);
  assert.ok(frozen.every((p) => p instanceof FrozenHour));
  assert.throws(() => u.add(row({ receivedMs: T0 + H }), 2), /frozen/, 'a sealed part takes no events');
  u.add(row({ session: 'c', receivedMs: T0 + 2 * H }), 3);
  assert.is(u.daySessions(day), 3, 'the cached count follows a new event');
  u.drop(2);
  assert.is(u.daySessions(day), 2, 'and a dropped tag');
  assert.equal(u.parts(2), []);
  u.setPart(frozen[0], 2);
  assert.is(u.hourSessions(T0 / H), 2);
  let parts = 0;
  u.forEachPart(-Infinity, Infinity, () => parts++);
  assert.is(parts, 3);
  u.remove(row({ session: 'a' }), 1);
  u.remove(row({ session: 'c', receivedMs: T0 + 2 * H }), 3);
  assert.equal(u.parts(1), [], 'an emptied part goes');
  assert.throws(() => u.remove(row(), 2), /no mutable part/);
  u.drop(2);
  assert.ok(u.empty);
});

test('nearest ranks over gathered counts: dense and sparse values (negative, past 65.5 s) in order', () => {
  const h1 = new HourRollup(0), h2 = new HourRollup(0);
  const durations = [-5, 3, 3, 65_535, 65_536, 1e9, 0, 12, 40_000, -1e12, 7];
  durations.forEach((d, i) => (i % 2 ? h1 : h2).add(pageload('/r', d, { receivedMs: 0 })));
  const gathered = new RouteDurations();
  gathered.add(h1.columns(), 0);
  gathered.add(h2.columns(), 0);
  const sorted = [...durations].sort((a, b) => a - b);
  const ps = [0, 10, 50, 90, 95, 100];
  assert.equal(gathered.nearestRanks(durations.length, ps), ps.map((p) => percentile(sorted, p)));
  assert.equal(gathered.nearestRanks(durations.length, ps), ps.map((p) => percentile(sorted, p)), 'the scratch is left clean');
  assert.equal(new RouteDurations().nearestRanks(0, [50]), [0]);
  assert.throws(() => gathered.nearestRanks(3, [95, 50]), /ascending/);

  // Short slices (copied) and long ones (referred to) together, with values out of the dense range.
  const mixed = new RouteDurations();
  const all: number[] = [];
  for (let k = 0; k < 200; k++) {
    const length = k % 9; // 0 to 8 values: both sides of the copy threshold
    const values = Array.from({ length }, (_, j) => [(k * 37 + j * 11) % 3000, -7 - k, 70_000 + k][(k + j) % 7 === 0 ? 1 + (k % 2) : 0]).sort((a, b) => a - b);
    const counts = values.map((_, j) => 1 + ((k + j) % 3));
    mixed.addValues(values, counts, 0, length);
    values.forEach((v, j) => all.push(...Array(counts[j]).fill(v)));
  }
  all.sort((a, b) => a - b);
  assert.equal(mixed.nearestRanks(all.length, ps), ps.map((p) => percentile(all, p)), 'short and long slices');
  assert.equal(mixed.nearestRanks(all.length, ps), ps.map((p) => percentile(all, p)), 'short and long slices, again');
});

test('nearest ranks skip blocks of values below the next rank, and leave every block clean', () => {
  // Cases of one to three narrow clusters: several ranks in one block, ranks in blocks far apart,
  // ranks on a block's first and last value; each checked twice (a count left behind in the
  // scratch or in a block's total would show in the next case).
  let seed = 7;
  const rand = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
  const ps = [1, 25, 50, 75, 90, 95, 99, 100];
  for (let c = 0; c < 60; c++) {
    const gathered = new RouteDurations();
    const all: number[] = [];
    const clusters = Array.from({ length: 1 + (c % 3) }, () => [rand(65_000), [1, 30, 256, 2000][rand(4)]]);
    for (let slice = 0; slice < 1 + rand(6); slice++) {
      const [base, width] = clusters[rand(clusters.length)];
      const values = [...new Set(Array.from({ length: 1 + rand(12) }, () => base + rand(width)))].sort((a, b) => a - b);
      if (c % 5 === 0) values.unshift(256 * (1 + rand(200)) - (c % 2)); // a block's first or last value
      values.sort((a, b) => a - b);
      const counts = values.map(() => 1 + rand(4));
      gathered.addValues(values, counts, 0, values.length);
      values.forEach((v, j) => all.push(...Array(counts[j]).fill(v)));
    }
    all.sort((a, b) => a - b);
    const want = ps.map((p) => percentile(all, p));
    assert.equal(gathered.nearestRanks(all.length, ps), want, `case ${c}`);
    assert.equal(gathered.nearestRanks(all.length, ps), want, `case ${c}, again`);
  }
});

test('IdSet: the breakdowns\' distinct sessions count what a Set counts, across growth and word edges', () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const ids = new IdSet(), expected = new Set<number>();
  // Small ids first, then ids far past the initial 128 bits (several growths), repeats throughout.
  for (let i = 0; i < 20_000; i++) {
    const id = i < 500 ? Math.floor(rand() * 100) : Math.floor(rand() * 50_000);
    ids.add(id);
    expected.add(id);
    if (i % 997 === 0) assert.is(ids.size, expected.size, `after ${i + 1} adds`);
  }
  for (const id of [0, 31, 32, 63, 64, 50_000, 50_001, 65_535, 65_536]) {
    ids.add(id);
    expected.add(id);
  }
  assert.is(ids.size, expected.size);
});


test('SessionIds: a session has one id whether its part keeps it as 16 bytes or as text; growth keeps ids', () => {
  const hex = (n: number, d: number) => n.toString(16).padStart(d, '0');
  // UUIDv7-like: a shared timestamp prefix, as sessions of one hour have.
  const uuid = (i: number) => `0193a1b2-c3d4-7${hex(i % 4096, 3)}-8${hex((i * 7919) % 4096, 3)}-${hex(i, 12)}`;
  const uuids = Array.from({ length: 5000 }, (_, i) => uuid(i));
  const others = ['s-1', 'S-1', uuid(3).toUpperCase(), `${uuid(4)} `, 'x'];
  const packed = new HourRollup(0), text = new HourRollup(0);
  for (const s of uuids) packed.add(row({ receivedMs: 0, session: s }));
  for (const s of [...uuids.slice(0, 2500), ...others]) text.add(row({ receivedMs: 0, session: s }));
  const frozenPacked = FrozenHour.decode(encodePart(packed)), frozenText = FrozenHour.decode(encodePart(text));
  assert.ok(frozenPacked.packedSessions?.(), 'a frozen part of UUIDs hands out their bytes');
  assert.is(frozenText.packedSessions?.(), null, 'one of text does not');

  const ids = new SessionIds();
  const byBytes = ids.of(frozenPacked); // grows the table several times
  assert.is(ids.size, 5000);
  assert.equal(new SessionIds(5000).of(frozenPacked), byBytes, 'a table sized beforehand hands out the same ids');
  const byText = ids.of(frozenText);
  assert.is(ids.size, 5000 + others.length, 'only the ids that are not packed UUIDs are new');
  const idOf = new Map<string, number>();
  let k = 0;
  frozenPacked.forEachSession((s) => idOf.set(s, byBytes[k++]));
  k = 0;
  frozenText.forEachSession((s) => {
    if (idOf.has(s)) assert.is(byText[k], idOf.get(s), s);
    else idOf.set(s, byText[k]);
    k++;
  });
  assert.is(new Set(idOf.values()).size, idOf.size, 'distinct sessions, distinct ids');
  assert.equal(ids.of(packed), Int32Array.from(uuids.map((s) => idOf.get(s)!)), 'a mutable part, by text, gets the same ids');
});

test('user rollups by day: a day of frozen parts comes as one merged part, rebuilt when one of its parts changes', () => {
  const D = 86_400_000;
  const day0 = Math.floor(T0 / D);
  const u = new UserRollups();
  // Day 0: hours 3 and 20, tags 1 and 2 (a day spanning two segments); day 1: hour 5, tag 2.
  u.add(pageload('/a', 120, { receivedMs: day0 * D + 3 * H, session: 's1' }), 1);
  u.add(pageload('/a', 80, { receivedMs: day0 * D + 20 * H, session: 's2' }), 2);
  u.add(row({ receivedMs: day0 * D + 20 * H + 5, session: 's1' }), 2);
  u.add(row({ receivedMs: (day0 + 1) * D + 5 * H, session: 's3' }), 2);
  const collect = (from: number, to: number, byDay: boolean) => {
    const got: RollupPart[] = [];
    u.forEachPart(from, to, (p) => got.push(p), byDay);
    return got;
  };
  const all = [day0 * 24, (day0 + 2) * 24] as const;
  assert.is(collect(...all, true).length, 3, 'nothing frozen: hour by hour');
  u.freeze(1);
  u.freeze(2);
  const byDay = collect(...all, true);
  assert.equal(byDay.map((p) => [p.hour, p.total]), [[day0 * 24, 3], [(day0 + 1) * 24, 1]], 'one part a day, at its first hour');
  const merged = byDay[0];
  assert.equal(merged.columns().routes, ['/a']);
  assert.equal(Array.from(merged.columns().routeCounts), [2]);
  assert.is(merged.sessionCount, 2, 's1 counted once over its two hours');
  assert.is(collect(...all, true)[0], merged, 'kept for the next range');
  assert.is(collect(...all, false).length, 3, 'by hour when asked');
  assert.is(collect(day0 * 24 + 1, (day0 + 2) * 24, true).length, 3, 'a day cut by the range comes hour by hour');

  // A part of day 0 goes (retention drops tag 1): the merged day is rebuilt without it.
  u.drop(1);
  const rebuilt = collect(...all, true);
  assert.equal(rebuilt.map((p) => [p.hour, p.total]), [[day0 * 24, 2], [(day0 + 1) * 24, 1]]);
  assert.is.not(rebuilt[0], merged);
  // A new event on day 1 (a mutable part): that day is read hour by hour again.
  u.add(row({ receivedMs: (day0 + 1) * D + 6 * H }), 3);
  const mixed = collect(...all, true).map((p) => [p.hour, p.total]).sort((a, b) => a[0] - b[0]);
  assert.equal(mixed, [[day0 * 24, 2], [(day0 + 1) * 24 + 5, 1], [(day0 + 1) * 24 + 6, 1]]);
});

test('user rollups by day: days past the merge budget of a read come hour by hour, and are merged when the owner has time', () => {
  const D = 86_400_000;
  const day0 = Math.floor(T0 / D);
  const days = 3;
  const fill = (u: UserRollups) => {
    for (let d = 0; d < days; d++) for (const h of [2, 9, 17]) u.add(pageload('/a', 100 + h, { receivedMs: (day0 + d) * D + h * H, session: `s${d}` }), 1);
    u.freeze(1);
  };
  const collect = (u: UserRollups) => {
    const got: RollupPart[] = [];
    u.forEachPart(day0 * 24, (day0 + days) * 24, (p) => got.push(p), true);
    return got.map((p) => [p.hour, p.total]).sort((a, b) => a[0] - b[0]);
  };
  const none = new UserRollups(0);
  fill(none);
  const hourly = collect(none);
  assert.is(hourly.length, days * 3, 'no budget: every day hour by hour');
  assert.is(hourly.reduce((n, [, t]) => n + t, 0), days * 3);
  // The days left are merged when the owner has time; a budget of 0 still merges one a call.
  assert.ok(none.mergesPending);
  for (let call = 1; call < days; call++) assert.ok(none.mergePending(), `more left after call ${call}`);
  assert.not.ok(none.mergePending(), 'the last one');
  assert.not.ok(none.mergesPending);
  assert.equal(collect(none), Array.from({ length: days }, (_, d) => [(day0 + d) * 24, 3]), 'merged since');
  const ample = new UserRollups(Infinity);
  fill(ample);
  assert.equal(collect(ample), Array.from({ length: days }, (_, d) => [(day0 + d) * 24, 3]), 'ample budget: a part a day');
});

test('user rollups: recent closed days are merged ahead of reads once frozen; the newest and old days are not', () => {
  const D = 86_400_000;
  const newest = Math.floor(T0 / D);
  // The newest day, the 4 days before it, and 2 days more than a month before.
  const days = [newest - 40, newest - 35, newest - 4, newest - 3, newest - 2, newest - 1, newest];
  const u = new UserRollups(0);
  for (const d of days) for (const h of [1, 13]) u.add(pageload('/a', 100, { receivedMs: d * D + h * H, session: `s${d}` }), 1);
  assert.not.ok(u.mergesPending, 'nothing frozen yet');
  u.freeze(1);
  assert.ok(u.mergesPending);
  let calls = 0;
  while (u.mergePending()) calls++;
  assert.is(calls, 3, 'a budget of 0 merges one day a call: 4 days in 4 calls');
  const got: [number, number][] = [];
  u.forEachPart(days[0] * 24, (newest + 1) * 24, (p) => got.push([p.hour, p.total]), true);
  const hours = (d: number) => [[d * 24 + 1, 1], [d * 24 + 13, 1]];
  const want = [...hours(newest - 40), ...hours(newest - 35), ...[4, 3, 2, 1].map((k) => [(newest - k) * 24, 2]), ...hours(newest)];
  // A budget of 0 lets the read merge none itself: merged days are the ones merged ahead.
  assert.equal(got.sort((a, b) => a[0] - b[0]), want);
  // A part set from storage (a restart) counts the same way.
  const restarted = new UserRollups(0);
  for (const part of u.parts(1)) restarted.setPart(part as FrozenHour, 2);
  while (restarted.mergePending());
  const again: [number, number][] = [];
  restarted.forEachPart(days[0] * 24, (newest + 1) * 24, (p) => again.push([p.hour, p.total]), true);
  assert.equal(again.sort((a, b) => a[0] - b[0]), want);
});

test('an hour counts environments, UTM sources, mediums and campaigns, countries and custom events', () => {
  const h = sample();
  h.add(row({ type: 'custom', session: 's9', dims: [null, null, 'unknown', 'unknown', 'unknown', 'unknown', 'unknown', null, null, null, 'unknown', 'signup'] }));
  const [, , , , , , environments, sources, mediums, campaigns, countries, custom] = contents(h).breakdowns;
  assert.equal(environments, { prod: [9, ['s1', 's2', 's3']], staging: [1, ['s2']], unknown: [4, ['s1', 's2', 's9']] });
  assert.equal([sources, mediums, campaigns], [{ ads: [1, ['s2']], news: [5, ['s3']] }, { cpc: [1, ['s2']] }, { spring: [1, ['s2']] }]);
  assert.equal(countries, { DE: [5, ['s3']], FR: [4, ['s1', 's2', 's3']], JP: [1, ['s2']], unknown: [4, ['s1', 's2', 's9']] });
  assert.equal(custom, { signup: [1, ['s9']] });
});

// Encoded by the previous version (six dimensions, still "WTR2"): a click, a pageload and a custom
// event of sessions s1 and s2.
const SIX_DIMENSIONS = 'V1RSMgAAAAAAAAAACCkeQQAAAAAAAAhAAwAAAAAAAAAFAAAAAQAAAAEAAAABAAAAAQAAAAEAAAALAAAAOQAAAAIAAAAEAAAABgAAAAcAAAAHAAAACwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIEAAAAAAAAAgACAAACAAAAAAAAAAAAAAEBAQAAAAAAAAAAAAAAAAABAAAAAAAAAAEAAAAAAAAAAAAAAABM/UB4AAAAAAAAAAEAAAAAAAAABQYIAgIGBgcFBwMAAAAAAGNsaWNrY3VzdG9tcGFnZWxvYWQvYS9hZGlyZWN0Q2hyb21lRmlyZWZveExpbnV4ZGVza3RvcDEuMAAAAAAAAAACAgAAAAAAAHMxczIAAAAAAQAAAAIAAAAEAAAABQAAAAYAAAAHAAAAAQECAQMDAwABAAAAAgAAAAQAAAAFAAAABwAAAAkAAAALAAAAAAAAAAEBAAEBAAEAAQABAAAAAAA=';

test('a part kept before the newer dimensions decodes with its six, and so does what it is merged into', () => {
  const old = FrozenHour.decode(Uint8Array.from(atob(SIX_DIMENSIONS), (ch) => ch.charCodeAt(0)));
  const c = contents(old);
  assert.equal([c.total, c.types, c.sessions], [3, ['click', 'custom', 'pageload'], ['s1', 's2']]);
  assert.is(c.breakdowns.length, LEGACY_DIMENSIONS);
  assert.equal(c.breakdowns[2], { Chrome: [2, ['s1', 's2']], Firefox: [1, ['s2']] });
  const merged = new HourRollup(old.hour);
  merged.add(row({ receivedMs: old.hour * H, session: 's3' }));
  merged.merge(old);
  const m = contents(merged);
  assert.is(m.breakdowns.length, LEGACY_DIMENSIONS, 'the merged hour lacks the newer dimensions of the old events: it leaves them out');
  assert.equal(m.breakdowns[2], { Chrome: [2, ['s1', 's2']], Firefox: [1, ['s2']], unknown: [1, ['s3']] });
  assert.equal(contents(FrozenHour.decode(encodePart(merged))).breakdowns, m.breakdowns, 'and encodes as such');
  // Statistics over it leave those lists out; over fresh parts only, they are there.
  const stats = (part: RollupPart) => {
    const rollups = new UserRollups();
    rollups.setPart(part instanceof HourRollup ? FrozenHour.decode(encodePart(part)) : part as FrozenHour, 1);
    const plan = planStats(old.hour * H + 2 * H, { from: old.hour * H - H });
    return assembleStats({ plan, rollups, edges: [], recents: { activeUsers: 0, errors: [], activity: [], points: new Map() } }).breakdowns!;
  };
  assert.equal(Object.keys(stats(old)), ['pages', 'referrers', 'browsers', 'os', 'devices', 'versions']);
  assert.equal(Object.keys(stats(sample())), [...DIMENSIONS]);
  assert.throws(() => {
    const bytes = encodePart(sample());
    new DataView(bytes.buffer).setUint32(24 + 4 * 12, 7, true);
    FrozenHour.decode(bytes);
  }, /do not match|truncated/, 'any other count of dimensions is no part');
});

test.run();
