// The messages between the sqlite store's main thread (client.ts sends them) and its database
// worker (worker.ts handles them), named as the commands they are. Every request is answered in
// the order sent (docs/architecture.md, SQLite store). No test hook travels here (options.ts:
// SqliteTesting).
import { memoryUsage } from 'node:process';
import type { StoredEvent } from '../../event.ts';
import type { StatsRange } from '../../stats.ts';
import type { SegmentFilter } from './dedupe.ts';
import type { Manifest } from './manifest.ts';
import type { FunnelQuery } from '../../funnels/count.ts';
import type { ErrorScanQuery, EventFilter } from '../types.ts';

export interface InitArgs {
  path: string;
  retentionDays: number;
  maxEvents: number;
  now: number;
  /** Sealed segments received within this many ms send their key filter at start. */
  dedupeWindowMs: number;
  /** Memory budget of the sealed segments held open for reads. */
  cacheBytes: number;
  /** Snapshots of a database up to this size write a copy (see SqliteStoreOptions). */
  snapshotCopyBytes: number;
}

export interface InitResult {
  /** Owner → that owner's event ids in the hot segment joined by '\n': exact dedupe keys. */
  keys: Record<string, string>;
  /** Key filters of the sealed segments within the dedupe window. */
  filters: SegmentFilter[];
  /** The last journal segment found or sealed (0 when none): the writer continues after it. */
  lastSegment: number;
  /** Whether start-up changed the database (replay, retention, torn lines): compact now. */
  compact: boolean;
  /** Receive time of the hot segment's oldest event (null: empty), for sealing at day change. */
  hotOldest: number | null;
}

export interface HealthFigures {
  eventCount: number;
  usersWithEvents: number;
  databaseBytes: number;
  snapshotBytes: number;
  /** heldMs: how long the snapshot held the database (reads waited); totalMs: until the file was in place. */
  lastSnapshot: { at: string; events: number; bytes: number; heldMs: number; totalMs: number } | null;
  prunedEvents: number;
  startup: { replayedEntries: number; replayMs: number; tornLinesSkipped: number; ms: number };
  segments: {
    sealed: number; hotEvents: number; cacheBytes: number; cacheOpen: number; lastSeal: SealFigures | null;
    /** Segments sealed before project statistics were kept whose projects are not rolled up yet. */
    projectsPending: number;
  };
  /** The worker thread's memory: its heap, and outside it the databases' files and sql.js's WebAssembly memory. */
  workerMemory: ThreadMemory;
}

/** A thread's memory as its runtime counts it: its heap used and reserved, and what it holds outside the heap (array buffers, WebAssembly memory). */
export interface ThreadMemory { heapUsedBytes: number; heapTotalBytes: number; externalBytes: number }

export function threadMemory(): ThreadMemory {
  const m = memoryUsage();
  return { heapUsedBytes: m.heapUsed, heapTotalBytes: m.heapTotal, externalBytes: m.external };
}

export interface SealAnswer {
  manifest: Manifest;
  /** The sealed database file (a copy; the worker keeps the database open for reads). */
  database: Uint8Array;
}

export interface SealFigures { at: string; segment: number; events: number; bytes: number; ms: number }

/** A page of `list` or a batch of `export`, by sequence number (the main thread owns the cursor). */
export interface RowsQuery extends EventFilter {
  /** Only rows with seq below this (a page of list, newest first). */
  beforeSeq?: number;
  /** Only rows with seq above this (a batch of export, oldest first). */
  afterSeq?: number;
  /** Only rows with seq at most this (the end an export fixed when it began). */
  maxSeq?: number;
  order: 'newest' | 'oldest';
  limit: number;
}

export interface RowsResult {
  events: StoredEvent[];
  /** Seq of the last event returned (null when none). */
  lastSeq: number | null;
  /** Whether another row matches past the last one returned. */
  more: boolean;
  /** The highest seq stored when the rows were read. */
  maxSeq: number;
}

export type WorkerRequest =
  /** Start-up (worker/recovery.ts): answers with what the main thread needs to take over. */
  | { op: 'open'; args: InitArgs }
  /** Journal lines (entries the main thread decided are new), applied in order. */
  | { op: 'apply'; lines: string; now: number }
  /** A page of list or a batch of export. */
  | { op: 'readRows'; query: RowsQuery }
  /** Store.scanErrors. */
  | { op: 'scanErrors'; query: ErrorScanQuery }
  | { op: 'readStats'; userId: string; now: number; range?: StatsRange; projectId?: string }
  /** Store.statsOfEnvironment: null when the environment's scope cannot tell. */
  | { op: 'readEnvironmentStats'; userId: string; now: number; range?: StatsRange; projectId?: string; environment: string }
  /** Store.funnel (worker/funnel.ts). */
  | { op: 'readFunnel'; query: FunnelQuery }
  | { op: 'readUser'; idpUserId: string }
  | { op: 'readHealth' }
  /** Retention by age and count, a bounded batch. */
  | { op: 'prune'; now: number }
  /** Answers once every event applied before it has its row in its segment's database. */
  | { op: 'drainTail' }
  /** Export now; the database holds exactly the journal segments up to `covered`. */
  | { op: 'snapshot'; covered: number; reason: string; now: number }
  /**
   * Seal step 2: seal the hot segment, which holds exactly the journal segments up to `covered`;
   * answers with what the main thread writes (null: it was empty).
   */
  | { op: 'seal'; covered: number; reason: string; now: number }
  /** Seal step 4: the segment and its manifest are durable: replace `<db>`, drop the covered journal. */
  | { op: 'finishSeal'; segment: number; covered: number; diskBytes: number; now: number }
  | { op: 'close' };

export type ToWorker = { id: number; req: WorkerRequest };

export type FromWorker =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string; path?: string } }
  | { log: string }
  /** Retention removed these rows from the hot segment (owner, id, owner, id, …): forget their keys. */
  | { forgetKeys: string[] }
  /** Retention dropped these sealed segments: drop their key filters. */
  | { dropFilters: number[] };

/** Where the worker posts its messages: its parentPort (a MessagePort in tests). */
export interface AnswerPort {
  postMessage(message: FromWorker, transfer?: readonly ArrayBuffer[]): void;
}

/** The name of the error that answers a request whose answer could not be posted. */
export const UNSENDABLE_ANSWER = 'UnsendableAnswerError';

/**
 * Posts the answer to request `id`. An answer the port refuses (structured clone throws for a value
 * nested a few thousand levels deep, which the stores no longer hold but once accepted, issue 33)
 * is answered with an error instead: every request gets an answer, and the main thread's promise
 * settles (a throw here used to leave it waiting forever, and every later read of the same events
 * with it). Returns the refusal, for the worker's log, or null when the answer went.
 */
export function postAnswer(port: AnswerPort, id: number, op: string, value: unknown, transfer: readonly ArrayBuffer[] = []): Error | null {
  try {
    port.postMessage({ id, ok: true, value }, transfer);
    return null;
  } catch (err) {
    const refused = err instanceof Error ? err : new Error(String(err));
    postError(port, id, { name: UNSENDABLE_ANSWER, message: `the database worker could not send its answer to a ${op} request (${refused.name}: ${refused.message})` });
    return refused;
  }
}

/** Posts an error answer (strings only, which a port always takes while it is open). */
export function postError(port: AnswerPort, id: number, error: { name: string; message: string; path?: string }): void {
  try {
    port.postMessage({ id, ok: false, error });
  } catch {
    // The port is closed: the main thread is gone, or has stopped listening (a terminated store).
  }
}
