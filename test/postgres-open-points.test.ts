// The open days' latest points kept by an instance (lib/store/postgres/stats/open-points.ts):
// statistics read alternately with inserts into today and yesterday (a closed day still in rows)
// equal computeStats over the same events, on two store instances of one database, while the
// kept points' horizon moves, while an insert is held in flight (its rows take seqs below those of
// rows committed after it), and across yesterday's move into blocks.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, DAY_MS, HOUR_MS, type StatsRange } from '../lib/stats.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { seededRandom } from './helpers/seeded.ts';

if (await postgresAvailable('PostgreSQL open-day points test')) {
  register();
}

function register() {
  let db: TestDatabase;
  let one: Store, two: Store, three: Store;
  test.before(async () => {
    db = await createTestDatabase();
    const options = { url: db.url, connectTimeout: 3, max: 3, upkeepIntervalMs: 3_600_000 };
    one = await openPostgresStore(options);
    two = await openPostgresStore(options);
    // Only for the insert held in flight: a pool sends a query to a busy connection when it has
    // no other, and a read queued behind the held insert would wait for it.
    three = await openPostgresStore({ ...options, max: 2 });
  });
  test.after(async () => {
    await one?.close().catch(() => {});
    await two?.close().catch(() => {});
    await three?.close().catch(() => {});
    await db?.drop();
  });

  test('open days\' latest points equal computeStats while rows arrive, on two instances, with an insert in flight and across a close', async () => {
    const seed = Number(process.env.WATCHTOWER_STATS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = seededRandom(seed);
    const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const base = Date.now();
    const today = Math.floor(base / DAY_MS);
    const dayStart = (d: number) => (today + d) * DAY_MS;
    const A = 'op-a', B = 'op-b';
    const held = new Map<string, StoredEvent[]>([[A, []], [B, []]]);
    let n = 0;
    // Two busy routes (more than the 100 points kept), three quiet ones, one rare, and one of the
    // closed days only.
    const make = (user: string, at: number, sessions = 's'): StoredEvent => {
      const type = pick(['pageload', 'pageload', 'pageload', 'pageload', 'error', 'custom']);
      const raw: Record<string, unknown> = { type, sessionId: `${sessions}-${int(0, 30)}`, route: pick(['/', '/', '/', '/home', '/home', '/a', '/b', '/c', rnd() < 0.2 ? '/rare' : '/']) };
      // A route of closed days only, busy enough (over 100 points a day) that yesterday's kept
      // points alone answer it.
      if (at < dayStart(0) && rnd() < 0.4) raw.route = '/closed';
      if (type === 'pageload') raw.data = { duration: pick<unknown>([int(0, 3000), rnd() * 900, 'slow']), ttfb: pick([int(0, 300), undefined]) };
      if (type === 'custom') raw.name = 'signup';
      if (rnd() < 0.2) raw.timestamp = new Date(at - int(0, 3 * DAY_MS)).toISOString();
      const e = normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: user, newId: () => `${user}-${seed}-${++n}` });
      if (rnd() < 0.4) e.projectId = 'p1';
      return e;
    };
    /** `count` events of `user` received in day `d` (today: before the test began), in receive order. */
    const scatter = (user: string, d: number, count: number, sessions?: string) => {
      const to = d === 0 ? base : dayStart(d) + DAY_MS;
      return Array.from({ length: count }, () => dayStart(d) + Math.floor(rnd() * (to - dayStart(d)))).sort((x, y) => x - y).map((at) => make(user, at, sessions));
    };
    const insert = async (store: Store, events: StoredEvent[]) => {
      for (let i = 0; i < events.length; i += 200) assert.is((await store.insert(events.slice(i, i + 200))).length, Math.min(200, events.length - i));
      for (const e of events) held.get(e.user_id!)!.push(e);
    };
    const ranges = (now: number): (StatsRange | undefined)[] => [
      undefined,
      { from: now - 30 * DAY_MS },
      { from: now - 7 * DAY_MS, interval: 'day' },
      { from: dayStart(-1) + int(0, DAY_MS - 1) },
      { from: now - HOUR_MS },
      { from: dayStart(-2), to: dayStart(0) + Math.floor((base - dayStart(0)) / 2) },
    ];
    let checks = 0;
    const check = async (label: string, stores = [one, two], events = held.get(A)!) => {
      for (const [i, store] of stores.entries()) {
        const now = Date.now();
        for (const range of ranges(now)) {
          for (const project of [undefined, 'p1']) {
            const expected = computeStats(project ? events.filter((e) => e.projectId === project) : events, now, range);
            const actual = await store.stats(A, now, range, project);
            assert.equal(actual, expected, `${label}, instance ${i + 1}, range ${JSON.stringify(range)}, project ${project} (seed ${seed})`);
            checks++;
          }
        }
      }
    };
    const hits = async (store: Store) => ((await store.health()).openPoints as { hits: number }).hits;
    const compact = (now: number) => db.query((sql) => compactClosedDays(sql, now));

    // A compacted day, then yesterday and today in rows (days before yesterday close now).
    await insert(one, [...scatter(A, -3, 80), ...scatter(B, -3, 20)]);
    await compact(dayStart(-1) + COMPACT_AFTER_MS);
    await insert(one, [...scatter(A, -1, 700), ...scatter(B, -1, 30)]);
    await insert(one, [...scatter(A, 0, 600), ...scatter(B, 0, 30)]);
    await check('first reads');
    await check('again, from the kept points');
    assert.ok(await hits(one) > 0, 'instance 1 answered routes from its kept points');
    assert.ok(await hits(two) > 0, 'instance 2 answered routes from its kept points');

    // Inserts through either instance, read before and after the horizon moves past them.
    for (let round = 0; round < 3; round++) {
      const by = round % 2 ? two : one;
      await insert(by, [...scatter(A, 0, int(5, 60)), ...scatter(B, 0, 5)]);
      await check(`round ${round}: after an insert into today by instance ${round % 2 + 1}`);
      await insert(by === one ? two : one, scatter(A, -1, int(1, 20)));
      await check(`round ${round}: after an insert into yesterday by the other instance`);
    }

    // Inserts held in flight (by a third instance): a transaction locks the owner's row of
    // today's days, so the insert takes its seqs and then waits. Rows committed after it, of
    // another owner and of the same owner's yesterday (sessions of their own, which the held
    // insert has not locked), take higher seqs. The kept points must not move past held rows, nor
    // take rows above their horizon as if below it: with a second insert held, the first one's
    // commit moves the horizon to just before the second, under rows already committed.
    const locks = postgres(db.url, { max: 2, onnotice: () => {} });
    const waiting = async () => (await db.admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = ${db.name} and wait_event_type = 'Lock'`)[0].n;
    const hold = async (user: string, events: StoredEvent[]) => {
      const conn = await locks.reserve();
      await conn`begin`;
      await conn`select 1 from watchtower_event_days where user_id = ${user} and day = ${today} for update`;
      const before = await waiting();
      const pending = three.insert(events);
      pending.catch(() => {});
      for (let i = 0; (await waiting()) <= before; i++) {
        assert.ok(i < 200, 'the insert waits on the row lock');
        await new Promise((r) => setTimeout(r, 25));
      }
      return async () => {
        await conn`commit`;
        conn.release();
        assert.is((await pending).length, events.length);
      };
    };
    try {
      const lateA = scatter(A, 0, 40), lateB = scatter(B, 0, 20);
      const releaseA = await hold(A, lateA);
      await insert(two, scatter(B, 0, 30));
      await check('an insert in flight, another owner\'s rows committed after it');
      const releaseB = await hold(B, lateB);
      // The held rows' seqs come before these: computeStats reads events in that order.
      const position = held.get(A)!.length;
      await insert(two, scatter(A, -1, 30, 'after-held'));
      await check('two inserts in flight, rows committed after them');
      await releaseA();
      held.get(A)!.splice(position, 0, ...lateA);
      await check('the first held insert committed, the second still held');
      await check('the same, read again');
      await releaseB();
      held.get(B)!.push(...lateB);
      await check('both held inserts committed');
    } finally {
      await locks.end({ timeout: 1 });
    }

    // Yesterday's close: rows added after the kept points' horizon, then its move into blocks
    // before any read; then today goes on.
    await insert(two, scatter(A, -1, 25));
    await compact(dayStart(0) + COMPACT_AFTER_MS);
    const [{ moved }] = await db.query((sql) => sql<{ moved: number }[]>`select moved::int from watchtower_event_days where user_id = ${A} and day = ${today - 1}`);
    assert.ok(moved > 0, 'yesterday moved into blocks');
    await check('yesterday moved into blocks');
    await insert(one, scatter(A, 0, 30));
    await check('today after the close');
    console.log(`  open-day points: ${held.get(A)!.length} events, ${checks} checks (seed ${seed})`);
  });

  test.run();
}
