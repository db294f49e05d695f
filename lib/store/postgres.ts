// The shared store: PostgreSQL, for several stateless instances behind a load balancer.
// Acknowledged = committed. Other instances' inserts reach this one through LISTEN/NOTIFY.
// See docs/architecture.md#postgresql-store.
//
// Every operation is a single statement on a pooled connection, never a transaction: a reserved
// connection (which sql.begin uses) whose backend dies makes postgres.js 3.4.9 write to a null
// socket from a setImmediate and crash the process (porsager/postgres#1208), while single
// statements fail cleanly. So an insert, with its ids, rows, rollups and NOTIFYs, is one statement.
import postgres from 'postgres';
import type { StoredEvent } from '../event.ts';
import { withinDepth } from '../shape.ts';
import type { Recents } from '../live-window.ts';
import { assembleStats, planStats, type StatsPlan } from '../rollup/assemble.ts';
import {
  CounterRollups, counterPart, DAY_SESSIONS, DIM_KINDS, eventCounters, HOUR_SESSIONS, TYPE, VITAL_KINDS, type Counter,
} from '../rollup/counters.ts';
import { encodePart, FrozenHour } from '../rollup/codec.ts';
import { edgeParts, EdgeMinuteCache, MINUTE_MS, wholeMinutes } from './postgres-edge-minutes.ts';
import { asHour, HourRollup, rollupRow, type RollupPart } from '../rollup/hour.ts';
import {
  ACTIVE_WINDOW_MS, DAY_MS, HOUR_MS, LATENCY_POINTS, pageloadDuration, RECENT_ACTIVITY, RECENT_ERRORS,
  resolveRange, SERIES_DAYS, type LatencyPoint, type Stats,
} from '../stats.ts';
import { routeKey } from '../event-keys.ts';
import { decodeCursor, encodeCursor, EXPORT_BATCH } from './cursor.ts';
import { compactClosedDays, foldOpenDays } from './postgres-compaction.ts';
import { DayPartCache, type SessionCount } from './postgres-day-cache.ts';
import { decodeDay } from './postgres-day-codec.ts';
import { analyzeChangedPartitions } from './postgres-analyze.ts';
import { pgArray } from './postgres-arrays.ts';

export { pgArray };
import { groupCommit } from './postgres-group-commit.ts';
import { issueLease, safeHorizon, scanErrors } from './postgres-issue-feed.ts';
import { isoBounds } from './filter.ts';
import { MIGRATION_LOCK, MIGRATIONS, type Migration } from './postgres-migrations.ts';
import {
  StoreUnavailableError, appUser, type AppUser, type EventFilter, type EventPage, type EventQuery, type Store, type StoreHealth, type UserSync,
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
  /**
   * Days of events kept (0, the default: all). Retention is by whole UTC days: a day's partitions
   * are dropped once the whole day is more than this many days old.
   */
  retentionDays?: number;
  /** How often an instance checks for days to drop and partitions to create (default 1 hour). */
  maintenanceIntervalMs?: number;
  /**
   * Bytes of decoded fold rows (compacted days, folds of busy open days) kept in memory for stats,
   * least recently used dropped first (default 64 MiB; the server passes SERVICE_CACHE_MB).
   */
  rollupCacheBytes?: number;
  /**
   * How long the issue-grouping lease (Store.issueLease) lasts unless renewed (default 20 s): an
   * instance that dies is taken over within this long.
   */
  issueLeaseMs?: number;
  /**
   * How often the instance folds the rows of busy open days (foldOpenDays) and renews the planner
   * statistics of the partitions that changed enough since they were taken (analyzeChangedPartitions);
   * default 10 s.
   */
  upkeepIntervalMs?: number;
}

export const DEFAULT_CHANNEL = 'watchtower_events';
/** Sequence numbers per NOTIFY: 300 × (≤ 19 digits + comma) stays under the 8000-byte payload limit. */
const NOTIFY_CHUNK = 300;
/** SQLSTATE of watchtower_all_new: a batch insert met ids stored before (migration 8). */
const BATCH_HAD_STORED_IDS = 'WT001';
/** Partitions are created this many days ahead of today. */
const DAYS_AHEAD = 2;
/** How often an instance checks its LISTEN connection, and how long silence means it is lost. */
const LISTEN_PING_MS = 3000;
const LISTEN_TIMEOUT_MS = 8000;
/** Insert statements running at once per instance (of different users), and the most events one carries. */
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

// PostgreSQL text cannot hold NUL; the columns (not the event's text, where JSON escapes it as
// \u0000) carry U+FFFD instead, and filters are mapped the same way so they still match.
const col = (s: string | null): string | null => (s !== null && s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s);

/** A row read back: the event's JSON text, as it was stored. */
interface Row { event: string }
/** A row read for paging: seq is a bigint, which postgres.js hands over as a string. */
interface SeqRow extends Row { seq: string }
/**
 * The event of a row. One stored before ingest bounded the shape of events may nest deeper than
 * MAX_DEPTH: it is read cut at that depth (lib/shape.ts), as every store reads it, and so that
 * serialising it cannot overflow the stack (JSON.stringify recurses: from ~10,000 levels on Node).
 */
const toEvent = (r: Row): StoredEvent => withinDepth(JSON.parse(r.event) as StoredEvent);

/** What an insert needs of one event, computed once by the same functions as computeStats. */
interface Prepared {
  event: StoredEvent;
  /** JSON.stringify of the event: what is stored. */
  text: string;
  ms: number;
  day: number;
  hour: number;
  /** A latency point (pageloads with a duration): its duration, route, TTFB and client timestamp. */
  duration: number | null;
  routeKey: string | null;
  ttfb: number | null;
  /** The rollup scopes it counts in, and the counters it adds 1 to (none for unowned events). */
  scopes: string[];
  counters: Omit<Counter, 'n'>[];
}

function prepare(batch: readonly StoredEvent[], texts: WeakMap<StoredEvent, string>): Prepared[] {
  let iso = '', ms = NaN;
  return batch.map((e) => {
    if (e.receivedAt !== iso) ms = Date.parse((iso = e.receivedAt));
    const duration = pageloadDuration(e);
    const ttfb = e.data.ttfb;
    // The statements split the texts at newlines (eventColumns): a caller's text holding one
    // (not JSON.stringify's) is not used.
    const given = texts.get(e);
    // Unowned events appear in no statistics.
    const owned = e.user_id !== null;
    return {
      event: e, text: given !== undefined && !given.includes('\n') ? given : JSON.stringify(e), ms, day: Math.floor(ms / DAY_MS), hour: Math.floor(ms / HOUR_MS),
      duration, routeKey: duration === null ? null : col(routeKey(e)),
      ttfb: duration !== null && typeof ttfb === 'number' && Number.isFinite(ttfb) ? ttfb : null,
      scopes: !owned ? [] : e.projectId === undefined ? [''] : ['', col(scopeOf(e.projectId))!],
      counters: owned ? eventCounters(rollupRow(e, ms)) : [],
    };
  });
}

/**
 * The bound values of one row per event, which both insert statements read (inputStep): the
 * columns as arrays, and the events' texts joined by newlines (JSON.stringify never writes one),
 * which the database splits far more cheaply than it would parse an array literal of them.
 */
function eventColumns(prepared: readonly Prepared[]) {
  const column = <T extends string | number | null>(f: (p: Prepared) => T) => pgArray(prepared.map(f));
  return {
    texts: prepared.map((p) => p.text).join('\n'),
    id: column((p) => col(p.event.id)), user_id: column((p) => col(p.event.user_id)),
    project_id: column((p) => (p.event.projectId === undefined ? null : col(p.event.projectId))),
    type: column((p) => col(p.event.type)), received_at: column((p) => p.event.receivedAt), day: column((p) => p.day), hour: column((p) => p.hour),
    session_id: column((p) => col(p.event.sessionId)), app_version: column((p) => col(p.event.deployVersion)),
    route_key: column((p) => p.routeKey), duration: column((p) => p.duration), ttfb: column((p) => p.ttfb),
    ts: column((p) => (p.duration === null ? null : col(p.event.timestamp))),
  };
}
type EventColumns = ReturnType<typeof eventColumns>;

/**
 * The rollup counters of the exact insert (insertStatement): one per counter an event adds to,
 * pointing at the event by its 1-based position, so that the database adds up only those of
 * events it newly stores.
 */
function counterColumns(prepared: readonly Prepared[]) {
  const c = { ord: [] as number[], scope: [] as string[], kind: [] as string[], key: [] as (string | null)[], ms: [] as number[], micros: [] as number[] };
  prepared.forEach((p, i) => {
    for (const scope of p.scopes) {
      for (const k of p.counters) {
        c.ord.push(i + 1);
        c.scope.push(scope);
        c.kind.push(k.kind);
        c.key.push(col(k.key));
        c.ms.push(k.ms);
        c.micros.push(k.micros);
      }
    }
  });
  return { ord: pgArray(c.ord), scope: pgArray(c.scope), kind: pgArray(c.kind), key: pgArray(c.key), ms: pgArray(c.ms), micros: pgArray(c.micros) };
}

/**
 * The rollups of the batch insert (batchStatement), which stores every event of the batch or
 * nothing, already added up over the batch: each counter once with its count, each session of an
 * hour, of a day and of a breakdown name once.
 */
