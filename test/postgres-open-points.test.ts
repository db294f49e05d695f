// The open days' latest points kept by an instance (lib/store/postgres/stats/open-points.ts):
// statistics read alternately with inserts into today and yesterday (a closed day still in rows)
// equal computeStats over the same events, on two store instances of one database, while the
// kept points' horizon moves, while an insert is held in flight (its rows take seqs below those of
// rows committed after it), and across yesterday's move into blocks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, DAY_MS, HOUR_MS, type StatsRange } from '../lib/stats.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason, type TestDatabase } from './helpers/postgres.ts';

const reason = await unavailableReason();
if (reason !== null && !REQUIRE_POSTGRES) {
  console.log(`PostgreSQL open-day points test skipped: ${reason}. Set WATCHTOWER_TEST_DATABASE_URL to a reachable server (CI sets WATCHTOWER_REQUIRE_POSTGRES=1 to make this a failure).`);
} else if (reason !== null) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => {
    assert.unreachable(reason);
  });
  test.run();
} else {
  register();
}

/** Seeded (mulberry32), so that a failure's data comes again with its seed. */
function random(seed: number) {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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
    const rnd = random(seed);
    const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const base = Date.now();
    const today = Math.floor(base / DAY_MS);
    const dayStart = (d: number) => (today + d) * DAY_MS;
    const A = 'op-a', B = 'op-b';
    const held = new Map<string, StoredEvent[]>([[A, []], [B, []]]);
    let n = 0;
    // Two busy routes (more than the 100 points kept), three quiet ones, one rare.
    const make = (user: string, at: number): StoredEvent => {
      const type = pick(['pageload', 'pageload', 'pageload', 'pageload', 'error', 'custom']);
      const raw: Record<string, unknown> = { type, sessionId: `s-${int(0, 30)}`, route: pick(['/', '/', '/', '/home', '/home', '/a', '/b', '/c', rnd() < 0.2 ? '/rare' : '/']) };
      if (type === 'pageload') raw.data = { duration: pick<unknown>([int(0, 3000), rnd() * 900, 'slow']), ttfb: pick([int(0, 300), undefined]) };
      if (type === 'custom') raw.name = 'signup';
      if (rnd() < 0.2) raw.timestamp = new Date(at - int(0, 3 * DAY_MS)).toISOString();
      const e = normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: user, newId: () => `${user}-${seed}-${++n}` });
      if (rnd() < 0.4) e.projectId = 'p1';
      return e;
    };
    /** `count` events of `user` received in day `d` (today: before the test began), in receive order. */
    const scatter = (user: string, d: number, count: number) => {
      const to = d === 0 ? base : dayStart(d) + DAY_MS;
      return Array.from({ length: count }, () => dayStart(d) + Math.floor(rnd() * (to - dayStart(d)))).sort((x, y) => x - y).map((at) => make(user, at));
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
    await insert(one, [...scatter(A, -1, 300), ...scatter(B, -1, 30)]);
    await insert(one, [...scatter(A, 0, 350), ...scatter(B, 0, 30)]);
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

    // An insert held in flight (by a third instance): its rows take seqs, then wait on a row lock
    // while another owner's rows commit after them with higher seqs. The kept points must not move
    // past the held rows.
    await db.query((sql) => sql.begin(async (tx) => {
      await tx`select 1 from watchtower_event_days where user_id = ${A} and day = ${today} for update`;
      const late = scatter(A, 0, 40);
      const pending = three.insert(late);
      pending.catch(() => {});
      for (let i = 0; ; i++) {
        const [{ waiting }] = await db.admin<{ waiting: number }[]>`
          select count(*)::int as waiting from pg_stat_activity where datname = ${db.name} and wait_event_type = 'Lock'`;
        if (waiting > 0) break;
        assert.ok(i < 200, 'the insert waits on the row lock');
        await new Promise((r) => setTimeout(r, 25));
      }
      await insert(two, scatter(B, 0, 30));
      await check('an insert in flight, another owner\'s rows committed after it');
      // The held insert goes on once this transaction ends (just after this function returns).
      return { late, pending };
    }).then(async ({ late, pending }) => {
      assert.is((await pending).length, late.length);
      held.get(A)!.push(...late);
    }));
    await check('the held insert committed');

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
