// Issue processing's feed on the PostgreSQL store: Store.scanErrors (error events by position, up
// to a horizon below which no event can still appear) and Store.issueLease (which one of several
// instances groups issues). See docs/architecture.md#issue-feed.
//
// Like the rest of the store, every operation is one statement on a pooled connection, never a
// transaction (see the top of lib/store/postgres/store.ts).
import { withinDepth } from '../../shape.ts';
import type postgres from 'postgres';
import type { StoredEvent } from '../../event.ts';
import type { ErrorScan, ErrorScanQuery } from '../types.ts';

/** Probes kept while their holders run (a later probe that settles makes the earlier ones moot). */
const MAX_PROBES = 16;

/**
 * The sequence's highest position handed out, then the transactions that hold its lock, in that
 * order: the lock read is a subplan correlated to the row that read the position (OFFSET 0 keeps
 * that row a subquery of its own), so it runs after it. `cache`: the sequence's CACHE, which must
 * be 1 (see safeHorizon).
 */
const PROBE = `
  select p.high::float8 as high, p.cache::float8 as cache,
         (select coalesce(json_agg(l.virtualtransaction), '[]') from pg_locks l
          where l.locktype = 'relation' and l.relation = p.seq and l.mode = 'RowExclusiveLock'
            and l.pid <> pg_backend_pid()) as holders
  from (select s.seq,
               coalesce(pg_sequence_last_value(s.seq), (select last_value - 1 from watchtower_events_seq)) as high,
               (select seqcache from pg_sequence where seqrelid = s.seq) as cache
        from (select 'watchtower_events_seq'::regclass::oid as seq) s
        offset 0) p`;

interface Probe { high: number; holders: string[] }

/**
 * The safe horizon of watchtower_events' positions: a position such that every event with a seq
 * at or below it that will ever be committed is committed already, so a statement started after
 * this resolves sees them all. Resolves to the highest such position known (it never goes back).
 *
 * Why it holds. An insert takes its rows' seqs by nextval, which first takes a RowExclusiveLock on
 * the sequence and keeps it until its transaction ends, and PostgreSQL releases a transaction's
 * locks only after its commit is visible (or it is rolled back). A probe reads the highest seq
 * handed out (`high`), then the transactions holding that lock (`holders`): every transaction that
 * took a seq at or below `high` took the lock before that read, so it is a holder, or it has ended.
 * Once a later read of the locks shows none of the holders, every seq up to `high` is committed or
 * will never be. A transaction's virtual id is not reused while it runs. Each call probes again
 * (one statement) and checks the probes it took before; probes run one at a time, so every check
 * reads the locks after the probe it checks. With no insert in flight a probe settles at once;
 * otherwise on the next call after its holders end (an insert statement's time).
 *
 * It needs the sequence's CACHE to be 1 (as migration 3 creates it): a cached range is handed out
 * later by the backend that cached it, in transactions that start after the probe.
 */
export function safeHorizon(sql: postgres.Sql): () => Promise<number> {
  let safe = 0;
  let probes: Probe[] = [];
  let chain: Promise<unknown> = Promise.resolve();
  const probe = async (): Promise<number> => {
    const [row] = await sql.unsafe<{ high: number; cache: number; holders: string[] }[]>(PROBE);
    if (row.cache !== 1) {
      throw new Error(`watchtower_events_seq has CACHE ${row.cache}: the issue feed needs CACHE 1 (ALTER SEQUENCE watchtower_events_seq CACHE 1)`);
    }
    const holding = new Set(row.holders);
    probes.push({ high: row.high, holders: row.holders });
    for (const p of probes) if (p.holders.every((h) => !holding.has(h))) safe = Math.max(safe, p.high);
    probes = probes.filter((p) => p.high > safe).slice(-MAX_PROBES);
    return safe;
  };
  return () => {
    const next = chain.then(probe);
    chain = next.catch(() => {});
    return next;
  };
}

/**
 * The most positions (events of any type) one scan covers. Its statement is prepared, and
 * PostgreSQL soon plans a prepared statement once for any bounds: that plan reads every error of
 * its range (sorting them to keep `limit`), which is what a feed that keeps up needs, the range
 * holding the few errors stored since its last scan, and this bounds what it reads for a feed far
 * behind (after a long downtime), which also reads only the blocks that reach into the window
 * rather than every block after its position. Planned for its bounds every time instead, the
 * statement merged the daily partitions' index scans and stopped at `limit`, but planning over 90
 * daily partitions took 6 ms a scan, where the plan made once read a 2,000-position range of rows
 * in under 1 ms.
 */
export const SCAN_WINDOW = 20_000;

/**
 * Store.scanErrors: error events of identified owners with seq in (after, bound], oldest first,
 * where bound = min(upTo, the safe horizon, after + SCAN_WINDOW). Read from the rows of
 * watchtower_events and from the blocks closed days were moved into (migration 11) in one
 * statement, so one snapshot: a compaction moving a day's rows into blocks commits wholly before
 * or after it, and every event is read once. When fewer than `limit` errors are found, every one
 * up to `bound` has been: that is `through`. `userId` is the owner's column value (NUL mapped as
 * the store maps it). Indexes (migration 12): error rows by seq across owners (partial), one
 * owner's through the (user_id, type, seq) index; blocks by their range of seqs (GiST).
 */