function batchColumns(prepared: readonly Prepared[]) {
  // Nested maps keyed by the strings the events already hold (their hashes are computed once),
  // rather than one composite key string built per counter.
  interface Sum { n: number; micros: number }
  interface Hour { user: string; scope: string; hour: number; day: number; sessions: Set<string>; kinds: Map<string, Map<string, Map<number, Sum>>>;
    names: Map<string, Map<string, Set<string>>> }
  const hours = new Map<string, Hour>();
  for (const p of prepared) {
    if (!p.scopes.length) continue;
    const user = col(p.event.user_id)!, session = col(p.event.sessionId);
    for (const scope of p.scopes) {
      const at = `${user}\u0001${scope}\u0001${p.hour}`;
      let h = hours.get(at);
      if (!h) hours.set(at, (h = { user, scope, hour: p.hour, day: p.day, sessions: new Set(), kinds: new Map(), names: new Map() }));
      if (session !== null) h.sessions.add(session);
      for (const c of p.counters) {
        let keys = h.kinds.get(c.kind);
        if (!keys) h.kinds.set(c.kind, (keys = new Map()));
        let values = keys.get(c.key);
        if (!values) keys.set(c.key, (values = new Map()));
        const sum = values.get(c.ms);
        if (sum) {
          sum.n++;
          sum.micros += c.micros;
        } else values.set(c.ms, { n: 1, micros: c.micros });
        if (session === null || !DIM_KIND_SET.has(c.kind)) continue;
        let names = h.names.get(c.kind);
        if (!names) h.names.set(c.kind, (names = new Map()));
        let sessions = names.get(c.key);
        if (!sessions) names.set(c.key, (sessions = new Set()));
        sessions.add(session);
      }
    }
  }
  const c = { user: [] as string[], scope: [] as string[], hour: [] as number[], kind: [] as string[], key: [] as string[], ms: [] as number[], n: [] as number[], micros: [] as number[] };
  const hs = { user: [] as string[], scope: [] as string[], hour: [] as number[], session: [] as string[] };
  const ds = { user: [] as string[], scope: [] as string[], day: [] as number[], session: [] as string[] };
  const bs = { user: [] as string[], scope: [] as string[], hour: [] as number[], kind: [] as string[], key: [] as string[], session: [] as string[] };
  const daySeen = new Map<string, Set<string>>();
  for (const h of hours.values()) {
    for (const [kind, keys] of h.kinds) {
      for (const [key, values] of keys) {
        for (const [ms, sum] of values) {
          c.user.push(h.user); c.scope.push(h.scope); c.hour.push(h.hour); c.kind.push(kind); c.key.push(col(key)!); c.ms.push(ms);
          c.n.push(sum.n); c.micros.push(sum.micros);
        }
      }
    }
    for (const [kind, names] of h.names) {
      for (const [key, sessions] of names) {
        for (const session of sessions) {
          bs.user.push(h.user); bs.scope.push(h.scope); bs.hour.push(h.hour); bs.kind.push(kind); bs.key.push(col(key)!); bs.session.push(session);
        }
      }
    }
    const dayKey = `${h.user}\u0001${h.scope}\u0001${h.day}`;
    let seen = daySeen.get(dayKey);
    if (!seen) daySeen.set(dayKey, (seen = new Set()));
    for (const session of h.sessions) {
      hs.user.push(h.user); hs.scope.push(h.scope); hs.hour.push(h.hour); hs.session.push(session);
      if (seen.has(session)) continue;
      seen.add(session);
      ds.user.push(h.user); ds.scope.push(h.scope); ds.day.push(h.day); ds.session.push(session);
    }
  }
  return {
    c_user: pgArray(c.user), c_scope: pgArray(c.scope), c_hour: pgArray(c.hour), c_kind: pgArray(c.kind),
    c_key: pgArray(c.key), c_ms: pgArray(c.ms), c_n: pgArray(c.n), c_micros: pgArray(c.micros),
    hs: [pgArray(hs.user), pgArray(hs.scope), pgArray(hs.hour), pgArray(hs.session)],
    ds: [pgArray(ds.user), pgArray(ds.scope), pgArray(ds.day), pgArray(ds.session)],
    bs: [pgArray(bs.user), pgArray(bs.scope), pgArray(bs.hour), pgArray(bs.kind), pgArray(bs.key), pgArray(bs.session)],
  };
}

const DIM_KIND_SET = new Set<string>(DIM_KINDS);

/** A latency point as read for statistics, with its seq (see readByDays). */
interface PointRow { seq: string; duration: number; ttfb: number | null; ts: string }

/** How statsOf reads the latest events of a user: by days (those given), as pages are read. */
type NewestOf = (f: EventFilter, want: number, days: readonly EventDay[]) => Promise<SeqRow[]>;

/**
 * A row of watchtower_event_days: one owner's events received on one UTC day. `moved`: how many of
 * them a compaction moved into blocks (watchtower_event_blocks); the rest are rows of the day's
 * partition. `counters`: whether the day may still have counter rows of the owner (it is not
 * compacted, or took events since).
 */
export interface EventDay {
  day: number; first: number; last: number; events: number; moved?: number; counters?: boolean; folded?: boolean; pointed?: number | null;
}

/** A block of watchtower_event_blocks: up to BLOCK_EVENTS of one owner's events of a closed day. */
export interface EventBlock { day: number; first: number; last: number; events: number }

/** The days of `days` that receive times within the filter's bounds can fall in. */
const daysWithin = (days: readonly EventDay[], f: Pick<EventFilter, 'since' | 'until'>): EventDay[] =>
  days.filter((d) => (f.since === undefined || d.day >= Math.floor(f.since / DAY_MS)) &&
    (f.until === undefined || d.day <= Math.floor((f.until - 1) / DAY_MS)));

/** Something that holds rows of seqs first..last, `events` of them: a day, or a block. */
interface Unit { first: number; last: number; events: number }

/**
 * Reads, for each key, the first `want` rows in seq order (`desc`: newest first, `asc`: oldest
 * first) from the fewest units that can hold them. `units` are the candidates (those the query's
 * bounds and cursor leave); `read(chosen, keys)` reads the chosen units and answers rows per key in
 * the same order; `covered(chosen)` says which units that read covered (a read bounded by receive
 * days covers the days between the chosen ones too).
 *
 * It reads the units nearest the start of the order first, as many as hold `target` events (by
 * default twice `want`). The answer of a key is exact when no unit outside those read could hold
 * a row that belongs in it: there is no such unit at all, or the key got `want` rows and every unit
 * left out lies wholly after the last of them in seq order. Seq is only nearly in receive order,
 * so this is checked, not assumed. Keys still short are read again over more units: as many events
 * as the density of their rows in those read says they need, at least twice as many.
 */
async function readByUnits<U extends Unit, R extends { seq: string }>(
  units: readonly U[], order: 'asc' | 'desc', want: number, keys: readonly string[],
  read: (chosen: U[], keys: string[]) => Promise<Map<string, R[]>>, covered: (chosen: U[]) => (u: U) => boolean, target = want * 2,
): Promise<Map<string, R[]>> {
  const out = new Map<string, R[]>();
  if (!units.length || want <= 0) return out;
  const sorted = [...units].sort(order === 'desc' ? (a, b) => b.last - a.last : (a, b) => a.first - b.first);
  let pending = [...keys];
  while (pending.length) {
    let taken = 0, n = 0;
    while (n < sorted.length && taken < target) taken += sorted[n++].events;
    const chosen = sorted.slice(0, n);
    const inside = covered(chosen);
    const outside = sorted.filter((u) => !inside(u));
    const rows = await read(chosen, pending);
    let next = taken * 2;
    pending = pending.filter((key) => {
      const got = rows.get(key) ?? [];
      const last = got.length >= want ? Number(got[want - 1].seq) : NaN;
      const exact = outside.length === 0 ||
        outside.every((u) => (order === 'desc' ? u.last < last : u.first > last));
      if (exact) out.set(key, got.slice(0, want));
      else next = Math.max(next, got.length ? Math.ceil((taken * want * 1.25) / got.length) : taken * 8);
      return !exact;
    });
    target = next;
  }
  return out;
}

/**
 * readByUnits over days, for reads bounded by receive time: `read(d0, d1, keys)` runs the query
 * bounded to the receive days d0..d1, so that the planner prunes every other partition.
 */
export function readByDays<R extends { seq: string }>(
  days: readonly EventDay[], order: 'asc' | 'desc', want: number, keys: readonly string[],
  read: (d0: number, d1: number, keys: string[]) => Promise<Map<string, R[]>>, target = want * 2,
): Promise<Map<string, R[]>> {
  const span = (chosen: EventDay[]) => [Math.min(...chosen.map((d) => d.day)), Math.max(...chosen.map((d) => d.day))] as const;
  return readByUnits(days, order, want, keys, (chosen, keys) => read(...span(chosen), keys), (chosen) => {
    const [d0, d1] = span(chosen);
    return (d) => d.day >= d0 && d.day <= d1;
  }, target);
}

/** How readEvents reads one owner's events: rows of days, the blocks of days, and rows of blocks. */
export interface EventReads<R> {
  rows: (d0: number, d1: number, keys: string[]) => Promise<Map<string, R[]>>;
  blocksOf: (d0: number, d1: number) => Promise<EventBlock[]>;
  blocks: (chosen: EventBlock[], keys: string[]) => Promise<Map<string, R[]>>;
}

/**
 * readByDays over the events of `days` wherever they are: the rows of their partitions, and the
 * blocks a compaction moved the closed days' rows into. The rows are read first (the newest days,
 * which pages and statistics mostly want, are rows); blocks only of days that could hold a row of
 * an answer the rows left open, by days as rows are (the fewest days that can hold the answer),
 * and within those days block by block; the two answers are merged.
 *
 * `cursor`, if given, is the seq the reads start past (below it for `desc`, above it for `asc`):
 * days and blocks wholly on its other side are no candidates. A day holds ~50 blocks at 10M
 * events; counting those past the cursor as candidates had a page deep in a day read them first,
 * and read again over more blocks each time it found nothing there.
 */
