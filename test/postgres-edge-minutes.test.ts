// The whole minutes at a range's edges kept by an instance up to a horizon of positions
// (lib/store/postgres/stats/edge-minutes.ts): statistics whose edge falls in busy minutes of the
// open day, and of yesterday before and after its move into blocks, read alternately on two store
// instances with inserts between (into held minutes, as late rows, and through either instance),
// with an insert held in flight while rows commit after it, equal computeStats over the same
// events; and the held minutes are taken from the instance rather than read again.
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

if (await postgresAvailable('PostgreSQL edge minutes test')) {
  register();
}

const MIN = 60_000;

function register() {
  let db: TestDatabase;
  let one: Store, two: Store, three: Store;
  test.before(async () => {
    db = await createTestDatabase();
    const options = { url: db.url, connectTimeout: 3, max: 3, upkeepIntervalMs: 3_600_000 };
    one = await openPostgresStore(options);
    two = await openPostgresStore(options);
    // Only for the insert held in flight (see the open points' test).
    three = await openPostgresStore({ ...options, max: 2 });
  });
  test.after(async () => {
    await one?.close().catch(() => {});
    await two?.close().catch(() => {});
    await three?.close().catch(() => {});
    await db?.drop();
  });

  test('edge minutes kept up to a horizon equal computeStats with inserts between, on two instances, with an insert in flight and across a move into blocks', async () => {
    const seed = Number(process.env.WATCHTOWER_STATS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = seededRandom(seed);
    const int = (min: number, max: number) => min + Math.floor(rnd() * (max - min + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const base = Date.now();
    const today = Math.floor(base / DAY_MS);
    const A = 'em-a', B = 'em-b';
    const held = new Map<string, StoredEvent[]>([[A, []], [B, []]]);
    let n = 0;
    const make = (user: string, at: number, sessions = 's'): StoredEvent => {
      const type = pick(['pageload', 'pageload', 'click', 'error', 'custom', 'performance']);
      const raw: Record<string, unknown> = { type, sessionId: `${sessions}-${int(0, 40)}`, route: pick(['/', '/', '/home', '/a', '/b']),
        referrer: pick(['https://r1.example/x', 'https://r2.example/', '']), deployVersion: pick(['1.0', '1.1']) };
      if (type === 'pageload') raw.data = { duration: int(0, 3000), ttfb: pick([int(0, 300), undefined]) };
      if (type === 'performance') raw.data = { name: pick(['LCP', 'CLS']), value: int(0, 4000) };
      if (type === 'custom') raw.name = 'signup';
      const e = normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: user, newId: () => `${user}-${seed}-${++n}` });
      if (rnd() < 0.4) e.projectId = 'p1';
      return e;
    };
    // Busy minutes: three minutes ago (today, unless the test runs within minutes of midnight)
    // and five before it; yesterday's in its afternoon.
    const busy = Math.floor(base / MIN) - 3;
    const busyYesterday = Math.floor(((today - 1) * DAY_MS + 15 * HOUR_MS + 20 * MIN) / MIN);
    const burst = (user: string, minute: number, count: number, sessions?: string) =>
      Array.from({ length: count }, () => minute * MIN + int(0, MIN - 1)).sort((x, y) => x - y).map((at) => make(user, at, sessions));
    /** `count` events spread over [from, to), in receive order. */
    const spread = (user: string, from: number, to: number, count: number) =>
      Array.from({ length: count }, () => from + Math.floor(rnd() * (to - from))).sort((x, y) => x - y).map((at) => make(user, at));
    const insert = async (store: Store, events: StoredEvent[]) => {
      for (let i = 0; i < events.length; i += 300) assert.is((await store.insert(events.slice(i, i + 300))).length, Math.min(300, events.length - i));
      for (const e of events) held.get(e.user_id!)!.push(e);
    };
    const hourOf = (minute: number) => Math.floor((minute * MIN) / HOUR_MS) * HOUR_MS;
    // Ranges whose edges cut the busy minutes' hours: a start before them in their hour (the
    // busy minutes whole minutes of the edge), a start inside a busy minute (its partial first
    // minute), an end inside a busy minute and an end after both (the last edge, events after it).
    const ranges = (): StatsRange[] => [
      { from: hourOf(busy - 5) + Math.floor(rnd() * Math.max(1, (busy - 5) * MIN - hourOf(busy - 5))) },
      { from: busy * MIN - int(1, 12) * MIN - int(0, MIN - 1) },
      { from: busy * MIN + int(1, MIN - 1) },
      { from: hourOf(busy) - 2 * HOUR_MS, to: busy * MIN + int(1, MIN - 1) },
      { from: hourOf(busy) - 2 * HOUR_MS, to: (busy + 1) * MIN + int(1, MIN - 1), interval: 'hour' },
      { from: hourOf(busyYesterday) + int(0, 19) * MIN + int(0, MIN - 1) },
      { from: hourOf(busyYesterday) - HOUR_MS, to: busyYesterday * MIN + int(MIN / 2, 3 * MIN) },
    ];
    let checks = 0;
    const check = async (label: string, stores = [one, two], projects = [undefined, 'p1']) => {
      const rs = ranges();
      for (const [i, store] of stores.entries()) {
        const now = Date.now();
        for (const range of rs) {
          for (const project of projects) {
            const events = held.get(A)!;
            const expected = computeStats(project ? events.filter((e) => e.projectId === project) : events, now, range);
            const actual = await store.stats(A, now, range, project);
            assert.equal(actual, expected, `${label}, instance ${i + 1}, range ${JSON.stringify(range)}, project ${project} (seed ${seed})`);
            checks++;
          }
        }
      }
    };
    const hits = async (store: Store) => ((await store.health()).edgeMinutes as { hits: number }).hits;
    const compact = (now: number) => db.query((sql) => compactClosedDays(sql, now));

    // Yesterday and today in rows: events every few seconds around the busy minutes, bursts in them.
    await insert(one, [
      ...spread(A, hourOf(busyYesterday) - HOUR_MS, hourOf(busyYesterday) + 2 * HOUR_MS, 900), ...burst(A, busyYesterday, 700),
      ...spread(B, hourOf(busyYesterday), hourOf(busyYesterday) + HOUR_MS, 100),
    ]);
    await insert(one, [...spread(A, hourOf(busy) - 2 * HOUR_MS, busy * MIN, 900), ...burst(A, busy - 5, 500), ...burst(A, busy, 900), ...burst(B, busy, 100)]);
    await insert(two, spread(A, (busy + 1) * MIN, base, 60));
    await check('first reads');
    const first = [await hits(one), await hits(two)];
    await check('again, from the kept minutes');
    assert.ok(await hits(one) > first[0], 'instance 1 took whole minutes from what it kept');
    assert.ok(await hits(two) > first[1], 'instance 2 took whole minutes from what it kept');

    // Inserts between reads: late rows into the busy minutes (received times in the past) and
    // rows of now, through either instance, of both owners.
    for (let round = 0; round < 3; round++) {
      const by = round % 2 ? two : one;
      const before = await hits(one);
      await insert(by, [...burst(A, busy, int(1, 40), 'late'), ...burst(A, busy - 5, int(0, 5)), ...burst(B, busy, 5)]);
      await check(`round ${round}: after late rows in busy minutes by instance ${round % 2 + 1}`);
      assert.ok(await hits(one) > before, `round ${round}: the changed minutes were still taken from the instance, with the rows above their horizon`);
      await insert(by === one ? two : one, [...burst(A, busyYesterday, int(1, 20), 'late'), ...spread(A, (busy + 1) * MIN, Date.now(), 5)]);
      await check(`round ${round}: after late rows into yesterday's busy minute by the other instance`);
    }

    // An insert into the busy minute held in flight (by a third instance): it takes its seqs and
    // waits on a row lock of the owner's day, while rows of another owner and of the same owner
    // (yesterday's busy minute, other sessions) commit after it with higher seqs. Before it, late
    // rows and a read of the owner's scope only: the instance's horizon moves past the late rows,
    // while the project's minutes stay kept at the horizon before. Minutes kept meanwhile must not
    // take the rows above the horizon (those committed after the held insert) as if below it, nor
    // be kept past the held rows, which are then read above the horizon once committed.
    const busyDay = Math.floor((busy * MIN) / DAY_MS);
    const locks = postgres(db.url, { max: 2, onnotice: () => {} });
    const waiting = async () => (await db.admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = ${db.name} and wait_event_type = 'Lock'`)[0].n;
    try {
      await insert(one, [...burst(A, busy, 20, 'late'), ...burst(A, busyYesterday, 20, 'late')]);
      await check('late rows before the held insert, the owner\'s scope', [one], [undefined]);
      const conn = await locks.reserve();
      await conn`begin`;
      await conn`select 1 from watchtower_event_days where user_id = ${A} and day = ${busyDay} for update`;
      const before = await waiting();
      const late = burst(A, busy, 60, 'held');
      const pending = three.insert(late);
      pending.catch(() => {});
      for (let i = 0; (await waiting()) <= before; i++) {
        assert.ok(i < 200, 'the insert waits on the row lock');
        await new Promise((r) => setTimeout(r, 25));
      }
      // The held rows' seqs come before these: computeStats reads events in that order.
      const position = held.get(A)!.length;
      await insert(two, [...burst(B, busy, 30), ...burst(A, busyYesterday, 20, 'after-held')]);
      await check('an insert in flight into the busy minute, rows committed after it');
      await check('the same, read again');
      await conn`commit`;
      conn.release();
      assert.is((await pending).length, late.length);
      held.get(A)!.splice(position, 0, ...late);
      await check('the held insert committed');
    } finally {
      await locks.end({ timeout: 1 });
    }

    // Yesterday's move into blocks, with late rows added after the minutes were kept.
    await insert(two, burst(A, busyYesterday, 15, 'late'));
    await check('before yesterday\'s move');
    await compact((today) * DAY_MS + COMPACT_AFTER_MS);
    if (busyDay === today) {
      const [{ moved }] = await db.query((sql) => sql<{ moved: number }[]>`select moved::int from watchtower_event_days where user_id = ${A} and day = ${today - 1}`);
      assert.ok(moved > 0, 'yesterday moved into blocks');
    }
    await check('yesterday moved into blocks');
    await insert(one, [...burst(A, busyYesterday, 10, 'after-move'), ...burst(A, busy, 10)]);
    await check('late rows after the move');
    console.log(`  edge minutes: ${held.get(A)!.length} events, ${checks} checks (seed ${seed})`);
  });

  test.run();
}
