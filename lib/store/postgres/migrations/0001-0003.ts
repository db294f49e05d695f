// Schema versions 1–3: the events table, then daily partitions, the dedupe table and rollups.
// Part of MIGRATIONS (./index.ts), in version order.
import { PARTITION_LOCK } from './locks.ts';
import type { Migration } from './runner.ts';

export const MIGRATIONS_1_TO_3: readonly Migration[] = [
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
];
