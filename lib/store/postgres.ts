// The shared store: PostgreSQL, for several stateless instances behind a load balancer.
// Acknowledged = committed. Other instances' inserts reach this one through LISTEN/NOTIFY.
// See docs/architecture.md#postgresql-store.
import postgres from 'postgres';
import type { StoredEvent } from '../event.ts';
import {
  ACTIVE_WINDOW_MS, LATENCY_POINTS, RECENT_ACTIVITY, RECENT_ERRORS, SERIES_DAYS, UNKNOWN,
  breakdownCounts, computeStats, feedbackRating, pageloadDuration, resolveRange, round2, routeKey, seriesLabels,
  type LatencySummary, type ResolvedRange, type Stats,
} from '../stats.ts';
import { decodeCursor, encodeCursor, EXPORT_BATCH } from './cursor.ts';
import { isoBounds } from './filter.ts';
import { MIGRATION_LOCK, MIGRATIONS } from './postgres-migrations.ts';
import {
  StoreUnavailableError, type AppUser, type EventFilter, type EventPage, type EventQuery, type Store, type StoreHealth, type UserSync,
} from './types.ts';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:5432/database */
  url: string;
  log?: (msg: string) => void;
  /** Connections in the pool (default 10); LISTEN uses one more. */
  max?: number;
  /** Seconds to wait for a connection before a request fails with 503 (default 5). */
  connectTimeout?: number;
  /** A database operation unanswered after this long fails with 503 (default 15 s). */
  operationTimeoutMs?: number;
  /** NOTIFY channel shared by the instances of one deployment. */
  channel?: string;
}

export const DEFAULT_CHANNEL = 'watchtower_events';
/** Sequence numbers per NOTIFY: 300 × (≤ 19 digits + comma) stays under the 8000-byte payload limit. */
const NOTIFY_CHUNK = 300;
const DAY_MS = 86_400_000;
/** How often an instance checks its LISTEN connection, and how long silence means it is lost. */
const LISTEN_PING_MS = 3000;
const LISTEN_TIMEOUT_MS = 8000;
/** Insert statements running at once per instance, and the most events one statement carries. */
const MAX_INFLIGHT = 4;
const MAX_GROUP_EVENTS = 2000;

// Failures that mean "the database cannot be reached right now" rather than a bug: client-side
// connection errors, SQLSTATE class 08 (connection exception), 57P01–57P03 (terminated, crash,
// starting up), 53300 (too many connections).
const UNAVAILABLE_CODES = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', '53300',
]);

export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = String((err as { code?: unknown }).code ?? '');
  return UNAVAILABLE_CODES.has(code) || code.startsWith('08');
}

// PostgreSQL text cannot hold NUL; the columns (not the event, see `raw`) carry U+FFFD instead,
// and filters are mapped the same way so they still match.
const col = (s: string | null): string | null => (s !== null && s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s);
// JSON escapes jsonb refuses: \u0000 and unpaired surrogates (JSON.stringify escapes only those).
const JSONB_UNSAFE = /\\u0000|\\ud[89a-f][0-9a-f]{2}/gi;

/** A timestamptz PostgreSQL accepts, or null (the exact string stays in the event itself). */
function timestampColumn(iso: string): string | null {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return null;
  const year = new Date(t).getUTCFullYear();
  return year >= 1 && year <= 9999 ? new Date(t).toISOString() : null;
}

/**
 * A PostgreSQL array literal, sent as one bound text parameter and cast in SQL (::text[], ::float8[]).
 * Elements are always double-quoted with \\ and " escaped, so no value can change the array's shape.
 */
