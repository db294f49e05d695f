// Versioned schema of the PostgreSQL store. A migration is never edited once released: changes are
// new entries. Applied in order at start, inside one transaction holding an advisory lock, so
// several instances starting at once apply each version exactly once.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Key of the transaction-level advisory lock that serialises migrations (any fixed bigint). */
export const MIGRATION_LOCK = 0x5761_7463_6874_6f;
/** Key of the advisory lock under which instances create and drop partitions. */
export const PARTITION_LOCK = 0x5761_7463_6870_74;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'events and users',
    // A plain heap table with a BRIN index on received_at rather than declarative partitioning:
    // the idempotency key (owner, id) must be unique across all time, and PostgreSQL cannot enforce
    // a unique index on a partitioned table unless it contains the partition key, so partitions
    // would need a second table of ids kept in step, and partitions created ahead and dropped by
    // some scheduler across instances. Measured (BENCHMARKS.md): reads the same, partitions ~10%
    // faster to insert and far cheaper to expire a day; revisit when retention deletes grow heavy.
    // Rows arrive in received_at order, so the BRIN index stays tiny and precise.
    //
    // Columns of the stored shape (docs/api.md#stored-shape) plus the numbers the statistics need,
    // extracted once at insert by the same functions computeStats uses (route_key, duration, ttfb,
    // rating), so stats never parse JSON.
    // `metadata` is the whole stored event; `raw` keeps its exact JSON text only when jsonb cannot
    // hold it (NUL characters, lone surrogates). `seq` is the insertion order every read sorts by.
    // Per-user indexes are partial (user_id is not null): unowned events are never read by user.
    sql: `
      create table watchtower_events (
        seq bigint generated always as identity primary key,
        id text not null,
        user_id text,
        type text not null,
        "timestamp" timestamptz,
        received_at timestamptz not null,
        session_id text,
        app_version text,
        page_url text,
        source text,
        message text,
        severity text,
        route_key text,
        duration double precision,
        ttfb double precision,
        rating smallint,
        metadata jsonb not null,
        raw text
      );
      create unique index watchtower_events_owner_id on watchtower_events ((coalesce(user_id, '')), id);
      create index watchtower_events_user_seq on watchtower_events (user_id, seq) where user_id is not null;
      create index watchtower_events_user_type on watchtower_events (user_id, type, seq) where user_id is not null;
      create index watchtower_events_user_version on watchtower_events (user_id, app_version, seq) where user_id is not null;
      create index watchtower_events_user_session on watchtower_events (user_id, session_id) where user_id is not null;
      create index watchtower_events_user_received on watchtower_events (user_id, received_at) include (session_id) where user_id is not null;
      create index watchtower_events_user_route on watchtower_events (user_id, route_key, seq) where user_id is not null and duration is not null;
      create index watchtower_events_received_brin on watchtower_events using brin (received_at);

      create table watchtower_users (
        idp_user_id text primary key,
        email text not null,
        display_name text not null,
        last_seen_at timestamptz not null
      );
    `,
  },
  {
    version: 2,
    name: 'feedback rating index',
    // Without it the feedback breakdown scanned the whole table (290 ms for a user with 150k
    // events in a trial). A plain CREATE INDEX blocks inserts while it builds: CONCURRENTLY cannot run
    // inside the migration's transaction, and the index is small (feedback events only).
    sql: `
      create index if not exists watchtower_events_user_rating on watchtower_events (user_id, rating)
        where user_id is not null and rating is not null;
    `,
  },
  {
    version: 3,
    name: 'daily partitions, dedupe table and rollups',
    // The events table becomes partitioned by receive day, so that retention drops a day's
    // partition instead of deleting rows that then wait for VACUUM; statistics come from rollups
    // maintained by the insert instead of scans of raw rows. Every event of the version 2 table is
    // copied, keeping its seq (cursors handed out stay valid), and rolled up, in this migration's
    // one transaction.
    //
    // - watchtower_events: partitioned by range (received_at), one partition per UTC day, named
    //   watchtower_events_p<day number>. Only the columns reads filter on and the statistics'
    //   edges need; `metadata` (and `raw`, see version 1) is the event. seq comes from a sequence:
    //   it is the insertion order, unique, but no longer a primary key (PostgreSQL cannot enforce
    //   uniqueness on a partitioned table without the partition key); a BRIN index finds the rows a
    //   NOTIFY announces.
    // - watchtower_event_ids: (owner, id) → the day of the copy stored. Its primary key is what
    //   makes an insert idempotent across partitions; retention deletes the ids of dropped days,
    //   so it holds one row per retained event (a BRIN index on day finds them).
    // - watchtower_rollups: additive counters per (user, scope, hour) (lib/rollup/counters.ts);
    //   scope '' is all the user's events, '#' + project id one project's.
    //   watchtower_rollup_sessions / watchtower_day_sessions: the distinct sessions of each hour /
    //   day, whose counts the inserts add to the counters. All three are partitioned by day too,
    //   and dropped with the events of that day (by the store: DETACH ... CONCURRENTLY cannot run
    //   in a function).
    sql: `
      create sequence watchtower_events_seq as bigint;
      alter table watchtower_events rename to watchtower_events_v2;
      create table watchtower_events (
        seq bigint not null default nextval('watchtower_events_seq'),
        user_id text,
        project_id text,
        type text not null,
        received_at timestamptz not null,
        session_id text,
        app_version text,
        route_key text,
        duration double precision,
        rating smallint,
        metadata jsonb not null,
        raw text
      ) partition by range (received_at);
      alter sequence watchtower_events_seq owned by watchtower_events.seq;
      create index watchtower_events_by_user on watchtower_events (user_id, seq) where user_id is not null;
      create index watchtower_events_by_type on watchtower_events (user_id, type, seq) where user_id is not null;
      create index watchtower_events_by_time on watchtower_events (user_id, received_at) include (session_id) where user_id is not null;
      create index watchtower_events_by_route on watchtower_events (user_id, route_key, seq) where user_id is not null and route_key is not null;
      create index watchtower_events_by_seq on watchtower_events using brin (seq);

      create table watchtower_event_ids (
        owner text not null,
        id text not null,
        day integer not null,
        primary key (owner, id)
      );
      create index watchtower_event_ids_day on watchtower_event_ids using brin (day);

      create table watchtower_rollups (
        user_id text not null,
        scope text not null,
        hour integer not null,
        kind "char" not null,
        key text not null,
        ms double precision not null,
        n bigint not null,
        micros double precision not null,
        primary key (user_id, scope, hour, kind, key, ms)
      ) partition by range (hour);
      create table watchtower_rollup_sessions (
        user_id text not null, scope text not null, hour integer not null, session text not null,
        primary key (user_id, scope, hour, session)
      ) partition by range (hour);
      create table watchtower_day_sessions (
        user_id text not null, scope text not null, day integer not null, session text not null,
        primary key (user_id, scope, day, session)
      ) partition by range (day);

      -- Creates the partitions of days first..last that do not exist yet, for all four tables.
      create function watchtower_ensure_partitions(first_day integer, last_day integer) returns void
      language plpgsql as $fn$
      declare d integer;
      begin
        perform pg_advisory_xact_lock(${PARTITION_LOCK});
        for d in first_day..last_day loop
          continue when to_regclass('watchtower_events_p' || d) is not null;
          execute format('create table %I partition of watchtower_events for values from (%L) to (%L)',
            'watchtower_events_p' || d, to_timestamp(d::float8 * 86400), to_timestamp((d + 1)::float8 * 86400));
          execute format('create table %I partition of watchtower_rollups for values from (%s) to (%s)',
            'watchtower_rollups_p' || d, d * 24, d * 24 + 24);
          execute format('create table %I partition of watchtower_rollup_sessions for values from (%s) to (%s)',
            'watchtower_rollup_sessions_p' || d, d * 24, d * 24 + 24);
          execute format('create table %I partition of watchtower_day_sessions for values from (%s) to (%s)',
            'watchtower_day_sessions_p' || d, d, d + 1);
        end loop;
      end
      $fn$;

      -- Partitions for every day of the copied events, and for today and the next two.
      select watchtower_ensure_partitions(least(today, coalesce(first_day, today)), greatest(today, coalesce(last_day, today)) + 2)
      from (select floor(extract(epoch from now()) / 86400)::integer as today,
                   floor(extract(epoch from min(received_at)) / 86400)::integer as first_day,
                   floor(extract(epoch from max(received_at)) / 86400)::integer as last_day
            from watchtower_events_v2) t;
      insert into watchtower_events (seq, user_id, project_id, type, received_at, session_id, app_version,
                                     route_key, duration, rating, metadata, raw)
        select seq, user_id, metadata->>'projectId', type, received_at, session_id, app_version,
               route_key, duration, rating, metadata, raw
        from watchtower_events_v2 order by seq;
      insert into watchtower_event_ids (owner, id, day)
        select coalesce(user_id, ''), id, floor(extract(epoch from received_at) / 86400)::integer from watchtower_events_v2;
      select setval('watchtower_events_seq', coalesce((select max(seq) from watchtower_events_v2), 0) + 1, false);

      -- The rollups of the copied events, counted as lib/rollup/counters.ts counts them: whole
      -- ms and µs round half up (Math.round), errors without a version under 'unknown'.
      create temporary table wt_scoped on commit drop as
        select e.user_id, s.scope, floor(extract(epoch from e.received_at) / 3600)::integer as hour,
               e.type, e.app_version, e.session_id, e.route_key, e.duration, e.rating
        from watchtower_events_v2 e
        cross join lateral (values (''), ('#' || (e.metadata->>'projectId'))) s(scope)
        where e.user_id is not null and s.scope is not null;
      insert into watchtower_rollup_sessions
        select distinct user_id, scope, hour, session_id from wt_scoped where session_id is not null;
      insert into watchtower_day_sessions
        select distinct user_id, scope, hour / 24, session_id from wt_scoped where session_id is not null;
      insert into watchtower_rollups (user_id, scope, hour, kind, key, ms, n, micros)
        select user_id, scope, hour, 't', type, 0, count(*), 0 from wt_scoped group by 1, 2, 3, 5
        union all
        select user_id, scope, hour, 'v', coalesce(app_version, 'unknown'), 0, count(*), 0 from wt_scoped
          where type = 'error' group by 1, 2, 3, 5
        union all
        select user_id, scope, hour, 'f', rating::text, 0, count(*), 0 from wt_scoped
          where rating is not null group by 1, 2, 3, 5
        union all
        select user_id, scope, hour, 'd', route_key, floor(duration + 0.5), count(*),
               sum(greatest(-9007199254740991, least(9007199254740991, floor(duration * 1000 + 0.5))))
          from wt_scoped where duration is not null group by 1, 2, 3, 5, 6
        union all
        select user_id, scope, hour, 's', '', 0, count(*), 0 from watchtower_rollup_sessions group by 1, 2, 3
        union all
        select user_id, scope, day * 24, 'S', '', 0, count(*), 0 from watchtower_day_sessions group by 1, 2, 3;
      drop table watchtower_events_v2;
    `,
  },
  {
    version: 4,
    name: 'compacted rollup days',
    // A closed day's rollups of one user and scope, compacted (lib/store/postgres-compaction.ts)
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
    // out could hold a row of their answer (see lib/store/postgres.ts, readByDays).
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
    // days' partitions (lib/store/postgres-compaction.ts). Null: not compacted, or compacted
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
    // the batch with the statement that checks event by event (lib/store/postgres.ts).
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
  {
    version: 10,
    name: 'dedupe keys of time-ordered ids begin with the id\'s time',
    // The hashed keys of version 9 are spread evenly over their index, so every insert reads and
    // dirties a random page of it: at 10M events the index (~50 B per event) is far larger than
    // PostgreSQL's default shared buffers, and ingest into that database took half as much
    // PostgreSQL CPU per event again as into a fresh one (BENCHMARKS.md). Ids the SDK and the
    // service make are lowercase UUIDv7, whose first 48 bits are the time they were made: their key now
    // begins with those 48 bits, followed by 80 bits of the same SHA-256 of owner, NUL, id. New
    // ids then share the right-hand pages of the index. A retry sends the same id, so it makes
    // the same key; two different ids of an owner would have to begin with the same millisecond
    // and collide on 80 bits. Other ids keep the 128-bit hash. Stored keys are made again from
    // the events (each event's id is in its text).
    sql: `
      -- A lowercase UUIDv7 (as the SDK and the service write them): its 12 hex digits of time,
      -- checked by plain string functions (a regular expression took 3 µs an id), then 10 bytes of
      -- the hash. Declared stable, as convert_to is: an immutable SQL function calling a stable
      -- one is not inlined, and the call cost 4 µs an id.
      create or replace function watchtower_event_key(owner text, id text) returns uuid
        language sql stable parallel safe
        return encode(case
          when substr(id, 9, 1) = '-' and substr(id, 14, 2) = '-7'
               and translate(substr(id, 1, 8) || substr(id, 10, 4), '0123456789abcdef', '') = ''
            then decode(substr(id, 1, 8) || substr(id, 10, 4), 'hex')
                 || substr(sha256(convert_to(owner, 'UTF8') || '\\x00'::bytea || convert_to(id, 'UTF8')), 1, 10)
          else substr(sha256(convert_to(owner, 'UTF8') || '\\x00'::bytea || convert_to(id, 'UTF8')), 1, 16)
        end, 'hex')::uuid;
      alter table watchtower_event_ids drop constraint watchtower_event_ids_pkey;
      truncate watchtower_event_ids;
      -- The id is the text's first key (JSON.stringify writes it first; jsonb, which version 8
      -- stored, orders keys by length), taken by a pattern and unescaped alone: parsing the whole
      -- text as json fails on the escaped NUL characters some events hold.
      insert into watchtower_event_ids
        select watchtower_event_key(coalesce(user_id, ''), coalesce(
                 ('"' || substring(event from '^\\{"id": ?"((?:[^"\\\\]|\\\\.)*)"') || '"')::json #>> '{}',
                 event::json->>'id')),
               floor(extract(epoch from received_at) / 86400)::integer
        from watchtower_events;
      alter table watchtower_event_ids add primary key (key);
    `,
  },
  {
    version: 11,
    name: 'closed days\' events in compressed blocks',
    // A row of watchtower_events costs ~700 bytes of heap and ~165 of indexes for ~530 bytes of
    // JSON, and PostgreSQL compresses a value only once a row passes ~2 KB. Once a day is closed
    // and its rollups compacted, its rows are moved, per owner, into blocks of up to 1,000 events
    // (lib/store/postgres-compaction.ts, blockDay): each column an array, which PostgreSQL then
    // compresses, ~110 bytes per event in all (BENCHMARKS.md). A block holds every column of the
    // rows besides the texts, so that reads filter blocks as they filter rows.
    // Not partitioned: a few rows per owner and day; retention deletes by day. The day's
    // `moved` counts its events in blocks, the rest being rows (late inserts stay rows until the
    // next compaction moves them too).
    sql: `
      create table watchtower_event_blocks (
        user_id text not null, -- the owner; '' for unowned events
        day integer not null,
        first_seq bigint not null,
        last_seq bigint not null,
        first_received timestamptz not null,
        last_received timestamptz not null,
        events integer not null,
        seqs bigint[] not null,
        received timestamptz[] not null,
        types text[] not null,
        sessions text[] not null,
        versions text[] not null,
        projects text[] not null,
        routes text[] not null,
        durations float8[] not null,
        timestamps text[] not null,
        ttfbs float8[] not null,
        texts text[] not null,
        primary key (user_id, day, first_seq)
      );
      alter table watchtower_event_days add column moved bigint not null default 0;
    `,
  },
  {
    version: 12,
    name: 'issue feed',
    // Issue processing reads error events of identified owners across owners by seq, up to the
    // safe horizon (lib/store/postgres-issue-feed.ts): a partial index of those rows by seq (an
    // insert adds an entry for its error rows only), and the blocks by their range of seqs, as a
    // feed that fell behind a compaction finds its errors in them. One owner's errors are read
    // through the (user_id, type, seq) index. The index is built on every partition, blocking
    // inserts while it is: closed days' partitions are empty (their events are blocks), so it
    // reads the open days' rows.
    sql: `
      create index watchtower_events_errors on watchtower_events (seq) where type = 'error' and user_id is not null;
      create index watchtower_event_blocks_seqs on watchtower_event_blocks using gist (int8range(first_seq, last_seq, '[]'))
        where user_id <> '';
    `,
  },
  {
    version: 13,
    name: 'issue lease',
    // Which instance groups issues, until when by the database's clock (Store.issueLease,
    // lib/store/postgres-issue-feed.ts): one row per lease, taken or renewed by one statement.
    sql: `
      create table watchtower_leases (
        name text primary key,
        holder text not null,
        expires timestamptz not null
      );
    `,
  },
  {
    version: 14,
    name: 'folds of busy days, breakdown sessions in compacted days',
    // A day's counter rows and breakdown sessions are folded into immutable rows of
    // watchtower_rollup_days while the day still takes events, whenever they have grown (a busy
    // hour holds one counter row per route and distinct duration, and a session set per name), and
    // once more when it closes (lib/store/postgres-compaction.ts). Each fold of a user, scope and
    // day has the next number; two instances folding the same rows at once both try the same
    // number, and only the one whose row is stored subtracts what it folded.
    // watchtower_event_days.folded: the owner's day was compacted by this version, which moves
    // the breakdown sessions into the day's rows, so that statistics read that day's session
    // rows only if it took events since (days compacted before keep their rows, and are read
    // as before).
    sql: `
      alter table watchtower_rollup_days add column fold integer not null default 0;
      alter table watchtower_rollup_days drop constraint watchtower_rollup_days_pkey;
      alter table watchtower_rollup_days add primary key (user_id, scope, day, fold);
      alter table watchtower_event_days add column folded boolean not null default false;
    `,
  },
  {
    version: 15,
    name: 'sessions last seen',
    // Each owner's session's latest receive time, per project ('' without one): statistics count
    // the sessions active in the last minutes from here rather than from every event received
    // in them (after a burst, hundreds of thousands). The insert statement keeps it; hourly
    // maintenance deletes what is a day old. Filled from the last day's rows.
    sql: `
      create table watchtower_sessions_seen (
        user_id text not null,
        project_id text not null,
        session_id text not null,
        last_received timestamptz not null,
        primary key (user_id, project_id, session_id)
      );
      create index watchtower_sessions_seen_last on watchtower_sessions_seen (user_id, last_received);
      insert into watchtower_sessions_seen (user_id, project_id, session_id, last_received)
        select user_id, coalesce(project_id, ''), session_id, max(received_at) from watchtower_events
        where user_id is not null and session_id is not null and received_at > now() - interval '1 day'
        group by 1, 2, 3;
    `,
  },
  {
    version: 16,
    name: 'latest points of closed days',
    // Per owner, scope ('' or '#' and the project), closed day and route: its latest latency points
    // (at most LATENCY_POINTS, newest first) and the range of their seqs, written when the day's
    // rows move into blocks (blockDay), so that statistics find a route's latest points without
    // unpacking every block that could hold them (a rare route's 100 points can be months back).
    // watchtower_event_days.pointed: the day's moved count that these rows cover; a day whose
    // events are all moved and pointed is read here (days moved before this version are not).
    sql: `
      create table watchtower_day_points (
        user_id text not null,
        scope text not null,
        day integer not null,
        route text not null,
        n integer not null,
        first_seq bigint not null,
        last_seq bigint not null,
        seqs bigint[] not null,
        durations float8[] not null,
        timestamps text[] not null,
        ttfbs float8[] not null,
        primary key (user_id, scope, day, route)
      );
      alter table watchtower_event_days add column pointed bigint;
    `,
  },
  {
    version: 17,
    name: 'rollups of blocks',
    // A block's events rolled up (the hour parts of lib/rollup/codec.ts, of all the owner's events
    // in it), written in the background after the block (rollupBlocks): statistics whose range
    // starts or ends inside a busy closed hour take the blocks wholly inside that partial hour as
    // these parts, and unpack only the one or two blocks its edge cuts. Null: not rolled up yet.
    sql: `
      alter table watchtower_event_blocks add column rollup bytea;
    `,
  },
];
