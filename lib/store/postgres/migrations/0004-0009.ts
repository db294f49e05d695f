// Schema versions 4–9: compacted days, breakdown sessions, user days, batch inserts, events as text.
// Part of MIGRATIONS (./index.ts), in version order.
import { PARTITION_LOCK } from './locks.ts';
import type { Migration } from './runner.ts';

export const MIGRATIONS_4_TO_9: readonly Migration[] = [
  {
    version: 4,
    name: 'compacted rollup days',
    // A closed day's rollups of one user and scope, compacted (lib/store/postgres/maintenance/compaction.ts)
    // from its counter rows into one immutable row: `parts` holds the day's hour parts in the
    // binary form of lib/rollup/codec.ts. Not partitioned: one small row per user, scope and day;
    // retention deletes by day.
    sql: `
      create table watchtower_rollup_days (
        user_id text not null,
        scope text not null,
        day integer not null,
        parts bytea not null,
        primary key (user_id, scope, day)
      );
    `,
  },
  {
    version: 5,
    name: 'breakdown sessions',
    // Breakdowns (docs/api.md#breakdowns) count events per name as counter rows of
    // watchtower_rollups (kinds of lib/rollup/counters.ts DIM_KINDS and VITAL_KINDS); the distinct
    // sessions of each name are a set per hour, partitioned by day like the other session sets.
    // Events stored before this version have no such counters: watchtower_breakdowns_from holds
    // the first hour after the newest of them, and a range starting earlier is answered without
    // breakdowns rather than with partial ones.
    sql: `
      create table watchtower_breakdown_sessions (
        user_id text not null, scope text not null, hour integer not null, kind "char" not null,
        key text not null, session text not null,
        primary key (user_id, scope, hour, kind, key, session)
      ) partition by range (hour);
      create table watchtower_breakdowns_from (hour integer not null);
      insert into watchtower_breakdowns_from
        select coalesce(floor(extract(epoch from max(received_at)) / 3600)::integer + 1, -2147483648) from watchtower_events;

      create or replace function watchtower_ensure_partitions(first_day integer, last_day integer) returns void
      language plpgsql as $fn$
      declare d integer;
      begin
        perform pg_advisory_xact_lock(${PARTITION_LOCK});
        for d in first_day..last_day loop
          if to_regclass('watchtower_events_p' || d) is null then
            execute format('create table %I partition of watchtower_events for values from (%L) to (%L)',
              'watchtower_events_p' || d, to_timestamp(d::float8 * 86400), to_timestamp((d + 1)::float8 * 86400));
            execute format('create table %I partition of watchtower_rollups for values from (%s) to (%s)',
              'watchtower_rollups_p' || d, d * 24, d * 24 + 24);
            execute format('create table %I partition of watchtower_rollup_sessions for values from (%s) to (%s)',
              'watchtower_rollup_sessions_p' || d, d * 24, d * 24 + 24);
            execute format('create table %I partition of watchtower_day_sessions for values from (%s) to (%s)',
              'watchtower_day_sessions_p' || d, d, d + 1);
          end if;
          if to_regclass('watchtower_breakdown_sessions_p' || d) is null then
            execute format('create table %I partition of watchtower_breakdown_sessions for values from (%s) to (%s)',
              'watchtower_breakdown_sessions_p' || d, d * 24, d * 24 + 24);
          end if;
        end loop;
      end
      $fn$;

      -- The same days as the events.
      select watchtower_ensure_partitions(substr(c.relname, length('watchtower_events') + 3)::integer,
                                          substr(c.relname, length('watchtower_events') + 3)::integer)
      from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
      where p.relname = 'watchtower_events' and c.relname ~ '_p[0-9]+$';
      `,
  },
  {
    version: 6,
    name: 'sequence range of each user day',
    // Per owner ('' for unowned events, as in watchtower_event_ids) and receive day, the lowest and
    // highest seq stored and how many events (health's count adds them up). Reads that
    // go by seq (pages, export, the latest events of statistics) look here first to know which
    // days can hold the rows they want, and then bound their query by receive time, so that the
    // planner reads those days' partitions only instead of planning and probing every day kept.
    // Maintained by the insert statement; retention deletes the rows of the days it drops.
    // Seq is nearly, not exactly, in receive order (instances stamp receive times before they
    // take a seq; clocks step back), so days' ranges may overlap: readers check that no day left
    // out could hold a row of their answer (see lib/store/postgres/reads/by-days.ts, readByDays).
    sql: `
      create table watchtower_event_days (
        user_id text not null, -- the owner; '' for unowned events
        day integer not null,
        first_seq bigint not null,
        last_seq bigint not null,
        events bigint not null,
        primary key (user_id, day)
      );
      insert into watchtower_event_days (user_id, day, first_seq, last_seq, events)
        select coalesce(user_id, ''), floor(extract(epoch from received_at) / 86400)::integer, min(seq), max(seq), count(*)
        from watchtower_events group by 1, 2;
    `,
  },
  {
    version: 7,
    name: 'compacted user days',
    // Statistics used to read the counter rows of every day in range, which planned and scanned
    // every daily partition of watchtower_rollups, although a compacted day has counter rows
    // left (besides the session counters) only if an insert of that day committed after its
    // compaction read them. `compacted` is the owner's `events` of the day as a compaction that
    // stored rows of that owner saw them (the smallest, if several did): while `events` still
    // equals it, the day has no counters of that owner left, and statistics read only the other
    // days' partitions (lib/store/postgres/maintenance/compaction.ts). Null: not compacted, or compacted
    // before this version with counters left. Days compacted before this version with no
    // counters left are marked here, from this statement's snapshot (an insert committing
    // meanwhile raises `events` past the mark, so its day is still read).
    sql: `
      alter table watchtower_event_days add column compacted bigint;
      update watchtower_event_days d set compacted = s.events
      from (
        select e.user_id, e.day, e.events from watchtower_event_days e
        where exists (select 1 from watchtower_rollup_days r where r.user_id = e.user_id and r.day = e.day)
          and not exists (select 1 from watchtower_rollups c
                          where c.user_id = e.user_id and c.hour >= e.day * 24 and c.hour < e.day * 24 + 24
                            and c.kind not in ('s', 'S') and c.n > 0)
      ) s
      where d.user_id = s.user_id and d.day = s.day;
    `,
  },
  {
    version: 8,
    name: 'batch inserts',
    // The insert statement that adds a batch's rollups as summed by the instance is right only if
    // every event of the batch is new; it ends by calling this, which aborts the whole statement
    // (nothing of it is stored) when fewer ids were claimed than sent, and the store then inserts
    // the batch with the statement that checks event by event (lib/store/postgres/insert/statements.ts).
    sql: `
      create function watchtower_all_new(claimed bigint, sent bigint) returns bigint
      language plpgsql as $fn$
      begin
        if claimed <> sent then
          raise exception 'a batch insert met % id(s) stored before', sent - claimed using errcode = 'WT001';
        end if;
        return claimed;
      end
      $fn$;
    `,
  },
  {
    version: 9,
    name: 'events as text, hashed dedupe keys, receive-time index without sessions',
    // Inserts spent about half their statement parsing each event's JSON into jsonb, which no
    // read needs: reads return the event whole, and the statistics read columns. The event is now
    // its JSON text as serialised at ingest (`event`; JSON escapes the NUL characters and lone
    // surrogates jsonb refused, so `raw` goes), and the two fields the latency points read from
    // the JSON are columns of their own, set on points only (rows with a duration): `ts`, the
    // client timestamp as sent, and `ttfb`, counted as computeStats counts it (a number or null).
    // `rating` was read by no query since version 3 (feedback is counted in the rollups). Existing
    // events keep their content: jsonb's text is the same JSON, keys in jsonb's order.
    //
    // watchtower_event_ids keyed by the first 128 bits of SHA-256 of owner, NUL, id (neither can
    // hold a NUL, so the pair is unambiguous) rather than the two texts: ~45 bytes of key per
    // event instead of ~80 in the table and again in its index. The same (owner, id) is always the
    // same key, so a retried id is still stored once per owner; two different ids of an owner would
    // need a SHA-256 collision on 128 bits to be taken for one another.
    sql: `
      -- Statistics read by receive time only the raw rows of the partial hours at a range's edges
      -- and the sessions of the last minutes: few rows, whose sessions are read from the heap.
      -- The session in the index was ~40 of its ~60 bytes per event. Dropped before the rewrite
      -- below (which rebuilds every index), created after it.
      drop index watchtower_events_by_time;
      alter table watchtower_events add column ttfb double precision, add column ts text;
      update watchtower_events
        set ts = metadata->>'timestamp',
            ttfb = case when jsonb_typeof(metadata->'data'->'ttfb') = 'number' then (metadata->'data'->>'ttfb')::float8 end
        where duration is not null;
      -- One rewrite of every partition, which also drops rating's bytes and the update's dead rows.
      alter table watchtower_events drop column rating, alter column metadata type text using coalesce(raw, metadata::text);
      alter table watchtower_events drop column raw;
      alter table watchtower_events rename column metadata to event;
      create index watchtower_events_by_time on watchtower_events (user_id, received_at) where user_id is not null;

      create function watchtower_event_key(owner text, id text) returns uuid
        language sql stable parallel safe
        return encode(substr(sha256(convert_to(owner, 'UTF8') || '\\x00'::bytea || convert_to(id, 'UTF8')), 1, 16), 'hex')::uuid;
      alter table watchtower_event_ids rename to watchtower_event_ids_v8;
      create table watchtower_event_ids (key uuid not null, day integer not null);
      -- In day order, as inserts write them, so that the BRIN index on day stays precise.
      insert into watchtower_event_ids select watchtower_event_key(owner, id), day from watchtower_event_ids_v8 order by day;
      drop table watchtower_event_ids_v8;
      alter table watchtower_event_ids add primary key (key);
      create index watchtower_event_ids_day on watchtower_event_ids using brin (day);
    `,
  },
];
