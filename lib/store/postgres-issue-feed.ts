// Issue processing's feed on the PostgreSQL store: Store.scanErrors (error events by position, up
// to a horizon below which no event can still appear). See docs/architecture.md#issue-feed.
//
// Like the rest of the store, every operation is one statement on a pooled connection, never a
// transaction (see the top of lib/store/postgres.ts).
import type postgres from 'postgres';
import type { StoredEvent } from '../event.ts';
import type { ErrorScan, ErrorScanQuery } from './types.ts';

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
  const bound = Math.min(q.upTo === undefined ? Infinity : Math.floor(q.upTo), await horizon(), after + SCAN_WINDOW);
  if (limit === 0 || bound <= after) return { events: [], seqs: [], through: q.after };
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
    events.push(JSON.parse(r.event) as StoredEvent);
  }
  return { events, seqs, through: seqs.length === limit ? seqs[seqs.length - 1] : bound };
}