export function pgArray(values: readonly (string | number | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i) out += ',';
    out += v === null ? 'NULL' : typeof v === 'number' ? String(v) : '"' + v.replace(/[\\"]/g, '\\$&') + '"';
  }
  return out + '}';
}

interface Row { metadata: StoredEvent; raw: string | null }
/** A row read for paging: seq is a bigint, which postgres.js hands over as a string. */
interface SeqRow extends Row { seq: string }
const toEvent = (r: Row): StoredEvent => (r.raw !== null ? (JSON.parse(r.raw) as StoredEvent) : r.metadata);
const ownerKey = (e: Pick<StoredEvent, 'user_id' | 'id'>) => `${e.user_id ?? ''}\u0000${e.id}`;

/** The column arrays of a batch, as bound by the insert (exported for the layout benchmark). */
export function eventColumns(batch: readonly StoredEvent[]) {
  const cols = {
    id: [] as (string | null)[], user_id: [] as (string | null)[], type: [] as (string | null)[],
    ts: [] as (string | null)[], received_at: [] as string[], session_id: [] as (string | null)[],
    app_version: [] as (string | null)[], page_url: [] as (string | null)[], source: [] as (string | null)[],
    message: [] as (string | null)[], severity: [] as (string | null)[], route_key: [] as (string | null)[],
    duration: [] as (number | null)[], ttfb: [] as (number | null)[], rating: [] as (number | null)[],
    metadata: [] as string[], raw: [] as (string | null)[],
  };
  for (const e of batch) {
    const duration = pageloadDuration(e);
    const ttfb = e.data.ttfb;
    const json = JSON.stringify(e);
    const unsafe = JSONB_UNSAFE.test(json);
    JSONB_UNSAFE.lastIndex = 0;
    cols.id.push(col(e.id));
    cols.user_id.push(col(e.user_id));
    cols.type.push(col(e.type));
    cols.ts.push(timestampColumn(e.timestamp));
    cols.received_at.push(e.receivedAt);
    cols.session_id.push(col(e.sessionId));
    cols.app_version.push(col(e.deployVersion));
    cols.page_url.push(col(e.page_url));
    cols.source.push(col(e.source));
    cols.message.push(col(e.message));
    cols.severity.push(col(e.severity));
    cols.route_key.push(duration === null ? null : col(routeKey(e)));
    cols.duration.push(duration);
    cols.ttfb.push(duration !== null && typeof ttfb === 'number' && Number.isFinite(ttfb) ? ttfb : null);
    cols.rating.push(feedbackRating(e));
    cols.metadata.push(unsafe ? json.replace(JSONB_UNSAFE, '\\ufffd') : json);
    cols.raw.push(unsafe ? json : null);
  }
  return cols;
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const log = options.log ?? (() => {});
  const channel = options.channel ?? DEFAULT_CHANNEL;
  const instance = crypto.randomUUID();
  const operationTimeoutMs = options.operationTimeoutMs ?? 15_000;
  const sql = postgres(options.url, {
    max: options.max ?? 10,
    connect_timeout: options.connectTimeout ?? 5,
    onnotice: () => {},
    // The array-type lookup postgres.js runs on each new connection is an un-awaited promise: a
    // connection killed during it surfaces as an unhandled rejection. Every array this store sends
    // carries an explicit cast (::text[], ::float8[]), so the lookup is not needed.
    fetch_types: false,
    connection: { application_name: 'watchtower' },
  });

  /**
   * Runs a database operation; connection failures become StoreUnavailableError (→ 503). So does an
   * operation still unanswered after operationTimeoutMs: a query can hang on a connection whose
   * server went away without a reset, and the request must not hang with it. (An insert answered
   * 503 that commits later is harmless: the client retries, and inserts are idempotent by id.)
   */
  const guard = async <T>(what: string, op: () => Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        op(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new StoreUnavailableError(`${what}: no answer from the database in ${operationTimeoutMs} ms`)), operationTimeoutMs);
        }),
      ]);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      if (isUnavailable(err)) {
        throw new StoreUnavailableError(undefined, { cause: err });
      }
      throw err instanceof Error ? Object.assign(err, { message: `${what}: ${err.message}` }) : err;
    } finally {
      clearTimeout(timer);
    }
  };

  try {
    await migrate(sql, log);
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw err;
  }

  let listener: ((events: StoredEvent[]) => void) | null = null;
  let delivery: Promise<void> = Promise.resolve();
  let closed = false;

  const loadBySeq = async (seqs: number[]) => {
    const rows = await sql<Row[]>`
      select metadata, raw from watchtower_events where seq = any(${pgArray(seqs)}::bigint[]) order by seq`;
    return rows.map(toEvent);
  };

  const onNotify = (payload: string) => {
    lastHeard = Date.now();
    const space = payload.indexOf(' ');
    if (space < 0 || payload.slice(0, space) === instance || !listener) return;
    const seqs = payload.slice(space + 1).split(',').map(Number).filter(Number.isSafeInteger);
    if (!seqs.length) return;
    const deliver = listener;
    // Loads run in parallel on the pool; deliveries keep the order of the notifications (commit
    // order). Live delivery is best effort, as for a subscriber that reconnects: the events are stored.
    const loading = guard('load announced events', () => loadBySeq(seqs)).catch((err: unknown) => {
      log(`could not load events announced by another instance: ${err instanceof Error ? err.message : err}`);
      return [];
    });
    delivery = delivery
      .then(() => loading)
      .then((events) => void (events.length && deliver(events)))
      .catch((err: unknown) => log(`live delivery failed: ${err instanceof Error ? err.message : err}`));
  };

  // postgres.js re-issues LISTEN after its connection drops, but gives up silently if that attempt
  // fails too (the database still down), and a later listen() on the same client can wait on the
  // failed attempt. So each instance NOTIFYs itself every few seconds; when its own pings stop
  // arriving, it throws the LISTEN client away and listens again on a new one.
  let listenSql: postgres.Sql | null = null;
  let starting = false;
  let lastHeard = Date.now();
  const startListening = async () => {
    if (starting || closed) return;
    starting = true;
    const old = listenSql;
    listenSql = null;
    if (old) void old.end({ timeout: 1 }).catch(() => {});
    const fresh = postgres(options.url, { max: 1, connect_timeout: options.connectTimeout ?? 5, onnotice: () => {}, fetch_types: false });
    listenSql = fresh;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        fresh.listen(channel, onNotify, () => {
          lastHeard = Date.now();
          log(`listening for other instances' events on "${channel}"`);
        }),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), LISTEN_TIMEOUT_MS))),
      ]);
    } catch (err) {
      log(`LISTEN failed (${err instanceof Error ? err.message : err}); retrying`);
    } finally {
      clearTimeout(timer);
      starting = false;
    }
    if (closed) await fresh.end({ timeout: 1 }).catch(() => {});
  };
  let pinger: ReturnType<typeof setInterval> | null = null;
  const ping = () => {
    if (closed) return;
    if (Date.now() - lastHeard > LISTEN_TIMEOUT_MS) {
      lastHeard = Date.now();
      void startListening();
    }
    sql`select pg_notify(${channel}, ${instance + ' ping'})`.catch(() => {});
  };

  /** Inserts distinct events in one statement; resolves to the keys that were newly stored. */
  const writeBatch = async (batch: StoredEvent[]): Promise<Set<string>> => {
    const cols = eventColumns(batch);
    // Two statements inserting the same (owner, id)s in different orders (a client retrying a
    // batch on another instance) can deadlock; PostgreSQL aborts one whole statement, which is
    // then simply run again. Rows keep batch order (it is the read order), so sorting is no cure.
    for (let attempt = 1; ; attempt++) {
      try {
        return await insertStatement(cols);
      } catch (err) {
        if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
        log(`insert deadlocked with another instance's; retrying (${attempt})`);
      }
    }
  };
  const insertStatement = async (cols: ReturnType<typeof eventColumns>): Promise<Set<string>> => {
    // One statement: the insert and its NOTIFYs commit together (a notification is sent only
    // for committed rows), and rows already stored for the same owner are skipped.
    const rows = await guard('insert', () => sql<{ id: string; user_id: string | null }[]>`
      with ins as (
        insert into watchtower_events
          (id, user_id, type, "timestamp", received_at, session_id, app_version, page_url, source,
           message, severity, route_key, duration, ttfb, rating, metadata, raw)
        select id, user_id, type, ts::timestamptz, received_at::timestamptz, session_id, app_version, page_url,
               source, message, severity, route_key, duration, ttfb, rating, metadata::jsonb, raw
        from unnest(
          ${pgArray(cols.id)}::text[], ${pgArray(cols.user_id)}::text[], ${pgArray(cols.type)}::text[], ${pgArray(cols.ts)}::text[],
          ${pgArray(cols.received_at)}::text[], ${pgArray(cols.session_id)}::text[], ${pgArray(cols.app_version)}::text[],
          ${pgArray(cols.page_url)}::text[], ${pgArray(cols.source)}::text[], ${pgArray(cols.message)}::text[], ${pgArray(cols.severity)}::text[],
          ${pgArray(cols.route_key)}::text[], ${pgArray(cols.duration)}::float8[], ${pgArray(cols.ttfb)}::float8[],
          ${pgArray(cols.rating)}::int2[], ${pgArray(cols.metadata)}::text[], ${pgArray(cols.raw)}::text[]
        ) as t(id, user_id, type, ts, received_at, session_id, app_version, page_url, source,
               message, severity, route_key, duration, ttfb, rating, metadata, raw)
        on conflict ((coalesce(user_id, '')), id) do nothing
        returning seq, id, user_id
      ), notified as (
        select pg_notify(${channel}, ${instance} || ' ' || string_agg(seq::text, ',' order by seq))
        from (select seq, (row_number() over (order by seq) - 1) / ${NOTIFY_CHUNK} as chunk from ins) c
        group by chunk
      )
      select id, user_id, (select count(*) from notified) as notifications from ins`);
    return new Set(rows.map((r) => `${r.user_id ?? ''}\u0000${r.id}`));
  };

  // Group commit: requests that arrive while MAX_INFLIGHT statements are running are written
  // together by the next one, so a burst of small batches costs a few statements and fsyncs,
  // not one each. Each caller still gets exactly its own newly stored events, and a failed
  // statement rejects every caller in its group (nothing of theirs was committed).
  const pending: { events: StoredEvent[]; resolve: (stored: StoredEvent[]) => void; reject: (err: unknown) => void }[] = [];
  let inflight = 0;
  const pump = () => {
    while (inflight < MAX_INFLIGHT && pending.length) {
      const group = [pending.shift()!];
      let size = group[0].events.length;
      while (pending.length && size + pending[0].events.length <= MAX_GROUP_EVENTS) {
        size += pending[0].events.length;
        group.push(pending.shift()!);
      }
      inflight++;
      void writeGroup(group).finally(() => {
        inflight--;
        pump();
      });
    }
  };
  const writeGroup = async (group: typeof pending) => {
    // The first occurrence of an (owner, id) wins, within a batch and across the group, in order.
    const first = new Map<string, StoredEvent>();
    for (const { events } of group) for (const e of events) if (!first.has(ownerKey(e))) first.set(ownerKey(e), e);
    let fresh: Set<string>;
    try {
      fresh = await writeBatch([...first.values()]);
    } catch (err) {
      for (const g of group) g.reject(err);
      return;
    }
    for (const g of group) {
      g.resolve(g.events.filter((e) => first.get(ownerKey(e)) === e && fresh.has(`${col(e.user_id) ?? ''}\u0000${col(e.id)}`)));
    }
  };

  /** The WHERE conditions of a filter (the user first, so the per-user indexes serve it). */
  const filterSql = (f: EventFilter) => {
    const { since, until } = isoBounds(f);
    return sql`user_id = ${col(f.userId)}
      ${f.type !== undefined ? sql`and type = ${col(f.type)}` : sql``}
      ${f.version !== undefined ? sql`and app_version = ${col(f.version)}` : sql``}
      ${since !== undefined ? sql`and received_at >= ${since}::timestamptz` : sql``}
      ${until !== undefined ? sql`and received_at < ${until}::timestamptz` : sql``}`;
  };

  const store: Store = {
    persisted: true,
    insert(events) {
      if (!events.length) return Promise.resolve([]);
      return new Promise<StoredEvent[]>((resolve, reject) => {
        pending.push({ events, resolve, reject });
        pump();
      });
    },

    // Keyset pagination on seq, the insertion order, through the per-user (type | version, seq)
    // indexes: a page costs the same however deep it is, with no server-side cursor (and so no
    // reserved connection, see statsOf) held between pages.
    async list(q: EventQuery): Promise<EventPage> {
      const beforeSeq = q.before === undefined ? undefined : decodeCursor(q.before);
      const limit = Math.max(0, Math.floor(q.limit));
      if (limit === 0) return { events: [], nextCursor: null };
      const rows = await guard('list', () => sql<SeqRow[]>`
        select seq, metadata, raw from watchtower_events
        where ${filterSql(q)}
          ${beforeSeq !== undefined ? sql`and seq < ${beforeSeq}` : sql``}
        order by seq desc
        limit ${limit + 1}`);
      const more = rows.length > limit;
      if (more) rows.pop();
      return { events: rows.map(toEvent), nextCursor: more ? encodeCursor(Number(rows[rows.length - 1].seq)) : null };
    },

    async *export(q) {
      const { batchSize = EXPORT_BATCH, ...filter } = q;
      const limit = Math.max(1, batchSize);
      // The end is fixed first. An insert that took a lower seq and commits later can still be
      // missed, as with any read of a table being written: what the export covers is what had
      // committed when it began, give or take those in flight.
      const [{ max }] = await guard('export', () => sql<{ max: string }[]>`
        select coalesce(max(seq), 0) as max from watchtower_events where user_id = ${col(filter.userId)}`);
      let afterSeq = 0;
      for (;;) {
        const rows = await guard('export', () => sql<SeqRow[]>`
          select seq, metadata, raw from watchtower_events
          where ${filterSql(filter)} and seq > ${afterSeq} and seq <= ${max}
          order by seq
          limit ${limit}`);
        if (rows.length) yield rows.map(toEvent);
        if (rows.length < limit) return;
        afterSeq = Number(rows[rows.length - 1].seq);
      }
    },

    async stats(userId, now, range): Promise<Stats> {
      const resolved = resolveRange(range, now);
      if (resolved) return guard('stats', () => rangeStatsOf(sql, col(userId)!, now, resolved));
      return guard('stats', () => statsOf(sql, col(userId)!, now));
    },

    async upsertUser(u: UserSync, now) {
      const lastSeen = new Date(now).toISOString();
      await guard('upsertUser', () => sql`
        insert into watchtower_users (idp_user_id, email, display_name, last_seen_at)
        values (${col(u.idpUserId)}, ${col(u.email)}, ${col(u.displayName)}, ${lastSeen}::timestamptz)
        on conflict (idp_user_id) do update
          set email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`);
      return { idp_user_id: u.idpUserId, email: u.email, display_name: u.displayName, last_seen_at: lastSeen };
    },

    async getUser(idpUserId) {
      const rows = await guard('getUser', () => sql<{ idp_user_id: string; email: string; display_name: string; last_seen_at: Date }[]>`
        select idp_user_id, email, display_name, last_seen_at from watchtower_users where idp_user_id = ${col(idpUserId)}`);
      if (!rows.length) return null;
      const r = rows[0];
      const user: AppUser = { idp_user_id: r.idp_user_id, email: r.email, display_name: r.display_name, last_seen_at: r.last_seen_at.toISOString() };
      return user;
    },

    async health(): Promise<StoreHealth> {
      const [row] = await guard('health', () => sql<{ events: number; users: number; database: string; bytes: number }[]>`
        select (select count(*) from watchtower_events) as events,
               (select count(*) from watchtower_users) as users,
               current_database() as database,
               pg_database_size(current_database()) as bytes`);
      return {
        storage: 'postgres',
        eventCount: Number(row.events),
        userCount: Number(row.users),
        database: row.database,
        databaseBytes: Number(row.bytes),
        schemaVersion: MIGRATIONS[MIGRATIONS.length - 1].version,
        instance,
      };
    },

    watch(fn) {
      listener = fn;
      if (pinger) return;
      void startListening();
      pinger = setInterval(ping, LISTEN_PING_MS);
      // Never keeps a process alive on its own (Node; Deno's timers have no unref here).
      (pinger as { unref?: () => void }).unref?.();
    },

    async flush() {},

    async close() {
      closed = true;
      listener = null;
      if (pinger) clearInterval(pinger);
      await listenSql?.end({ timeout: 1 }).catch(() => {});
      await sql.end({ timeout: 5 });
    },
  };
  return store;
}

