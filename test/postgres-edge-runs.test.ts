// The blocks wholly inside a range's edges, merged in runs (lib/store/postgres/stats/edge-runs.ts):
// the parts hold exactly the blocks' events whatever runs they form; a run read again is taken
// from the cache without decoding its blocks; an edge that holds other blocks of a run (it moved)
// never takes the run merged for the old ones. On PostgreSQL: statistics whose edges walk through
// a compacted busy hour (a burst of several blocks, another owner's events among them) equal
// computeStats, read in both directions so that runs merged for one edge meet the other.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, DAY_MS, HOUR_MS, type StatsRange } from '../lib/stats.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { createTestDatabase, postgresAvailable } from './helpers/postgres.ts';
import { seededRandom } from './helpers/seeded.ts';
import { encodePart, FrozenHour } from '../lib/rollup/codec.ts';
import { HourRollup, rollupRow, type RollupPart } from '../lib/rollup/hour.ts';
import { DayPartCache } from '../lib/store/postgres/day-cache.ts';
import { edgeBlockParts, RUN_SEQS, type EdgeBlock } from '../lib/store/postgres/stats/edge-runs.ts';

const HOUR = 500_000;
const DAY = Math.floor(HOUR / 24);

/** A block's rollup: `n` pageloads of its own sessions and one shared session, in hour `hour`. */
function blockPart(block: number, n: number, hour = HOUR): FrozenHour {
  const part = new HourRollup(hour);
  for (let i = 0; i < n; i++) {
    const at = hour * 3_600_000 + block * 1000 + i;
    const e = normalise({ type: 'pageload', sessionId: i === 0 ? 'shared' : `b${block}-${i % 3}`, route: `/r${i % 4}`, data: { duration: 10 * block + i } },
      { now: at, owner: 'u', newId: () => `${block}-${i}` });
    part.add(rollupRow(e, at));
  }
  return FrozenHour.decode(encodePart(part));
}

/** Blocks with first seqs `seqs`, counting how often each is decoded. */
function blocksAt(seqs: bigint[], decoded: Map<string, number>, hourOf: (i: number) => number = () => HOUR): EdgeBlock[] {
  return seqs.map((seq, i) => ({
    day: DAY, firstSeq: String(seq),
    hours: () => (decoded.set(String(seq), (decoded.get(String(seq)) ?? 0) + 1), [blockPart(i, 5 + i, hourOf(i))]),
  }));
}