export async function readEvents<R extends { seq: string }>(
  allDays: readonly EventDay[], order: 'asc' | 'desc', want: number, keys: readonly string[], reads: EventReads<R>,
  { target = want * 2, cursor }: { target?: number; cursor?: number } = {},
): Promise<Map<string, R[]>> {
  const ahead = (u: Unit) => cursor === undefined || (order === 'desc' ? u.first < cursor : u.last > cursor);
  const days = allDays.filter(ahead);
  const rowDays = days.filter((d) => d.events > (d.moved ?? 0)).map((d) => ({ ...d, events: d.events - (d.moved ?? 0) }));
  const rows = await readByDays(rowDays, order, want, keys, reads.rows, target);
  const open = (d: EventDay) => keys.some((key) => {
    const got = rows.get(key) ?? [];
    if (got.length < want) return true;
    const last = Number(got[want - 1].seq);
    return order === 'desc' ? d.last > last : d.first < last;
  });
  const blockDays = days.filter((d) => (d.moved ?? 0) > 0 && open(d));
  if (!blockDays.length) return rows;
  const movedDays = blockDays.map((d) => ({ ...d, events: d.moved ?? 0 }));
  const fromBlocks = await readByDays(movedDays, order, want, keys, async (d0, d1, keys) =>
    readByUnits((await reads.blocksOf(d0, d1)).filter(ahead), order, want, keys, reads.blocks, (chosen) => {
      const read = new Set(chosen);
      return (b) => read.has(b);
    }, target), target);
  const bySeq = order === 'desc' ? (a: R, b: R) => Number(b.seq) - Number(a.seq) : (a: R, b: R) => Number(a.seq) - Number(b.seq);
  for (const key of keys) {
    rows.set(key, [...(rows.get(key) ?? []), ...(fromBlocks.get(key) ?? [])].sort(bySeq).slice(0, want));
  }
  return rows;
}

/**
 * How the store reads one owner's events for readEvents: `rows(d0, d1, keys)` reads the rows of
 * days d0..d1, `blocks(chosen, keys)` the rows of the blocks `chosen` (a condition on the blocks
 * `b` of blockEvents or blockPoints) selects.
 */
type OwnerRead = <R extends { seq: string }>(
  userId: string, days: readonly EventDay[], order: 'asc' | 'desc', want: number, keys: readonly string[],
  rows: (d0: number, d1: number, keys: string[]) => Promise<Map<string, R[]>>,
  blocks: (chosen: postgres.PendingQuery<postgres.Row[]>, keys: string[]) => Promise<Map<string, R[]>>,
  options?: { target?: number; cursor?: number },
) => Promise<Map<string, R[]>>;

/**
 * The events of blocks `b` as rows with the columns of watchtower_events that filters and pages
 * read (so that the same conditions apply to both); the owner is `b.user_id`.
 */
const blockEvents = (sql: postgres.Sql) => sql`watchtower_event_blocks b
  cross join lateral unnest(b.seqs, b.received, b.types, b.versions, b.projects, b.texts)
    as x(seq, received_at, type, app_version, project_id, event)`;
/** The sessions of blocks `b`, for the count of active sessions. */
const blockSessions = (sql: postgres.Sql) => sql`watchtower_event_blocks b
  cross join lateral unnest(b.received, b.projects, b.sessions) as x(received_at, project_id, session_id)`;
/** The latency points' columns of blocks `b` (the texts are not read). */
const blockPoints = (sql: postgres.Sql) => sql`watchtower_event_blocks b
  cross join lateral unnest(b.seqs, b.received, b.projects, b.routes, b.durations, b.timestamps, b.ttfbs)
    as x(seq, received_at, project_id, route_key, duration, ts, ttfb)`;

/**
 * How long watchtower_sessions_seen keeps a session after its latest event. Statistics count
 * active sessions from it for a `now` within SEEN_TRUSTED_MS of the instance's clock (as good as
 * every request), and from the events themselves for an older one.
 */
const SEEN_KEPT_MS = 2 * DAY_MS;
/** Events an instance stores before it next folds busy open days and renews planner statistics. */
const UPKEEP_EVENTS = 1000;
const SEEN_TRUSTED_MS = DAY_MS;

/** The DayPartCache scope of blocks' rollups (no rollup scope starts with a control character). */
const BLOCKS = '\u0001blocks';

