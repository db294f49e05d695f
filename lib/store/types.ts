// The storage contract. Memory, sqlite and PostgreSQL implement it; test/store-contract runs the
// same assertions against each.
import type { StoredEvent } from '../event.ts';
import type { FunnelCounts, FunnelQuery } from '../funnels/count.ts';
import type { Stats, StatsRange } from '../stats.ts';

/**
 * Which of one user's events a read covers. Times are receive times (`receivedAt`, the server's
 * clock), in ms since the epoch: `since` inclusive, `until` exclusive (docs/api.md#list).
 */
export interface EventFilter {
  /** Owner whose events are read; reads are always scoped to one user ('' matches nobody). */
  userId: string;
  /** Only events of this type. */
  type?: string;
  /** Only events whose deployVersion is this. */
  version?: string;
  /** Only events received at or after this time. */
  since?: number;
  /** Only events received before this time. */
  until?: number;
  /** Only events ingested with this project's key (StoredEvent.projectId). */
  projectId?: string;
  /** Only events whose `environment` field is this string. */
  environment?: string;
}

/** One page of GET /api/events: newest first, continued with `before`. */
export interface EventQuery extends EventFilter {
  /**
   * A `nextCursor` of an earlier page: this page starts right after that page's last event. Opaque
   * to callers; a string that is not a cursor makes list reject with InvalidCursorError. The
   * filters may differ from the earlier page's: the cursor is only a position.
   */
  before?: string;
  /** Most events in the page; below 1, the page is empty. */
  limit: number;
}

export interface EventPage {
  /** Most recently stored first. */
  events: StoredEvent[];
  /**
   * Where the next (older) page starts, as `before`; null when no event of the query is left.
   * A position in the store's insertion order (lib/store/cursor.ts), never in an event's own
   * fields, so paging returns every event once and in order even when many share a receive time,
   * and pages stay valid while new events arrive or old ones are pruned.
   */
  nextCursor: string | null;
}

/** What GET /api/events/export streams. */
export interface ExportQuery extends EventFilter {
  /** Most events per batch (default EXPORT_BATCH in lib/store/cursor.ts). */
  batchSize?: number;
}

/** What Store.scanErrors reads: positions are the store's insertion order (its sequence numbers). */
export interface ErrorScanQuery {
  /** Only events stored after this position (exclusive). */
  after: number;
  /** Most events answered. */
  limit: number;
  /** Only this owner's errors; every identified owner's when absent. */
  userId?: string;
  /** Only events at or before this position. */
  upTo?: number;
}

export interface ErrorScan {
  /** Error events of identified owners, oldest first, with their positions. */
  events: StoredEvent[];
  seqs: number[];
  /**
   * Every matching event with a position in (after, through] is in `events`: the next scan starts
   * after `through`. At least the last position answered; at most what the store can vouch that no
   * event will later appear below (a shared database's transactions commit out of order).
   */
  through: number;
  /** The highest position the store holds now (0 when it never held an event). */
  head: number;
}

export interface AppUser {
  idp_user_id: string;
  email: string;
  display_name: string;
  last_seen_at: string;
}

export interface UserSync {
  idpUserId: string;
  email: string;
  displayName: string;
}

/** The stored form of a user's sign-in, the same in every store. */
export function appUser(u: UserSync, now: number): AppUser {
  return { idp_user_id: u.idpUserId, email: u.email, display_name: u.displayName, last_seen_at: new Date(now).toISOString() };
}

export interface StoreHealth {
  storage: string;
  eventCount: number;
  /** Extra, store-specific figures (databasePath, sizes, retention limits). */
  [extra: string]: unknown;
}

/** A `before` that no store wrote (docs/api.md#list): the route answers 400 invalid_cursor. */
export class InvalidCursorError extends Error {
  constructor(message = 'before is not a cursor this service wrote (use nextCursor as it was given)') {
    super(message);
    this.name = 'InvalidCursorError';
  }
}

