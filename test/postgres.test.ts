// The PostgreSQL store against a real server: the store contract, statistics equal to
// computeStats, migrations racing, LISTEN/NOTIFY between instances, connection loss → 503,
// and two real server.ts instances sharing one database.
import type postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, uuidv7, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, feedbackRating, pageloadDuration, type Stats } from '../lib/stats.ts';
import { routeKey } from '../lib/event-keys.ts';
import { DIMENSIONS, LEGACY_DIMENSIONS } from '../lib/breakdowns.ts';
import { DIM_KINDS, PROPERTY } from '../lib/rollup/counters.ts';
import { EDGE_PAGE } from '../lib/store/postgres/stats/edge-rows.ts';
import { uuidv7 as sdkUuidv7 } from '../sdk/uuid.ts';
import { encodeCursor } from '../lib/store/cursor.ts';
import { decodeDay } from '../lib/store/postgres/day-codec.ts';
import { COMPACT_AFTER_MS, COMPACT_DAY, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { MIGRATIONS, migrationScript } from '../lib/store/postgres/migrations/index.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { StoreUnavailableError, type Store } from '../lib/store/types.ts';
import { dataFrames } from './helpers/app.ts';
import {
  createTestDatabase, openFreshPostgresStore, reopenFreshPostgresStore, REQUIRE_POSTGRES, unavailableReason, type TestDatabase,
} from './helpers/postgres.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { storeContract } from './store-contract.ts';

/**
 * computeStats without breakdowns and vitals: what the store answers for a range reaching back
 * before migration 5, whose events have no breakdown counters (docs/api.md#breakdowns).
 */
const withoutBreakdowns = (...args: Parameters<typeof computeStats>): Stats => {
  const { breakdowns: _b, vitals: _v, ...rest } = computeStats(...args);
  return rest;
};

/**
 * computeStats without the breakdown lists added after the first six: what the store answers for a
 * range starting before migration 18 on a database that held events then (docs/api.md#breakdowns).
 */
const withoutNewer = (...args: Parameters<typeof computeStats>): Stats => {
  const stats = computeStats(...args);
  if (!stats.breakdowns) return stats;
  const b = { ...stats.breakdowns } as Record<string, unknown>;
  for (const d of DIMENSIONS.slice(LEGACY_DIMENSIONS)) delete b[d];
  return { ...stats, breakdowns: b as unknown as Stats['breakdowns'] };
};

const reason = await unavailableReason();
if (reason !== null && !REQUIRE_POSTGRES) {
  console.log(`PostgreSQL tests skipped: ${reason}. Set WATCHTOWER_TEST_DATABASE_URL to a reachable server (CI sets WATCHTOWER_REQUIRE_POSTGRES=1 to make this a failure).`);
} else if (reason !== null) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => {
    assert.unreachable(reason);
  });
  test.run();
} else {
  await register();
}

