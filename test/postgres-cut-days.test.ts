// The latest points of compacted closed days that a range cuts (lib/store/postgres/stats/cut-days.ts):
// the points kept per day (watchtower_day_points) carry their receive times from migration 23, and a
// range starting or ending inside such a day takes those inside it. Statistics equal computeStats
// for ranges cutting days whose kept points have times, days whose rows take seqs out of receive
// order, days compacted before migration 23 (no times), a late event merged into either kind of
// day, and a database upgraded from version 22.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, DAY_MS, HOUR_MS, type StatsRange } from '../lib/stats.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { MIGRATIONS } from '../lib/store/postgres/migrations/index.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { seededRandom } from './helpers/seeded.ts';

if (await postgresAvailable('PostgreSQL cut days test')) {
  register();
}

const USER = 'cut-a';
const today = Math.floor(Date.now() / DAY_MS);
const dayStart = (d: number) => (today + d) * DAY_MS;

/** Events of one owner, other owners' among them, and ranges cutting the closed days. */
function world(seed: number) {
  const rnd = seededRandom(seed);
  const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  let n = 0;
  const make = (user: string, at: number): StoredEvent => {
    const type = pick(['pageload', 'pageload', 'pageload', 'pageload', 'error', 'custom']);
    // A busy route (over the 100 points a day keeps), quiet ones, and a rare one.
    const route = pick(['/busy', '/busy', '/busy', '/busy', '/busy', '/', '/a', rnd() < 0.1 ? '/rare' : '/a']);
    const raw: Record<string, unknown> = { type, sessionId: `s-${int(0, 40)}`, route };
    if (type === 'pageload') raw.data = { duration: pick<unknown>([int(0, 3000), rnd() * 900]), ttfb: pick([int(0, 300), undefined]) };
    if (type === 'custom') raw.name = 'signup';
    const e = normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: user, newId: () => `${user}-${seed}-${++n}` });
    if (rnd() < 0.4) e.projectId = 'p1';
    return e;
  };
  /**
   * `count` events of `user` received in day `d`, some in a burst of a few minutes; inserted in
   * receive order, or (`shuffled`) not, so that seqs and receive times disagree.
   */
  const day = (user: string, d: number, count: number, shuffled = false) => {
    const burst = dayStart(d) + int(0, DAY_MS - 10 * 60_000);
    const times = Array.from({ length: count }, () => (rnd() < 0.3 ? burst + int(0, 10 * 60_000) : dayStart(d) + int(0, DAY_MS - 1)));
    times.sort((x, y) => x - y);
    if (shuffled) times.sort(() => rnd() - 0.5);
    return times.map((at) => make(user, at));
  };
  const ranges = (now: number, days: readonly number[]): StatsRange[] => [
    { from: now - 30 * DAY_MS },
    { from: now - 7 * DAY_MS, interval: 'day' },
    ...days.flatMap((d) => [
      { from: dayStart(d) + int(0, DAY_MS - 1) },
      { from: dayStart(d) + int(0, DAY_MS - 1), interval: 'day' as const },
      { from: dayStart(d) + int(0, DAY_MS / 2), to: dayStart(d) + int(DAY_MS / 2, DAY_MS - 1) },
      { from: dayStart(d - 1) + int(0, DAY_MS - 1), to: dayStart(d) + int(0, DAY_MS - 1) },
      { from: dayStart(d) - HOUR_MS, to: dayStart(d) + int(0, HOUR_MS) },
    ]),
  ];
  return { int, day, ranges };
}

