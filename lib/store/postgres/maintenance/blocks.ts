// Closed days' events as compressed blocks per owner (blockDay), the space their rows leave given
// back (packEvents), and the blocks' rollups (rollupBlocks). Run by compactClosedDays
// (lib/store/postgres/maintenance/compaction.ts); see docs/architecture.md#postgresql-store.
import type postgres from 'postgres';
import type { StoredEvent } from '../../../event.ts';
import { HourRollup, rollupRow } from '../../../rollup/hour.ts';
import { LATENCY_POINTS } from '../../../stats.ts';
import { pgArray } from '../sql.ts';
import { encodeDay, hex } from '../day-codec.ts';
import { EMPTY_FUNNEL_INDEX, FUNNEL_INDEX } from '../funnel-index.ts';

/** Blocks rolled up per statement by rollupBlocks: ~1,000 events each. */
const ROLLUP_BLOCKS = 20;

/**
 * Rolls up the owned blocks that are not yet (watchtower_event_blocks.rollup, migration 17), a
 * few at a time, until none is left or `stop` says so: each block's events as the hour parts of
 * one frozen day (encodeDay). A block never changes, so its rollup never does; two instances
 * doing the same block write the same bytes. Resolves to the number of blocks rolled up.
 */
export async function rollupBlocks(sql: postgres.Sql, stop = () => false): Promise<number> {
  let done = 0;
  while (!stop()) {
    const blocks = await sql<{ user_id: string; day: number; first_seq: string; texts: string }[]>`
      select user_id, day, first_seq::text, array_to_json(texts)::text as texts from watchtower_event_blocks
      where rollup is null and user_id <> '' limit ${ROLLUP_BLOCKS}`;
    if (!blocks.length) break;
    const parts = blocks.map((b) => hex(encodeDay(HourRollup.fromRows((JSON.parse(b.texts) as string[]).map((t) => rollupRow(JSON.parse(t) as StoredEvent))))));
    await sql`
      update watchtower_event_blocks b set rollup = decode(r.parts, 'hex')
      from unnest(${pgArray(blocks.map((b) => b.user_id))}::text[], ${pgArray(blocks.map((b) => b.day))}::int4[],
                  ${pgArray(blocks.map((b) => b.first_seq))}::int8[], ${pgArray(parts)}::text[]) as r(user_id, day, first_seq, parts)
      where b.user_id = r.user_id and b.day = r.day and b.first_seq = r.first_seq`;
    done += blocks.length;
  }
  return done;
}

/** Above this, the indexes of an emptied events partition hold pages a rebuild would give back. */
export const PACKED_INDEX_BYTES = 128 * 1024;

/** The events partition of a day: an identifier built from an integer, nothing from a client. */
const partitionOf = (day: number) => `watchtower_events_p${Math.trunc(day)}`;
/** Rethrows all but 42P01: the partition is gone (retention dropped the day meanwhile). */
export const unlessGone = (err: { code?: string }) => {
  if (err.code !== '42P01') throw err;
};

/** The block column of each moved row's column. */
const COLUMNS: Record<string, string> = {
  seq: 'seqs', received_at: 'received', type: 'types', session_id: 'sessions', app_version: 'versions', project_id: 'projects',
  route_key: 'routes', duration: 'durations', ts: 'timestamps', ttfb: 'ttfbs', event: 'texts', step_key: 'step_keys',
};

/** The most events of one owner in one block: a page of a past day reads one or two blocks. */
export const BLOCK_EVENTS = 1000;

/**
 * Moves the rows of a closed day's partition into blocks (watchtower_event_blocks, migration 11):
 * per owner, in seq order, up to BLOCK_EVENTS events a block, each column an array, which
 * PostgreSQL compresses (a row is never compressed, being under ~2 KB). One statement, so a read
 * sees the day's events either as rows or as blocks, never both or neither; the day's `moved`
 * count says how many are blocks (lib/store/postgres/reads/by-days.ts, readEvents). It deletes the rows its
 * snapshot sees: rows inserted meanwhile stay rows, and two instances moving the same day at once
 * each move what the other did not (a deleted row is skipped). The same statement keeps each
 * owner, scope and route's latest points of the day (watchtower_day_points, migration 16), from
 * the rows moved and the points kept before, with their receive times (migration 23). Sent unprepared, on the day's own partition.
 * Resolves to the number of events moved.
 */