/** The store cannot serve right now (database connection lost); requests answer 503, never 500. */
export class StoreUnavailableError extends Error {
  constructor(message = 'Storage is unavailable; try again shortly', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export interface Store {
  /**
   * True for the stores of the persisted variant (sqlite, PostgreSQL), whose ingest answer carries
   * the stored events (docs/api.md#stores); the base behaviour's buffer answers with the counts only.
   */
  readonly persisted: boolean;
  /**
   * Stores events durably before resolving. Idempotent by (user_id, id): an event already stored
   * for the same owner is not stored again. Resolves to the events that were newly stored, in order.
   * `texts`, when given, holds `JSON.stringify` of each event, for a store that writes JSON to reuse.
   */
  insert(events: StoredEvent[], texts?: string[]): Promise<StoredEvent[]>;
  /**
   * One page of a user's events, most recently stored first (insertion order, which is receive
   * order unless the clock stepped back). Rejects with InvalidCursorError for a `before` that is
   * not a cursor.
   */
  list(query: EventQuery): Promise<EventPage>;
  /**
   * Every event of the filter, oldest first (insertion order), in batches of at most `batchSize`
   * events, read one batch per `next()`: memory stays bounded by a batch however many events
   * match, and a consumer that stops (`return()`, a `for await` left early) stops the reading.
   * Covers the events stored when the first batch is asked for; events stored after that are not
   * in it. Events removed meanwhile (retention, eviction) may be missing.
   */
  export(query: ExportQuery): AsyncIterable<StoredEvent[]>;
  /**
   * Statistics (docs/api.md#stats) over one user's events, within `range` when given; must equal
   * computeStats over them. Throws RangeError for a range resolveRange refuses. With `projectId`,
   * only the user's events of that project count (as computeStats over those events).
   */
  stats(userId: string, now: number, range?: StatsRange, projectId?: string): Promise<Stats>;
  /**
   * Statistics of the user's events of one environment (of the project, with `projectId`), from
   * rollups kept per environment (lib/environment-scopes.ts): equal to computeStats over those
   * events. Null when this store's rollups cannot tell for that environment and range (a name
   * beyond the owner's bound of environments, or a range reaching back before such rollups were
   * kept); the caller reads the events instead (lib/environment-stats.ts). Absent: always null.
   */
  statsOfEnvironment?(userId: string, now: number, range: StatsRange | undefined, projectId: string | undefined, environment: string): Promise<Stats | null>;
  /**
   * Sessions that reached each step of a funnel (docs/api.md#funnels) over the owner's events of
   * the project received in [from, to): must equal referenceFunnel (lib/funnels/reference.ts) over
   * those events in insertion order.
   */
  funnel(query: FunnelQuery): Promise<FunnelCounts>;
  /**
   * Issue processing's feed (lib/issues/feed.ts): error events of identified owners after a
   * position, in insertion order, so grouping can checkpoint its progress against the store and
   * resume after a crash. Positions survive a restart of the store.
   */
  scanErrors(query: ErrorScanQuery): Promise<ErrorScan>;
  /**
   * PostgreSQL, shared by several instances: whether this instance is the one that groups issues
   * (a lease it holds while it runs). Absent: a store has one process, which always does.
   */
  issueLease?(): Promise<boolean>;
  /** Upserts the app user keyed by idp_user_id (docs/api.md#users-sync) and returns the stored record. */
  upsertUser(user: UserSync, now: number): Promise<AppUser>;
  getUser(idpUserId: string): Promise<AppUser | null>;
  health(): Promise<StoreHealth>;
  /**
   * Stores shared by several instances (PostgreSQL) call the listener with events other instances
   * stored, so live streams see them; the handler publishes them to its own subscribers.
   */
  watch?(listener: (events: StoredEvent[]) => void): void;
  /** Makes everything durable (snapshot/compaction where the store has one). */
  flush(): Promise<void>;
  close(): Promise<void>;
}