function register() {
  const compact = (db: TestDatabase) => db.query((sql) => compactClosedDays(sql, dayStart(-1) + COMPACT_AFTER_MS));
  /** Per day of the owner: its kept points' rows, and how many have receive times. */
  const timed = (db: TestDatabase) => db.query((sql) => sql<{ day: number; rows: number; timed: number; busy: boolean }[]>`
    select day - ${today} as day, count(*)::int as rows, count(received)::int as timed,
           bool_or(route = '/busy' and scope = '' and received is not null) as busy
    from watchtower_day_points where user_id = ${USER} group by day order by day`);
  const check = async (store: Store, events: StoredEvent[], ranges: StatsRange[], label: string) => {
    const now = Date.now();
    for (const range of ranges) {
      for (const project of [undefined, 'p1']) {
        const expected = computeStats(project ? events.filter((e) => e.projectId === project) : events, now, range);
        assert.equal(await store.stats(USER, now, range, project), expected, `${label}: range ${JSON.stringify(range)}, project ${project}`);
      }
    }
  };

  test('ranges cutting compacted days, with and without receive times, equal computeStats', async () => {
    const seed = Number(process.env.WATCHTOWER_STATS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const { day, ranges } = world(seed);
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, max: 3, upkeepIntervalMs: 3_600_000 });
    try {
      const all: StoredEvent[] = [];
      const insert = async (events: StoredEvent[]) => {
        for (let i = 0; i < events.length; i += 200) await store.insert(events.slice(i, i + 200));
        all.push(...events.filter((e) => e.user_id === USER));
      };
      // Day -6 is compacted as before migration 23 (its points' times removed), then the others.
      await insert([...day(USER, -6, 500), ...day('cut-b', -6, 50)]);
      await compact(db);
      await db.query((sql) => sql`update watchtower_day_points set received = null where day = ${today - 6}`);
      await insert([...day(USER, -5, 600), ...day(USER, -4, 500, true), ...day(USER, -3, 60), ...day(USER, -2, 400), ...day('cut-b', -4, 80)]);
      await compact(db);
      const rows = await timed(db);
      assert.equal(rows.map((r) => r.day), [-6, -5, -4, -3, -2]);
      for (const r of rows) assert.is(r.timed, r.day === -6 ? 0 : r.rows, `day ${r.day}: ${JSON.stringify(r)}`);
      // The times kept are the receive times of the points' events.
      const [{ wrong }] = await db.query((sql) => sql<{ wrong: number }[]>`
        select count(*)::int as wrong from watchtower_day_points p cross join lateral unnest(p.seqs, p.received) u(seq, at)
        where p.received is not null and not exists (
          select 1 from watchtower_event_blocks b cross join lateral unnest(b.seqs, b.received) v(seq, at)
          where b.user_id = p.user_id and b.day = p.day and v.seq = u.seq and v.at = u.at)`);
      assert.is(wrong, 0, 'kept times are the events\' receive times');
      await check(store, all, ranges(Date.now(), [-6, -5, -4, -3, -2]), `compacted (seed ${seed})`);
      // Late events merged into a day with times and into one without.
      await insert([...day(USER, -5, 150), ...day(USER, -6, 150)]);
      await compact(db);
      const merged = await timed(db);
      // (A route new to the day takes times: a row of its own.)
      assert.is(merged.find((r) => r.day === -6)!.busy, false, 'a merge with points without times keeps none');
      assert.is(merged.find((r) => r.day === -5)!.timed, merged.find((r) => r.day === -5)!.rows, 'a merge of points with times keeps them');
      await check(store, all, ranges(Date.now(), [-6, -5]), `late events merged (seed ${seed})`);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  test('upgrade from schema version 22: days compacted before answer as before, days compacted after have times', async () => {
    const seed = Number(process.env.WATCHTOWER_STATS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const { day, ranges } = world(seed);
    const db = await createTestDatabase();
    const options = { url: db.url, max: 3, upkeepIntervalMs: 3_600_000 };
    let store = await openPostgresStore(options);
    try {
      const all = [...day(USER, -5, 500), ...day(USER, -4, 300)];
      await store.insert(all);
      await compact(db);
      await store.close();
      // The database as version 22 left it.
      await db.query((sql) => sql.unsafe(`
        alter table watchtower_day_points drop column received;
        delete from watchtower_migrations where version > 22;`).simple());
      store = await openPostgresStore(options);
      assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
      assert.ok((await timed(db)).every((r) => r.timed === 0));
      await check(store, all, ranges(Date.now(), [-5, -4]), `upgraded (seed ${seed})`);
      const later = [...day(USER, -3, 400), ...day(USER, -4, 100)];
      await store.insert(later);
      all.push(...later);
      await compact(db);
      const rows = await timed(db);
      assert.is(rows.find((r) => r.day === -3)!.timed, rows.find((r) => r.day === -3)!.rows, 'a day compacted after the upgrade has times');
      assert.is(rows.find((r) => r.day === -4)!.busy, false, 'a day compacted before, merged with late points, has none');
      await check(store, all, ranges(Date.now(), [-5, -4, -3]), `upgraded, then compacted (seed ${seed})`);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  test.run();
}