export async function blockDay(sql: postgres.Sql, day: number): Promise<number> {
  const column = (name: string) => `array_agg(${name} order by seq)`;
  const [{ moved }] = await sql.unsafe<{ moved: number }[]>(`
    with moved as (
      delete from ${partitionOf(day)}
      returning seq, coalesce(user_id, '') as user_id, received_at, type, session_id, app_version, project_id, route_key, duration, ts, ttfb, event, step_key
    ), chunked as (
      select *, (row_number() over (partition by user_id order by seq) - 1) / $1::integer as chunk from moved
    ), ${FUNNEL_INDEX}, blocks as (
      insert into watchtower_event_blocks
        (user_id, day, first_seq, last_seq, first_received, last_received, events,
         seqs, received, types, sessions, versions, projects, routes, durations, timestamps, ttfbs, texts, step_keys, funnel)
      select a.user_id, $2::integer, first_seq, last_seq, first_received, last_received, events,
             seqs, received, types, sessions, versions, projects, routes, durations, timestamps, ttfbs, texts,
             case when keyed then step_keys end,
             -- Its funnel index with them (an empty one when no event has a session).
             case when keyed then case when f.user_id is null then ${EMPTY_FUNNEL_INDEX} else f.funnel end end
      from (
        select user_id, chunk, min(seq) as first_seq, max(seq) as last_seq, min(received_at) as first_received,
               max(received_at) as last_received, count(*)::integer as events,
               ${['seq', 'received_at', 'type', 'session_id', 'app_version', 'project_id', 'route_key', 'duration', 'ts', 'ttfb', 'event', 'step_key']
                 .map((c) => `${column(c)} as ${COLUMNS[c]}`).join(', ')},
               -- Only when every event a funnel step can match has its key (rows stored before
               -- migration 21 have none): a block has all its step keys or none, and funnels read
               -- the texts of the blocks without them (lib/store/postgres/reads/funnel.ts).
               bool_and(step_key is not null or type not in ('pageload', 'custom')) as keyed
        from chunked group by user_id, chunk) a
      left join funnels f on f.user_id = a.user_id and f.chunk = a.chunk
      returning user_id, events
    ), candidates as (
      -- The latency points moved, per owner, scope and route.
      select m.user_id, s.scope, m.route_key as route, m.seq, m.duration, m.ts, m.ttfb, m.received_at
      from moved m cross join lateral (values (''), ('#' || m.project_id)) as s(scope)
      where m.user_id <> '' and m.route_key is not null and m.duration is not null and s.scope is not null
    ), pointed as (
      -- The latest of them, merged with those kept before (the row as committed: another
      -- instance moving rows of the same day at once adds its own, never overwrites them).
      -- With their receive times (migration 23): a row kept before has none, and unnest pads
      -- its times with nulls, so that a merge keeping any of its points keeps no times at all.
      insert into watchtower_day_points as p (user_id, scope, day, route, n, first_seq, last_seq, seqs, durations, timestamps, ttfbs, received)
      select user_id, scope, $2::integer, route, count(*), min(seq), max(seq),
             array_agg(seq order by seq desc), array_agg(duration order by seq desc), array_agg(ts order by seq desc), array_agg(ttfb order by seq desc),
             array_agg(received_at order by seq desc)
      from (select *, row_number() over (partition by user_id, scope, route order by seq desc) as rank from candidates) c
      where rank <= $3::integer
      group by user_id, scope, route
      on conflict (user_id, scope, day, route) do update
        set (n, first_seq, last_seq, seqs, durations, timestamps, ttfbs, received) = (
          select count(*), min(seq), max(seq), array_agg(seq order by seq desc), array_agg(duration order by seq desc),
                 array_agg(ts order by seq desc), array_agg(ttfb order by seq desc),
                 case when bool_and(received is not null) then array_agg(received order by seq desc) end
          from (select * from (select * from unnest(p.seqs, p.durations, p.timestamps, p.ttfbs, p.received)
                               union select * from unnest(excluded.seqs, excluded.durations, excluded.timestamps, excluded.ttfbs, excluded.received))
                  u(seq, duration, ts, ttfb, received)
                order by seq desc limit $3::integer) t)
      returning 1
    ), counted as (
      -- Pointed: the moved count the day's points cover, if they covered every event moved before.
      update watchtower_event_days e set moved = e.moved + m.n,
        pointed = case when coalesce(e.pointed, 0) = e.moved then e.moved + m.n else e.pointed end
      from (select user_id, sum(events) as n from blocks group by 1) m
      where e.user_id = m.user_id and e.day = $2::integer
      returning m.n
    )
    select coalesce(sum(n), 0)::float8 as moved, (select count(*) from pointed) as points
    from counted`, [BLOCK_EVENTS, Math.trunc(day), LATENCY_POINTS]).catch((err: { code?: string }) => {
    unlessGone(err);
    return [{ moved: 0 }];
  });
  return moved;
}

