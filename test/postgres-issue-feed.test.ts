// The PostgreSQL store's issue feed against a real server: scanErrors never passes a position an
// insert still in flight holds (transactions commit out of seq order), finds errors moved into
// blocks by compaction, and issueLease is held by one instance at a time and passes on when its
// holder closes, is killed (-9) or loses the database. The same file is the killed child when
// WATCHTOWER_PG_LEASE_CHILD names a database URL.
import { spawn } from 'node:child_process';
import { createServer, connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { SCAN_WINDOW } from '../lib/store/postgres/issue-feed.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { ErrorScanQuery, Store } from '../lib/store/types.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason, type TestDatabase } from './helpers/postgres.ts';

declare const Deno: { execPath(): string; env: { get(name: string): string | undefined } } | undefined;
const env = (name: string) => (typeof Deno !== 'undefined' ? Deno.env.get(name) : process.env[name]);
const childUrl = env('WATCHTOWER_PG_LEASE_CHILD');
/** The lease's length in the tests that wait for one to run out. */
const TTL = 2000;
const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (childUrl) {
  // The child: takes the lease, says so, and holds it (renewing it) until it is killed.
  const store = await openPostgresStore({ url: childUrl, issueLeaseMs: TTL });
  while (!(await store.issueLease!())) await sleep(100);
  console.log('held');
  setInterval(() => {}, 1000);
} else {
  const reason = await unavailableReason();
  if (reason !== null && !REQUIRE_POSTGRES) {
    console.log(`PostgreSQL issue feed tests skipped: ${reason}.`);
  } else if (reason !== null) {
    test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => {
      assert.unreachable(reason);
    });
    test.run();
  } else {
    register();
  }
}

