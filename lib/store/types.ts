// The storage contract. Memory, sqlite (and later PostgreSQL) implement it; test/store-contract
// runs the same assertions against each.
import type { StoredEvent } from '../event.ts';
import type { Stats, StatsRange } from '../stats.ts';

export interface EventQuery {
  /** Owner whose events are read; reads are always scoped to one user. */
  userId: string;
  type?: string;
  version?: string;
  /** Maximum number of events, most recent first. */
  limit: number;
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

export interface StoreHealth {
  storage: string;
  eventCount: number;
  /** Extra, store-specific figures (databasePath, sizes, retention limits). */
  [extra: string]: unknown;
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
  /** One user's events, most recent first, filtered by type and deployVersion. */
  list(query: EventQuery): Promise<StoredEvent[]>;
  /**
   * Statistics (docs/api.md#stats) over one user's events, within `range` when given; must equal
   * computeStats over them. Throws RangeError for a range resolveRange refuses.
   */
  stats(userId: string, now: number, range?: StatsRange): Promise<Stats>;
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