/**
 * Gives back a closed day's partition's space once its rows are blocks, by the instance that moved
 * them, or by a later pass if that could not (see compactClosedDays): VACUUM frees the dead rows
 * and cuts the emptied pages off the table's end, and the indexes, which VACUUM leaves their size,
 * are rebuilt, CONCURRENTLY so that the day's inserts and reads go on meanwhile. Rows inserted
 * late are packed too.
 *
 * Two rebuilds of one table at once deadlock, and an interrupted REINDEX CONCURRENTLY leaves an
 * invalid copy of each index behind, which every insert into the day would keep up to date. So a
 * partition that another instance is vacuuming or indexing is left to it (autovacuum, which
 * rebuilds no index, gives way to this VACUUM), such copies are dropped
 * first, and a rebuild that fails on a lock (another instance got there in the same instant)
 * leaves the day to a later pass. A partition dropped meanwhile is left alone.
 */
export async function packEvents(sql: postgres.Sql, day: number): Promise<void> {
  const partition = partitionOf(day);
  const [{ busy, invalid }] = await sql<{ busy: boolean; invalid: string[] | null }[]>`
    select exists (select 1 from pg_stat_progress_vacuum v join pg_class c on c.oid = v.relid
                   join pg_stat_activity a on a.pid = v.pid where c.relname = ${partition} and a.backend_type = 'client backend')
        or exists (select 1 from pg_stat_progress_create_index i join pg_class c on c.oid = i.relid where c.relname = ${partition}) as busy,
           (select array_agg(x.relname::text) from pg_index ix join pg_class t on t.oid = ix.indrelid join pg_class x on x.oid = ix.indexrelid
            where t.relname = ${partition} and not ix.indisvalid) as invalid`;
  if (busy) return;
  const later = (err: { code?: string }) => {
    // 40P01 deadlock, 55P03 lock not available: another instance is packing the same day.
    if (err.code !== '40P01' && err.code !== '55P03') unlessGone(err);
  };
  // Index names from the catalog, quoted as identifiers.
  for (const index of invalid ?? []) await sql.unsafe(`drop index concurrently if exists "${index.replaceAll('"', '""')}"`).catch(later);
  // INDEX_CLEANUP ON: when dead line pointers are left on under 2% of the pages (the rest freed
  // by pruning), VACUUM by default leaves them and the indexes alone, and the pages holding them
  // can then never be cut off (16 of 90 days at 10M kept ~78 MB each).
  await sql.unsafe(`vacuum (index_cleanup on) ${partition}`).catch(later);
  await sql.unsafe(`reindex table concurrently ${partition}`).catch(later);
}