/** The rollup scope of a project's statistics ('' is all the user's events). */
const scopeOf = (projectId: string | undefined) => (projectId === undefined ? '' : '#' + projectId);

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

  // Days whose partitions this instance knows exist. An insert into a day it does not know asks
  // for its partitions first (and the next days', so that midnight needs no DDL); an insert that
  // still finds none (retention dropped a day it knew) forgets what it knew and asks again.
  const knownDays = new Set<number>();
  const cacheBytes = options.rollupCacheBytes ?? 64 * 1024 * 1024;
  // Edge minutes take an eighth of the budget: two edges of an hour a range, per dashboard in use.
  const dayCache = new DayPartCache(cacheBytes - Math.floor(cacheBytes / 8));
  const edgeMinutes = new EdgeMinuteCache(Math.floor(cacheBytes / 8));
  // The first hour whose events all have breakdown counters (migration 5): fixed once migrated.
  let breakdownsFromHour: number | undefined;
  const breakdownsFrom = async () =>
    (breakdownsFromHour ??= (await sql<{ hour: number }[]>`select hour from watchtower_breakdowns_from`)[0]?.hour ?? -Infinity);
  const ensurePartitions = async (first: number, last: number) => {
    await guard('create partitions', () => sql`select watchtower_ensure_partitions(${first}::integer, ${last}::integer)`);
    for (let d = first; d <= last; d++) knownDays.add(d);
  };

  /**
   * Retention and partitions ahead, on every instance, under the partition lock (whichever instance
   * comes first does the work; the others find it done). Dropping a day drops its events, its
   * rollups and its sessions; the ids of its events are deleted, so that an event retried after
   * its day was dropped is stored again (once).
   */
  const retentionDays = options.retentionDays ?? 0;
  const maintain = async (now = Date.now()) => {
    const today = Math.floor(now / DAY_MS);
    await ensurePartitions(today - 1, today + DAYS_AHEAD);
    await guard('sessions seen', () => sql`
      delete from watchtower_sessions_seen where last_received < ${new Date(now - SEEN_KEPT_MS).toISOString()}::timestamptz`);
    if (retentionDays <= 0) return 0;
    const cutoff = today - retentionDays;
    const dropped = await guard('retention', () => dropDaysBefore(sql, cutoff));
    await guard('retention', () => sql`delete from watchtower_event_ids where day < ${cutoff}::integer`);
    await guard('retention', () => sql`delete from watchtower_rollup_days where day < ${cutoff}::integer`);
    await guard('retention', () => sql`delete from watchtower_day_points where day < ${cutoff}::integer`);
    await guard('retention', () => sql`delete from watchtower_event_days where day < ${cutoff}::integer`);
    for (const d of knownDays) if (d < cutoff) knownDays.delete(d);
    if (dropped) log(`retention dropped ${dropped} day(s) of events received before ${new Date(cutoff * DAY_MS).toISOString()}`);
    return dropped;
  };
  // Compaction of closed days runs in the background (at start it may have a migrated history to
  // go through), one run at a time per instance; instances running it at once are safe (see
  // compactDay), only wasteful, and each run finds little left after the first.
  let compacting: Promise<void> | null = null;
  const compact = () => {
    compacting ??= compactClosedDays(sql, Date.now(), () => closed)
      .then((days) => void (days && log(`compacted the rollups of ${days} closed day(s)`)))
      .catch((err: unknown) => log(`rollup compaction failed: ${err instanceof Error ? err.message : err}`))
      .finally(() => (compacting = null));
  };
  const maintenance = setInterval(() => {
    maintain().catch((err: unknown) => log(`partition maintenance failed: ${err instanceof Error ? err.message : err}`));
    compact();
    keepUp(true);
  }, options.maintenanceIntervalMs ?? 3_600_000);
  (maintenance as { unref?: () => void }).unref?.();
  // Busy open days: their rows folded as they grow (foldOpenDays), then the planner statistics
  // of today's and yesterday's partitions renewed as they fill (postgres-analyze.ts).
  // Each instance keeps up after its own inserts, once it has stored UPKEEP_EVENTS since it last
  // did (fewer can neither need a fold nor change a partition's statistics much), and hourly
  // whatever it stored; an idle instance leaves it to those that insert.
  // PostgreSQL publishes a backend's row counts when it goes idle, up to ~10 s after its commit
  // when it published others just before, so a run after a burst may not see its last inserts:
  // runs go on for 15 s after the last one that inserts called for.
  let upkeep: Promise<void> | null = null;
  let written = 0, trailing = 0;
  const keepUp = (hourly = false) => {
    const now = Date.now(), today = Math.floor(now / DAY_MS);
    if (upkeep) return;
    if (written >= (hourly ? 1 : UPKEEP_EVENTS)) trailing = now + 15_000;
    else if (now >= trailing) return;
    written = 0;
    upkeep = foldOpenDays(sql, now, () => closed)
      .then(() => (closed ? undefined : analyzeChangedPartitions(sql, [today - 1, today])))
      .then(() => {})
      .catch((err: unknown) => void (isUnavailable(err) || log(`open-day upkeep failed: ${err instanceof Error ? err.message : err}`)))
      .finally(() => (upkeep = null));
  };
  const upkeeper = setInterval(() => keepUp(), options.upkeepIntervalMs ?? 10_000);
  (upkeeper as { unref?: () => void }).unref?.();

  let listener: ((events: StoredEvent[]) => void) | null = null;
  let delivery: Promise<void> = Promise.resolve();
  let closed = false;

  // Issue processing's feed (lib/store/postgres-issue-feed.ts).
  const horizon = safeHorizon(sql);
  const lease = issueLease(sql, instance, options.issueLeaseMs ?? 20_000, log);

  // Announced rows were just committed, so they were received today or yesterday (by this
  // instance's clock; the partitions of days after it are kept too): the bound spares the
  // planner every older partition. A row an instance stamped with a clock off by more than a day
  // is stored and readable but not pushed live, as delivery across instances is best effort.
  const loadBySeq = async (seqs: number[]) => {
    const since = new Date((Math.floor(Date.now() / DAY_MS) - 1) * DAY_MS).toISOString();
    const rows = await sql<Row[]>`
      select event from watchtower_events
      where seq = any(${pgArray(seqs)}::bigint[]) and received_at >= ${since}::timestamptz order by seq`;
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

  /**
   * Inserts distinct events; resolves to the keys that were newly stored. The batch statement
   * first: it stores the whole batch, or, when an id of it is stored already (a retry), fails
   * whole (BATCH_HAD_STORED_IDS) and the exact statement, which checks event by event, runs instead.
   */
  const writeBatch = async (batch: StoredEvent[]): Promise<Set<string>> => {
    const prepared = prepare(batch, texts);
    const days = prepared.map((p) => p.day);
    const missing = [...new Set(days)].filter((d) => !knownDays.has(d));
    if (missing.length) await ensurePartitions(Math.min(...missing), Math.max(...missing) + DAYS_AHEAD);
    const rows = eventColumns(prepared);
    let exact = false;
    // Two statements inserting the same (owner, id)s or counters in different orders (a client
    // retrying a batch on another instance) can deadlock; PostgreSQL aborts one whole statement,
    // which is then simply run again.
    for (let attempt = 1; ; attempt++) {
      try {
        if (exact) return await insertStatement(rows, counterColumns(prepared));
        await batchStatement(rows, batchColumns(prepared), prepared.length);
        return new Set(batch.map((e) => `${col(e.user_id) ?? ''}\u0000${col(e.id)}`));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === BATCH_HAD_STORED_IDS && !exact) {
          exact = true;
          continue;
        }
        if (attempt >= 5 || (code !== '40P01' && code !== '23514')) throw err;
        if (code === '23514') {
          // "no partition of relation found for row": a partition this instance knew was dropped.
          knownDays.clear();
          await ensurePartitions(Math.min(...days), Math.max(...days) + DAYS_AHEAD);
        } else log(`insert deadlocked with another instance's; retrying (${attempt})`);
      }
    }
  };

  // The steps of the insert statements. Both are one statement, so one transaction without a
  // reserved connection: the ids claimed, the rows, the rollups and the NOTIFYs commit together.
  type Step = postgres.PendingQuery<postgres.Row[]>;
  /** `input`: one row per event of the batch (eventColumns), with its dedupe key. */
  const inputStep = (c: EventColumns): Step => sql`input as (
        select t.*, watchtower_event_key(coalesce(t.user_id, ''), t.id) as key, e.event
        from unnest(${c.id}::text[], ${c.user_id}::text[], ${c.project_id}::text[], ${c.type}::text[], ${c.received_at}::timestamptz[],
                    ${c.day}::int4[], ${c.hour}::int4[], ${c.session_id}::text[], ${c.app_version}::text[], ${c.route_key}::text[],
                    ${c.duration}::float8[], ${c.ttfb}::float8[], ${c.ts}::text[])
          with ordinality as t(id, user_id, project_id, type, received_at, day, hour, session_id, app_version, route_key, duration, ttfb, ts, ord)
        join string_to_table(${c.texts}::text, E'\\n') with ordinality as e(event, ord) on e.ord = t.ord
      )`;
  /**
   * `ins`: the rows of `from` (input or the part of it newly claimed) stored, in batch order; and
   * `seen`: their sessions' latest receive times.
   */
  const insStep = (from: Step): Step => sql`ins as (
        insert into watchtower_events
          (user_id, project_id, type, received_at, session_id, app_version, route_key, duration, ttfb, ts, event)
        select user_id, project_id, type, received_at, session_id, app_version, route_key, duration, ttfb, ts, event
        from ${from} order by ord
        returning seq, user_id, received_at, session_id, project_id
      ), seen as (
        -- The sessions' latest receive times (watchtower_sessions_seen), in key order (see below).
        insert into watchtower_sessions_seen as s (user_id, project_id, session_id, last_received)
        select user_id, coalesce(project_id, ''), session_id, max(received_at) from ins
        where user_id is not null and session_id is not null
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (user_id, project_id, session_id) do update set last_received = greatest(s.last_received, excluded.last_received)
      )`;
  /** Counts the rows of `ins` in watchtower_event_days, which bounds every read to its days. */
  const eventDaysStep = (): Step => sql`event_days as (
        insert into watchtower_event_days as d (user_id, day, first_seq, last_seq, events)
        select coalesce(user_id, ''), floor(extract(epoch from received_at) / 86400)::integer, min(seq), max(seq), count(*)
        from ins
        group by 1, 2
        order by 1, 2
        on conflict (user_id, day) do update
          set first_seq = least(d.first_seq, excluded.first_seq), last_seq = greatest(d.last_seq, excluded.last_seq),
              events = d.events + excluded.events
        returning 1
      )`;
  /**
   * The steps both statements end with: the session sets take the sessions of their sources (a
   * row a set already holds is skipped), the counter rows are upserted with the counters of
   * `counters` (user_id, scope, hour, kind, key, ms, n, micros) and a session count of 1 for each
   * session a set newly took, adding to what other instances added, and the stored rows are
   * announced by NOTIFY, in chunks that keep each payload under the 8000-byte limit. Rows are
   * written in key order, so that two statements upserting the same rows do not deadlock.
   */
  const rollupSteps = (s: { hourSessions: Step; daySessions: Step; breakdownSessions: Step; counters: Step }): Step => sql`hour_sessions as (
        insert into watchtower_rollup_sessions (user_id, scope, hour, session)
        ${s.hourSessions}
        order by 1, 2, 3, 4
        on conflict do nothing
        returning user_id, scope, hour
      ), day_sessions as (
        insert into watchtower_day_sessions (user_id, scope, day, session)
        ${s.daySessions}
        order by 1, 2, 3, 4
        on conflict do nothing
        returning user_id, scope, day
      ), breakdown_sessions as (
        insert into watchtower_breakdown_sessions (user_id, scope, hour, kind, key, session)
        ${s.breakdownSessions}
        order by 1, 2, 3, 4, 5, 6
        on conflict do nothing
      ), rolled as (
        insert into watchtower_rollups as r (user_id, scope, hour, kind, key, ms, n, micros)
        select user_id, scope, hour, kind::"char", key, ms, sum(n)::int8, sum(micros) from (
          ${s.counters}
          union all select user_id, scope, hour, ${HOUR_SESSIONS}::text, '', 0, 1, 0 from hour_sessions
          union all select user_id, scope, day * 24, ${DAY_SESSIONS}::text, '', 0, 1, 0 from day_sessions
        ) x
        group by 1, 2, 3, 4, 5, 6
        order by 1, 2, 3, 4, 5, 6
        on conflict (user_id, scope, hour, kind, key, ms)
          do update set n = r.n + excluded.n, micros = r.micros + excluded.micros
        returning 1
      ), notified as (
        select pg_notify(${channel}, ${instance} || ' ' || string_agg(seq::text, ',' order by seq))
        from (select seq, (row_number() over (order by seq) - 1) / ${NOTIFY_CHUNK} as chunk from ins) c
        group by chunk
      )`;
  /** What both statements answer beside their own columns; it makes `notified` run (a plain select step runs only if read). */
  const doneColumns = sql`(select count(*) from notified) as notifications, (select count(*) from rolled) as counters,
             (select count(*) from event_days) as days`;

  /**
   * The batch insert: one statement claiming every id, storing every event and adding the
   * batch's rollups as they were summed in the instance (batchColumns), far less work for the
   * database than the exact statement's counter row per event and scope. It fails whole
   * (watchtower_all_new raises BATCH_HAD_STORED_IDS) when an id was stored before, as then its
   * sums count events that are not new.
   */
  const batchStatement = async (e: EventColumns, c: ReturnType<typeof batchColumns>, sent: number): Promise<void> => {
    await guard('insert', () => sql`
      with ${inputStep(e)}, claimed as (
        insert into watchtower_event_ids (key, day)
        select key, day from input order by ord
        on conflict do nothing
        returning 1
      ), ${insStep(sql`input`)}, ${eventDaysStep()}, ${rollupSteps({
        hourSessions: sql`select * from unnest(${c.hs[0]}::text[], ${c.hs[1]}::text[], ${c.hs[2]}::int4[], ${c.hs[3]}::text[])`,
        daySessions: sql`select * from unnest(${c.ds[0]}::text[], ${c.ds[1]}::text[], ${c.ds[2]}::int4[], ${c.ds[3]}::text[])`,
        breakdownSessions: sql`select user_id, scope, hour, kind::"char", key, session
          from unnest(${c.bs[0]}::text[], ${c.bs[1]}::text[], ${c.bs[2]}::int4[], ${c.bs[3]}::text[], ${c.bs[4]}::text[], ${c.bs[5]}::text[])
            as b(user_id, scope, hour, kind, key, session)`,
        counters: sql`select * from unnest(${c.c_user}::text[], ${c.c_scope}::text[], ${c.c_hour}::int4[], ${c.c_kind}::text[],
                               ${c.c_key}::text[], ${c.c_ms}::float8[], ${c.c_n}::int8[], ${c.c_micros}::float8[])
            as k(user_id, scope, hour, kind, key, ms, n, micros)`,
      })}
      select watchtower_all_new((select count(*) from claimed), ${sent}::int8) as claimed, ${doneColumns}`);
  };
  /**
   * The exact insert: only events not stored before (an id already claimed by the same owner is
   * skipped, and neither stored nor counted). Rollups come from a counter row per event and scope
   * (counterColumns), joined to the events newly claimed.
   */
  const insertStatement = async (e: EventColumns, k: ReturnType<typeof counterColumns>): Promise<Set<string>> => {
    const rows = await guard('insert', () => sql<{ owner: string; id: string }[]>`
      with ${inputStep(e)}, claimed as (
        insert into watchtower_event_ids (key, day)
        select key, day from input order by ord
        on conflict do nothing
        returning key
      ), fresh as (
        select i.* from input i join claimed c on c.key = i.key
      ), ${insStep(sql`fresh`)}, ${eventDaysStep()}, counters as (
        select f.user_id, k.scope, f.hour, f.day, f.session_id, k.kind, k.key, k.ms, k.micros
        from unnest(${k.ord}::int8[], ${k.scope}::text[], ${k.kind}::text[], ${k.key}::text[], ${k.ms}::float8[], ${k.micros}::float8[])
          as k(ord, scope, kind, key, ms, micros)
        join fresh f on f.ord = k.ord
      ), ${rollupSteps({
        hourSessions: sql`select distinct user_id, scope, hour, session_id from counters where kind = ${TYPE}::text and session_id is not null`,
        daySessions: sql`select distinct user_id, scope, day, session_id from counters where kind = ${TYPE}::text and session_id is not null`,
        breakdownSessions: sql`select distinct user_id, scope, hour, kind::"char", key, session_id from counters
          where kind = any(${pgArray([...DIM_KINDS])}::text[]) and session_id is not null`,
        counters: sql`select user_id, scope, hour, kind, key, ms, 1::int8 as n, micros from counters`,
      })}
      select coalesce(user_id, '') as owner, id, ${doneColumns} from fresh`);
    return new Set(rows.map((r) => `${r.owner}\u0000${r.id}`));
  };

  // Group commit (lib/store/postgres-group-commit.ts): one statement per user in flight, the
  // user's requests arriving meanwhile merged into the next one.
  // The texts the route serialised its events to (Store.insert), for the statements to reuse.
  const texts = new WeakMap<StoredEvent, string>();
  const insert = groupCommit(async (events) => {
    const fresh = await writeBatch(events);
    written += fresh.size;
    return new Set(events.filter((e) => fresh.has(`${col(e.user_id) ?? ''}\u0000${col(e.id)}`)));
  }, { maxInflight: MAX_INFLIGHT, maxEvents: MAX_GROUP_EVENTS });

  /** The WHERE conditions of a filter (the user first, so the per-user indexes serve it). */
  const filterSql = (f: EventFilter) => {
    const { since, until } = isoBounds(f);
    return sql`user_id = ${col(f.userId)}
      ${f.type !== undefined ? sql`and type = ${col(f.type)}` : sql``}
      ${f.version !== undefined ? sql`and app_version = ${col(f.version)}` : sql``}
      ${f.projectId !== undefined ? sql`and project_id = ${col(f.projectId)}` : sql``}
      ${since !== undefined ? sql`and received_at >= ${since}::timestamptz` : sql``}
      ${until !== undefined ? sql`and received_at < ${until}::timestamptz` : sql``}`;
  };

  /** The user's days that the filter's receive times can fall in (see readByDays). */
  const daysOf = async (f: Pick<EventFilter, 'userId' | 'since' | 'until'>): Promise<EventDay[]> => {
    const rows = await sql<EventDay[]>`
      select day, first_seq::float8 as first, last_seq::float8 as last, events::float8 as events, moved::float8 as moved,
             compacted is null or events > compacted as counters, folded, pointed::float8 as pointed
      from watchtower_event_days where user_id = ${col(f.userId)}
        ${f.since !== undefined ? sql`and day >= ${Math.floor(f.since / DAY_MS)}` : sql``}
        ${f.until !== undefined ? sql`and day <= ${Math.floor((f.until - 1) / DAY_MS)}` : sql``}`;
    return rows;
  };
  /** Receive times within days d0..d1: a condition the planner prunes partitions by. */
  const receivedIn = (d0: number, d1: number) =>
    sql`received_at >= ${new Date(d0 * DAY_MS).toISOString()}::timestamptz and received_at < ${new Date((d1 + 1) * DAY_MS).toISOString()}::timestamptz`;

  /**
   * readEvents over one owner's days. A compaction that moves a day's rows into blocks between the
   * read of the days and the read of the rows would hide them from the answer: if a closed day
   * read still had rows, its `moved` count is read again after, and the whole read done again
   * with the days as they now are if it changed (a day is moved once, so once is enough).
   */
  const readOwner: OwnerRead = async (userId, days, order, want, keys, rows, blocks, options) => {
    // Blocks of the days asked for only (a span of days can reach over days a caller reads
    // elsewhere: statistics read closed days' latest points from watchtower_day_points).
    const asked = pgArray(days.map((d) => d.day));
    const blocksOf = async (d0: number, d1: number) => sql<EventBlock[]>`
      select day, first_seq::float8 as first, last_seq::float8 as last, events from watchtower_event_blocks
      where user_id = ${col(userId)} and day >= ${d0} and day <= ${d1} and day = any(${asked}::int4[])`;
    const chosen = (of: EventBlock[]) =>
      sql`b.user_id = ${col(userId)} and b.day = any(${pgArray(of.map((b) => b.day))}::int4[]) and b.first_seq = any(${pgArray(of.map((b) => b.first))}::int8[])`;
    const reads = { rows, blocksOf, blocks: (of: EventBlock[], keys: string[]) => blocks(chosen(of), keys) };
    const got = await readEvents(days, order, want, keys, reads, options);
    const today = Math.floor(Date.now() / DAY_MS);
    const movable = days.filter((d) => d.day < today && d.events > (d.moved ?? 0));
    if (!movable.length) return got;
    const now = new Map((await sql<{ day: number; moved: number }[]>`
      select day, moved::float8 as moved from watchtower_event_days
      where user_id = ${col(userId)} and day = any(${pgArray(movable.map((d) => d.day))}::int4[])`).map((r) => [r.day, r.moved]));
    if (movable.every((d) => (now.get(d.day) ?? d.moved ?? 0) === (d.moved ?? 0))) return got;
    return readEvents(days.map((d) => ({ ...d, moved: now.get(d.day) ?? d.moved })), order, want, keys, reads, options);
  };

  /** The newest `want` events of a filter (before a seq, if given), newest first. */
  const newest = async (f: EventFilter, want: number, beforeSeq?: number, known?: readonly EventDay[]): Promise<SeqRow[]> => {
    const days = known ?? (await daysOf(f));
    const before = beforeSeq !== undefined ? sql`and seq < ${beforeSeq}` : sql``;
    const found = await readOwner(f.userId, days, 'desc', want, [''], (d0, d1) => sql<SeqRow[]>`
      select seq, event from watchtower_events
      where ${filterSql(f)} and ${receivedIn(d0, d1)} ${before}
      order by seq desc
      limit ${want}`.then((rows) => new Map([['', rows]])), (chosen) => sql<SeqRow[]>`
      select seq, event from ${blockEvents(sql)}
      where ${chosen} and ${filterSql(f)} ${before}
      order by seq desc
      limit ${want}`.then((rows) => new Map([['', rows]])), { cursor: beforeSeq });
    return found.get('') ?? [];
  };

  const store: Store = {
    persisted: true,
    insert(events, serialised) {
      serialised?.forEach((text, i) => texts.set(events[i], text));
      return insert(events);
    },

    // Keyset pagination on seq, the insertion order, through the per-user (type | version, seq)
    // indexes: a page costs the same however deep it is, with no server-side cursor (and so no
    // reserved connection, see the top of this file) held between pages. readByDays bounds each
    // query by receive time to the days that can hold the page, so only their partitions are read.
    async list(q: EventQuery): Promise<EventPage> {
      const beforeSeq = q.before === undefined ? undefined : decodeCursor(q.before);
      const limit = Math.max(0, Math.floor(q.limit));
      if (limit === 0) return { events: [], nextCursor: null };
      const rows = await guard('list', () => newest(q, limit + 1, beforeSeq));
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
      const days = await guard('export', () => daysOf(filter));
      const max = Math.max(0, ...days.map((d) => d.last));
      let afterSeq = 0;
      for (;;) {
        const after = afterSeq;
        const found = await guard('export', () => readOwner(filter.userId, days, 'asc', limit, [''], (d0, d1) => sql<SeqRow[]>`
          select seq, event from watchtower_events
          where ${filterSql(filter)} and ${receivedIn(d0, d1)} and seq > ${after} and seq <= ${max}
          order by seq
          limit ${limit}`.then((rows) => new Map([['', rows]])), (chosen) => sql<SeqRow[]>`
          select seq, event from ${blockEvents(sql)}
          where ${chosen} and ${filterSql(filter)} and seq > ${after} and seq <= ${max}
          order by seq
          limit ${limit}`.then((rows) => new Map([['', rows]])), { cursor: after }));
        const rows = found.get('') ?? [];
        if (rows.length) yield rows.map(toEvent);
        if (rows.length < limit) return;
        afterSeq = Number(rows[rows.length - 1].seq);
      }
    },

    async scanErrors(q) {
      return guard('scanErrors', () => scanErrors(sql, horizon, q.userId === undefined ? q : { ...q, userId: col(q.userId)! }));
    },

    async issueLease() {
      return !closed && (await lease.held());
    },

    async stats(userId, now, range, projectId): Promise<Stats> {
      const user = col(userId)!, scope = col(scopeOf(projectId))!;
      // A bad range is a RangeError before any query.
      planStats(now, range);
      return guard('stats', async () => {
        // Whether the user has events at or after the range's end: if not (a range ending now, as
        // most do), its last hour is taken whole from rollups rather than from raw rows (see
        // planStats). The latest receive time from the end's hour on, exactly: rows by the
        // (user, received_at) index of the partitions from the end's day on, and the blocks of
        // closed days. Only the user's: any project's event there is the conservative answer.
        let latest = Infinity;
        const to = range === undefined ? undefined : resolveRange(range, now)?.to;
        // The user's days (the counters to read, and where the latest events are), beside it.
        const days = daysOf({ userId });
        days.catch(() => {});
        if (to !== undefined) {
          const endHour = Math.floor(to / HOUR_MS);
          const from = new Date(endHour * HOUR_MS).toISOString();
          const [{ at }] = await sql<{ at: Date | null }[]>`
            select greatest(
              (select max(received_at) from watchtower_events where user_id = ${user} and received_at >= ${from}::timestamptz),
              (select max(last_received) from watchtower_event_blocks
                where user_id = ${user} and day >= ${Math.floor(endHour / 24)} and last_received >= ${from}::timestamptz)) as at`;
          latest = at === null ? endHour * HOUR_MS - 1 : at.getTime();
        }
        const plan = planStats(now, range, latest);
        return statsOf(sql, dayCache, edgeMinutes, plan, user, scope, projectId === undefined ? null : col(projectId),
          await days, (f, want, known) => newest(f, want, undefined, known), readOwner, await breakdownsFrom());
      });
    },

    async upsertUser(u: UserSync, now) {
      const user = appUser(u, now);
      await guard('upsertUser', () => sql`
        insert into watchtower_users (idp_user_id, email, display_name, last_seen_at)
        values (${col(user.idp_user_id)}, ${col(user.email)}, ${col(user.display_name)}, ${user.last_seen_at}::timestamptz)
        on conflict (idp_user_id) do update
          set email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`);
      return user;
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
        select (select coalesce(sum(events), 0) from watchtower_event_days) as events,
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
        edgeMinutes: edgeMinutes.figures(),
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
      clearInterval(maintenance);
      clearInterval(upkeeper);
      await lease.release();
      await compacting;
      await upkeep;
      listener = null;
      if (pinger) clearInterval(pinger);
      await listenSql?.end({ timeout: 1 }).catch(() => {});
      await sql.end({ timeout: 5 });
    },
  };
  try {
    await maintain();
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  compact();
  return store;
}