export async function scanErrors(sql: postgres.Sql, horizon: () => Promise<number>, q: ErrorScanQuery): Promise<ErrorScan> {
  const after = Math.max(0, Math.floor(q.after));
  const limit = Math.max(0, Math.floor(q.limit));
  const head = await horizon();
  const bound = Math.min(q.upTo === undefined ? Infinity : Math.floor(q.upTo), head, after + SCAN_WINDOW);
  if (limit === 0 || bound <= after) return { events: [], seqs: [], through: q.after, head };
  const rowsOf = q.userId === undefined ? sql`user_id is not null` : sql`user_id = ${q.userId}`;
  const blocksOf = q.userId === undefined ? sql`` : sql`and b.user_id = ${q.userId}`;
  const rows = await sql<{ seq: number; event: string }[]>`
    select seq::float8 as seq, event from (
      (select seq, event from watchtower_events
       where type = 'error' and ${rowsOf} and seq > ${after}::int8 and seq <= ${bound}::int8
       order by seq limit ${limit}::int8)
      union all
      (select x.seq, x.event
       from watchtower_event_blocks b cross join lateral unnest(b.seqs, b.types, b.texts) as x(seq, type, event)
       where b.user_id <> '' ${blocksOf} and int8range(b.first_seq, b.last_seq, '[]') && int8range(${after}::int8, ${bound}::int8, '(]')
         and x.seq > ${after}::int8 and x.seq <= ${bound}::int8 and x.type = 'error'
       order by x.seq limit ${limit}::int8)
    ) e
    order by seq limit ${limit}::int8`;
  const events: StoredEvent[] = [], seqs: number[] = [];
  for (const r of rows) {
    seqs.push(r.seq);
    // Events stored before the shape bound may nest deeper: read them cut, as every read does.
    events.push(withinDepth(JSON.parse(r.event) as StoredEvent));
  }
  return { events, seqs, through: seqs.length === limit ? seqs[seqs.length - 1] : bound, head };
}

/** The name of the issue-grouping lease in watchtower_leases (migration 13). */
const LEASE = 'issues';
/** A non-holder asks the database at most this often. */
const LEASE_RETRY_MS = 1000;
/** How long closing waits for the lease to be given up. */
const RELEASE_TIMEOUT_MS = 3000;

/** `p`'s answer, or a rejection once `ms` pass without it (`p` runs on; a late answer is dropped). */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  p.catch(() => {});
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)))])
    .finally(() => clearTimeout(timer));
}

export interface IssueLease {
  /** Store.issueLease. */
  held(): Promise<boolean>;
  /** Gives the lease up, if held, so that another instance takes it at once. */
  release(): Promise<void>;
}

/**
 * Store.issueLease: a row of watchtower_leases naming the instance that holds it and when it
 * expires by the database's clock. One statement takes it when it is free or expired, or renews
 * it when this instance holds it: the row's lock makes two instances' statements run one after
 * the other, and the second finds the first's holder and expiry, so the database grants it to
 * one instance at a time. The holder renews it every quarter of `ttlMs` while it runs.
 *
 * The holder counts its lease from when it sent the statement that took or renewed it: the
 * database set the expiry at least `ttlMs` after that (by its own clock), and another instance
 * takes over only once the database's clock passes the expiry. It answers true only while at
 * least half of `ttlMs` is left, so work begun on a true answer has that long before another
 * instance can hold the lease, and a holder that cannot reach the database stops answering true
 * half a lease before anyone else can take it. An instance that dies (crash, kill -9, network
 * loss) is taken over once its last expiry passes: within `ttlMs` of its last renewal.
 *
 * A statement unanswered after a quarter of `ttlMs` counts as failed (a connection to a server
 * that vanished without a reset can hang far longer), so an answer never waits longer than that;
 * if it grants the lease after all, no other instance can take it until it expires, and the next
 * statement renews it.
 */
export function issueLease(sql: postgres.Sql, instance: string, ttlMs: number, log: (msg: string) => void): IssueLease {
  /** performance.now() until which this instance holds the lease; 0: not held. */
  let until = 0;
  let lastTry = -Infinity;
  let trying: Promise<void> | null = null;
  let renewer: ReturnType<typeof setInterval> | null = null;
  let released = false;
  const renewing = (on: boolean) => {
    if (on && !renewer) {
      renewer = setInterval(() => void attempt(), ttlMs / 4);
      (renewer as { unref?: () => void }).unref?.();
    } else if (!on && renewer) {
      clearInterval(renewer);
      renewer = null;
    }
  };
  const attempt = () => (trying ??= (async () => {
    const sent = performance.now();
    lastTry = sent;
    try {
      const rows = await within(sql`
        insert into watchtower_leases as l (name, holder, expires)
        values (${LEASE}, ${instance}, now() + ${ttlMs}::float8 * interval '1 millisecond')
        on conflict (name) do update set holder = excluded.holder, expires = excluded.expires
          where l.holder = excluded.holder or l.expires < now()
        returning holder`, ttlMs / 4);
      if (released) return;
      until = rows.length ? sent + ttlMs : 0;
      renewing(until > 0);
    } catch (err) {
      // The lease runs out by itself (`until` stays as the last renewal left it).
      log(`issue lease: ${err instanceof Error ? err.message : err}`);
    } finally {
      trying = null;
    }
  })());
  return {
    async held() {
      if (released) return false;
      const now = performance.now();
      if (until - now > ttlMs * 0.75) return true;
      if (until <= now && now - lastTry < LEASE_RETRY_MS) return false;
      await attempt();
      return !released && until - performance.now() >= ttlMs / 2;
    },
    async release() {
      released = true;
      renewing(false);
      await trying;
      until = 0;
      // Whatever the last answer was: a statement in flight when this began may have taken it.
      if (lastTry === -Infinity) return;
      // Bounded, so that closing a store cut off from its database does not wait on it.
      await within(sql`update watchtower_leases set expires = '-infinity' where name = ${LEASE} and holder = ${instance}`, RELEASE_TIMEOUT_MS)
        .catch((err: unknown) => log(`issue lease: could not give it up (${err instanceof Error ? err.message : err}); it expires by itself`));
    },
  };
}