async function register() {
  let db: TestDatabase;
  const stores: Store[] = [];
  const servers: RunningServer[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  // A test's stores are closed after it: kept to the end of the file, with pools of 10, they held
  // ~90 connections at the peak, near a default server's 100, and the file failed with "too many
  // clients" whenever anything else was connected.
  const open = async (extra: { log?: (m: string) => void } = {}) => {
    const s = await openPostgresStore({ url: db.url, connectTimeout: 3, max: 4, ...extra });
    stores.push(s);
    return s;
  };

  test.before(async () => {
    db = await createTestDatabase();
    process.on('unhandledRejection', onUnhandled);
  });
  test.after.each(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close().catch(() => {})));
  });
  test.after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await Promise.all(stores.map((s) => s.close().catch(() => {})));
    await db?.drop();
  });

  const exported = async (store: Store, userId: string) => {
    const out: StoredEvent[] = [];
    for await (const batch of store.export({ userId })) out.push(...batch);
    return out;
  };

  /**
   * A compaction pass as it runs once every day before `now`'s has closed. The tests' closed days
   * are the days before today: a pass at `now` itself, in the first COMPACT_AFTER_MS after midnight
   * UTC, leaves yesterday open, and the tests failed in that hour.
   */
  const compactPast = (sql: Parameters<typeof compactClosedDays>[0], now: number) =>
    compactClosedDays(sql, Math.floor(now / 86_400_000) * 86_400_000 + COMPACT_AFTER_MS);

  let n = 0;
  const ev = (raw: Partial<RawEvent> & { type?: string }, owner: string | null, at = Date.now()): StoredEvent =>
    normalise({ type: 'custom', ...raw } as RawEvent, { now: at, owner, newId: () => `gen-${++n}-${Math.random().toString(36).slice(2)}` });

  test('migrations: several instances starting at once apply each version exactly once', async () => {
    const opened = await Promise.all([open(), open(), open(), open()]);
    assert.is(opened.length, 4);
    const rows = await db.query((sql) => sql`select version from watchtower_migrations order by version`);
    assert.equal(rows.map((r) => r.version), MIGRATIONS.map((m) => m.version));
    // Opening again (a restart) is a no-op.
    const again = await open();
    assert.is((await again.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
  });

  // The shared contract; its factory must return a fresh, empty store: each gets a database of its own.
  storeContract('postgres', openFreshPostgresStore, { rollupStats: true, projects: true, reopen: reopenFreshPostgresStore });

  test('insert → list round trip: events read back deep-equal, most recent first, with NUL and lone surrogates', async () => {
    const store = await open();
    const events = [
      ev({ id: 'rt-1', type: 'pageload', route: '/a', sessionId: 's', deployVersion: 'v1', data: { duration: 12.5, nested: { a: [1, 'x', null] } }, extra: 'kept' }, 'rt-user'),
      ev({ id: 'rt-2', type: 'error', message: 'nul\u0000inside', data: { stack: 'lone \ud800 surrogate' } }, 'rt-user'),
      ev({ id: 'rt-3', type: 'click', url: 'https://x/p?q', appName: 'demo', big: 1e21, neg: -0.000001 }, 'rt-user'),
    ];
    const stored = await store.insert(events);
    assert.equal(stored, events);
    const read = (await store.list({ userId: 'rt-user', limit: 10 })).events;
    assert.equal(read, [...events].reverse());
    assert.is((await store.list({ userId: 'rt-user', limit: 10, type: 'error' })).events[0].message, 'nul\u0000inside');
  });

  test('the texts the route serialised are stored as they are, one per event; one holding a line break is not used', async () => {
    const store = await open();
    const events = ['tx-1', 'tx-2', 'tx-3'].map((id) => ev({ id, type: 'click', sessionId: 's', data: { n: id } }, 'tx-user'));
    // The same events as JSON in another key order (as a route might write them), and one pretty-printed.
    const reordered = (e: StoredEvent) => JSON.stringify(Object.fromEntries(Object.entries(e).reverse()));
    const texts = [reordered(events[0]), JSON.stringify(events[1], null, 2), reordered(events[2])];
    assert.equal(await store.insert(events, texts), events);
    const rows = await db.query((sql) => sql<{ event: string }[]>`select event from watchtower_events where user_id = 'tx-user' order by seq`);
    assert.equal(rows.map((r) => r.event), [texts[0], JSON.stringify(events[1]), texts[2]]);
    assert.equal((await store.list({ userId: 'tx-user', limit: 10 })).events, [...events].reverse());
  });

  test('idempotent by (owner, id): retries and in-batch duplicates are stored once; another owner may reuse the id', async () => {
    const store = await open();
    const a = ev({ id: 'dup', type: 'click', text: 'first' }, 'idem-a');
    const first = await store.insert([a, { ...a, text: 'second' }]);
    assert.equal(first, [a]);
    assert.equal(await store.insert([a]), []);
    const mixed = await store.insert([a, ev({ id: 'dup', type: 'click' }, 'idem-b'), ev({ id: 'dup', type: 'click' }, null), ev({ id: 'new', type: 'click' }, 'idem-a')]);
    assert.equal(mixed.map((e) => `${e.user_id}:${e.id}`), ['idem-b:dup', 'null:dup', 'idem-a:new']);
    assert.equal(await store.insert([ev({ id: 'dup', type: 'click' }, null)]), [], 'unowned events are idempotent too');
    const read = (await store.list({ userId: 'idem-a', limit: 10 })).events;
    assert.equal(read.map((e) => e.id), ['new', 'dup']);
    assert.is(read[1].text, 'first');
  });

  test('concurrent inserts sharing ids (group commit): each (owner, id) is reported stored by exactly one call', async () => {
    const store = await open();
    const calls = Array.from({ length: 40 }, (_, c) =>
      Array.from({ length: 10 }, (_, i) => ev({ id: `cc-${(c * 3 + i) % 50}`, type: 'click', call: c }, 'conc')));
    const results = await Promise.all(calls.map((batch) => store.insert(batch)));
    const ids = results.flat().map((e) => e.id);
    assert.is(new Set(ids).size, ids.length, 'no id reported twice');
    assert.is(ids.length, 50, 'every id reported once');
    const stored = (await store.list({ userId: 'conc', limit: 1000 })).events;
    assert.is(stored.length, 50);
    // What each call got back is what was stored.
    const byId = new Map(stored.map((e) => [e.id, e.call]));
    results.forEach((got, c) => got.forEach((e) => assert.is(byId.get(e.id), c)));
  });

  test('group commit: concurrent requests with overlapping ids and users answer and store what sequential inserts do; rollups equal raw counts', async () => {
    const store = await open();
    let seed = 17;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    // 80 requests of 1-12 events from a pool of 30 ids, for three users, some requests for two
    // (and some unowned events), the same id often in several requests and for several users.
    const shape = Array.from({ length: 80 }, () => {
      const users = rnd() < 0.3 ? ['u1', 'u2'] : [['u1', 'u2', 'u3'][Math.floor(rnd() * 3)]];
      return Array.from({ length: 1 + Math.floor(rnd() * 12) }, (_, i) => ({
        id: `gc-${Math.floor(rnd() * 30)}`, user: rnd() < 0.05 ? null : users[i % users.length],
        type: ['pageload', 'error', 'click'][Math.floor(rnd() * 3)], session: `s-${Math.floor(rnd() * 5)}`, duration: Math.floor(rnd() * 900),
      }));
    });
    const requests = (prefix: string) => shape.map((events) => events.map((e) =>
      ev({ id: e.id, type: e.type, sessionId: e.session, route: '/gc', data: { duration: e.duration } }, e.user === null ? null : prefix + e.user)));
    const answer = (stored: StoredEvent[], prefix: string) => stored.map((e) => `${e.user_id?.slice(prefix.length) ?? '-'}/${e.id}`);
    // The unowned events of both runs share owner '': the sequential run goes second, so its ids are known.
    const concurrent = await Promise.all(requests('gcc-').map((r) => store.insert(r)));
    const sequential: StoredEvent[][] = [];
    for (const r of requests('gcs-')) sequential.push(await store.insert(r));
    assert.equal(concurrent.map((s) => answer(s, 'gcc-').filter((k) => !k.startsWith('-'))),
      sequential.map((s) => answer(s, 'gcs-').filter((k) => !k.startsWith('-'))));
    assert.ok(concurrent.flat().some((e) => e.user_id === null), 'some unowned events were stored');
    assert.ok(sequential.flat().every((e) => e.user_id !== null), 'unowned ids were stored once');
    for (const user of ['u1', 'u2', 'u3']) {
      const c = await exported(store, 'gcc-' + user);
      assert.equal(c.map((e) => e.id), (await exported(store, 'gcs-' + user)).map((e) => e.id), `${user}'s events, in order`);
      assert.equal(c.map((e) => e.id).sort(), concurrent.flat().filter((e) => e.user_id === 'gcc-' + user).map((e) => e.id).sort(),
        'what was answered is what is stored');
      const { raw, rolled } = await rollupsAgainstRaw('gcc-' + user);
      assert.equal(rolled, raw);
    }
  });

  test('group commit: a failing statement fails every request merged into it; the next requests are stored', async () => {
    const store = await open();
    // A real failure inside the insert statement: a trigger refusing one id.
    await db.query((sql) => sql.unsafe(`
      create function watchtower_test_refuse() returns trigger language plpgsql as $f$
        begin raise exception 'refused by the test'; end $f$;
      create trigger watchtower_test_refuse before insert on watchtower_events
        for each row when ((new.event::jsonb)->>'id' = 'gcf-refused') execute function watchtower_test_refuse();`).simple());
    try {
      const user = 'gcf';
      const a = store.insert([ev({ id: 'gcf-a', type: 'click', sessionId: 's' }, user)]);
      // Sent while a's statement runs: merged into the next one, which the refused id fails.
      const merged = [
        store.insert([ev({ id: 'gcf-b', type: 'click', sessionId: 's' }, user)]),
        store.insert([ev({ id: 'gcf-refused', type: 'error', sessionId: 's' }, user)]),
        store.insert([ev({ id: 'gcf-c', type: 'click', sessionId: 't' }, user), ev({ id: 'gcf-a', type: 'click' }, user)]),
      ];
      assert.equal((await a).map((e) => e.id), ['gcf-a']);
      const results = await Promise.allSettled(merged);
      assert.equal(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
      assert.match(String((results[0] as PromiseRejectedResult).reason), 'refused by the test');
      assert.equal((await store.list({ userId: user, limit: 10 })).events.map((e) => e.id), ['gcf-a'], 'nothing of the failed statement stored');
      // The next requests (the same ids retried, without the refused one) are stored as usual.
      const retried = await Promise.all([
        store.insert([ev({ id: 'gcf-b', type: 'click', sessionId: 's' }, user)]),
        store.insert([ev({ id: 'gcf-c', type: 'click', sessionId: 't' }, user), ev({ id: 'gcf-a', type: 'click' }, user)]),
      ]);
      assert.equal(retried.map((s) => s.map((e) => e.id)), [['gcf-b'], ['gcf-c']]);
      assert.equal((await store.list({ userId: user, limit: 10 })).events.map((e) => e.id), ['gcf-c', 'gcf-b', 'gcf-a']);
      const { raw, rolled } = await rollupsAgainstRaw(user);
      assert.equal(rolled, raw);
    } finally {
      await db.query((sql) => sql.unsafe(`drop trigger watchtower_test_refuse on watchtower_events; drop function watchtower_test_refuse();`).simple());
    }
  });

  test('list: scoped by user, filters by type and deployVersion, limit, most recent first', async () => {
    const store = await open();
    const mine = Array.from({ length: 30 }, (_, i) =>
      ev({ id: `l-${i}`, type: i % 3 ? 'click' : 'error', deployVersion: i % 2 ? 'v2' : 'v1' }, 'list-me'));
    await store.insert(mine);
    await store.insert([ev({ id: 'l-x', type: 'error', deployVersion: 'v1' }, 'list-other'), ev({ id: 'l-y', type: 'error' }, null)]);
    const all = (await store.list({ userId: 'list-me', limit: 1000 })).events;
    assert.equal(all.map((e) => e.id), mine.map((e) => e.id).reverse());
    assert.equal((await store.list({ userId: 'list-me', limit: 5 })).events.map((e) => e.id), ['l-29', 'l-28', 'l-27', 'l-26', 'l-25']);
    const errorsV1 = (await store.list({ userId: 'list-me', limit: 100, type: 'error', version: 'v1' })).events;
    assert.equal(errorsV1.map((e) => e.id), mine.filter((e) => e.type === 'error' && e.deployVersion === 'v1').map((e) => e.id).reverse());
    assert.equal((await store.list({ userId: 'list-me', limit: 0 })).events, []);
    assert.equal((await store.list({ userId: 'nobody', limit: 10 })).events, []);
    assert.equal((await store.list({ userId: '', limit: 10 })).events, [], 'unowned events appear for no user');
  });

  test('stats: equal to computeStats over the same events (random data, window and day boundaries)', async () => {
    const store = await open();
    const now = Date.parse('2026-05-16T12:00:00.000Z');
    let seed = 42;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const offsets = [0, 1000, 299_999, 300_000, 300_001, 3_600_000, 12 * 3_600_000, 86_400_000, 5 * 86_400_000, 6 * 86_400_000 + 43_199_000, 6 * 86_400_000 + 43_200_001, 9 * 86_400_000, -60_000];
    const byUser = new Map<string, StoredEvent[]>();
    for (const user of ['st-a', 'st-b']) {
      const events: StoredEvent[] = [];
      for (let i = 0; i < 700; i++) {
        const type = pick(['pageload', 'pageload', 'error', 'feedback', 'click', 'interaction', 'performance', 'custom', 'login', 'weird']);
        const raw: Record<string, unknown> = { type, sessionId: pick(['s1', 's2', 's3', '', undefined]), deployVersion: pick(['1.0', '2.0', undefined]) };
        if (rnd() < 0.5) raw.route = pick(['/', '/home', '/a/b']);
        else raw.url = pick(['https://x.test/home?q=1', '/rel/path', 'not a url', undefined]);
        if (type === 'pageload') raw.data = { duration: pick([Math.round(rnd() * 3000), rnd() * 1000, 100, 100, 'slow', undefined]), ttfb: pick([12, 3.5, undefined, 'x']) };
        if (type === 'feedback') raw.data = { rating: pick([1, 2, 3, 4, 5, 2.5, 0, 6, '3']) };
        // Through JSON, as events arrive over HTTP (no undefined values).
        events.push(normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: now - pick(offsets), owner: user, newId: () => `${user}-${i}` }));
      }
      byUser.set(user, events);
      for (let i = 0; i < events.length; i += 100) await store.insert(events.slice(i, i + 100));
    }
    // This store gives exact percentiles of fractional durations; the reference gives them at 1 ms
    // (rounding is monotonic, so rounding this store's answer yields the reference's).
    const atMs = (s: Stats): Stats => ({
      ...s,
      latencyByRoute: Object.fromEntries(Object.entries(s.latencyByRoute).map(([k, v]) => [k, { ...v, p50: Math.round(v.p50), p95: Math.round(v.p95) }])),
    });
    for (const [user, events] of byUser) {
      const expected = computeStats(events, now);
      const actual = await store.stats(user, now);
      assert.equal(atMs(actual), expected, `stats of ${user}`);
      assert.ok(Object.keys(actual.latencyByRoute).length >= 3);
      assert.ok(actual.activeUsers > 0 && actual.analytics.feedbackTotal > 0);
      // Later in time, the windows move and still agree.
      assert.equal(atMs(await store.stats(user, now + 2 * 86_400_000)), computeStats(events, now + 2 * 86_400_000));
    }
    assert.equal(await store.stats('st-none', now), computeStats([], now));
  });

  test('stats: percentiles are nearest rank over more samples than the points kept', async () => {
    const store = await open();
    const now = Date.now();
    const events = Array.from({ length: 250 }, (_, i) => ev({ id: `p-${i}`, type: 'pageload', route: '/p', data: { duration: (i * 37) % 251, ttfb: i } }, 'pct', now));
    await store.insert(events);
    const s = await store.stats('pct', now);
    assert.equal(s, computeStats(events, now));
    assert.is(s.latencyByRoute['/p'].points.length, 100);
    assert.is(s.latencyByRoute['/p'].points[99].ttfb, 249);
  });

  test('users: upsert keyed by idp_user_id, getUser, null when unknown', async () => {
    const store = await open();
    const t1 = Date.parse('2026-05-16T12:00:00.000Z');
    assert.equal(await store.upsertUser({ idpUserId: 'u1', email: 'a@x', displayName: 'A' }, t1), { idp_user_id: 'u1', email: 'a@x', display_name: 'A', last_seen_at: '2026-05-16T12:00:00.000Z' });
    await store.upsertUser({ idpUserId: 'u1', email: 'b@x', displayName: 'B' }, t1 + 1000);
    assert.equal(await store.getUser('u1'), { idp_user_id: 'u1', email: 'b@x', display_name: 'B', last_seen_at: '2026-05-16T12:00:01.000Z' });
    assert.is(await store.getUser('nobody'), null);
  });

  test('health: storage postgres and the stored count', async () => {
    const store = await open();
    const before = (await store.health()).eventCount;
    await store.insert([ev({ type: 'click' }, 'h'), ev({ type: 'click' }, null)]);
    const h = await store.health();
    assert.is(h.storage, 'postgres');
    assert.is(h.eventCount, before + 2);
    assert.not.match(JSON.stringify(h), /postgres:\/\//, 'no connection string in health');
  });

  test('watch: another instance\'s committed inserts are delivered, never the instance\'s own', async () => {
    const a = await open();
    const b = await open();
    const seenA: StoredEvent[] = [];
    const seenB: StoredEvent[] = [];
    a.watch!((events) => seenA.push(...events));
    b.watch!((events) => seenB.push(...events));
    await until(async () => {
      // LISTEN is asynchronous: probe until B hears A.
      await a.insert([ev({ type: 'probe' }, 'watch')]);
      return seenB.length > 0;
    }, 5000);
    seenA.length = seenB.length = 0;
    // 700 events: more sequence numbers than one NOTIFY carries.
    const batch = Array.from({ length: 700 }, (_, i) => ev({ id: `w-${i}`, type: 'click' }, i % 2 ? 'watch' : null));
    await a.insert(batch);
    await a.insert(batch); // duplicates: nothing new, nothing announced
    const delivered = () => seenB.filter((e) => e.id.startsWith('w-'));
    await until(async () => delivered().length >= 700, 5000);
    await sleep(200);
    assert.equal(delivered().map((e) => e.id), batch.map((e) => e.id), 'B got each new event once, in order');
    assert.equal(delivered(), batch);
    assert.is(seenA.length, 0, 'A does not re-deliver its own events');
  });

  test('connection loss: operations reject with StoreUnavailableError, then the store recovers by itself', async () => {
    const logs: string[] = [];
    const store = await open({ log: (m) => logs.push(m) });
    await store.insert([ev({ id: 'before-loss', type: 'click' }, 'loss')]);
    let unavailable = 0;
    const outcomes: Promise<unknown>[] = [];
    for (let round = 0; round < 30 && unavailable === 0; round++) {
      const ops = Array.from({ length: 8 }, (_, i) =>
        (i % 2 ? store.stats('loss', Date.now()) : store.insert([ev({ type: 'click' }, 'loss')])).then(
          () => 'ok',
          (err) => {
            if (err instanceof StoreUnavailableError) unavailable++;
            else throw err;
          },
        ));
      await db.terminateConnections();
      outcomes.push(...ops);
      await Promise.all(ops);
    }
    assert.ok(unavailable > 0, 'some operations failed as unavailable');
    await until(async () => (await store.list({ userId: 'loss', limit: 1000 }).catch(() => null)) !== null, 10_000);
    const ids = (await store.list({ userId: 'loss', limit: 1000 })).events.map((e) => e.id);
    assert.ok(ids.includes('before-loss'));
    assert.is(unhandled.length, 0, `unhandled rejections: ${unhandled.join(', ')}`);
  });

  test('a database that cannot be reached: openPostgresStore rejects, operations answer 503 rather than hang', async () => {
    const dead = new URL(db.url);
    dead.port = '1'; // nothing listens on port 1
    const started = Date.now();
    const err = await openPostgresStore({ url: dead.toString(), connectTimeout: 2 }).then(() => null, (e) => e);
    assert.ok(err instanceof Error, 'rejects');
    assert.ok(Date.now() - started < 10_000);
  });

  // --- Rollups, partitions, retention, migration -----------------------------------------------

  /**
   * Raw counts beside the rollups of one user (scope ''): per hour events and distinct sessions,
   * per day sessions; from counter rows and from compacted days (which a store's background
   * compaction may have made of a past day at any time).
   */
  const rollupsAgainstRaw = (user: string) => db.query(async (sql) => {
    const [row] = await sql<{ raw: { what: string; at: number; n: number }[]; rolled: { what: string; at: number; n: number }[]; compacted: string[] }[]>`
      -- The user's events, rows and blocks (closed days moved by a compaction).
      with events as (
        select received_at, session_id from watchtower_events where user_id = ${user}
        union all
        select x.received_at, x.session_id
        from watchtower_event_blocks b cross join lateral unnest(b.received, b.sessions) as x(received_at, session_id)
        where b.user_id = ${user}
      )
      select
        (select coalesce(json_agg(x order by x::text), '[]') from (
           select 'events' as what, floor(extract(epoch from received_at) / 3600)::int as at, count(*)::int as n
           from events group by 2
           union all
           select 'sessions', floor(extract(epoch from received_at) / 3600)::int, count(distinct session_id)::int
           from events where session_id is not null group by 2
           union all
           select 'day sessions', floor(extract(epoch from received_at) / 86400)::int, count(distinct session_id)::int
           from events where session_id is not null group by 2) x) as raw,
        (select coalesce(json_agg(x order by x::text), '[]') from (
           select 'events' as what, hour as at, sum(n)::int as n from watchtower_rollups
           where user_id = ${user} and scope = '' and kind = 't' group by 2
           union all
           select 'sessions', hour, n::int from watchtower_rollups where user_id = ${user} and scope = '' and kind = 's'
           union all
           select 'day sessions', hour / 24, n::int from watchtower_rollups where user_id = ${user} and scope = '' and kind = 'S') x) as rolled,
        -- In the same statement (one snapshot), or a compaction committing in between would count twice or not at all.
        (select coalesce(json_agg(encode(parts, 'base64')), '[]') from watchtower_rollup_days where user_id = ${user} and scope = '') as compacted`;

    // Summed per (what, at): a closed day that took an event after its compaction has both.
    const rolled = new Map<string, number>();
    const add = (what: string, at: number, n: number) => rolled.set(`${what} ${at}`, (rolled.get(`${what} ${at}`) ?? 0) + n);
    for (const { what, at, n } of row.rolled) add(what, at, n);
    for (const base64 of row.compacted) {
      for (const part of decodeDay(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)))) add('events', part.hour, part.total);
    }
    return {
      raw: row.raw.map(({ what, at, n }) => `${what} ${at} ${n}`).sort(),
      rolled: [...rolled].map(([k, n]) => `${k} ${n}`).sort(),
    };
  });

  test('two instances inserting into the same user\'s buckets at once: rollups equal the raw counts, stats equal computeStats', async () => {
    const a = await open();
    const b = await open();
    const now = Date.parse('2026-05-16T12:00:00.000Z');
    let seed = 9;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    // 60 batches per instance over the same 3 hours, the same sessions, half the ids shared (a
    // client retrying on the other instance), all sent at once.
    const batch = (instance: string, k: number) => Array.from({ length: 25 }, (_, i) => {
      const shared = rnd() < 0.5;
      const id = shared ? `cc-${k}-${i}` : `cc-${instance}-${k}-${i}`;
      return normalise({ id, type: ['pageload', 'error', 'click', 'feedback'][i % 4], sessionId: `s-${Math.floor(rnd() * 30)}`, route: '/r',
        deployVersion: rnd() < 0.5 ? '1' : '2', data: { duration: Math.floor(rnd() * 500), rating: 1 + (i % 5) } } as RawEvent,
      { now: now - (k % 3) * 3_600_000, owner: 'conc-roll' });
    });
    const sent = [...Array.from({ length: 60 }, (_, k) => ['a', k] as const), ...Array.from({ length: 60 }, (_, k) => ['b', k] as const)];
    await Promise.all(sent.map(([instance, k]) => (instance === 'a' ? a : b).insert(batch(instance, k))));
    const stored = await exported(a, 'conc-roll');
    assert.ok(stored.length > 60 * 25 && stored.length < 120 * 25, `some ids were shared: ${stored.length}`);
    assert.is(new Set(stored.map((e) => e.id)).size, stored.length, 'each id once');
    const { raw, rolled } = await rollupsAgainstRaw('conc-roll');
    assert.equal(rolled, raw);
    assert.equal(await b.stats('conc-roll', now), computeStats(stored, now));
    assert.equal(await a.stats('conc-roll', now, { from: now - 2.5 * 3_600_000 }), computeStats(stored, now, { from: now - 2.5 * 3_600_000 }));
  });

  test('batch insert: a batch holding ids stored before is stored event by event instead, nothing counted twice', async () => {
    const store = await open();
    const now = Date.now();
    const make = (id: string, i: number) => ({
      ...ev({ id, type: ['pageload', 'error', 'click'][i % 3], sessionId: `bs${i % 5}`, route: `/b${i % 2}`, data: { duration: 10 * i + 0.4 } }, 'batch', now - (i % 3) * 3_600_000),
      ...(i % 2 ? { projectId: 'bp' } : {}),
    });
    const first = Array.from({ length: 30 }, (_, i) => make(`b-${i}`, i));
    assert.equal(await store.insert(first), first, 'all new: stored whole');
    // Half of them again, with new ones: only the new ones are stored and counted.
    const second = Array.from({ length: 30 }, (_, i) => make(`b-${i + 15}`, i + 15));
    assert.equal((await store.insert(second)).map((e) => e.id), second.slice(15).map((e) => e.id));
    assert.equal(await store.insert(second), [], 'all stored before');
    const stored = await exported(store, 'batch');
    assert.equal(stored.map((e) => e.id), [...first, ...second.slice(15)].map((e) => e.id));
    const { raw, rolled } = await rollupsAgainstRaw('batch');
    assert.equal(rolled, raw);
    for (const range of [undefined, { from: now - 86_400_000 }]) {
      assert.equal(await store.stats('batch', now, range), computeStats(stored, now, range));
      assert.equal(await store.stats('batch', now, range, 'bp'), computeStats(stored.filter((e) => e.projectId === 'bp'), now, range));
    }
  });

  test('dedupe holds across a partition boundary: a retry received the next day is not stored again', async () => {
    const store = await open();
    const first = Date.parse('2026-03-01T23:59:59.900Z');
    const e = ev({ id: 'midnight', type: 'click', sessionId: 's' }, 'mid', first);
    assert.equal(await store.insert([e]), [e]);
    const retry = { ...e, receivedAt: '2026-03-02T00:00:00.100Z', received_at: '2026-03-02T00:00:00.100Z' };
    assert.equal(await store.insert([retry, ev({ id: 'other', type: 'click' }, 'mid', first + 200)]).then((s) => s.map((x) => x.id)), ['other']);
    const ids = (await store.list({ userId: 'mid', limit: 10 })).events.map((x) => x.id);
    assert.equal(ids, ['other', 'midnight']);
    assert.is((await store.stats('mid', first + 1000)).totalEvents, 2);
    const day = Math.floor(first / 86_400_000);
    const partitions = await db.query((sql) => sql`select count(*)::int as n from pg_inherits where inhparent = 'watchtower_events'::regclass
      and inhrelid::regclass::text in (${'watchtower_events_p' + day}, ${'watchtower_events_p' + (day + 1)})`);
    assert.is(partitions[0].n, 2, 'the two days are two partitions');
  });

  test('compaction: stats are the same before and after closed days are compacted, and with inserts racing it', async () => {
    const store = await open();
    const now = Date.now();
    const today = Math.floor(now / 86_400_000);
    let seed = 5;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    // With clients, referrers and vitals: compacted days carry breakdowns and vitals too.
    const make = (id: string, at: number, project?: string) => {
      const type = ['pageload', 'error', 'click', 'feedback', 'custom', 'performance'][Math.floor(rnd() * 6)];
      const vital = ['LCP', 'CLS', 'INP'][Math.floor(rnd() * 3)];
      const e = normalise({ id, type, sessionId: `s-${Math.floor(rnd() * 12)}`,
        route: `/r${Math.floor(rnd() * 3)}`, deployVersion: rnd() < 0.5 ? '1' : '2',
        referrer: rnd() < 0.5 ? `https://ref${Math.floor(rnd() * 3)}.example/x` : undefined,
        data: type === 'performance' ? { name: vital, value: vital === 'CLS' ? rnd() / 3 : Math.floor(rnd() * 5000) }
          : { duration: Math.floor(rnd() * 900), rating: 1 + Math.floor(rnd() * 5) } } as RawEvent, { now: at, owner: 'cmp' });
      e.client = { browser: rnd() < 0.5 ? 'Chrome' : 'Firefox', os: rnd() < 0.5 ? 'Linux' : null, device: 'desktop' };
      return project === undefined ? e : { ...e, projectId: project };
    };
    // Ten past days and today, at random minutes, some events in a project.
    const events = Array.from({ length: 600 }, (_, i) =>
      make(`cmp-${i}`, now - Math.floor(rnd() * 10.5 * 86_400_000), rnd() < 0.3 ? 'p1' : undefined));
    for (let i = 0; i < events.length; i += 50) await store.insert(events.slice(i, i + 50));
    const H = 3_600_000;
    const ranges = [undefined, { from: now - 30 * 86_400_000 }, { from: now - 3 * 86_400_000 - 17 * 60_000, to: now - 2 * 86_400_000 + 5 * 60_000, interval: 'hour' as const },
      { from: (today - 6) * 86_400_000 + 7 * H + 1234, to: (today - 1) * 86_400_000 + 3 * H }];
    const all = async (s: Store, evs: StoredEvent[]) => {
      for (const range of ranges) {
        const expected = computeStats(evs, now, range);
        assert.equal(await s.stats('cmp', now, range), expected, `stats ${JSON.stringify(range)}`);
        assert.equal(await s.stats('cmp', now, range, 'p1'), computeStats(evs.filter((e) => e.projectId === 'p1'), now, range), `project stats ${JSON.stringify(range)}`);
      }
    };
    await all(store, events);
    const compactedDays = () => db.query(async (sql) => (await sql`select count(*)::int as n from watchtower_rollup_days where user_id = 'cmp'`)[0].n as number);
    const counterRows = () => db.query(async (sql) =>
      (await sql`select count(*)::int as n from watchtower_rollups
                 where user_id = 'cmp' and hour < ${today * 24} and kind not in ('s', 'S') and n > 0`)[0].n as number);
    const rowsBefore = await counterRows();
    await db.query((sql) => compactPast(sql, now));
    assert.ok((await compactedDays()) >= 20, 'ten days, two scopes');
    // Another store's background compaction may have taken a day while its events were still being
    // inserted (they are "late" here: the test sets receive times); what came after stays counters.
    assert.ok((await counterRows()) < rowsBefore / 4, `counter rows of closed days: ${rowsBefore} → ${await counterRows()}`);
    // The same store (the first read caches the decoded days, the second uses the cache), and a fresh one.
    await all(store, events);
    await all(store, events);
    await all(await open(), events);

    // Inserts racing compaction: events of today, and late ones in closed days (which the store
    // never receives in practice: receive times are its own clock), while two compactions run at once.
    const later = Array.from({ length: 300 }, (_, i) =>
      make(`cmp-late-${i}`, i % 2 ? now - (i % 7) * 60_000 : now - (2 + (i % 9)) * 86_400_000 + i * 1000, i % 3 ? undefined : 'p1'));
    await Promise.all([
      ...Array.from({ length: 15 }, (_, k) => store.insert(later.slice(k * 20, k * 20 + 20))),
      db.query((sql) => compactPast(sql, now)),
      db.query((sql) => compactPast(sql, now)),
    ]);
    const stored = await exported(store, 'cmp');
    assert.is(stored.length, events.length + later.length);
    const { raw, rolled } = await rollupsAgainstRaw('cmp');
    assert.equal(rolled, raw);
    await all(store, stored);
    await db.query((sql) => compactPast(sql, now));
    await all(store, stored);
    await all(await open(), stored);
  });

  test('dedupe keys: a UUIDv7 id\'s key begins with its time, other ids keep the whole hash; migration 10 makes stored keys again', async () => {
    const own = await createTestDatabase();
    try {
      const now = Date.now();
      // The service's ids and the browser SDK's, both lowercase UUIDv7.
      const v7 = [uuidv7(now - 86_400_000), uuidv7(now - 60_000), sdkUuidv7(now, crypto.getRandomValues(new Uint8Array(16)))];
      const events = [...v7, 'not-a-uuid', crypto.randomUUID(), 'with "quotes", a \\ backslash and é'].flatMap((id, i) =>
        ['k-a', 'k-b'].map((owner) => ev({ id, type: 'click', sessionId: `s${i}` }, owner, now - (5 - i) * 60_000)));
      let store = await openPostgresStore({ url: own.url });
      try {
        assert.equal(await store.insert(events), events);
      } finally {
        await store.close();
      }
      const keys = () => own.query((sql) => sql<{ owner: string; id: string; key: string; old: string }[]>`
        select coalesce(user_id, '') as owner, event::json->>'id' as id, watchtower_event_key(coalesce(user_id, ''), event::json->>'id')::text as key,
               encode(substr(sha256(convert_to(coalesce(user_id, ''), 'UTF8') || '\\x00'::bytea || convert_to(event::json->>'id', 'UTF8')), 1, 16), 'hex') as old
        from watchtower_events order by seq`);
      const check = async () => {
        const rows = await keys();
        for (const r of rows) {
          const hex = r.key.replaceAll('-', '');
          if (v7.includes(r.id)) {
            assert.is(hex.slice(0, 12), r.id.replaceAll('-', '').slice(0, 12), `${r.id}: the id's time first`);
            assert.is(hex.slice(12), r.old.slice(0, 20), `${r.id}: then 80 bits of the hash`);
          } else assert.is(hex, r.old, `${r.id}: the 128-bit hash`);
        }
        assert.is(new Set(rows.map((r) => r.key)).size, rows.length, 'one key per owner and id');
        const stored = await own.query((sql) => sql<{ key: string }[]>`select key::text from watchtower_event_ids order by key`);
        assert.equal(stored.map((r) => r.key), rows.map((r) => r.key).sort(), 'the ids table holds the keys of the stored events');
      };
      await check();
      // Back to version 9: its keys (the whole hash for every id), its function; then open again.
      await own.query((sql) => sql.unsafe(`
        create or replace function watchtower_event_key(owner text, id text) returns uuid language sql stable parallel safe
          return encode(substr(sha256(convert_to(owner, 'UTF8') || '\\x00'::bytea || convert_to(id, 'UTF8')), 1, 16), 'hex')::uuid;
        truncate watchtower_event_ids;
        insert into watchtower_event_ids select watchtower_event_key(coalesce(user_id, ''), event::json->>'id'),
          floor(extract(epoch from received_at) / 86400)::integer from watchtower_events;
        delete from watchtower_migrations where version = 10;`).simple());
      store = await openPostgresStore({ url: own.url });
      try {
        await check();
        // Retries are still recognised, for each owner; a new id is stored.
        assert.equal(await store.insert(events), []);
        const fresh = ev({ id: uuidv7(now), type: 'click' }, 'k-a');
        assert.equal(await store.insert([fresh, ...events.slice(0, 3)]), [fresh]);
      } finally {
        await store.close();
      }
    } finally {
      await own.drop();
    }
  });

  test('compaction: even a generic plan of its statement updates only the day\'s partitions of counters and breakdown sessions', async () => {
    // A generic plan (what a prepared statement gets from its sixth run) once joined the counter
    // rows to every daily partition; the statement's hour bound lets the planner prune them first.
    const store = await open();
    const now = Date.now();
    const today = Math.floor(now / 86_400_000);
    await store.insert([4, 3, 2].map((d) => ev({ id: `gp-${d}`, type: 'click', sessionId: 'gs' }, 'gp', (today - d) * 86_400_000 + 3_600_000)));
    const day = today - 3;
    const plan = await db.query((sql) => sql.begin(async (tx) => {
      await tx.unsafe(`prepare compact_day(text[], text[], text[], int4, text[], text[], int4[], text[], text[], float8[], int8[], float8[], text[], int8[], int4, int4,
                                           int4[], text[], text[], int4[], text[], text[], text[], boolean, text[])
                       as ${COMPACT_DAY}`);
      await tx`set local plan_cache_mode = force_generic_plan`;
      const args = `'{}', '{}', '{}', ${day}, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', ${day * 24}, ${day * 24 + 24}, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true, '{}'`;
      const [row] = await tx.unsafe(`explain (format json) execute compact_day(${args})`);
      await tx.unsafe('deallocate compact_day');
      return row['QUERY PLAN'][0].Plan as PlanNode;
    }));
    // The partitions of counters the plan scans (the update lists every partition as a target; the
    // scans beneath it are what the pruning leaves).
    interface PlanNode { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] }
    const scanned = new Set<string>();
    const walk = (n: PlanNode) => {
      if (n['Node Type'].endsWith('Scan') && /^watchtower_(rollups|breakdown_sessions)_p/.test(n['Relation Name'] ?? '')) scanned.add(n['Relation Name']!);
      n.Plans?.forEach(walk);
    };
    walk(plan);
    assert.equal([...scanned].sort(), [`watchtower_breakdown_sessions_p${day}`, `watchtower_rollups_p${day}`], 'partitions scanned');
  });

  test('busy open day: the store folds its rows and renews its partitions\' planner statistics by itself; stats stay exact', async () => {
    const own = await createTestDatabase();
    const store = await openPostgresStore({ url: own.url, connectTimeout: 3, upkeepIntervalMs: 100 });
    try {
      const now = Date.now();
      // 2,000 pageloads within a minute, 200 sessions, 40 routes, 30 referrers, distinct durations:
      // more counter and breakdown session rows than an open day keeps before it is folded.
      const events = Array.from({ length: 2000 }, (_, i) => ev({
        id: `busy-${i}`, type: 'pageload', sessionId: `bs${i % 200}`, route: `/r${i % 40}`, referrer: `https://ref${i % 30}.example`,
        deployVersion: `v${i % 7}`, data: { duration: i },
      }, 'busy', now - 60_000 + i * 30));
      for (let i = 0; i < events.length; i += 250) await store.insert(events.slice(i, i + 250));
      const days = [...new Set(events.map((e) => Math.floor(Date.parse(e.received_at) / 86_400_000)))];
      const state = () => own.query(async (sql) => (await sql<{ folds: number; counters: number; analyzed: boolean }[]>`
        select (select count(*)::int from watchtower_rollup_days where user_id = 'busy' and day = any(${days}::int4[])) as folds,
               (select count(*)::int from watchtower_rollups where user_id = 'busy' and kind not in ('s', 'S') and n > 0) as counters,
               (select bool_and(last_analyze is not null) from pg_stat_user_tables
                where relname = any(${days.map((d) => `watchtower_events_p${d}`)}::text[])) as analyzed`)[0]);
      let seen = await state();
      for (const end = Date.now() + 20_000; Date.now() < end && !(seen.folds > 0 && seen.analyzed); await sleep(100)) seen = await state();
      assert.ok(seen.folds > 0, 'the busy open day was folded');
      assert.ok(seen.analyzed, 'its events partition was analyzed');
      // Each pageload has a counter of its own (distinct durations): fewer than them are left. (How
      // many depends on when the fold came: the breakdowns' session rows reach FOLD_ROWS sooner
      // with more dimensions, and the events after the fold stay counters until the next.)
      assert.ok(seen.counters < 1500, `fewer counter rows are left than the 2,000 pageloads made (${seen.counters})`);
      for (const range of [undefined, { from: now - 2 * 3_600_000 + 1234 }, { from: now - 30_000 }]) {
        assert.equal(await store.stats('busy', now + 1000, range), computeStats(events, now + 1000, range), `stats ${JSON.stringify(range)}`);
      }
    } finally {
      await store.close();
      await own.drop();
    }
  });

  test('a range starting inside an hour: its whole edge minutes are rolled up once, and only their rows added since are read again', async () => {
    const own = await createTestDatabase();
    const store = await openPostgresStore({ url: own.url, connectTimeout: 3 });
    try {
      const now = Date.now();
      // An hour wholly in the past, with events every 5 s from its start to a minute ago.
      const hour = Math.floor((now - 65 * 60_000) / 3_600_000) * 3_600_000;
      let i = 0;
      const make = (at: number) => {
        const e = ev({ id: `em-${++i}`, type: ['pageload', 'click', 'error'][i % 3], sessionId: `ems${i % 13}`, route: `/e${i % 5}`,
          referrer: `https://ref${i % 4}.example`, data: { duration: 100 + (i % 50) } }, 'edge', at);
        return i % 4 ? e : { ...e, projectId: 'ep' };
      };
      const events: StoredEvent[] = [];
      for (let at = hour; at < now - 60_000; at += 5_000) events.push(make(at));
      // A burst inside one edge minute, more than a page of the edge reader (EDGE_PAGE).
      for (let k = 0; k < EDGE_PAGE + 1000; k++) events.push(make(hour + 30 * 60_000 + Math.floor(k / 100)));
      for (let k = 0; k < events.length; k += 500) await store.insert(events.slice(k, k + 500));
      const range = { from: hour + 10 * 60_000 + 30_000 };
      const hits = async () => ((await store.health()).edgeMinutes as { hits: number; minutes: number }).hits;
      const check = async (label: string) => {
        assert.equal(await store.stats('edge', now, range), computeStats(events, now, range), label);
        assert.equal(await store.stats('edge', now, range, 'ep'), computeStats(events.filter((e) => e.projectId === 'ep'), now, range), `${label}, project`);
      };
      await check('first read');
      assert.is(await hits(), 0, 'nothing held before the first read');
      await check('second read');
      // The edge's 49 whole minutes (11 to 59), each with events, for the user and for the project.
      assert.is(await hits(), 2 * 49, 'whole minutes taken from the instance');
      // Late rows in two held minutes: read above the minutes' horizon and added to what is
      // held, every minute still taken from the instance.
      const late = [make(hour + 20 * 60_000 + 30_000), make(hour + 40 * 60_000 + 1)];
      await store.insert(late);
      events.push(...late);
      assert.equal(await store.stats('edge', now, range), computeStats(events, now, range), 'after late rows');
      assert.is(await hits(), 2 * 49 + 49, 'the two changed minutes were taken from the instance with their late rows');
      await check('third read');
    } finally {
      await store.close();
      await own.drop();
    }
  });

  test('compaction rebuilds a closed day\'s events indexes once, smaller; reads answer the same', async () => {
    const own = await createTestDatabase();
    try {
      const now = Date.now();
      const day = Math.floor(now / 86_400_000) - 3;
      // Two users' events interleaved, in batches, as live inserts write them.
      const events = Array.from({ length: 4000 }, (_, i) =>
        ev({ id: `pk-${i}`, type: ['pageload', 'click', 'error'][i % 3], sessionId: `s${i % 9}`, route: `/r${i % 4}`, data: { duration: i % 700 } },
          i % 2 ? 'pk-a' : 'pk-b', day * 86_400_000 + 3_600_000 + i * 10_000));
      const indexes = () => own.query((sql) => sql<{ bytes: number; valid: boolean }[]>`
        select sum(pg_relation_size(indexrelid))::float8 as bytes, bool_and(indisvalid) as valid
        from pg_index where indrelid = ${`watchtower_events_p${day}`}::regclass`);
      const reads = async (s: Store) => [await exported(s, 'pk-a'), (await s.list({ userId: 'pk-b', limit: 7, type: 'error' })).events, await s.stats('pk-a', now)];
      // Its background compaction ran at its start, before the day had a partition.
      const reader = await openPostgresStore({ url: own.url });
      try {
        for (let i = 0; i < events.length; i += 50) await reader.insert(events.slice(i, i + 50));
        const answers = await reads(reader);
        const [before] = await indexes();
        assert.is(await own.query((sql) => compactPast(sql, now)), 1);
        const [after] = await indexes();
        assert.ok(after.valid, 'every index valid');
        assert.ok(after.bytes < before.bytes * 0.9, `indexes ${before.bytes} → ${after.bytes} bytes`);
        assert.equal(await reads(reader), answers);
        // Compacted: a second pass finds nothing to do, and rebuilds nothing.
        assert.is(await own.query((sql) => compactPast(sql, now)), 0);
      } finally {
        await reader.close();
      }
    } finally {
      await own.drop();
    }
  });

  test('compaction moves closed days\' events into blocks: pages, filters, export and stats answer as before, smaller; late rows, retention', async () => {
    const own = await createTestDatabase();
    const opened: Store[] = [];
    const openOwn = async (extra: { retentionDays?: number } = {}) => {
      const s = await openPostgresStore({ url: own.url, ...extra });
      opened.push(s);
      return s;
    };
    try {
      const now = Date.now();
      const today = Math.floor(now / 86_400_000);
      let seed = 11;
      const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const make = (id: string, owner: string | null, at: number) => {
        const type = ['pageload', 'pageload', 'error', 'click', 'feedback'][Math.floor(rnd() * 5)];
        const e = ev({ id, type, sessionId: `s${Math.floor(rnd() * 20)}`, route: `/r${Math.floor(rnd() * 3)}`, deployVersion: rnd() < 0.5 ? '1' : '2',
          message: rnd() < 0.05 ? 'nul\u0000here' : undefined,
          data: { duration: Math.floor(rnd() * 900), rating: 1 + Math.floor(rnd() * 5), ...(rnd() < 0.5 ? { ttfb: Math.floor(rnd() * 90) } : {}) } }, owner, at);
        return rnd() < 0.3 ? { ...e, projectId: 'p1' } : e;
      };
      // Three past days and today; two users (one with more than a block a day) and unowned events.
      const span = 3.5 * 86_400_000;
      const owners = ['bk-a', 'bk-a', 'bk-a', 'bk-b', null];
      const events = Array.from({ length: 8000 }, (_, i) => make(`bk-${i}`, owners[i % 5], now - span + Math.floor((i / 8000) * span)));
      const a = await openOwn();
      for (let i = 0; i < events.length; i += 250) await a.insert(events.slice(i, i + 250));

      const H = 3_600_000;
      const ranges = [undefined, { from: now - 3 * 86_400_000 }, { from: (today - 2) * 86_400_000 + 5 * H + 777, to: (today - 1) * 86_400_000 + 13 * H + 5, interval: 'hour' as const }];
      const filters = [{}, { type: 'error' }, { version: '2' }, { projectId: 'p1' }, { since: (today - 3) * 86_400_000 + 7 * H, until: (today - 1) * 86_400_000 + 2 * H + 9 }];
      /** Every read, as this test can see them: each filter's pages walked to the end (37 a page), exports, stats. */
      const answers = async (s: Store) => {
        const out: unknown[] = [];
        for (const user of ['bk-a', 'bk-b']) {
          for (const f of filters) {
            const pages: string[][] = [];
            let before: string | undefined;
            do {
              const page = await s.list({ userId: user, limit: 37, ...f, ...(before ? { before } : {}) });
              pages.push(page.events.map((e) => e.id));
              before = page.nextCursor ?? undefined;
            } while (before && pages.length < 400);
            out.push(pages);
            const exported: StoredEvent[] = [];
            for await (const batch of s.export({ userId: user, batchSize: 300, ...f })) exported.push(...batch);
            out.push(exported);
          }
          for (const range of ranges) out.push(await s.stats(user, now, range), await s.stats(user, now, range, 'p1'));
        }
        return out;
      };
      const mine = (user: string) => events.filter((e) => e.user_id === user);
      const expected = await answers(a);
      // What the rows answer is what computeStats answers (a check of the test's baseline).
      assert.equal(await a.stats('bk-a', now, ranges[2]), computeStats(mine('bk-a'), now, ranges[2]));

      const sizes = () => own.query(async (sql) => (await sql<{ rows: number; blocks: number }[]>`
        select (select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = 'watchtower_events'::regclass)::float8 as rows,
               pg_total_relation_size('watchtower_event_blocks')::float8 as blocks`)[0]);
      const before = await sizes();
      // What an interrupted REINDEX CONCURRENTLY leaves behind: an invalid index (here one that
      // failed to build), which packing a day drops.
      await own.query((sql) => sql.unsafe(`create unique index concurrently wt_left_over on watchtower_events_p${today - 2} (type)`)).catch(() => {});
      // Pages read again and again while the days move: none may miss or repeat an event.
      let moving = true;
      const walks = (async () => {
        let n = 0;
        while (moving || n === 0) {
          const ids: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await a.list({ userId: 'bk-b', limit: 50, ...(cursor ? { before: cursor } : {}) });
            ids.push(...page.events.map((e) => e.id));
            cursor = page.nextCursor ?? undefined;
          } while (cursor);
          assert.equal(ids, mine('bk-b').map((e) => e.id).reverse(), `walk ${n} while moving`);
          n++;
        }
        return n;
      })();
      await own.query((sql) => compactPast(sql, now));
      moving = false;
      await walks;
      // The next pass, as the next maintenance interval: it packs a partition whose emptied pages
      // the walks' reads kept the first VACUUM from freeing or cutting off.
      await own.query((sql) => compactPast(sql, now));

      const blocks = await own.query((sql) => sql<{ user_id: string; day: number; events: number; first: number; last: number }[]>`
        select user_id, day, events, first_seq::float8 as first, last_seq::float8 as last from watchtower_event_blocks order by user_id, day, first_seq`);
      const closedDays = new Set(events.filter((e) => Math.floor(Date.parse(e.receivedAt) / 86_400_000) < today).map((e) => Math.floor(Date.parse(e.receivedAt) / 86_400_000)));
      assert.equal(new Set(blocks.map((b) => b.day)), closedDays, 'every closed day in blocks');
      assert.ok(blocks.every((b) => b.events <= 1000), 'at most a thousand events a block');
      assert.ok(blocks.filter((b) => b.user_id === 'bk-a').length > closedDays.size, 'a day of more than a thousand events is several blocks');
      const inBlocks = blocks.reduce((n, b) => n + b.events, 0);
      assert.is(inBlocks, events.filter((e) => Math.floor(Date.parse(e.receivedAt) / 86_400_000) < today).length, 'every closed day\'s event in one block');
      const [{ rows }] = await own.query((sql) => sql`select count(*)::int as rows from watchtower_events where received_at < ${new Date(today * 86_400_000).toISOString()}::timestamptz`);
      assert.is(rows, 0, 'no row of a closed day left');
      const heaps = await own.query((sql) => sql<{ day: number; bytes: number }[]>`
        select day, pg_relation_size(to_regclass('watchtower_events_p' || day))::float8 as bytes from unnest(${[...closedDays]}::int4[]) as d(day)`);
      assert.equal(heaps.map((h) => h.bytes), heaps.map(() => 0), 'every closed day\'s table cut to nothing');
      const [{ invalid }] = await own.query((sql) => sql`select count(*)::int as invalid from pg_index where not indisvalid`);
      assert.is(invalid, 0, 'no invalid index left');
      const [{ indexes }] = await own.query((sql) => sql<{ indexes: number }[]>`
        select max(pg_indexes_size(to_regclass('watchtower_events_p' || day)))::float8 as indexes from unnest(${[...closedDays]}::int4[]) as d(day)`);
      // Five indexes' least size (each rebuilt empty); a thousand events' entries take several times that.
      assert.ok(indexes <= 96 * 1024, `a closed day's indexes rebuilt empty: ${indexes} bytes at most`);
      const moved = await own.query((sql) => sql<{ events: number; moved: number }[]>`
        select sum(events)::int as events, sum(moved)::int as moved from watchtower_event_days where day < ${today}`);
      assert.equal({ ...moved[0] }, { events: inBlocks, moved: inBlocks });
      const after = await sizes();
      assert.ok(after.rows + after.blocks < (before.rows + before.blocks) / 2,
        `rows and blocks ${before.rows} + ${before.blocks} → ${after.rows} + ${after.blocks} bytes`);

      // The store that read before (its rollup cache warm), and a fresh one.
      assert.equal(await answers(a), expected);
      assert.equal(await answers(await openOwn()), expected);

      // A late row into a moved day is read beside its blocks, then moved by the next compaction.
      const late = make('bk-late', 'bk-b', (today - 2) * 86_400_000 + 12 * H);
      assert.equal(await a.insert([late]), [late]);
      const withLate = await answers(a);
      // Per user: five filters' pages and exports, then six stats; bk-b's export without a filter.
      const lateExport = withLate[16 + 1] as StoredEvent[];
      assert.equal(lateExport.map((e) => e.id), [...mine('bk-b').map((e) => e.id), 'bk-late'], 'the late row is read, in seq order');
      assert.equal((withLate[16] as string[][]).flat()[0], 'bk-late', 'and first in the newest page');
      assert.equal(await a.stats('bk-b', now), computeStats(lateExport, now));
      await own.query((sql) => compactPast(sql, now));
      const [{ left }] = await own.query((sql) => sql`select count(*)::int as left from watchtower_events where received_at < ${new Date(today * 86_400_000).toISOString()}::timestamptz`);
      assert.is(left, 0, 'the late row moved');
      assert.equal(await answers(a), withLate);

      // An emptied partition whose indexes kept their size (a rebuild copied rows an older
      // snapshot still saw, and a later VACUUM freed them, as autovacuum does): the next pass
      // packs it again. Rows written by hand into the table and deleted leave that state.
      const bloated = `watchtower_events_p${today - 1}`;
      await own.query((sql) => sql.unsafe(`
        insert into ${bloated} (user_id, type, received_at, route_key, event)
          select 'bloat-' || i, 'click', '${new Date((today - 1) * 86_400_000).toISOString()}', '/r', '{}' from generate_series(1, 5000) i;
        delete from ${bloated} where user_id like 'bloat-%';`).simple());
      await own.query((sql) => sql.unsafe(`vacuum ${bloated}`));
      const state = () => own.query(async (sql) => (await sql<{ heap: number; indexes: number }[]>`
        select pg_relation_size(${bloated}::regclass)::float8 as heap, pg_indexes_size(${bloated}::regclass)::float8 as indexes`)[0]);
      const bloatedState = await state();
      assert.ok(bloatedState.heap === 0 && bloatedState.indexes > 128 * 1024, `emptied, indexes kept: ${JSON.stringify(bloatedState)}`);
      // And one whose last rows were freed leaving dead line pointers on under 2% of its pages,
      // which a plain VACUUM leaves (and so cannot cut the table).
      const pointers = `watchtower_events_p${today - 2}`;
      await own.query(async (sql) => {
        await sql.unsafe(`
          insert into ${pointers} (user_id, type, received_at, event)
            select 'dead-' || i, 'click', '${new Date((today - 2) * 86_400_000).toISOString()}', repeat('x', 400) from generate_series(1, 20000) i;
          delete from ${pointers} where user_id like 'dead-%' and substr(user_id, 6)::int <= 19900;`).simple();
        await sql.unsafe(`vacuum ${pointers}`);
        await sql.unsafe(`delete from ${pointers} where user_id like 'dead-%'`);
        await sql.unsafe(`vacuum (index_cleanup off) ${pointers}`);
      });
      const pages = () => own.query(async (sql) => (await sql<{ heap: number }[]>`select pg_relation_size(${pointers}::regclass)::float8 as heap`)[0].heap);
      assert.ok((await pages()) > 0, 'pages left');
      await own.query((sql) => compactPast(sql, now));
      const repacked = await state();
      assert.ok(repacked.heap === 0 && repacked.indexes <= 96 * 1024, `packed again: ${JSON.stringify(repacked)}`);
      assert.is(await pages(), 0, 'the table with dead line pointers cut to nothing');

      // Retention: the days' blocks go with their partitions; what is left reads the same.
      const kept = await openOwn({ retentionDays: 2 });
      const [{ old }] = await own.query((sql) => sql`select count(*)::int as old from watchtower_event_blocks where day < ${today - 2}`);
      assert.is(old, 0, 'blocks of dropped days');
      const rest: StoredEvent[] = [];
      for await (const batch of kept.export({ userId: 'bk-a' })) rest.push(...batch);
      assert.equal(rest.map((e) => e.id), mine('bk-a').filter((e) => Math.floor(Date.parse(e.receivedAt) / 86_400_000) >= today - 2).map((e) => e.id));
      assert.equal(await kept.stats('bk-a', now, ranges[1]), computeStats(rest, now, ranges[1]));
    } finally {
      for (const s of opened) await s.close();
      await own.drop();
    }
  });

  test('compaction: a late insert with a new session into a compacted day is counted by a store that cached the day', async () => {
    const store = await open();
    const now = Date.now();
    const day = Math.floor(now / 86_400_000) - 2;
    const at = (h: number, m: number) => day * 86_400_000 + h * 3_600_000 + m * 60_000;
    const events = Array.from({ length: 24 }, (_, i) => ev({ id: `late-${i}`, type: i % 2 ? 'click' : 'error', sessionId: `ls${i % 3}` }, 'late', at(i % 12, i)));
    await store.insert(events);
    await db.query((sql) => compactPast(sql, now));
    const ranges = [undefined, { from: now - 7 * 86_400_000 }, { from: at(2, 30), to: at(20, 0), interval: 'hour' as const }];
    // Twice: the second answer comes from what the first cached.
    for (let k = 0; k < 2; k++) for (const range of ranges) assert.equal(await store.stats('late', now, range), computeStats(events, now, range));
    const late = ev({ id: 'late-new', type: 'click', sessionId: 'ls-new' }, 'late', at(5, 5));
    assert.equal(await store.insert([late]), [late]);
    const stored = await exported(store, 'late');
    for (const range of ranges) assert.equal(await store.stats('late', now, range), computeStats(stored, now, range), `after the late insert ${JSON.stringify(range)}`);
  });

  test('retention drops whole days: partitions, rollups and ids go; what is left still equals computeStats', async () => {
    const store = await open();
    const now = Date.now();
    const day = Math.floor(now / 86_400_000);
    const events = Array.from({ length: 10 }, (_, d) => Array.from({ length: 4 }, (_, i) =>
      ev({ id: `ret-${d}-${i}`, type: i % 2 ? 'error' : 'pageload', sessionId: `s${i}`, route: '/x', data: { duration: d * 10 + i } }, 'ret', now - d * 86_400_000))).flat();
    for (let d = 9; d >= 0; d--) await store.insert(events.filter((e) => e.id.startsWith(`ret-${d}-`)));
    const partitions = () => db.query(async (sql) => (await sql`select inhrelid::regclass::text as name from pg_inherits
      where inhparent = 'watchtower_events'::regclass`).map((r) => Number(String(r.name).slice('watchtower_events_p'.length))));
    assert.ok((await partitions()).includes(day - 9));
    // Another instance starting with a retention of 3 days drops the days before day - 3.
    const logs: string[] = [];
    await openPostgresStore({ url: db.url, retentionDays: 3, log: (m) => logs.push(m) }).then((s) => stores.push(s));
    assert.ok(logs.some((m) => /retention dropped/.test(m)), logs.join('\n'));
    assert.ok(Math.min(...(await partitions())) >= day - 3, 'no partition before the cutoff');
    for (const table of ['watchtower_rollups', 'watchtower_rollup_sessions']) {
      const [{ n }] = await db.query((sql) => sql`select count(*)::int as n from ${sql(table)} where hour < ${(day - 3) * 24}`);
      assert.is(n, 0, `${table} of dropped days`);
    }
    const [{ n: compacted }] = await db.query((sql) => sql`select count(*)::int as n from watchtower_rollup_days where day < ${day - 3}`);
    assert.is(compacted, 0, 'compacted rollups of dropped days');
    const inserted = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0].flatMap((d) => events.filter((e) => e.id.startsWith(`ret-${d}-`)));
    const rest = await exported(store, 'ret');
    assert.equal(rest, inserted.filter((e) => Math.floor(Date.parse(e.receivedAt) / 86_400_000) >= day - 3));
    assert.equal(await store.stats('ret', now), computeStats(rest, now));
    assert.equal(await store.stats('ret', now, { from: now - 20 * 86_400_000 }), computeStats(rest, now, { from: now - 20 * 86_400_000 }));
    // The ids of dropped days went with them: the event, retried now, is stored again (once).
    const old = events.find((e) => e.id === 'ret-9-0')!;
    const again = { ...old, receivedAt: new Date(now).toISOString(), received_at: new Date(now).toISOString() };
    assert.equal((await store.insert([again])).map((e) => e.id), ['ret-9-0']);
    assert.equal(await store.insert([again]), []);
    const [{ n: dayRows }] = await db.query((sql) => sql`select count(*)::int as n from watchtower_event_days where day < ${day - 3}`);
    assert.is(dayRows, 0, 'sequence ranges of dropped days');
  });

  test('reads touch only the days they need: an old day\'s partition locked away blocks none of them', async () => {
    // A query that is not bounded to its days plans and locks every partition; so while another
    // session holds an exclusive lock on the partition of an old day, such a query waits, and a
    // query pruned to the days it needs does not.
    const store = await open();
    const DAY = 86_400_000;
    const now = Date.now();
    const day = Math.floor(now / DAY);
    const atDay = (d: number) => (day - d) * DAY + Math.floor((now - day * DAY) / 2);
    // 20 days, oldest first; a day is 50 pageloads on one route and 10 errors.
    const events = Array.from({ length: 20 }, (_, k) => 19 - k).flatMap((d) => Array.from({ length: 60 }, (_, i) =>
      ev({ id: `pr-${d}-${i}`, type: i % 6 === 5 ? 'error' : 'pageload', route: '/r', sessionId: `s${i % 7}`,
           data: i % 6 === 5 ? { message: 'boom' } : { duration: d * 60 + i, ttfb: i } }, 'prune', atDay(d))));
    for (let d = 19; d >= 0; d--) await store.insert(events.filter((e) => e.id.startsWith(`pr-${d}-`)));

    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = () => {};
    const holding = new Promise<void>((resolve) => (held = resolve));
    const lock = db.query((sql) => sql.begin(async (tx) => {
      await tx.unsafe(`lock table watchtower_events_p${day - 15} in access exclusive mode`);
      held();
      await released;
    }));
    await holding;
    // A read that waits on the lock fails the test (and finishes once the lock is released).
    const within = <T>(what: string, read: Promise<T>) => Promise.race([read, new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: waited on an old day's partition`)), 3000))]);
    try {
      const newestFirst = [...events].reverse();
      const page = await within('newest page', store.list({ userId: 'prune', limit: 10 }));
      assert.equal(page.events.map((e) => e.id), newestFirst.slice(0, 10).map((e) => e.id));
      const deep = await within('deep page', store.list({ userId: 'prune', limit: 300 }));
      const next = await within('page after it', store.list({ userId: 'prune', limit: 10, before: deep.nextCursor! }));
      assert.equal(next.events.map((e) => e.id), newestFirst.slice(300, 310).map((e) => e.id), 'a page five days back');
      const recent = await within('export', (async () => {
        const out: StoredEvent[] = [];
        for await (const batch of store.export({ userId: 'prune', since: atDay(2) - DAY / 2, batchSize: 50 })) out.push(...batch);
        return out;
      })());
      assert.equal(recent.map((e) => e.id), events.slice(17 * 60).map((e) => e.id), 'export of the last days');
      assert.equal(await within('stats', store.stats('prune', now)), computeStats(events, now), 'stats, all time');
      const from = now - 2 * DAY;
      assert.equal(await within('stats of two days', store.stats('prune', now, { from })), computeStats(events, now, { from }), 'stats, two days');
      // The control: a read that needs the locked day waits for it, so the above would have too.
      const old = store.list({ userId: 'prune', limit: 10, until: atDay(14) });
      const waited = await within('control', old).then(() => false, () => true);
      assert.ok(waited, 'a read of the locked day was not blocked: the test would prove nothing');
      release();
      assert.equal((await old).events.map((e) => e.id), events.filter((e) => Date.parse(e.receivedAt) < atDay(14)).reverse().slice(0, 10).map((e) => e.id));
    } finally {
      release();
      await lock;
    }
  });

  test('NOTIFY payloads stay under 8000 bytes whatever the batch', async () => {
    const store = await open();
    const listener = (await import('postgres')).default(db.url, { max: 1, onnotice: () => {} });
    const payloads: string[] = [];
    await listener.listen('watchtower_events', (p) => payloads.push(p));
    try {
      const batch = Array.from({ length: 5000 }, (_, i) => ev({ id: `big-${i}`, type: 'click' }, 'notify'));
      assert.is((await store.insert(batch)).length, 5000);
      await until(async () => payloads.filter((p) => !p.endsWith(' ping')).flatMap((p) => p.split(' ')[1].split(',')).length >= 5000, 5000);
      const announced = payloads.filter((p) => !p.endsWith(' ping'));
      assert.ok(announced.length >= 17, `chunks: ${announced.length}`);
      for (const p of announced) assert.ok(new TextEncoder().encode(p).length < 8000, `payload of ${p.length} bytes`);
      assert.is(new Set(announced.flatMap((p) => p.split(' ')[1].split(','))).size, 5000);
    } finally {
      await listener.end({ timeout: 1 });
    }
  });

  test('migration from schema version 2 keeps every event once, with its cursor position, its dedupe key and its statistics', async () => {
    const old = await createTestDatabase();
    try {
      const now = Date.parse('2026-05-16T12:00:00.000Z');
      let seed = 3;
      const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const events = Array.from({ length: 600 }, (_, i) => {
        const e = normalise({
          id: `mig-${i}`, type: ['pageload', 'error', 'click', 'feedback', 'custom'][i % 5], sessionId: `s${Math.floor(rnd() * 20)}`,
          deployVersion: rnd() < 0.3 ? undefined : 'v1', route: i % 3 ? '/a' : undefined, url: 'https://x.test/p/q',
          data: { duration: rnd() * 900, ttfb: 3, rating: 1 + (i % 6) }, message: i === 7 ? 'nul\u0000here' : undefined,
        } as RawEvent, { now: now - Math.floor(rnd() * 20 * 86_400_000), owner: i % 7 ? 'mig' : i % 2 ? 'mig-other' : null });
        return i % 4 ? e : { ...e, projectId: 'p1' };
      });
      await old.query(async (sql) => {
        await sql.unsafe(migrationScript(MIGRATIONS.filter((m) => m.version <= 2))).simple();
        // Rows as the version 2 store wrote them (its columns, computed by the same functions).
        for (const e of events) {
          const duration = pageloadDuration(e);
          const json = JSON.stringify(e);
          const unsafe = /\\u0000/.test(json);
          await sql`insert into watchtower_events (id, user_id, type, "timestamp", received_at, session_id, app_version,
              page_url, source, message, severity, route_key, duration, ttfb, rating, metadata, raw)
            values (${e.id}, ${e.user_id}, ${e.type}, ${e.timestamp}, ${e.receivedAt}, ${e.sessionId}, ${e.deployVersion},
              ${e.page_url}, ${e.source}, ${e.message?.replaceAll('\u0000', '\uFFFD') ?? null}, ${e.severity},
              ${duration === null ? null : routeKey(e)}, ${duration}, ${null}, ${feedbackRating(e)},
              ${unsafe ? json.replaceAll('\\u0000', '\\ufffd') : json}::text::jsonb, ${unsafe ? json : null})`;
        }
      });
      const oldCursor = (await old.query((sql) => sql`select seq from watchtower_events where id = 'mig-300'`))[0].seq;
      const store = await openPostgresStore({ url: old.url });
      try {
        assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
        assert.is((await store.health()).eventCount, events.length);
        for (const user of ['mig', 'mig-other']) {
          const mine = events.filter((e) => e.user_id === user);
          assert.equal(await exported(store, user), mine, `${user}: every event once, in order, deep-equal`);
          assert.equal(await store.stats(user, now), computeStats(mine, now), `${user}: stats`);
          const range = { from: now - 9 * 86_400_000 - 1234, to: now - 3_600_000 };
          assert.equal(await store.stats(user, now, range), withoutBreakdowns(mine, now, range), `${user}: stats in a range, without breakdowns`);
          // From the hour after the newest event stored before the migration, breakdowns are whole.
          const newest = Math.max(...events.map((e) => Date.parse(e.receivedAt)));
          const after = { from: (Math.floor(newest / 3_600_000) + 1) * 3_600_000, to: now + 3_600_000 };
          const answer = await store.stats(user, now, after);
          assert.ok(answer.breakdowns && answer.vitals, `${user}: breakdowns after the migration`);
          assert.equal(answer, computeStats(mine, now, after));
        }
        const p1 = events.filter((e) => e.user_id === 'mig' && e.projectId === 'p1');
        assert.equal(await store.stats('mig', now, undefined, 'p1'), computeStats(p1, now), 'project statistics');
        // A cursor handed out before the migration still points at the same place.
        const page = await store.list({ userId: 'mig', limit: 3, before: encodeCursor(Number(oldCursor)) });
        const before = events.filter((e) => e.user_id === 'mig' && Number(e.id.slice(4)) < 300).reverse().slice(0, 3);
        assert.equal(page.events.map((e) => e.id), before.map((e) => e.id));
        // Ids are still taken; new events come after the old ones.
        assert.equal(await store.insert(events.slice(0, 50)), []);
        const fresh = ev({ id: 'after-migration', type: 'click' }, 'mig');
        assert.equal(await store.insert([fresh]), [fresh]);
        assert.is((await store.list({ userId: 'mig', limit: 1 })).events[0].id, 'after-migration');
      } finally {
        await store.close();
      }
    } finally {
      await old.drop();
    }
  });

  test('a database of version 17 (before the newer dimensions) answers exactly: without those lists for ranges reaching back, whole after', async () => {
    const db = await createTestDatabase();
    try {
      const now = Date.now();
      let seed = 11, n = 0;
      const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
      const make = (at: number) => {
        const e = normalise(JSON.parse(JSON.stringify({
          id: `dim-${++n}`, type: pick(['pageload', 'pageload', 'custom', 'click']), sessionId: pick(['s1', 's2', 's3']),
          url: pick(['https://x.test/?utm_source=News&utm_medium=cpc', 'https://x.test/p']), environment: pick(['production', 'staging', undefined]),
          name: pick(['signup', undefined]),
        })), { now: at, owner: 'dim' });
        e.client = { browser: 'Chrome', os: 'Linux', device: 'desktop', country: pick(['DE', 'US', null]) };
        return e;
      };
      const old = Array.from({ length: 300 }, (_, i) => make(now - 3 * 86_400_000 + i * 800_000));
      let store = await openPostgresStore({ url: db.url });
      await store.insert(old);
      await store.close();
      // As version 17 left it: no counters or sessions of the newer kinds, no version 18.
      const newer = DIM_KINDS.slice(LEGACY_DIMENSIONS);
      await db.query(async (sql) => {
        await sql`delete from watchtower_rollups where kind = any(${newer as unknown as string[]})`;
        await sql`delete from watchtower_breakdown_sessions where kind = any(${newer as unknown as string[]})`;
        await sql.unsafe('drop table watchtower_dimensions_from; delete from watchtower_migrations where version = 18');
      });
      store = await openPostgresStore({ url: db.url });
      try {
        assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
        const fresh = Array.from({ length: 40 }, (_, i) => make(now - 30_000 + i * 500));
        await store.insert(fresh);
        const all = [...old, ...fresh];
        for (const range of [{ from: now - 4 * 86_400_000 }, { from: now - 2 * 86_400_000 - 1234, to: now - 86_400_000 + 99, interval: 'hour' as const }]) {
          const answer = await store.stats('dim', now + 1000, range);
          assert.ok(!('countries' in answer.breakdowns!), 'the newer lists are left out');
          assert.equal(answer, withoutNewer(all, now + 1000, range), 'the rest is exact');
        }
        // From the hour after the newest event stored before version 18, every list is whole.
        const newest = Math.max(...old.map((e) => Date.parse(e.receivedAt)));
        const after = { from: (Math.floor(newest / 3_600_000) + 1) * 3_600_000, to: now + 3_600_000 };
        const answer = await store.stats('dim', now + 1000, after);
        assert.ok(answer.breakdowns!.countries!.length && answer.breakdowns!.environments!.length, 'the newer lists after it');
        assert.equal(answer, computeStats(all, now + 1000, after));
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });

  test('a database from before version 20 (before custom event properties) answers without them for ranges reaching back, whole after', async () => {
    const db = await createTestDatabase();
    try {
      const now = Date.now();
      let n = 0;
      const make = (at: number, i: number) => normalise(JSON.parse(JSON.stringify({
        id: `prop-${++n}`, type: i % 3 ? 'custom' : 'pageload', sessionId: `s${i % 4}`, name: i % 2 ? 'signup' : 'buy',
        data: { plan: ['free', 'pro'][i % 2], seats: i % 3 },
      })), { now: at, owner: 'prop' });
      const old = Array.from({ length: 200 }, (_, i) => make(now - 3 * 86_400_000 + i * 1_000_000, i));
      let store = await openPostgresStore({ url: db.url });
      await store.insert(old);
      await store.close();
      // As the version before left it: no property counters or sessions, no version 20.
      await db.query(async (sql) => {
        await sql`delete from watchtower_rollups where kind = ${PROPERTY}`;
        await sql`delete from watchtower_breakdown_sessions where kind = ${PROPERTY}`;
        await sql.unsafe('drop table watchtower_properties_from; delete from watchtower_migrations where version = 20');
      });
      store = await openPostgresStore({ url: db.url });
      try {
        assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
        const fresh = Array.from({ length: 30 }, (_, i) => make(now - 30_000 + i * 500, i));
        await store.insert(fresh);
        const all = [...old, ...fresh];
        const property = { key: 'plan', keys: true };
        for (const range of [{ from: now - 4 * 86_400_000, property }, { from: now - 2 * 86_400_000 - 1234, to: now - 86_400_000 + 99, interval: 'hour' as const, property }]) {
          const { properties, propertyKeys, ...rest } = computeStats(all, now + 1000, range);
          const answer = await store.stats('prop', now + 1000, range);
          assert.ok(!('properties' in answer) && !('propertyKeys' in answer) && properties!.plan.length, 'properties are left out');
          assert.equal(answer, rest, 'the rest is exact');
          assert.ok(propertyKeys);
        }
        const newest = Math.max(...old.map((e) => Date.parse(e.receivedAt)));
        const after = { from: (Math.floor(newest / 3_600_000) + 1) * 3_600_000, to: now + 3_600_000, property: { key: 'seats', event: 'signup' } };
        const answer = await store.stats('prop', now + 1000, after);
        assert.ok(answer.properties!.seats.length, 'properties after it');
        assert.equal(answer, computeStats(all, now + 1000, after));
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });

  /** The schema as version 10 left it: the events of blocks back as rows, no issue feed (versions 12 and 13). */
  /**
   * The schema as version 10 left it: the events of blocks back as rows, no issue feed (versions 12
   * and 13), no environment scopes (version 19).
   */
  const asVersion10 = (sql: postgres.Sql) => sql.unsafe(`
    drop function watchtower_admit_environments;
    drop table watchtower_environment_scopes;
    drop table watchtower_environment_owners;
    ${['watchtower_rollups', 'watchtower_rollup_sessions', 'watchtower_day_sessions', 'watchtower_breakdown_sessions', 'watchtower_rollup_days']
      .map((t) => `delete from ${t} where strpos(scope, chr(1)) > 0;`).join('\n    ')}
    alter table watchtower_event_blocks drop column rollup;
    drop table watchtower_day_points;
    alter table watchtower_event_days drop column pointed;
    drop table watchtower_sessions_seen;
    alter table watchtower_rollup_days drop constraint watchtower_rollup_days_pkey;
    alter table watchtower_rollup_days drop column fold;
    alter table watchtower_rollup_days add primary key (user_id, scope, day);
    alter table watchtower_event_days drop column folded;
    drop index watchtower_events_errors;
    drop table watchtower_leases;
    drop table watchtower_dimensions_from;
    drop table watchtower_properties_from;
    alter table watchtower_events drop column step_key;
    insert into watchtower_events (seq, user_id, project_id, type, received_at, session_id, app_version, route_key, duration, ttfb, ts, event)
      select x.seq, nullif(b.user_id, ''), x.project_id, x.type, x.received_at, x.session_id, x.app_version, x.route_key,
             x.duration, x.ttfb, x.ts, x.event
      from watchtower_event_blocks b cross join lateral unnest(b.seqs, b.received, b.types, b.sessions, b.versions, b.projects, b.routes,
        b.durations, b.timestamps, b.ttfbs, b.texts) as x(seq, received_at, type, session_id, app_version, project_id, route_key, duration, ts, ttfb, event);
    drop table watchtower_event_blocks;
    alter table watchtower_event_days drop column moved;
    delete from watchtower_migrations where version > 10;`).simple();

  /**
   * Turns a database of the current schema back into what version 8 made of the same events: the
   * event as jsonb (what jsonb cannot hold replaced by U+FFFD, the exact text in `raw`, as the
   * version 8 store wrote them), the feedback rating column, and ids keyed by their texts.
   */
  const asVersion8 = async (sql: postgres.Sql) => {
    await asVersion10(sql);
    await sql.unsafe(`
    alter table watchtower_events add column rating smallint, add column raw text;
    update watchtower_events set raw = event where event ~* '\\\\u0000|\\\\ud[89a-f]';
    alter table watchtower_events alter column event type jsonb
      using regexp_replace(event, '\\\\u0000|\\\\ud[89a-f][0-9a-f]{2}', '\\\\ufffd', 'gi')::jsonb;
    alter table watchtower_events rename column event to metadata;
    update watchtower_events set rating = case when type = 'feedback' and jsonb_typeof(metadata->'data'->'rating') = 'number'
      then (metadata->'data'->>'rating')::float8 end where type = 'feedback';
    alter table watchtower_events drop column ttfb, drop column ts;
    drop table watchtower_event_ids;
    create table watchtower_event_ids (owner text not null, id text not null, day integer not null, primary key (owner, id));
    create index watchtower_event_ids_day on watchtower_event_ids using brin (day);
    insert into watchtower_event_ids
      select coalesce(user_id, ''), metadata->>'id', floor(extract(epoch from received_at) / 86400)::integer from watchtower_events;
    drop function watchtower_event_key;
    drop index watchtower_events_by_time;
    create index watchtower_events_by_time on watchtower_events (user_id, received_at) include (session_id) where user_id is not null;
    delete from watchtower_migrations where version > 8;`).simple();
  };

  test('migration from schema version 8 keeps every event (NUL, lone surrogates), its dedupe key, its cursor position and the statistics\' points', async () => {
    const old = await createTestDatabase();
    try {
      const now = Date.now();
      const today = Math.floor(now / 86_400_000);
      const at = (daysAgo: number, i: number) => (today - daysAgo) * 86_400_000 + 3_600_000 + i * 60_000;
      const events = Array.from({ length: 60 }, (_, i) => ({
        ...ev({
          id: `m8-${i}`, type: ['pageload', 'error', 'click', 'feedback'][i % 4], sessionId: `s${i % 5}`, route: `/r${i % 3}`,
          // TTFB: a number, a string (no TTFB in the points) or none.
          data: { duration: 100 + i, rating: 1 + (i % 5), ...(i % 3 === 2 ? {} : { ttfb: i % 3 ? 'slow' : 20 + i }) },
          message: i === 5 ? 'nul\u0000here' : i === 9 ? 'lone \ud800 surrogate' : undefined,
        }, i % 6 ? 'm8' : null, at(i % 4, i)),
        ...(i % 3 ? {} : { projectId: 'p' }),
      }));
      let store = await openPostgresStore({ url: old.url });
      try {
        assert.equal(await store.insert(events), events);
      } finally {
        await store.close();
      }
      const cursor = (await old.query((sql) => sql`select seq from watchtower_events where event like '%"m8-30"%'`))[0].seq;
      await old.query(asVersion8);
      store = await openPostgresStore({ url: old.url });
      try {
        assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
        const mine = events.filter((e) => e.user_id === 'm8');
        assert.equal(await exported(store, 'm8'), mine, 'every event once, in order, deep-equal');
        // Rows, and blocks if the store's compaction has moved their days meanwhile.
        const unowned = await old.query((sql) => sql`
          select event from (
            select seq, event from watchtower_events where user_id is null
            union all
            select x.seq, x.event from watchtower_event_blocks b cross join lateral unnest(b.seqs, b.texts) as x(seq, event) where b.user_id = ''
          ) e order by seq`);
        assert.equal(unowned.map((r) => JSON.parse(r.event as string)), events.filter((e) => e.user_id === null));
        for (const range of [undefined, { from: now - 2 * 86_400_000 }]) {
          // Events of before version 18: a range reaching back to them leaves the newer lists out.
          assert.equal(await store.stats('m8', now, range), withoutNewer(mine, now, range), `stats ${JSON.stringify(range)}`);
          const p = mine.filter((e) => e.projectId === 'p');
          assert.equal(await store.stats('m8', now, range, 'p'), withoutNewer(p, now, range), `project stats ${JSON.stringify(range)}`);
        }
        const page = await store.list({ userId: 'm8', limit: 2, before: encodeCursor(Number(cursor)) });
        assert.equal(page.events.map((e) => e.id), ['m8-29', 'm8-28']);
        // The ids are still taken, by their owner only.
        assert.equal(await store.insert(events), []);
        const again = events.filter((e) => e.user_id === 'm8').slice(0, 2).map((e) => ({ ...e, user_id: 'm8-other' }));
        assert.equal(await store.insert(again), again);
      } finally {
        await store.close();
      }
    } finally {
      await old.drop();
    }
  });

  test('migration from schema version 6 marks compacted days without counters left, keeps every event, and stats stay exact', async () => {
    const old = await createTestDatabase();
    try {
      const now = Date.now();
      const today = Math.floor(now / 86_400_000);
      const at = (daysAgo: number, i: number) => (today - daysAgo) * 86_400_000 + 3_600_000 + i * 60_000;
      const make = (id: string, ms: number, i: number) => ({
        ...ev({ id, type: ['pageload', 'error', 'click'][i % 3], sessionId: `s${i % 4}`, route: `/r${i % 2}`, data: { duration: 100 + i } }, 'm7', ms),
        ...(i % 3 ? {} : { projectId: 'p' }),
      });
      // Eight days, then compacted; then one late event into a compacted day (its counters stay).
      const events = Array.from({ length: 8 }, (_, d) => Array.from({ length: 6 }, (_, i) => make(`m7-${d}-${i}`, at(d + 1, i), i))).flat();
      let store = await openPostgresStore({ url: old.url });
      try {
        await store.insert(events);
        await old.query((sql) => compactPast(sql, now));
        const late = make('m7-late', at(3, 30), 1);
        assert.equal(await store.insert([late]), [late]);
        events.push(late);
      } finally {
        await store.close();
      }
      // The schema as version 6 left it.
      await old.query(asVersion8);
      await old.query((sql) => sql`alter table watchtower_event_days drop column compacted`);
      await old.query((sql) => sql`drop function if exists watchtower_all_new`);
      await old.query((sql) => sql`delete from watchtower_migrations where version > 6`);
      store = await openPostgresStore({ url: old.url });
      try {
        assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
        const marks = await old.query((sql) => sql<{ day: number; events: number; compacted: number | null }[]>`
          select day, events::int, compacted::int from watchtower_event_days where user_id = 'm7' order by day`);
        assert.is(marks.length, 8);
        for (const m of marks) {
          // The migration leaves the day with a late insert unmarked; the store's compaction at
          // start may since have folded its late counters into a second row and marked it.
          if (m.day === today - 3) assert.ok(m.compacted === null || m.compacted === m.events, 'the day with a late insert is read as counters until folded');
          else assert.is(m.compacted, m.events, `day ${m.day} marked`);
        }
        // In the order they were stored (latency points are the latest by insertion).
        const mine = await exported(store, 'm7');
        assert.equal(mine.map((e) => e.id).sort(), events.map((e) => e.id).sort(), 'every event once');
        for (const range of [undefined, { from: now - 30 * 86_400_000 }, { from: at(5, 2) + 1234, to: at(2, 3) }]) {
          assert.equal(await store.stats('m7', now, range), withoutNewer(mine, now, range), `stats ${JSON.stringify(range)}`);
          const p = mine.filter((e) => e.projectId === 'p');
          assert.equal(await store.stats('m7', now, range, 'p'), withoutNewer(p, now, range), `project stats ${JSON.stringify(range)}`);
        }
      } finally {
        await store.close();
      }
    } finally {
      await old.drop();
    }
  });

  // --- Two real server.ts instances on one database -------------------------------------------

  const env = () => ({ SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url, SERVICE_RATE_LIMIT: '0' });
  const post = (server: RunningServer, body: unknown, user?: string) =>
    fetch(`${server.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...(user ? { 'x-idp-user-id': user } : {}) }, body: JSON.stringify(body) });
  const get = async (server: RunningServer, path: string, user: string) => {
    const res = await fetch(server.url + path, { headers: { 'x-idp-user-id': user } });
    assert.is(res.status, 200, path);
    return res.json();
  };
  // One reader loop per stream collects everything: a read abandoned by a timed-out wait would
  // otherwise swallow the next chunk.
  const stream = async (server: RunningServer, path: string, user?: string) => {
    const controller = new AbortController();
    const res = await fetch(server.url + path, { headers: user ? { 'x-idp-user-id': user } : {}, signal: controller.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    void (async () => {
      for (;;) {
        const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
        if (chunk.done) return;
        text += decoder.decode(chunk.value, { stream: true });
      }
    })();
    const wait = async (needle: string, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (!text.includes(needle)) {
        if (Date.now() > deadline) throw new Error(`stream did not deliver ${needle} in ${timeoutMs} ms; got ${text.slice(-500)}`);
        await sleep(20);
      }
      return text;
    };
    await wait(': connected', 5000);
    return { wait, close: () => controller.abort() };
  };

  test('two instances: ingest on A, read and stream on B, isolation across instances, restart loses nothing', async () => {
    const a = await startServer(env());
    const b = await startServer(env());
    servers.push(a, b);
    const aliceB = await stream(b, '/api/events/stream', 'alice');
    const bobB = await stream(b, '/api/events/stream', 'bob');
    const anonB = await stream(b, '/api/events/stream');
    const aliceDevB = await stream(b, '/api/developer/stream', 'alice');
    // B's LISTEN may still be starting: probe until an event from A reaches B.
    await until(async () => {
      await post(a, { type: 'probe' }, 'alice');
      return aliceB.wait('"probe"', 300).then(() => true, () => false);
    }, 10_000);

    const alice = Array.from({ length: 5 }, (_, i) => ({ id: `alice-secret-${i}`, type: i % 2 ? 'error' : 'pageload', route: '/alice', sessionId: 'alice-s', data: { duration: 100 + i } }));
    const bob = Array.from({ length: 5 }, (_, i) => ({ id: `bob-secret-${i}`, type: 'click', sessionId: 'bob-s' }));
    let res = await post(a, { events: alice }, 'alice');
    assert.is(res.status, 200);
    res = await post(a, { events: bob }, 'bob');
    assert.is(res.status, 200);
    res = await post(a, { events: [{ id: 'anon-secret-0', type: 'click' }] });
    assert.is(res.status, 200);

    const aliceSeen = await aliceB.wait('alice-secret-4', 5000);
    assert.not.match(aliceSeen, /bob-|anon-/);
    assert.ok(dataFrames(aliceSeen).flat().length >= 5);
    const bobSeen = await bobB.wait('bob-secret-4', 5000);
    assert.not.match(bobSeen, /alice-|anon-/);
    const anonSeen = await anonB.wait('anon-secret-0', 5000);
    assert.not.match(anonSeen, /alice-|bob-/);
    const devSeen = await aliceDevB.wait('alice-secret-4', 5000);
    assert.not.match(devSeen, /bob-|anon-/);

    const listed = (await get(b, '/api/events?limit=1000', 'alice')) as { events: StoredEvent[] };
    assert.equal(listed.events.filter((e) => e.id.startsWith('alice-secret')).map((e) => e.id), alice.map((e) => e.id).reverse());
    assert.not.match(JSON.stringify(listed), /bob-|anon-/);
    const stats = (await get(b, '/api/stats', 'bob')) as { totalEvents: number };
    assert.is(stats.totalEvents, 5);
    const health = (await (await fetch(b.url + '/api/health')).json()) as { storage: string; eventCount: number };
    assert.is(health.storage, 'postgres');
    assert.ok(health.eventCount >= 11);
    for (const s of [aliceB, bobB, anonB, aliceDevB]) s.close();

    // Restart A: everything acknowledged before is still there, and it serves again.
    assert.is(await a.stop('SIGTERM'), 0);
    const a2 = await startServer(env());
    servers.push(a2);
    const again = (await get(a2, '/api/events?limit=1000', 'alice')) as { events: StoredEvent[] };
    assert.equal(again.events, listed.events);
    res = await post(a2, { events: [{ id: 'after-restart', type: 'click' }] }, 'alice');
    assert.is(res.status, 200);
    assert.is(((await get(b, '/api/events?limit=1', 'alice')) as { events: StoredEvent[] }).events[0].id, 'after-restart');
  });

  test('connection killed mid-ingest: clients get 503 with Retry-After, nothing acknowledged is lost, service resumes', async () => {
    const a = await startServer(env());
    const b = await startServer(env());
    servers.push(a, b);
    const acked: string[] = [];
    const statuses = new Map<number, number>();
    let stop = false;
    let retryAfter: string | null = null;
    let counter = 0;
    const worker = async (server: RunningServer) => {
      while (!stop) {
        const ids = Array.from({ length: 20 }, () => `kill-${++counter}`);
        const res = await post(server, { events: ids.map((id) => ({ id, type: 'click' })) }, 'killer').catch((err) => {
          throw new Error(`request failed (${err.cause ?? err}); server output:\n${server.output()}`);
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) acked.push(...ids);
        if (res.status === 503) retryAfter = res.headers.get('retry-after');
        await res.arrayBuffer();
      }
    };
    const workers = [worker(a), worker(a), worker(b), worker(b)];
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && (statuses.get(503) ?? 0) < 3) {
      await sleep(50);
      await db.terminateConnections();
    }
    await sleep(300);
    stop = true;
    await Promise.all(workers);
    assert.ok((statuses.get(503) ?? 0) > 0, `no 503 seen: ${JSON.stringify([...statuses])}`);
    assert.is(retryAfter, '2');
    assert.equal([...statuses.keys()].filter((s) => s !== 200 && s !== 503), [], `only 200 and 503: ${JSON.stringify([...statuses])}`);
    assert.ok(acked.length > 0);

    // The service resumes on both instances without a restart.
    for (const server of [a, b]) {
      await until(async () => (await post(server, { type: 'click', id: `resume-${server.port}` }, 'killer')).status === 200, 10_000);
    }
    const stored = new Set((await db.query((sql) => sql`select event::jsonb->>'id' as id from watchtower_events where user_id = 'killer'`)).map((r) => r.id as string));
    const lost = acked.filter((id) => !stored.has(id));
    assert.equal(lost, [], `acknowledged but not stored: ${lost.length}`);
    assert.is(a.child.exitCode, null, 'A is still running');
    assert.is(b.child.exitCode, null, 'B is still running');
    assert.not.match(a.output() + b.output(), /unhandled|internal error/i);

    // Streams across instances resume too (LISTEN reconnects by itself).
    const live = await stream(b, '/api/events/stream', 'killer');
    await until(async () => {
      await post(a, { type: 'after-kill' }, 'killer');
      return live.wait('"after-kill"', 300).then(() => true, () => false);
    }, 30_000).catch((err) => {
      throw new Error(`${err.message}; B's output:\n${b.output().slice(-3000)}`);
    });
    live.close();
  });

  test.run();
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(100);
  }
}
