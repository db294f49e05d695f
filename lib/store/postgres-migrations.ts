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
];
