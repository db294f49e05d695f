// Records: the small things a user owns besides events (projects, issues, alert rules and their
// deliveries, source maps). Few per user, read and written whole, so one kind-agnostic store
// serves them all; each event store comes with one (memory, a file beside the sqlite database, a
// PostgreSQL table), kept apart from the event store so neither grows the other's code.

/** One record. `body` is JSON-serialisable and owned by the feature that wrote it. */
export interface StoredRecord<T = unknown> {
  /** What the record is: 'project', 'issue', 'alert', 'sourcemap', … */
  kind: string;
  /** Unique within its kind across all users (ids are random or derived from the owner). */
  id: string;
  /** The user who owns it: every read is scoped to one owner. */
  userId: string;
  body: T;
}

export interface RecordStore {
  /** The record of this kind and id, if `userId` owns it; another user's is null, as a missing one. */
  get<T>(kind: string, id: string, userId: string): Promise<StoredRecord<T> | null>;
  /** A record found by kind and id alone (a project by its ingest key, before anyone is signed in). */
  find<T>(kind: string, id: string): Promise<StoredRecord<T> | null>;
  /** Every record of this kind that `userId` owns, in no particular order. */
  list<T>(kind: string, userId: string): Promise<StoredRecord<T>[]>;
  /** How many records of this kind `userId` owns (without reading them). */
  count(kind: string, userId: string): Promise<number>;
  /**
   * Creates or replaces records (by kind and id), durably before resolving, all or none. A record
   * whose id exists with another owner is not replaced: put rejects with RecordConflictError.
   */
  put(records: StoredRecord[]): Promise<void>;
  /** Removes a record the user owns; false when there was none. */
  delete(kind: string, id: string, userId: string): Promise<boolean>;
  /** Large values (source maps) stored by key, beside the records: written durably, read whole. */
  putBlob(key: string, bytes: Uint8Array): Promise<void>;
  getBlob(key: string): Promise<Uint8Array | null>;
  deleteBlob(key: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The creation time (ISO) of a new record listed in creation order: now, or a millisecond after the
 * newest of `existing` when that is not earlier. Two records made in the same millisecond would
 * otherwise be ordered by their random ids. Times that do not parse are left out.
 */
export function creationTime(now: number, existing: readonly (string | undefined)[]): string {
  // A record without a readable time (written by hand, or by an older version) does not count.
  const times = existing.map((t) => (typeof t === 'string' ? Date.parse(t) + 1 : NaN)).filter(Number.isFinite);
  return new Date(Math.max(now, ...times)).toISOString();
}

export class RecordConflictError extends Error {
  constructor(kind: string, id: string) {
    super(`${kind} ${id} belongs to another user`);
    this.name = 'RecordConflictError';
  }
}
