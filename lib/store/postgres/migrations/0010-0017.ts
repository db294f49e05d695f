// Schema versions 10–17: time-ordered dedupe keys, blocks of closed days, the issue feed, folds,
// sessions seen, kept points, block rollups.
// Part of MIGRATIONS (./index.ts), in version order.
import type { Migration } from './runner.ts';

export const MIGRATIONS_10_TO_17: readonly Migration[] = [
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
    // (lib/store/postgres/maintenance/compaction.ts, blockDay): each column an array, which PostgreSQL then
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
    // safe horizon (lib/store/postgres/issue-feed.ts): a partial index of those rows by seq (an
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
    // lib/store/postgres/issue-feed.ts): one row per lease, taken or renewed by one statement.
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
    // once more when it closes (lib/store/postgres/maintenance/compaction.ts). Each fold of a user, scope and
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