function register() {
  let db: TestDatabase;
  const opened: Store[] = [];
  const clients: postgres.Sql[] = [];
  const open = async (extra: { url?: string; issueLeaseMs?: number } = {}) => {
    const s = await openPostgresStore({ url: db.url, connectTimeout: 3, ...extra });
    opened.push(s);
    return s;
  };
  /** A connection of its own (max 1, so that BEGIN ... COMMIT run on it in turn). */
  const client = () => {
    const sql = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    clients.push(sql);
    return sql;
  };

  test.before.each(async () => {
    db = await createTestDatabase();
  });
  test.after.each(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end({ timeout: 1 }).catch(() => {})));
    await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})));
    await db.drop();
  });

  let n = 0;
  const ev = (raw: Partial<RawEvent>, owner: string | null, at = Date.now()): StoredEvent =>
    normalise({ type: 'error', message: 'boom', ...raw } as RawEvent, { now: at, owner, newId: () => `f-${++n}` });
  const ids = (events: readonly StoredEvent[]) => events.map((e) => e.id);

  /** Every error from `after` on, scan after scan, until `through` stops moving. */
  const scanAll = async (store: Store, q: Omit<ErrorScanQuery, 'after'> & { after?: number }) => {
    const out = { events: [] as StoredEvent[], seqs: [] as number[], through: q.after ?? 0, scans: 0 };
    for (;;) {
      const r = await store.scanErrors({ ...q, after: out.through });
      out.scans++;
      out.events.push(...r.events);
      out.seqs.push(...r.seqs);
      if (r.through === out.through) return out;
      out.through = r.through;
    }
  };
  /** Scans from `after` until `through` reaches `seq` (a few scans: the horizon settles on the scan after the holders end). */
  const scanUntil = async (store: Store, after: number, seq: number) => {
    for (let i = 0; i < 5; i++) {
      const r = await store.scanErrors({ after, limit: 100 });
      if (r.through >= seq) return r;
    }
    assert.unreachable(`through never reached ${seq}`);
    throw new Error('unreachable');
  };
  const lastSeq = async (sql: postgres.Sql) =>
    Number((await sql`select coalesce(pg_sequence_last_value('watchtower_events_seq'), 0) as v`)[0].v);

  test('scanErrors: an insert that took a lower seq and commits after a later one is never passed over; once it commits it is answered', async () => {
    const store = await open();
    const first = ev({}, 'oo');
    await store.insert([first]);
    const start = await scanUntil(store, 0, 1);
    assert.equal(ids(start.events), [first.id]);

    // A transaction takes the next seq and stays open; another connection's insert commits after it.
    const slow = client();
    const late = ev({ message: 'late' }, 'oo-late');
    await slow`begin`;
    const [{ seq }] = await slow`
      insert into watchtower_events (user_id, type, received_at, event)
      values (${late.user_id}, 'error', ${late.receivedAt}::timestamptz, ${JSON.stringify(late)}) returning seq::float8 as seq`;
    const early = ev({ message: 'early' }, 'oo');
    await store.insert([early]);
    const visible = await client()`select seq::float8 as seq from watchtower_events where event like ${'%' + early.id + '%'}`;
    assert.is(visible.length, 1, 'the later insert is committed');
    assert.ok(visible[0].seq > seq);
    for (let i = 0; i < 4; i++) {
      const r = await store.scanErrors({ after: start.through, limit: 100 });
      assert.ok(r.through < seq, `scan ${i}: through ${r.through} passes seq ${seq}, which an open transaction holds`);
      assert.equal(r.events, [], `scan ${i}: nothing answered past the horizon`);
    }
    await slow`commit`;
    const after = await scanUntil(store, start.through, visible[0].seq);
    assert.equal(ids(after.events), [late.id, early.id], 'both, in seq order');
    assert.equal(after.seqs, [seq, visible[0].seq]);

    // A transaction that rolls back leaves a gap for good: the scan passes it once it has ended.
    await slow`begin`;
    const [{ seq: gap }] = await slow`
      insert into watchtower_events (user_id, type, received_at, event)
      values ('oo', 'error', now(), '{}') returning seq::float8 as seq`;
    const next = ev({ message: 'next' }, 'oo');
    await store.insert([next]);
    const held = await store.scanErrors({ after: after.through, limit: 100 });
    assert.ok(held.through < gap, 'not past the open transaction\'s seq');
    await slow`rollback`;
    const passed = await scanUntil(store, after.through, gap + 1);
    assert.equal(ids(passed.events), [next.id]);
  });

  test('scanErrors: the store\'s own insert statement, held on a row lock after taking its seq, is not passed over', async () => {
    const store = await open();
    // The owner's counter rows exist; a transaction locks them, so the owner's next insert statement
    // takes its seq, stores its row and then waits to add to the counters.
    await store.insert([ev({}, 'held')]);
    const start = await scanUntil(store, 0, 1);
    const locker = client();
    await locker`begin`;
    await locker`select 1 from watchtower_rollups where user_id = 'held' for update`;
    const probe = client();
    const before = await lastSeq(probe);
    const blocked = ev({ message: 'blocked' }, 'held');
    const inserting = store.insert([blocked]);
    for (let i = 0; ; i++) {
      const [{ waiting }] = await probe`
        select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
      if (waiting > 0) break;
      assert.ok(i < 100, 'the insert waits on the lock');
      await sleep(20);
    }
    assert.is(await lastSeq(probe), before + 1, 'the waiting insert has taken its seq');
    const other = ev({ message: 'other' }, 'free');
    assert.equal(await store.insert([other]), [other], 'another owner\'s insert commits meanwhile');
    for (let i = 0; i < 4; i++) {
      const r = await store.scanErrors({ after: start.through, limit: 100 });
      assert.ok(r.through <= before, `scan ${i}: through ${r.through} passes the waiting insert's seq ${before + 1}`);
    }
    await locker`commit`;
    assert.equal(await inserting, [blocked]);
    const r = await scanUntil(store, start.through, before + 2);
    assert.equal(ids(r.events), [blocked.id, other.id]);
    assert.equal(r.seqs, [before + 1, before + 2]);
  });

  test('scanErrors: refuses a sequence with CACHE above 1 (cached seqs are handed out after the horizon was taken)', async () => {
    const store = await open();
    await store.insert([ev({}, 'c')]);
    const sql = client();
    await sql`alter sequence watchtower_events_seq cache 20`;
    try {
      await store.scanErrors({ after: 0, limit: 10 });
      assert.unreachable('scanErrors answered');
    } catch (err) {
      assert.match(String(err), /CACHE 1/);
    }
    await sql`alter sequence watchtower_events_seq cache 1`;
    assert.is((await scanAll(store, { limit: 10 })).events.length, 1);
  });

  test('scanErrors: errors of closed days moved into blocks are found at the same positions, with late rows, across windows, one owner', async () => {
    const store = await open();
    const sql = client();
    const now = Date.now();
    const compact = () => compactClosedDays(sql, Math.floor(now / DAY) * DAY + COMPACT_AFTER_MS);
    let seed = 3;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const owners = ['bk-a', 'bk-a', 'bk-b', null];
    const events = Array.from({ length: 900 }, (_, i) =>
      ev({ type: ['error', 'error', 'click', 'pageload'][Math.floor(rand() * 4)] }, owners[i % 4], now - 3.5 * DAY + (i / 900) * 3.5 * DAY));
    for (let i = 0; i < events.length; i += 60) await store.insert(events.slice(i, i + 60));
    const errors = events.filter((e) => e.type === 'error' && e.user_id !== null);
    const asRows = await scanAll(store, { limit: 1000 });
    assert.equal(asRows.events, errors);

    await compact();
    const [{ blocks, rows }] = await sql`
      select (select count(*)::int from watchtower_event_blocks where user_id <> '') as blocks,
             (select count(*)::int from watchtower_events where received_at < ${new Date(Math.floor(now / DAY) * DAY).toISOString()}::timestamptz) as rows`;
    assert.ok(blocks > 0, 'closed days are blocks');
    assert.is(rows, 0, 'closed days have no rows left');
    for (const limit of [1000, 7, 1]) {
      const got = await scanAll(store, { limit });
      assert.equal(got.events, errors, `limit ${limit}`);
      assert.equal(got.seqs, asRows.seqs, `limit ${limit}: the same positions`);
    }
    // A feed that stopped mid-way (its checkpoint in closed days) resumes in the blocks.
    const mid = asRows.seqs[Math.floor(asRows.seqs.length / 2)];
    assert.equal(ids((await scanAll(store, { after: mid, limit: 13 })).events), ids(errors.filter((_, i) => asRows.seqs[i] > mid)));

    // Late rows into a closed day, one of them far ahead in seq (windows with nothing in them).
    const lateOne = ev({ message: 'late 1' }, 'bk-b', now - 2 * DAY);
    await store.insert([lateOne]);
    await sql`select setval('watchtower_events_seq', pg_sequence_last_value('watchtower_events_seq') + ${3 * SCAN_WINDOW})`;
    const lateTwo = ev({ message: 'late 2' }, 'bk-a', now - 3 * DAY);
    const today = ev({ message: 'today' }, 'bk-a');
    await store.insert([lateTwo]);
    await store.insert([today]);
    const all = [...errors, lateOne, lateTwo, today];
    const withLate = await scanAll(store, { limit: 1000 });
    assert.equal(withLate.events, all, 'late rows of closed days and today\'s, in insertion order');
    assert.ok(withLate.scans >= 4, 'the positions skipped were read a window at a time');
    await compact();
    const [{ late }] = await sql`select count(*)::int as late from watchtower_events where user_id is not null and received_at < now() - interval '1 day'`;
    assert.is(late, 0, 'the late rows moved into blocks too');
    for (const limit of [1000, 5]) {
      const got = await scanAll(store, { limit });
      assert.equal(got.events, all, `after moving the late rows, limit ${limit}`);
      assert.equal(got.seqs, withLate.seqs, `after moving the late rows, limit ${limit}: the same positions`);
    }
    for (const owner of ['bk-a', 'bk-b']) {
      const got = await scanAll(store, { limit: 4, userId: owner });
      assert.equal(ids(got.events), ids(all.filter((e) => e.user_id === owner)), owner);
    }
  });

  test('scanErrors: scans racing a compaction that moves their rows into blocks answer every error once', async () => {
    const store = await open();
    const sql = client();
    const now = Date.now();
    // Each round: late rows into a closed day, then a compaction moves them into blocks while
    // three scanners read exactly their range, again and again.
    for (let round = 0; round < 6; round++) {
      const from = (await scanAll(store, { limit: 1000 })).through;
      const late = Array.from({ length: 300 }, (_, i) => ev({ type: i % 4 ? 'error' : 'click' }, i % 3 ? 'race' : 'race-b', now - 2 * DAY + round * 1000 + i));
      for (let i = 0; i < late.length; i += 100) await store.insert(late.slice(i, i + 100));
      const want = ids(late.filter((e) => e.type === 'error'));
      assert.equal(ids((await scanAll(store, { after: from, limit: 1000 })).events), want, `round ${round}: as rows`);
      let done = false;
      const compacting = compactClosedDays(sql, Math.floor(now / DAY) * DAY + COMPACT_AFTER_MS).finally(() => (done = true));
      // Every scanner runs until the compaction ends, and the compaction ends before the test
      // does, whatever a scanner found.
      const scanners = await Promise.allSettled([0, 1, 2].map(async (scanner) => {
        for (let scans = 0; !done || scans < 2; scans++) {
          const got = await store.scanErrors({ after: from, limit: 1000 });
          assert.equal(ids(got.events), want, `round ${round}, scanner ${scanner}, scan ${scans}`);
        }
      }));
      await compacting;
      for (const s of scanners) if (s.status === 'rejected') throw s.reason;
      const [{ rows }] = await sql`select count(*)::int as rows from watchtower_events where received_at < now() - interval '1 day'`;
      assert.is(rows, 0, `round ${round}: the late rows were moved meanwhile`);
    }
  });

  test('issueLease: exactly one of two instances holds it; the other takes it when the holder closes', async () => {
    const a = await open(), b = await open();
    let holder: Store | null = null;
    for (let i = 0; i < 10; i++) {
      const [x, y] = await Promise.all([a.issueLease!(), b.issueLease!()]);
      assert.ok(x !== y, `round ${i}: exactly one holds it (${x}, ${y})`);
      const now = x ? a : b;
      assert.ok(holder === null || holder === now, 'the same one');
      holder = now;
      await sleep(150);
    }
    const other = holder === a ? b : a;
    const third = await open();
    assert.is(await third.issueLease!(), false, 'a third instance does not take it');
    await holder!.close();
    const t0 = Date.now();
    let got = false;
    while (!got && Date.now() - t0 < 5000) {
      const [x, y] = await Promise.all([other.issueLease!(), third.issueLease!()]);
      assert.ok(!(x && y), 'never both');
      got = x || y;
      await sleep(100);
    }
    assert.ok(got, 'another instance took it within 5 s of the holder closing');
    assert.ok(Date.now() - t0 < 2500, 'without waiting for the lease to run out');
    assert.is(await holder!.issueLease!(), false, 'a closed store holds nothing');
  });

  test('issueLease: a holder killed with -9 is taken over once its lease runs out, not before', async () => {
    const self = fileURLToPath(import.meta.url);
    const [cmd, args] = typeof Deno !== 'undefined'
      ? [Deno.execPath(), ['run', '--allow-all', '--no-prompt', self]]
      : [process.execPath, ['--import', 'tsx', self]];
    const child = spawn(cmd, args, { env: { ...process.env, WATCHTOWER_PG_LEASE_CHILD: db.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      let out = '', err = '';
      child.stderr!.on('data', (c) => (err += c));
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (c) => {
          out += c;
          if (out.includes('held')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`child exited ${code} before holding the lease: ${err}`)));
      });
      const b = await open({ issueLeaseMs: TTL });
      for (let i = 0; i < 5; i++) {
        assert.is(await b.issueLease!(), false, 'the child holds it');
        await sleep(300);
      }
      process.kill(child.pid!, 'SIGKILL');
      await exited;
      const killed = Date.now();
      while (!(await b.issueLease!())) {
        assert.ok(Date.now() - killed < TTL + 4000, 'taken over within the lease and a retry');
        await sleep(50);
      }
      // The child renewed every TTL / 4: its lease ran at least 3 / 4 TTL past the kill.
      assert.ok(Date.now() - killed >= TTL / 2, `taken over ${Date.now() - killed} ms after the kill: before the lease ran out`);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  test('issueLease: a holder cut off from the database stops answering true before another instance can take it', async () => {
    // The holder reaches the database through a proxy that the test then cuts.
    const target = new URL(db.url);
    const sockets = new Set<Socket>();
    const proxy = createServer((downstream) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const s of [downstream, upstream]) {
        sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => {
          downstream.destroy();
          upstream.destroy();
        });
      }
      downstream.pipe(upstream).pipe(downstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const via = new URL(db.url);
      via.port = String((proxy.address() as { port: number }).port);
      const a = await open({ url: via.toString(), issueLeaseMs: TTL });
      const b = await open({ issueLeaseMs: TTL });
      assert.is(await a.issueLease!(), true, 'the first to ask holds it');
      assert.is(await b.issueLease!(), false);
      await sleep(TTL);
      assert.is(await a.issueLease!(), true, 'renewed while it runs');
      proxy.close();
      for (const s of sockets) s.destroy();
      const cut = Date.now();
      let aLost = NaN, bGot = NaN;
      while (Number.isNaN(bGot)) {
        const elapsed = Date.now() - cut;
        assert.ok(elapsed < TTL + 4000, 'another instance takes it within the lease and a retry');
        const [x, y] = await Promise.all([a.issueLease!(), b.issueLease!()]);
        assert.ok(!(x && y), `both answer true ${elapsed} ms after the cut`);
        if (!x && Number.isNaN(aLost)) aLost = elapsed;
        if (y) bGot = elapsed;
        await sleep(50);
      }
      assert.ok(aLost < bGot, `the holder stopped at ${aLost} ms, before the other took over at ${bGot} ms`);
      assert.ok(aLost <= TTL, 'the holder stops within a lease');
    } finally {
      proxy.close();
      for (const s of sockets) s.destroy();
    }
  });

  test.run();
}
