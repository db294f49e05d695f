// The sqlite store's options, their defaults, and the settings resolved from them.
import type { Worker } from 'node:worker_threads';
import type { StoreFsModule } from '../fs.ts';
import { DEFAULT_CACHE_MB, DEFAULT_DEDUPE_DAYS, DEFAULT_MAX_EVENTS, DEFAULT_RETENTION_DAYS } from '../defaults.ts';

export interface SqliteStoreOptions {
  /** Database file; the journal segments and snapshot temp files live beside it. */
  path: string;
  /** Events received longer ago than this are pruned; 0 keeps them forever. Default 90. */
  retentionDays?: number;
  /** Oldest events beyond this count are pruned (whole sealed segments first). Default 50,000,000. */
  maxEvents?: number;
  /** The hot segment is sealed past this many events (or at a UTC day change). Default 50,000. */
  sealEvents?: number;
  /** Memory budget of the sealed segments kept open for reads, in MiB. Default 64 (DEFAULT_CACHE_MB). */
  cacheMb?: number;
  /** A retried event is recognised for at least this many days after it was stored. Default 7. */
  dedupeDays?: number;
  log?: (msg: string) => void;
  /**
   * Journal size past which a snapshot is taken at the next pause in writes (≥ gapSnapshotMs without
   * one); at 4× this size it is taken at once, pause or not. Default 64 MiB (~150k events).
   */
  journalMaxBytes?: number;
  /**
   * A database up to this size is copied for a snapshot, so reads go on while it is written; a
   * larger one is held for the write instead of doubling its memory. Default 32 MiB.
   */
  snapshotCopyBytes?: number;
  /** The pause in writes a size-triggered snapshot waits for. Default 1 s. */
  gapSnapshotMs?: number;
  /** A snapshot is taken once no write happened for this long and the journal is not empty. Default 30 s. */
  quietSnapshotMs?: number;
  /** How often retention by age runs. Default 60 s. */
  retentionIntervalMs?: number;
  /** Clock (ms); tests pass a fixed one. */
  now?: () => number;
  /** Tests only; production never passes it. */
  testing?: SqliteTesting;
}

/** Test seams of the sqlite store. Nothing in them travels in the messages between the threads. */
export interface SqliteTesting {
  /** Receives the worker thread that owns the database (tests stop it to see a crash). */
  onWorker?: (worker: Worker) => void;
  /**
   * The file operations of both threads (default node:fs), as a module each thread loads: the
   * worker is handed it when it starts (see StoreFsModule).
   */
  fs?: StoreFsModule;
}

/**
 * A sealed segment takes ~600 B per event once open, and the cache must hold the two a range's
 * edge hour can span, so a segment is kept small enough for two to fit; smaller segments also make
 * each seal less work, at the cost of more manifests to read at start-up (BENCHMARKS.md, History).
 */
export const DEFAULT_SEAL_EVENTS = 50_000;
/**
 * Reads wait behind a snapshot that holds the database; the small snapshot that follows every seal
 * is copied instead, up to this size, so that they do not (BENCHMARKS.md, History).
 */
export const DEFAULT_SNAPSHOT_COPY_BYTES = 32 << 20;

/** Every option with its default. */
export type Settings = Required<Omit<SqliteStoreOptions, 'testing'>> & { testing: SqliteTesting };

export function settingsOf(o: SqliteStoreOptions): Settings {
  return {
    path: o.path,
    retentionDays: o.retentionDays ?? DEFAULT_RETENTION_DAYS,
    maxEvents: o.maxEvents ?? DEFAULT_MAX_EVENTS,
    sealEvents: o.sealEvents ?? DEFAULT_SEAL_EVENTS,
    cacheMb: o.cacheMb ?? DEFAULT_CACHE_MB,
    dedupeDays: o.dedupeDays ?? DEFAULT_DEDUPE_DAYS,
    log: o.log ?? (() => {}),
    journalMaxBytes: o.journalMaxBytes ?? 64 * 1024 * 1024,
    snapshotCopyBytes: o.snapshotCopyBytes ?? DEFAULT_SNAPSHOT_COPY_BYTES,
    gapSnapshotMs: o.gapSnapshotMs ?? 1000,
    quietSnapshotMs: o.quietSnapshotMs ?? 30_000,
    retentionIntervalMs: o.retentionIntervalMs ?? 60_000,
    now: o.now ?? Date.now,
    testing: o.testing ?? {},
  };
}
