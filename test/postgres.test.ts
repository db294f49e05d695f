// The PostgreSQL store against a real server: the store contract, statistics equal to
// computeStats, migrations racing, LISTEN/NOTIFY between instances, connection loss → 503,
// and two real server.ts instances sharing one database.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, type Stats } from '../lib/stats.ts';
import { MIGRATIONS } from '../lib/store/postgres-migrations.ts';
import { openPostgresStore } from '../lib/store/postgres.ts';
import { StoreUnavailableError, type Store } from '../lib/store/types.ts';
import { dataFrames } from './helpers/app.ts';
import { createTestDatabase, openFreshPostgresStore, REQUIRE_POSTGRES, unavailableReason, type TestDatabase } from './helpers/postgres.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { storeContract } from './store-contract.ts';

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
  const open = async (extra: { log?: (m: string) => void } = {}) => {
    const s = await openPostgresStore({ url: db.url, connectTimeout: 3, ...extra });
    stores.push(s);
    return s;
  };

  test.before(async () => {
    db = await createTestDatabase();
    process.on('unhandledRejection', onUnhandled);
  });
  test.after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await Promise.all(stores.map((s) => s.close().catch(() => {})));
    await db?.drop();
  });

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
  storeContract('postgres', openFreshPostgresStore, { rollupStats: true, projects: true });

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
    const stored = new Set((await db.query((sql) => sql`select metadata->>'id' as id from watchtower_events where user_id = 'killer'`)).map((r) => r.id as string));
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