/**
 * One DO block: PL/pgSQL runs it as a single statement in its own transaction, so the advisory
 * lock is held until every pending migration is committed, and no reserved connection is needed
 * (see the top of this file on why this store avoids them). Instances starting at once queue on the lock and
 * then find the versions applied.
 */
export function migrationScript(migrations: readonly Migration[] = MIGRATIONS): string {
  const steps = migrations.map((m) => {
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

/** The partitioned tables, each with one partition per day named <table>_p<day number>. */
const PARTITIONED = ['watchtower_events', 'watchtower_rollup_sessions', 'watchtower_day_sessions', 'watchtower_rollups', 'watchtower_breakdown_sessions'];

/**
 * Drops every day before `cutoff` (day number): its partition of each table is detached
 * CONCURRENTLY, which does not block inserts into the other partitions (a plain DROP would lock
 * the parent table until every running insert finished, and make new ones wait behind it), then
 * dropped. Several instances may do this at once: one that finds a partition gone already, or
 * being detached by another, leaves it to that one. Then deletes the days' blocks of events.
 * Resolves to the number of days dropped.
 */
export async function dropDaysBefore(sql: postgres.Sql, cutoff: number): Promise<number> {
  const days = (await sql<{ day: number }[]>`
    select distinct substr(c.relname, length(p.relname) + 3)::integer as day
    from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = any(${pgArray(PARTITIONED)}::text[]) and c.relname ~ '_p[0-9]+$'`).map((r) => r.day).filter((d) => d < cutoff);
  let dropped = 0;
  for (const day of days.sort((a, b) => a - b)) {
    try {
      for (const table of PARTITIONED) {
        // Identifiers made of constant names and an integer: nothing from a client.
        const partition = `${table}_p${Math.trunc(day)}`;
        await sql.unsafe(`alter table ${table} detach partition ${partition} concurrently`).catch((err: { code?: string }) => {
          // 42P01: gone already; 42P16 / 55000: not a partition or being detached (another instance).
          if (!['42P01', '42P16', '55000'].includes(err.code ?? '')) throw err;
        });
        await sql.unsafe(`drop table if exists ${partition}`);
      }
      dropped++;
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03' && (err as { code?: string }).code !== '40P01') throw err;
    }
  }
  // The blocks the closed days' rows were moved into (one row per thousand events of an owner).
  await sql`delete from watchtower_event_blocks where day < ${cutoff}::integer`;
  return dropped;
}

/**
 * The latest points of `routes` over whole days whose points are kept (watchtower_day_points):
 * per route, the days by their newest point, as many as hold LATENCY_POINTS points, and any other
 * day whose newest point is newer than the oldest of those (it may hold some of the latest; days
 * rarely overlap so). Each route's points newest first, at most LATENCY_POINTS.
 */
async function keptPoints(sql: postgres.Sql, user: string, scope: string, days: readonly number[], routes: readonly string[]): Promise<Map<string, PointRow[]>> {
  const [{ rows }] = await sql<{ rows: [string, string[], number[], string[], (number | null)[]][] }[]>`
    with m as (
      select day, route, first_seq, last_seq, sum(n) over (partition by route order by last_seq desc) - n as before
      from watchtower_day_points
      where user_id = ${user} and scope = ${scope} and day = any(${pgArray(days)}::int4[]) and route = any(${pgArray(routes)}::text[])
    ), low as (
      select route, min(first_seq) as low from m where before < ${LATENCY_POINTS} group by route
    )
    -- The points of the rows chosen only, each looked up by its key (sorting the rows with their
    -- arrays spilled megabytes to disk).
    select coalesce(json_agg(json_build_array(p.route, p.seqs::text[], p.durations, p.timestamps, p.ttfbs)), '[]') as rows
    from m join low on low.route = m.route
      cross join lateral (select route, seqs, durations, timestamps, ttfbs from watchtower_day_points p
                          where p.user_id = ${user} and p.scope = ${scope} and p.day = m.day and p.route = m.route) p
    where m.before < ${LATENCY_POINTS} or m.last_seq > low.low`;
  const byRoute = new Map<string, PointRow[]>();
  for (const [route, seqs, durations, timestamps, ttfbs] of rows) {
    let list = byRoute.get(route);
    if (!list) byRoute.set(route, (list = []));
    seqs.forEach((seq, i) => list.push({ seq, duration: durations[i], ts: timestamps[i], ttfb: ttfbs[i] }));
  }
  return latestPoints(byRoute);
}

/**
 * Base64 into bytes by a plain loop: Uint8Array.from over the decoded string iterated it one
 * character string at a time, the largest transient garbage of a first all-time answer.
 */
function fromBase64(base64: string): Uint8Array {
  const binary = atob(base64);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Seqs as decimal strings, newest first. */
const bySeqDesc = (a: PointRow, b: PointRow) => b.seq.length - a.seq.length || (a.seq < b.seq ? 1 : a.seq > b.seq ? -1 : 0);

/**
 * Each route's latest LATENCY_POINTS points of those in `sources`, newest first, each once (the
 * reads of days by spans may reach into kept days and read some of their points again).
 */
function latestPoints(...sources: ReadonlyMap<string, PointRow[]>[]): Map<string, PointRow[]> {
  const out = new Map<string, PointRow[]>();
  for (const source of sources) {
    for (const [route, points] of source) out.set(route, [...(out.get(route) ?? []), ...points]);
  }
  for (const [route, points] of out) {
    const sorted = points.sort(bySeqDesc).filter((p, i) => i === 0 || p.seq !== points[i - 1].seq);
    out.set(route, sorted.slice(0, LATENCY_POINTS));
  }
  return out;
}

/**
 * A day's fold rows' hour parts merged into one part (of the day's first hour), kept by the cache
 * as long as the day's folds are. For buckets of whole days only: then every hour of the day adds
 * to the same bucket, and assembleStats adds up the same counts and durations from one part as
 * from all of them, at a fraction of the work (an all-time answer adds every day kept).
 */
function dayPart(cache: DayPartCache, user: string, scope: string, day: number, folds: readonly number[], hours: readonly RollupPart[]): RollupPart {
  return cache.mergedDay(user, scope, day, folds, () => {
    const merged = new HourRollup(day * 24);
    for (const p of hours) merged.merge(asHour(p, day * 24));
    // Kept frozen: a merged day's maps and session sets took several times the bytes of its
    // columns, for every day an all-time answer adds.
    return FrozenHour.decode(encodePart(merged));
  });
}

/**
 * Whole UTC days as spans of hours [from, to) clipped to [h0, h1), contiguous days merged: a
 * condition on `hour` the planner prunes partitions by.
 */
function daySpans(days: readonly number[], h0: number, h1: number): [number, number][] {
  const spans: [number, number][] = [];
  for (const day of [...days].sort((a, b) => a - b)) {
    const a = Math.max(day * 24, h0), b = Math.min(day * 24 + 24, h1);
    if (a >= b) continue;
    const last = spans[spans.length - 1];
    if (last && last[1] === a) last[1] = b;
    else spans.push([a, b]);
  }
  return spans;
}

/** Hours of the series buckets that the range's edges cut: assembleStats unions their sessions. */
function cutBucketHours({ range: r, fullHours: [h0, h1] }: StatsPlan): [number, number][] {
  if (r === null) return [];
  const per = r.bucketMs / HOUR_MS;
  const out: [number, number][] = [];
  for (const i of new Set([0, r.buckets - 1])) {
    const start = (r.firstBucket + i) * per, end = start + per;
    if (start >= h0 && end <= h1) continue;
    const a = Math.max(start, h0), b = Math.min(end, h1);
    if (a < b) out.push([a, b]);
  }
  return out;
}

/**
 * Statistics from rollups, as every store answers them (lib/rollup/assemble.ts): one statement
 * reads the fold rows of the days in range (only the bytes of folds this instance has not cached;
 * see lib/store/postgres-compaction.ts), the counters of the plan's whole hours summed per series
 * bucket, the breakdown sessions still in rows, the session counters and sessions the series
 * needs, the partial hours at the range's edges (blocks wholly inside them as their rollups, the
 * rest as raw rows), and the active sessions of the last minutes (from the sessions seen, when
 * they can tell). Beside it, the latest errors and activity, then the latest points of each route
 * (of whole closed days from watchtower_day_points), are read by days (readByDays), so that no
 * read of raw rows goes through every daily partition. Single statements on pooled connections,
 * never a transaction (see guard).
 */
async function statsOf(sql: postgres.Sql, cache: DayPartCache, minutes: EdgeMinuteCache, plan: StatsPlan, user: string, scope: string, project: string | null,
  userDays: readonly EventDay[], newest: NewestOf, read: OwnerRead, breakdownsFrom: number): Promise<Stats> {
  const { now, range: r } = plan;
  const [h0, h1] = plan.fullHours;
  // Breakdowns with a range that starts where every event has their counters (see migration 5);
  // without them their counters are not even read.
  const breakdowns = r !== null && r.from >= breakdownsFrom * HOUR_MS;
  const notRead = [HOUR_SESSIONS, DAY_SESSIONS, ...(breakdowns ? [] : [...DIM_KINDS, ...VITAL_KINDS])];
  const perBucket = r ? r.bucketMs / HOUR_MS : 24;
  const today = Math.floor(now / DAY_MS);
  // Session counters: of the range's whole hours, or of the days of the series without a range.
  const [s0, s1] = r ? [h0, h1] : [(today - SERIES_DAYS + 1) * 24, (today + 1) * 24];
  const iso = (ms: number) => new Date(ms).toISOString();
  const anyOf = (spans: [number, number][], span: (a: number, b: number) => postgres.PendingQuery<postgres.Row[]>) =>
    spans.length === 0 ? sql`false` : spans.length === 1 ? span(...spans[0]) : sql`(${span(...spans[0])} or ${span(...spans[1])})`;
  const received = (a: number, b: number) => sql`(received_at >= ${iso(a)}::timestamptz and received_at < ${iso(b)}::timestamptz)`;
  // Blocks with events received in [a, b): their days, for the blocks' index, and their receive times.
  const reaching = (a: number, b: number) => sql`(b.day >= ${Math.floor(a / DAY_MS)} and b.day <= ${Math.floor((b - 1) / DAY_MS)}
    and b.first_received < ${iso(b)}::timestamptz and b.last_received >= ${iso(a)}::timestamptz)`;
  const active = sql`received_at >= ${iso(now - ACTIVE_WINDOW_MS)}::timestamptz and received_at <= ${iso(now)}::timestamptz`;
  // Active sessions from watchtower_sessions_seen: for a recent `now` (its rows are complete from
  // a day back) and a range that holds the whole window.
  // A range ending at `now` (as one without `to` does) leaves out what was received at `now`.
  const seenCounts = now >= Date.now() - SEEN_TRUSTED_MS && (r === null || (r.from <= now - ACTIVE_WINDOW_MS && r.to >= now));
  const seenAfter = r !== null && r.to === now ? sql`last_received >= ${iso(now)}::timestamptz` : sql`last_received > ${iso(now)}::timestamptz`;
  const cut = cutBucketHours(plan);
  // Blocks wholly inside an edge's span: their rollups stand for their events (all the owner's,
  // so not for a project's statistics). Cached like fold rows, under a scope of their own.
  const inside = (a: number, b: number) => sql`(b.first_received >= ${iso(a)}::timestamptz and b.last_received < ${iso(b)}::timestamptz)`;
  const rolled = project === null ? sql`(b.rollup is not null and ${anyOf(plan.rawSpans, inside)})` : sql`false`;
  const blocksCached = cache.daysOf(user, BLOCKS);
  const cachedBlocks = [...blocksCached].flatMap(([day, { folds }]) => [...folds.keys()].map((seq) => `${day}:${seq}`));
  // Counter rows of the whole hours: only the days that may still have some of this user's
  // (watchtower_event_days.counters; the others are compacted whole), as spans of whole days,
  // so that the planner reads only their partitions.
  const inSpans = (spans: [number, number][]) => spans.length === 0 ? sql`false`
    : spans.map(([a, b]) => sql`(hour >= ${a} and hour < ${b})`).reduce((x, y) => sql`${x} or ${y}`);
  const counterDays = userDays.filter((d) => d.counters).map((d) => d.day);
  // Breakdown session rows: of the days with counters, and of days compacted before fold rows
  // took the sessions (watchtower_event_days.folded); the others' are in their fold rows.
  const sessionRowDays = userDays.filter((d) => d.counters || !d.folded).map((d) => d.day);
  // Session counters of the series' hours: those of compacted days that took no insert since
  // come from this instance's cache (they no longer change), the others' from the database,
  // whole days, so that a closed day read once is cached.
  const sessionDays = userDays.filter((d) => d.day * 24 + 24 > s0 && d.day * 24 < s1);
  const cachedSessions = new Map<number, readonly SessionCount[]>();
  for (const d of sessionDays) {
    const rows = d.counters ? undefined : cache.sessionsOf(user, scope, d.day);
    if (rows) cachedSessions.set(d.day, rows);
  }
  const sessionSpans = daySpans(sessionDays.map((d) => d.day).filter((d) => !cachedSessions.has(d)), -Infinity, Infinity);
  const ofProject = project === null ? sql`` : sql`and project_id = ${project}`;
  const { since, until } = r ? isoBounds({ since: r.from, until: r.to }) : {};
  const inRange = sql`${since !== undefined ? sql`and received_at >= ${since}::timestamptz` : sql``}
    ${until !== undefined ? sql`and received_at < ${until}::timestamptz` : sql``}`;

  // Compacted days are read in the same statement as the counters: one snapshot, so a compaction
  // committing meanwhile is seen either whole (day rows, no counters) or not at all.
  const cached = cache.daysOf(user, scope);
  const cachedFolds = [...cached].flatMap(([day, { folds }]) => [...folds.keys()].map((fold) => `${day}:${fold}`));
  // The latest errors and events: read by days (see readByDays), beside the main statement.
  const window: EventFilter = { userId: user, ...(project === null ? {} : { projectId: project }), ...(r ? { since: r.from, until: r.to } : {}) };
  const days = daysWithin(userDays, window);
  const latest = Promise.all([newest({ ...window, type: 'error' }, RECENT_ERRORS, days), newest(window, RECENT_ACTIVITY, days)]);
  // Settled even if the main statement fails first, so that no rejection goes unhandled.
  latest.catch(() => {});

  /**
   * The latest points of routes (route → its count in range), newest first, from the days that
   * hold them: as many of the newest days as the rarest route's share of the user's events says
   * hold its points (readByDays reads more if not).
   */
  // Whole days in range whose events are all blocks with their latest points kept
  // (watchtower_day_points): their points are read there; the other days' from rows and blocks.
  const wholeDay = (d: EventDay) => r === null || (d.day * DAY_MS >= r.from && (d.day + 1) * DAY_MS <= r.to);
  const pointed = days.filter((d) => wholeDay(d) && d.pointed === d.events && d.moved === d.events);
  const unpointed = days.filter((d) => !pointed.includes(d));
  const windowEvents = unpointed.reduce((n, d) => n + d.events, 0);
  // The kept points first: an unpointed day whose newest seq is older than every route's 100th
  // kept point cannot hold a latest point (a range's first day, partial, is such a day), and is
  // not read.
  const pointsOf = async (counts: ReadonlyMap<string, number>) => {
    const keys = [...counts.keys()];
    const kept = pointed.length ? await keptPoints(sql, user, scope, pointed.map((d) => d.day), keys) : new Map<string, PointRow[]>();
    let oldest = Infinity;
    for (const route of keys) oldest = Math.min(oldest, (kept.get(route) ?? []).length < LATENCY_POINTS ? -Infinity : Number(kept.get(route)![LATENCY_POINTS - 1].seq));
    const days = unpointed.filter((d) => d.last > oldest);
    return latestPoints(days.length ? await readPoints(counts, days) : new Map<string, PointRow[]>(), kept);
  };
  const readPoints = (counts: ReadonlyMap<string, number>, days: readonly EventDay[]) => read<PointRow>(user, days, 'desc', LATENCY_POINTS, [...counts.keys()], async (d0, d1, keys) => {
    // One row per route, its points as one JSON array: 20 routes' 100 points would otherwise be
    // 2,000 rows for the driver to decode one by one.
    const rows = await sql<{ route: string; points: [string, number, string, number | null][] }[]>`
      select r.route, (
        select coalesce(json_agg(json_build_array(seq::text, duration, ts, ttfb) order by seq desc), '[]')
        from (
          select seq, duration, ts, ttfb
          from watchtower_events
          where user_id = ${user} and route_key = r.route ${ofProject} ${inRange}
            and received_at >= ${iso(d0 * DAY_MS)}::timestamptz and received_at < ${iso((d1 + 1) * DAY_MS)}::timestamptz
          order by seq desc limit ${LATENCY_POINTS}) last) as points
      from unnest(${pgArray(keys)}::text[]) as r(route)`;
    const byRoute = new Map<string, PointRow[]>();
    for (const { route, points } of rows) byRoute.set(route, points.map(([seq, duration, ts, ttfb]) => ({ seq, duration, ts, ttfb })));
    return byRoute;
  }, async (chosen, keys) => {
    // The blocks' points of every route asked for, newest first, kept up to LATENCY_POINTS a route.
    const rows = await sql<{ route: string; seq: string; duration: number; ts: string; ttfb: number | null }[]>`
      select route_key as route, seq, duration, ts, ttfb from ${blockPoints(sql)}
      where ${chosen} and route_key = any(${pgArray(keys)}::text[]) and duration is not null ${ofProject} ${inRange}
      order by seq desc`;
    const byRoute = new Map<string, PointRow[]>();
    for (const { route, ...point } of rows) {
      let list = byRoute.get(route);
      if (!list) byRoute.set(route, (list = []));
      if (list.length < LATENCY_POINTS) list.push(point);
    }
    return byRoute;
  }, { target: Math.max(LATENCY_POINTS * 2, Math.ceil((LATENCY_POINTS * 1.25 * windowEvents) / Math.min(...counts.values()))) });
  // The routes of the compacted days this instance holds for the range (counted over whole days):
  // nearly always every route in range, so their points are read beside the main statement
  // rather than after it. A route they miss is read after it; one not in range is left out.
  const guessed = new Map<string, number>();
  for (const [day, { folds }] of cached) {
    if (day * 24 + 24 <= h0 || day * 24 >= h1) continue;
    for (const part of [...folds.values()].flat()) {
      const { routes, routeCounts } = part.columns();
      routes.forEach((route, i) => guessed.set(route, (guessed.get(route) ?? 0) + routeCounts[i]));
    }
  }
  // Whole minutes of the edges: those this instance holds rollups of are not read again while
  // their rows are as they were (see postgres-edge-minutes.ts).
  const minuteSpans = wholeMinutes(plan.rawSpans);
  const heldMinutes = minuteSpans.length ? minutes.held(user, scope, minuteSpans) : new Map<string, RollupPart>();
  const pointsEarly = guessed.size ? pointsOf(guessed) : null;
  pointsEarly?.catch(() => {});
  const [row] = await sql<{
    days: [number, number, string | null][];
    counters: [string, string, number, number | null, number, number][];
    session_counts: [string, number, number][];
    sessions: [number, string][];
    breakdown_sessions: [string, string, string[]][];
    edges: string;
    minutes: [number, number, string, boolean][];
    edge_block_rows: string;
    edge_blocks: [number, string, string | null][];
    active: number;
  }[]>`
    with minutes as materialized (
      select minute, n, s, minute || ':' || n || ':' || s = any(${pgArray([...heldMinutes.keys()])}::text[]) as held from (
        select floor(extract(epoch from received_at) / 60)::bigint as minute, count(*)::int as n, sum(seq)::text as s
        from watchtower_events
        where user_id = ${user} ${ofProject} and ${anyOf(minuteSpans.map(([m0, m1]) => [m0 * MINUTE_MS, m1 * MINUTE_MS]), received)}
        group by 1) m)
    select
      (select coalesce(json_agg(json_build_array(day, fold, case when day || ':' || fold = any(${pgArray(cachedFolds)}::text[]) then null
                                                            else encode(parts, 'base64') end) order by day, fold), '[]')
         from watchtower_rollup_days
         where user_id = ${user} and scope = ${scope}
           ${Number.isFinite(h0) ? sql`and day >= ${Math.floor(h0 / 24)}` : sql``}
           ${Number.isFinite(h1) ? sql`and day < ${Math.ceil(h1 / 24)}` : sql``}) as days,
      (select coalesce(json_agg(json_build_array(kind, key, ms, bucket, n, micros)), '[]') from (
         select kind, key, ms, case when kind = ${TYPE}::text then floor(hour::float8 / ${perBucket}) end as bucket,
                sum(n)::float8 as n, sum(micros) as micros
         from watchtower_rollups
         where user_id = ${user} and scope = ${scope} and kind <> all(${pgArray(notRead)}::"char"[]) and (${inSpans(daySpans(counterDays, h0, h1))})
           and n > 0 -- a counter a compaction emptied, not yet deleted
         group by 1, 2, 3, 4) t) as counters,
      (select coalesce(json_agg(json_build_array(kind, hour, n)), '[]') from watchtower_rollups
         where user_id = ${user} and scope = ${scope} and kind in (${HOUR_SESSIONS}::text, ${DAY_SESSIONS}::text)
           and (${inSpans(sessionSpans)})) as session_counts,
      (select coalesce(json_agg(json_build_array(hour, session)), '[]') from watchtower_rollup_sessions
         where user_id = ${user} and scope = ${scope} and ${anyOf(cut, (a, b) => sql`(hour >= ${a} and hour < ${b})`)}) as sessions,
      (select coalesce(json_agg(json_build_array(kind, key, sessions)), '[]') from (
         select kind::text, key, array_agg(distinct session) as sessions from watchtower_breakdown_sessions
         where ${breakdowns && h0 < h1}::boolean and user_id = ${user} and scope = ${scope} and (${inSpans(daySpans(sessionRowDays, h0, h1))})
         group by kind, key) t) as breakdown_sessions,
      -- The stored texts as one JSON array, which the instance parses at once.
      -- The rows of those hours but those of whole minutes this instance holds as they are
      -- (postgres-edge-minutes.ts), and the rows of blocks (closed days) that reach into them.
      (select coalesce('[' || string_agg(event, ',') || ']', '[]') from watchtower_events
         where user_id = ${user} ${ofProject} and ${anyOf(plan.rawSpans, received)}
           and floor(extract(epoch from received_at) / 60)::bigint <> all(array(select minute from minutes where held))) as edges,
      (select coalesce(json_agg(json_build_array(minute, n, s, held)), '[]') from minutes) as minutes,
      (select coalesce('[' || string_agg(event, ',') || ']', '[]') from ${blockEvents(sql)}
         where b.user_id = ${user} ${ofProject} and ${anyOf(plan.rawSpans, reaching)} and ${anyOf(plan.rawSpans, received)}
           and not ${rolled}) as edge_block_rows,
      -- Blocks wholly inside an edge's span, as their rollups (the bytes of those not cached).
      (select coalesce(json_agg(json_build_array(b.day, b.first_seq::text, case when b.day || ':' || b.first_seq = any(${pgArray(cachedBlocks)}::text[])
                                                                            then null else encode(b.rollup, 'base64') end)), '[]')
         from watchtower_event_blocks b where b.user_id = ${user} and ${anyOf(plan.rawSpans, reaching)} and ${rolled}) as edge_blocks,
      -- The sessions seen in the window, when no event was received after it (then a session's
      -- latest receive time tells whether it had one in the window) and the range holds it
      -- (a session seen at or after its end, for a range that ends at now, is seen after it).
      -- Otherwise from the events; blocks only for a "now" in a closed day (a past now, as tests
      -- and benchmarks ask).
      case when ${seenCounts}::boolean and not exists (
          select 1 from watchtower_sessions_seen where user_id = ${user} and ${seenAfter})
        then (select count(distinct session_id)::int from watchtower_sessions_seen
              where user_id = ${user} ${project === null ? sql`` : sql`and project_id = ${project}`}
                and last_received >= ${iso(now - ACTIVE_WINDOW_MS)}::timestamptz)
      else (select count(distinct session_id)::int from (
         select session_id from watchtower_events
         where user_id = ${user} ${ofProject} ${inRange} and ${active}
         union all
         select session_id from ${blockSessions(sql)}
         where b.user_id = ${user} ${ofProject} ${inRange} and ${reaching(now - ACTIVE_WINDOW_MS, now + 1)} and ${active}) s
       where session_id is not null) end as active`;

  // Counters summed per bucket (types: the bucket's parts) or over the whole hours (the rest).
  const byBucket = new Map<number, Counter[]>();
  const whole: Counter[] = [];
  for (const [kind, key, ms, bucket, n, micros] of row.counters) {
    const c = { kind, key, ms, n, micros };
    if (bucket === null) whole.push(c);
    else {
      let list = byBucket.get(bucket);
      if (!list) byBucket.set(bucket, (list = []));
      list.push(c);
    }
  }
  const parts: RollupPart[] = [...byBucket].map(([bucket, counters]) => counterPart(bucket * perBucket, counters));
  parts.push(counterPart(Number.isFinite(h0) ? h0 : 0, whole));
  const readSessions = new Map<number, SessionCount[]>();
  for (const count of row.session_counts) {
    const day = Math.floor(count[1] / 24);
    let rows = readSessions.get(day);
    if (!rows) readSessions.set(day, (rows = []));
    rows.push(count);
  }
  for (const d of sessionDays) {
    if (!d.counters && !cachedSessions.has(d.day)) cache.setSessions(user, scope, d.day, readSessions.get(d.day) ?? []);
  }
  const hourCounts = new Map<number, number>(), dayCounts = new Map<number, number>();
  for (const rows of [...cachedSessions.values(), ...readSessions.values()]) {
    for (const [kind, hour, n] of rows) {
      if (hour < s0 || hour >= s1) continue;
      if (kind === HOUR_SESSIONS) hourCounts.set(hour, n);
      else dayCounts.set(hour / 24, n);
    }
  }
  const sessions = new Map<number, string[]>();
  for (const [hour, session] of row.sessions) {
    let list = sessions.get(hour);
    if (!list) sessions.set(hour, (list = []));
    list.push(session);
  }
  // Closed days: their hour parts within the whole hours (their sessions are counted above). A
  // day wholly in range whose buckets are whole UTC days is one part, its hours merged.
  const daysWhole = r === null || r.bucketMs % DAY_MS === 0;
  const foldsOf = new Map<number, { folds: number[]; hours: RollupPart[] }>();
  for (const [day, fold, base64] of row.days) {
    let hours = cached.get(day)?.folds.get(fold);
    if (!hours) cache.set(user, scope, day, fold, (hours = decodeDay(fromBase64(base64!))));
    let folds = foldsOf.get(day);
    if (!folds) foldsOf.set(day, (folds = { folds: [], hours: [] }));
    folds.folds.push(fold);
    folds.hours.push(...hours);
  }
  for (const [day, { folds, hours }] of foldsOf) {
    if (daysWhole && day * 24 >= h0 && day * 24 + 24 <= h1) parts.push(dayPart(cache, user, scope, day, folds, hours));
    else for (const part of hours) if (part.hour >= h0 && part.hour < h1) parts.push(part);
  }
  // The sessions of every breakdown name over the whole hours still in rows (the counters carry
  // the events).
  if (row.breakdown_sessions.length) parts.push(counterPart(Number.isFinite(h0) ? h0 : 0, [], row.breakdown_sessions));
  const rollups = new CounterRollups(plan.fullHours, parts, hourCounts, dayCounts, sessions, cut);
  // Whole events, not their columns: the breakdowns read the client, the referrer and vitals.
  const edges = edgeParts(minutes, user, scope, heldMinutes, row.minutes, JSON.parse(row.edges) as StoredEvent[]);
  edges.push(...HourRollup.fromRows((JSON.parse(row.edge_block_rows) as StoredEvent[]).map((e) => rollupRow(e))));
  for (const [day, firstSeq, base64] of row.edge_blocks) {
    const key = Number(firstSeq);
    let hours = blocksCached.get(day)?.folds.get(key);
    if (!hours) cache.set(user, BLOCKS, day, key, (hours = decodeDay(fromBase64(base64!))));
    edges.push(...hours);
  }

  // Each route's count in range. Its points: those read beside the main statement for the routes
  // of the cached days, and those of any other route now.
  const routeCounts = new Map<string, number>();
  for (const p of [...parts, ...edges]) {
    const { routes, routeCounts: counts } = p.columns();
    routes.forEach((route, i) => routeCounts.set(route, (routeCounts.get(route) ?? 0) + counts[i]));
  }
  const others = new Map([...routeCounts].filter(([route]) => !guessed.has(route)));
  const [errors, activity] = await latest;
  const [early, late] = await Promise.all([pointsEarly ?? new Map<string, PointRow[]>(), others.size ? pointsOf(others) : new Map<string, PointRow[]>()]);
  const points = new Map<string, LatencyPoint[]>();
  for (const route of routeCounts.keys()) {
    const pts = early.get(route) ?? late.get(route) ?? [];
    if (pts.length) points.set(route, pts.reverse().map(({ duration, ttfb, ts }) => ({ duration, ttfb, timestamp: ts })));
  }
  const recents: Recents = { activeUsers: row.active, errors: errors.map(toEvent), activity: activity.map(toEvent), points };
  return assembleStats({ plan, rollups, edges, recents, breakdowns });
}