/** What assembleStats reads of a list of parts, summed: events, types, route counts and durations, sessions by hour. */
function summary(parts: readonly RollupPart[]) {
  const types = new Map<string, number>(), routes = new Map<string, number>(), durations = new Map<number, number>(), sessions = new Map<number, Set<string>>();
  let total = 0;
  for (const p of parts) {
    total += p.total;
    const c = p.columns();
    c.types.forEach((t, i) => types.set(t, (types.get(t) ?? 0) + c.typeCounts[i]));
    c.routes.forEach((r, i) => routes.set(r, (routes.get(r) ?? 0) + c.routeCounts[i]));
    for (let i = 0; i < c.values.length; i++) durations.set(c.values[i], (durations.get(c.values[i]) ?? 0) + c.valueCounts[i]);
    let s = sessions.get(p.hour);
    if (!s) sessions.set(p.hour, (s = new Set()));
    p.forEachSession((x) => s!.add(x));
  }
  const sorted = <K, V>(m: Map<K, V>) => [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return { total, types: sorted(types), routes: sorted(routes), durations: sorted(durations), sessions: sorted(sessions).map(([h, s]) => [h, [...s].sort()]) };
}

test('runs hold exactly the blocks\' events, in their hours, whatever runs they form', () => {
  const base = RUN_SEQS * 10n;
  // Two runs (one of 5 blocks, one of 2), a block alone in its run, blocks of two hours in one run.
  const seqs = [0n, 1000n, 2000n, 3000n, 4000n, RUN_SEQS - 1n, RUN_SEQS, RUN_SEQS * 3n].map((s) => base + s);
  const hourOf = (i: number) => (i === 2 ? HOUR + 1 : HOUR);
  const one = blocksAt(seqs, new Map(), hourOf);
  const cache = new DayPartCache(1 << 20);
  edgeBlockParts(cache, 'u', one);
  const parts = edgeBlockParts(cache, 'u', one);
  assert.equal(summary(parts), summary(one.flatMap((b) => b.hours())));
  assert.ok(parts.length < one.length, 'runs were merged');
  assert.ok(parts.some((p) => p.hour === HOUR + 1), 'a block of another hour keeps its hour');
});

test('a run asked for again is merged, then taken from the cache; a run holding other blocks is not that run', () => {
  const cache = new DayPartCache(1 << 20);
  const decoded = new Map<string, number>();
  const decodes = () => [...decoded.values()].reduce((a, b) => a + b, 0);
  const seqs = [1n, 1001n, 2001n, 3001n, 4001n];
  const first = edgeBlockParts(cache, 'u', blocksAt(seqs, decoded));
  assert.is(first.length, 5, 'the first time, block by block');
  const second = edgeBlockParts(cache, 'u', blocksAt(seqs, decoded));
  assert.is(second.length, 1, 'the second time, merged');
  assert.is(decodes(), 10);
  const again = edgeBlockParts(cache, 'u', blocksAt(seqs, decoded));
  assert.is(decodes(), 10, 'then no block decoded again');
  assert.equal(summary(again), summary(first));
  // The edge moved: its last block is no longer wholly inside it (a run's first block is the same).
  const moved = blocksAt(seqs.slice(0, -1), decoded);
  const parts = edgeBlockParts(cache, 'u', moved);
  assert.equal(summary(parts), summary(moved.flatMap((b) => b.hours())));
  assert.is.not(summary(parts).total, summary(first).total);
  // Another user's blocks of the same positions are that user's own.
  const others = new Map<string, number>();
  assert.is(edgeBlockParts(cache, 'v', blocksAt(seqs, others)).length, 5, 'the other user\'s run is not the first user\'s');
});

if (await postgresAvailable('PostgreSQL edge runs test')) {
  test('statistics with edges walking through a compacted busy hour equal computeStats', async () => {
    const seed = Number(process.env.WATCHTOWER_STATS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = seededRandom(seed);
    const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const day = Math.floor(Date.now() / DAY_MS) - 2;
    // A burst of 6,000 events in one minute of a closed day's hour, in receive order: six blocks.
    const burst = day * DAY_MS + 13 * HOUR_MS + 20 * 60_000 + int(0, 30_000);
    let n = 0;
    const make = (user: string, at: number): StoredEvent => {
      const type = pick(['pageload', 'pageload', 'performance', 'click', 'error', 'custom']);
      const raw: Record<string, unknown> = { type, sessionId: `s-${int(0, 900)}`, route: pick(['/', '/a', `/p/${int(0, 30)}`]), referrer: pick(['https://r.example/', '']) };
      if (type === 'pageload') raw.data = { duration: int(0, 4000) };
      if (type === 'performance') raw.data = { name: pick(['LCP', 'CLS']), value: int(0, 3000) / 1000 };
      if (type === 'custom') Object.assign(raw, { name: pick(['signup', 'buy']), data: { plan: pick(['free', 'pro']) } });
      return normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: user, newId: () => `${user}-${seed}-${++n}` });
    };
    const mine: StoredEvent[] = [];
    const scattered = Array.from({ length: 300 }, () => make('run-a', day * DAY_MS + int(0, DAY_MS - 1)));
    const inBurst = Array.from({ length: 6000 }, (_, i) => burst + Math.floor((i * 60_000) / 6000)).map((at) => make(rnd() < 0.9 ? 'run-a' : 'run-b', at));
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, max: 3, upkeepIntervalMs: 3_600_000 });
    try {
      for (const list of [scattered, inBurst]) {
        for (let i = 0; i < list.length; i += 500) await store.insert(list.slice(i, i + 500));
        mine.push(...list.filter((e) => e.user_id === 'run-a'));
      }
      await db.query((sql) => compactClosedDays(sql, (day + 2) * DAY_MS + COMPACT_AFTER_MS));
      const [{ blocks }] = await db.query((sql) => sql<{ blocks: number }[]>`select count(*)::int as blocks from watchtower_event_blocks where user_id = 'run-a'`);
      assert.ok(blocks >= 6, `the burst made ${blocks} blocks`);
      const now = (day + 1) * DAY_MS + HOUR_MS;
      // `from` walking forward through the burst, then `to` walking back, then both inside it.
      const ranges: StatsRange[] = [];
      for (let t = burst - 5_000; t < burst + 65_000; t += int(2_000, 9_000)) ranges.push({ from: t });
      for (let t = burst + 65_000; t > burst - 5_000; t -= int(2_000, 9_000)) ranges.push({ from: day * DAY_MS, to: t });
      for (let i = 0; i < 6; i++) {
        const a = burst + int(0, 50_000);
        ranges.push({ from: a, to: a + int(1_000, 30_000), interval: 'hour' });
      }
      for (const range of ranges) {
        const expected = computeStats(mine, now, range);
        assert.equal(await store.stats('run-a', now, range), expected,
          `range ${new Date(range.from!).toISOString()} – ${range.to === undefined ? 'now' : new Date(range.to).toISOString()} (WATCHTOWER_STATS_SEED=${seed})`);
      }
    } finally {
      await store.close();
      await db.drop();
    }
  });
}

test.run();