/**
 * One DO block: PL/pgSQL runs it as a single statement in its own transaction, so the advisory
 * lock is held until every pending migration is committed, and no reserved connection is needed
 * (see statsOf on why this store avoids them). Instances starting at once queue on the lock and
 * then find the versions applied.
 */
export function migrationScript(): string {
  const steps = MIGRATIONS.map((m) => {
    const tag = `$wt_${m.version}$`;
    if (m.sql.includes(tag)) throw new Error(`migration ${m.version} contains its own quote tag`);
    return `
    if not exists (select 1 from watchtower_migrations where version = ${m.version}) then
      execute ${tag}${m.sql}${tag};
      insert into watchtower_migrations (version, name) values (${m.version}, ${tag}${m.name}${tag});
    end if;`;
  });
  return `do $wt$
  begin
    perform pg_advisory_xact_lock(${MIGRATION_LOCK});
    create table if not exists watchtower_migrations (
      version integer primary key, name text not null, applied_at timestamptz not null default now());
    ${steps.join('')}
  end
  $wt$`;
}

async function migrate(sql: postgres.Sql, log: (msg: string) => void): Promise<void> {
  const versions = async () =>
    (await sql<{ v: number | null }[]>`select max(version) as v from watchtower_migrations`.catch(() => [{ v: null }]))[0].v;
  const before = await versions().catch(() => null);
  // Constant text from this repository, never client input: the one place unsafe() is used.
  await sql.unsafe(migrationScript()).simple();
  const after = await versions();
  if (after !== before) log(`database schema migrated from version ${before ?? 0} to ${after}`);
}

/**
 * Statistics within a range, as an interim: the user's rows in range, in insertion order, then
 * computeStats. Exact, but it reads and holds every event of the range, so it is slow for long
 * ranges of busy users; the PostgreSQL store's rollups will answer ranges as the memory store does.
 */
async function rangeStatsOf(sql: postgres.Sql, userId: string, now: number, range: ResolvedRange): Promise<Stats> {
  const { since, until } = isoBounds({ since: range.from, until: range.to });
  const rows = await sql<Row[]>`
    select metadata, raw from watchtower_events
    where user_id = ${userId}
      ${since !== undefined ? sql`and received_at >= ${since}::timestamptz` : sql``}
      ${until !== undefined ? sql`and received_at < ${until}::timestamptz` : sql``}
    order by seq`;
  return computeStats(rows.map(toEvent), now, range);
}

// The statistics of computeStats, in SQL, as one statement: one round trip and one consistent
// snapshot, without a transaction. (A reserved connection, which sql.begin uses, whose backend dies
// makes postgres.js 3.4.9 write to a null socket from a setImmediate and crash the process:
// porsager/postgres#1208. Single statements on pooled connections fail cleanly instead.)
async function statsOf(sql: postgres.Sql, userId: string, now: number): Promise<Stats> {
  const activeFrom = new Date(now - ACTIVE_WINDOW_MS).toISOString();
  const nowIso = new Date(now).toISOString();
  const today = Math.floor(now / DAY_MS);
  const seriesFrom = new Date((today - SERIES_DAYS + 1) * DAY_MS).toISOString();
  const seriesTo = new Date((today + 1) * DAY_MS).toISOString();

  type Pair = [string, number];
  const [row] = await sql<{
    by_type: Pair[]; by_version: Pair[]; active: number; series: [number, number, number][];
    routes: [string, number, number, number, number][]; points: [string, [number, number | null, string][]][];
    ratings: [number, number][]; errors: Row[]; recent: Row[];
  }[]>`
    select
      (select coalesce(json_agg(json_build_array(type, n)), '[]') from (
         select type, count(*) as n from watchtower_events where user_id = ${userId} group by type) t) as by_type,
      (select coalesce(json_agg(json_build_array(v, n)), '[]') from (
         select coalesce(app_version, ${UNKNOWN}) as v, count(*) as n from watchtower_events
         where user_id = ${userId} and type = 'error' group by 1) t) as by_version,
      (select count(distinct session_id)::int from watchtower_events
         where user_id = ${userId} and received_at >= ${activeFrom}::timestamptz and received_at <= ${nowIso}::timestamptz
           and session_id is not null) as active,
      -- Per day and session first (one hash aggregate), then per day: count(distinct) sorted each
      -- day's rows and took 350 ms at 150k events.
      (select coalesce(json_agg(json_build_array(day, events, sessions)), '[]') from (
         select day, sum(n)::int as events, count(session_id)::int as sessions from (
           select floor(extract(epoch from received_at) / 86400)::int as day, session_id, count(*) as n
           from watchtower_events
           where user_id = ${userId} and received_at >= ${seriesFrom}::timestamptz and received_at < ${seriesTo}::timestamptz
           group by 1, 2) per_session
         group by day) t) as series,
      -- percentile_disc is nearest rank: the first value whose cumulative share reaches p, that is
      -- rank ceil(p·n), the definition of percentile() in lib/stats.ts.
      (select coalesce(json_agg(json_build_array(route_key, n, total, p50, p95)), '[]') from (
         select route_key, count(*) as n, sum(duration) as total,
                percentile_disc(0.5) within group (order by duration) as p50,
                percentile_disc(0.95) within group (order by duration) as p95
         from watchtower_events where user_id = ${userId} and duration is not null group by route_key) t) as routes,
      (select coalesce(json_agg(json_build_array(r.route_key, p.points)), '[]')
       from (select distinct route_key from watchtower_events where user_id = ${userId} and duration is not null) r,
       lateral (
         select json_agg(json_build_array(duration, ttfb, ts) order by seq) as points
         from (select seq, duration, ttfb, metadata->>'timestamp' as ts from watchtower_events
               where user_id = ${userId} and route_key = r.route_key and duration is not null
               order by seq desc limit ${LATENCY_POINTS}) last
       ) p) as points,
      (select coalesce(json_agg(json_build_array(rating, n)), '[]') from (
         select rating, count(*) as n from watchtower_events
         where user_id = ${userId} and rating is not null group by rating) t) as ratings,
      (select coalesce(json_agg(json_build_object('metadata', metadata, 'raw', raw) order by seq desc), '[]') from (
         select seq, metadata, raw from watchtower_events where user_id = ${userId} and type = 'error'
         order by seq desc limit ${RECENT_ERRORS}) t) as errors,
      (select coalesce(json_agg(json_build_object('metadata', metadata, 'raw', raw) order by seq desc), '[]') from (
         select seq, metadata, raw from watchtower_events where user_id = ${userId}
         order by seq desc limit ${RECENT_ACTIVITY}) t) as recent`;

  const byType = row.by_type.map(([key, n]) => ({ key, n }));
  const byVersion = row.by_version.map(([key, n]) => ({ key, n }));
  const active = [{ n: row.active }];
  const series = row.series.map(([day, events, sessions]) => ({ day, events, sessions }));
  const routes = row.routes.map(([key, n, sum, p50, p95]) => ({ key, n, sum, p50, p95 }));
  const points = row.points.map(([key, pts]) => ({ key, points: pts }));
  const ratings = row.ratings.map(([rating, n]) => ({ rating, n }));
  const errors = row.errors;
  const recent = row.recent;

  const eventsByType: Record<string, number> = {};
  let totalEvents = 0;
  for (const r of byType) {
    eventsByType[r.key] = r.n;
    totalEvents += r.n;
  }
  const errorsByVersion: Record<string, number> = {};
  for (const r of byVersion) errorsByVersion[r.key] = r.n;

  const userValues = new Array<number>(SERIES_DAYS).fill(0);
  const activityValues = new Array<number>(SERIES_DAYS).fill(0);
  for (const r of series) {
    const i = SERIES_DAYS - 1 - (today - r.day);
    if (i < 0 || i >= SERIES_DAYS) continue;
    userValues[i] = r.sessions;
    activityValues[i] = r.events;
  }

  const pointsOf = new Map(points.map((r) => [r.key, r.points]));
  const latencyByRoute: Record<string, LatencySummary> = {};
  let latencySum = 0, latencyCount = 0;
  for (const r of routes) {
    latencyByRoute[r.key] = {
      count: r.n,
      p50: r.p50,
      p95: r.p95,
      avg: Math.round(r.sum / r.n),
      points: (pointsOf.get(r.key) ?? []).map(([duration, ttfb, timestamp]) => ({ duration, ttfb, timestamp })),
    };
    latencySum += r.sum;
    latencyCount += r.n;
  }

  const feedbackBreakdown = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
  let feedbackSum = 0, feedbackTotal = 0;
  for (const r of ratings) {
    feedbackBreakdown[String(r.rating) as '1'] = r.n;
    feedbackSum += r.rating * r.n;
    feedbackTotal += r.n;
  }

  const n = (t: string) => eventsByType[t] ?? 0;
  return {
    activeUsers: active[0]?.n ?? 0,
    totalEvents,
    totalErrors: n('error'),
    errorsByVersion,
    latencyByRoute,
    recentErrors: errors.map(toEvent),
    eventsByType,
    averageLatency: latencyCount ? Math.round(latencySum / latencyCount) : 0,
    recentActivity: recent.map(toEvent),
    analytics: {
      breakdownCounts: breakdownCounts(n),
      feedbackBreakdown,
      feedbackTotal,
      feedbackAverage: feedbackTotal ? round2(feedbackSum / feedbackTotal) : 0,
      customActivityTotal: n('custom'),
      userSeries: { labels: seriesLabels(), values: userValues },
      activitySeries: { labels: seriesLabels(), values: activityValues },
    },
  };
}
