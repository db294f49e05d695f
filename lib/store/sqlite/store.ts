// The persisted variant's store: SQLite (sql.js, in memory, on a worker thread) + an fsynced journal
// + snapshots. docs/architecture.md#sqlite-store describes it; the invariants it keeps are numbered
// there (1–8).
//
// Why this shape:
// - sql.js keeps the whole database in memory; nothing reaches disk unless we write it. An event is
//   acknowledged only after its journal line is fsynced (group commit: the requests that arrive
//   while one fsync runs share the next one). A snapshot alone lost acknowledged events on kill -9.
// - The database lives on a worker thread (sqlite-worker.ts) because a snapshot writes the database
//   file out before the database may change again, which blocks its thread in proportion to the
//   database size (seconds at 1M events). This thread keeps what acknowledging needs: the
//   journal writer, the group commit and the dedupe decision (a set of stored (owner, id) keys), so
//   an insert never waits for the worker. The worker applies what this thread acknowledged, in order.
// - Every message to the worker is handled in the order sent, which gives two guarantees for free:
//   a read sent after an insert was acknowledged sees it, and a snapshot sent right after the
//   journal was rotated holds exactly the lines of the closed segments. The worker then writes the
//   file (temp → fsync → rename → fsync dir → delete covered segments) while this thread carries on.
// - Every file operation, on both threads, goes through a StoreFs (fs.ts), which also holds the
//   protocols that make files and their names durable.
// - One process per database: opening takes the database's lock file (lock.ts) before touching
//   any other file; close releases it.
// - Start-up (in the worker) loads the snapshot and replays every remaining segment idempotently by
//   (user_id, id); unparseable lines (a torn tail) are skipped and reported.
// - /api/stats is assembled from per-user rollups and a live window kept on insert and prune in
//   the worker (lib/rollup, lib/live-window.ts), as the memory store's is, instead of scanning.
// - If the worker dies, every operation answers StoreUnavailableError (503) instead of hanging;
//   acknowledged events are in the journal and come back at the next start. An answer the worker
//   cannot post (structured clone refuses it) comes back as an error answer, and a request this
//   thread cannot post is refused at once: every request settles, whatever the data.
import { memoryUsage } from 'node:process';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { StoredEvent } from '../../event.ts';
import { resolveRange, type Stats } from '../../stats.ts';
import { decodeCursor, encodeCursor, EXPORT_BATCH } from '../cursor.ts';
import { ensureDir, loadStoreFs, type StoreFsModule } from '../fs.ts';
import { JournalWriter, segmentPath } from './journal.ts';
import { lockDatabase, type DatabaseLock } from './lock.ts';
import { ownerKey } from './row.ts';
import { Dedupe } from './dedupe.ts';
import { DEFAULT_CACHE_MB, DEFAULT_DEDUPE_DAYS, DEFAULT_MAX_EVENTS, DEFAULT_RETENTION_DAYS } from '../defaults.ts';
import { writeSegment } from './manifest.ts';
import { threadMemory, type FromWorker, type HealthFigures, type InitResult, type Request, type RowsResult, type SealAnswer, type ToWorker } from './protocol.ts';
import { StoreUnavailableError, appUser, type AppUser, type ErrorScan, type EventPage, type Store, type StoreHealth, type UserSync } from '../types.ts';

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
  /** Test seam: receives the worker thread that owns the database (tests stop it to see a crash). */
  onWorker?: (worker: Worker) => void;
  /** Test seam: the file operations of both threads (default node:fs); see StoreFsModule. */
  fsModule?: StoreFsModule;
}

/**
 * A sealed segment takes ~600 B per event once open, and the cache (128 MiB) must hold the two a
 * range's edge hour can span: with 150,000 events (~90 MB) it held one, and a 30-day stats
 * request at 222k events a day reopened both from disk every time (625 ms instead of 51 ms). At
 * 50,000 each seal is also a third of the work, and start-up reads three times as many
 * manifests (178 for 8.9M events: 2.25 s against 2.09 s with a 100k-event journal).
 */
export const DEFAULT_SEAL_EVENTS = 50_000;
/** Reads waited up to 160 ms behind the small snapshot that follows every seal, held on a busy disk. */
export const DEFAULT_SNAPSHOT_COPY_BYTES = 32 << 20;
/**
 * Journal text sent to the worker whose rows are not written yet, past which the commit loop waits:
 * it bounds the memory of the backlog during a bulk load. The worker counts every insert message
 * queued to it before it writes the next slice of rows, so a backlog answers nothing while it is
 * counted: with 8 MiB (~14k events) saturated batches of 20 had a p99 of 137–165 ms, with 2 MiB
 * 47–55 ms at the same throughput. Ordinary traffic and a snapshot's export never get near.
 */
const MAX_UNAPPLIED_BYTES = 2 * 1024 * 1024;
/**
 * The same bound once a snapshot or seal has fallen behind: the worker does its part of those
 * between the messages queued ahead of it, one file operation at a time. Behind a full backlog each
 * operation waited for seconds of inserts, and a seal took 26 s during a bulk load while the hot
 * segment grew to twice its bound. A short queue keeps inserts going and lets the seal finish.
 */
const SEALING_UNAPPLIED_BYTES = 256 * 1024;
/**
 * Journal text acknowledged since the running snapshot or seal began, past which it counts as
 * behind and the short queue applies. Applying the short queue from the start held every
 * acknowledgement behind the seal's own work on the worker: ingest p99 of batches at half the
 * saturated rate rose to 550–820 ms. 8 MiB is ~1.5 s of a bulk load and far more than an ordinary
 * seal lets through.
 */
const OVERDUE_BYTES = 8 * 1024 * 1024;

/** The database file exists but is not a database sql.js can read. */
export class CorruptDatabaseError extends Error {
  constructor(readonly path: string, cause: unknown) {
    super(
      `${path} is not a readable SQLite database (${cause instanceof Error ? cause.message : String(cause)}); ` +
        'the file was left untouched: move it aside or restore a backup, then start again',
      { cause },
    );
    this.name = 'CorruptDatabaseError';
  }
}

interface Op {
  /** Journal lines (each ending in \n); '' for a barrier such as a snapshot. */
  lines: string;
  apply: () => unknown;
  /** The op was not applied (its journal write failed). */
  abandon?: () => void;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

declare const Deno: unknown;

/**
 * Starts the worker. Node 20 does not apply the main thread's `--import tsx` loader inside workers,
 * so when this module runs as TypeScript on Node the worker first registers tsx, then imports the
 * worker module. Deno and Bun run TypeScript workers natively.
 */
function startWorker(): Worker {
  const url = new URL('./worker' + (import.meta.url.endsWith('.ts') ? '.ts' : '.js'), import.meta.url);
  const native = typeof Deno !== 'undefined' || typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';
  if (native || !url.pathname.endsWith('.ts')) return new Worker(url);
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(url.href)}); });`,
    { eval: true },
  );
}

export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const path = options.path;
  const retentionDays = options.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
  const log = options.log ?? (() => {});
  const journalMaxBytes = options.journalMaxBytes ?? 64 * 1024 * 1024;
  const quietMs = options.quietSnapshotMs ?? 30_000;
  const gapMs = options.gapSnapshotMs ?? 1000;
  const retentionIntervalMs = options.retentionIntervalMs ?? 60_000;
  const clock = options.now ?? Date.now;
  const sealEvents = options.sealEvents ?? DEFAULT_SEAL_EVENTS;
  const cacheMb = options.cacheMb ?? DEFAULT_CACHE_MB;
  const dedupeDays = options.dedupeDays ?? DEFAULT_DEDUPE_DAYS;

  const fs = await loadStoreFs(options.fsModule);
  await ensureDir(fs, dirname(path));

  // ---- dedupe: exact ids of the hot segment, key filters of recent sealed ones (dedupe.ts) ----
  // Kept here so acknowledging never waits for the worker; filled from the worker at start, it
  // learns of new events on insert and of removed ones when the worker reports what retention pruned.
  const dedupe = new Dedupe(dedupeDays * 86_400_000);
  let closed = false;
  /** close() began: no new seal starts. */
  let closing = false;
  const drainWaiters: (() => void)[] = [];

  // ---- the worker and its requests ----
  // Started before the lock is taken, so that it loads its modules and sql.js meanwhile (~0.2 s):
  // it touches no file of the database before 'init'.
  const worker = startWorker();
  options.onWorker?.(worker);
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  /** Why the worker is gone; once set, every operation answers StoreUnavailableError. */
  let failure: StoreUnavailableError | null = null;
  // The worker must not keep the process alive by itself (the old single-thread store did not),
  // but the process must stay alive while someone waits for its answer. A timer does that, not the
  // worker's own ref: terminate() refs the worker until it has exited, and a late answer that
  // unref'd it again let Node end the process mid-await (exit code 13).
  worker.unref();
  let waiting: ReturnType<typeof setInterval> | null = null;
  const holdOpen = (on: boolean) => {
    if (on) waiting ??= setInterval(() => {}, 1 << 30);
    else if (waiting !== null) {
      clearInterval(waiting);
      waiting = null;
    }
  };

  function request<T>(req: Request): Promise<T> {
    if (failure) return Promise.reject(failure);
    const id = ++nextId;
    holdOpen(true);
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      try {
        worker.postMessage({ id, req } satisfies ToWorker);
      } catch (err) {
        // Not sent (a request structured clone refuses): no answer will come, so none is awaited.
        pending.delete(id);
        if (pending.size === 0) holdOpen(false);
        reject(err);
      }
    });
  }

  function fail(reason: string, cause?: unknown) {
    if (failure) return;
    failure = new StoreUnavailableError(`The database worker stopped (${reason}); acknowledged events are in the journal`, { cause });
    log(`sqlite: ${failure.message}`);
    for (const p of pending.values()) p.reject(failure);
    pending.clear();
    holdOpen(false);
    for (const w of drainWaiters.splice(0)) w();
    void worker.terminate();
  }

  worker.on('message', (msg: FromWorker) => {
    if ('log' in msg) return log(msg.log);
    if ('pruned' in msg) {
      for (let i = 0; i < msg.pruned.length; i += 2) dedupe.forget(msg.pruned[i], msg.pruned[i + 1]);
      return;
    }
    if ('dropped' in msg) return dedupe.expire(clock(), msg.dropped);
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (pending.size === 0) holdOpen(false);
    if (msg.ok) p.resolve(msg.value);
    else if (msg.error.name === 'CorruptDatabaseError') p.reject(new CorruptDatabaseError(path, new Error(msg.error.message)));
    else p.reject(Object.assign(new Error(msg.error.message), { name: msg.error.name }));
  });
  worker.on('error', (err: unknown) => fail(err instanceof Error ? err.message : String(err), err));
  worker.on('exit', (code: number) => {
    if (!closed) fail(`exit code ${code}`);
  });

  // Before any file of the database is touched: start-up removes temp files, which must never be
  // another live process's snapshot in the making.
  let lock: DatabaseLock;
  try {
    lock = await lockDatabase(fs, path, log);
  } catch (err) {
    closed = true;
    worker.ref();
    await worker.terminate();
    throw err;
  }
  let init: InitResult;
  let writer: JournalWriter;
  try {
    init = await request<InitResult>({
      op: 'init',
      args: {
        path, retentionDays, maxEvents, now: clock(), dedupeWindowMs: dedupeDays * 86_400_000, cacheBytes: cacheMb * 1048576,
        snapshotCopyBytes: options.snapshotCopyBytes ?? DEFAULT_SNAPSHOT_COPY_BYTES,
        fs: options.fsModule,
      },
    });
    writer = await JournalWriter.open(fs, path, init.lastSegment + 1);
  } catch (err) {
    worker.ref();
    await worker.terminate();
    await lock.release();
    throw err;
  }

  for (const [owner, ids] of Object.entries(init.keys)) for (const id of ids.split('\n')) dedupe.add(owner, id);
  (init as { keys: unknown }).keys = null;
  for (const f of init.filters) dedupe.addFilter(f, clock());
  /** UTC day of the hot segment's oldest event (null: empty): a new day seals it. */
  let hotDay: number | null = init.hotOldest === null ? null : Math.floor(init.hotOldest / 86_400_000);

  // ---- group commit and snapshots ----
  let queue: Op[] = [];
  let running = false;
  let tornTail = false;
  let lastWriteAt = clock();
  /** The snapshot in progress (at most one: a second would only write the same database again). */
  let snapshotting: Promise<void> | null = null;
  /** Journal text posted to the worker whose application it has not confirmed yet. */
  let unappliedBytes = 0;
  /** Journal text posted since the running snapshot or seal began (OVERDUE_BYTES). */
  let sentSinceBarrier = 0;
  /** New entries of the current group, sent to the worker in one message after the fsync. */
  let outbox = '';

  const encoder = new TextEncoder();

  function enqueue<T>(lines: string, apply: () => T, abandon?: () => void): Promise<Awaited<T>> {
    if (closed) return Promise.reject(new StoreUnavailableError('The store is closed'));
    if (failure) return Promise.reject(failure);
    return new Promise<Awaited<T>>((resolve, reject) => {
      queue.push({ lines, apply, abandon, resolve: resolve as (v: unknown) => void, reject });
      if (!running) {
        running = true;
        void loop();
      }
    });
  }

  function sendOutbox() {
    if (!outbox) return;
    const text = outbox;
    outbox = '';
    unappliedBytes += text.length;
    sentSinceBarrier += text.length;
    request({ op: 'apply', lines: text, now: clock() }).then(
      () => {
        unappliedBytes -= text.length;
        for (const w of drainWaiters.splice(0)) w();
      },
      // The journal has these lines but the database does not: a restart replays them. Until then
      // reads would miss acknowledged events, so the store stops answering rather than lie.
      (err: unknown) => fail(`applying acknowledged events failed: ${err instanceof Error ? err.message : String(err)}`, err),
    );
  }

  const unappliedBound = () =>
    snapshotting && sentSinceBarrier > OVERDUE_BYTES ? SEALING_UNAPPLIED_BYTES : MAX_UNAPPLIED_BYTES;

  async function loop() {
    try {
      while (queue.length) {
        while (unappliedBytes > unappliedBound() && !failure) {
          await new Promise<void>((r) => drainWaiters.push(r));
        }
        // A barrier (lines === '') ends a group: a snapshot must not cover lines written after it.
        let end = queue.findIndex((op) => op.lines === '');
        end = end === -1 ? queue.length : end === 0 ? 1 : end;
        const group = queue.slice(0, end);
        queue = queue.slice(end);
        const text = group.map((op) => op.lines).join('');
        if (text) {
          try {
            // After a failed write the file may end in a partial line: start on a fresh one.
            await writer.append(encoder.encode(tornTail ? '\n' + text : text));
            tornTail = false;
            lastWriteAt = clock();
          } catch (err) {
            tornTail = true;
            log(`journal: write failed: ${err instanceof Error ? err.message : String(err)}`);
            for (const op of group) {
              op.abandon?.();
              op.reject(new StoreUnavailableError('The journal could not be written', { cause: err }));
            }
            continue;
          }
        }
        // Every op of the group is applied (synchronously: no await in between) and the new entries
        // posted before any op is resolved, so a read issued after an acknowledgement is queued in
        // the worker behind the events it acknowledged (docs/architecture.md, invariant 7).
        const results = group.map((op) => {
          try {
            return { ok: true as const, value: op.apply() };
          } catch (err) {
            return { ok: false as const, err };
          }
        });
        sendOutbox();
        for (let i = 0; i < group.length; i++) {
          const r = results[i];
          if (!r.ok) {
            group[i].reject(r.err);
            continue;
          }
          // Only a barrier returns a promise (the rotation); it is alone in its group, and the
          // loop must not append again before it is done.
          try {
            group[i].resolve(await r.value);
          } catch (err) {
            group[i].reject(err);
          }
        }
        // Past the soft size a snapshot waits for a pause in writes (the timer below), so the
        // worker's export does not delay reads in the middle of a burst; past 4× it starts now, so
        // replay time at start stays bounded.
        if (writer.bytes >= 4 * journalMaxBytes && !snapshotting) {
          snapshotNow('journal size, hard limit').catch(() => {});
        }
        sealIfDue();
      }
    } finally {
      running = false;
    }
  }

  /**
   * Rotates the journal inside the commit loop and sends the snapshot request right after, so the
   * worker exports exactly the closed segments' lines; resolves once the file is in place.
   */
  function snapshotNow(reason: string): Promise<void> {
    const previous = snapshotting;
    const run = (async () => {
      if (previous) await previous.catch(() => {});
      // The worker writes the rows counted so far first, without holding reads as the snapshot
      // does (after start-up's replay, ~1 s of them).
      await request({ op: 'written' });
      let done!: Promise<void>;
      await enqueue('', async () => {
        const covered = await writer.rotate();
        done = request<void>({ op: 'snapshot', covered, reason, now: clock() });
      });
      await done;
    })();
    const tracked: Promise<void> = run.finally(() => {
      if (snapshotting === tracked) snapshotting = null;
      sealIfDue();
    });
    tracked.catch(() => {});
    snapshotting = tracked;
    sentSinceBarrier = 0;
    return tracked;
  }

  /** Seals when the hot segment is full or from an earlier UTC day, unless a snapshot or seal runs. */
  function sealIfDue() {
    if (closing || failure || snapshotting) return;
    if (overBound()) sealNow('size').catch(() => {});
    else if (dayChanged()) sealNow('day change').catch(() => {});
  }

  const overBound = () => dedupe.hotCount >= sealEvents;
  const dayChanged = () => hotDay !== null && Math.floor(clock() / 86_400_000) !== hotDay;

  /**
   * Seals the hot segment: a barrier in the commit queue rotates the journal and the dedupe's hot
   * ids, and asks the worker to seal exactly what it holds; resolves once the seal is durable. Runs
   * in the same line as snapshots (one at a time).
   */
  function sealNow(reason: string): Promise<void> {
    const previous = snapshotting;
    const run = (async () => {
      if (previous) await previous.catch(() => {});
      let done!: Promise<SealAnswer | null>;
      let token = 0, covered = 0;
      await enqueue('', async () => {
        covered = await writer.rotate();
        token = dedupe.rotate();
        hotDay = null;
        done = request<SealAnswer | null>({ op: 'seal', covered, reason, now: clock() });
      });
      // On failure the sealing ids stay exact in the dedupe; a restart replays the journal.
      const sealed = await done;
      if (!sealed) return dedupe.sealed(token, null, clock());
      const { manifest, database } = sealed;
      manifest.filter = await dedupe.filterOf(token);
      try {
        // Written here, not on the worker, whose event loop is busy applying inserts.
        const diskBytes = await writeSegment(fs, path, database, manifest);
        await request({ op: 'sealed', segment: manifest.id, covered, diskBytes, now: clock() });
      } catch (err) {
        log(`sealing segment ${manifest.id} failed; its events stay readable and in the journal: ${err instanceof Error ? err.message : String(err)}`);
        throw err;
      }
      dedupe.sealed(token, { segment: manifest.id, maxReceived: manifest.maxReceived, hashes: manifest.filter }, clock());
    })();
    const tracked: Promise<void> = run.finally(() => {
      if (snapshotting === tracked) snapshotting = null;
      sealIfDue();
    });
    tracked.catch(() => {});
    snapshotting = tracked;
    sentSinceBarrier = 0;
    return tracked;
  }

  // Start-up replayed or pruned something: compact it, in the background like any other snapshot
  // (at 1M events it takes 1–2.5 s, which the service need not wait for). A hot segment the replay
  // took past its bound is sealed instead: one write instead of a snapshot and then a seal.
  if (init.compact) (overBound() ? sealNow('start-up') : snapshotNow('start-up')).catch(() => {});

  const quietTimer = setInterval(() => {
    if (closed || failure || running || snapshotting) return;
    sealIfDue();
    if (snapshotting) return;
    if (writer.bytes === 0) return;
    const idle = clock() - lastWriteAt;
    if (idle >= quietMs) snapshotNow('quiet period').catch(() => {});
    else if (writer.bytes >= journalMaxBytes && idle >= gapMs) snapshotNow('journal size').catch(() => {});
  }, Math.max(50, Math.min(quietMs, gapMs, 5000) / 2));
  const retentionTimer = setInterval(() => {
    if (closed || failure) return;
    request({ op: 'prune', now: clock() }).catch(() => {});
    dedupe.expire(clock());
  }, retentionIntervalMs);
  unref(quietTimer);
  unref(retentionTimer);

  const alive = () => {
    if (closed) throw new StoreUnavailableError('The store is closed');
    if (failure) throw failure;
  };

  return {
    persisted: true,
    insert(events, texts) {
      if (!events.length) return Promise.resolve([]);
      if (closed) return Promise.reject(new StoreUnavailableError('The store is closed'));
      if (failure) return Promise.reject(failure);
      // Decided now, before journaling: the journal holds new events only, so a replay never
      // stores again an event that is in a sealed segment. The first of two equal (owner, id)
      // wins; the keys are claimed until the write is done (released if it fails).
      const stored: StoredEvent[] = [];
      const claimed: [string, string][] = [];
      let text = '';
      for (let i = 0; i < events.length; i++) {
        const e = events[i];
        const owner = ownerKey(e.user_id);
        if (dedupe.has(owner, e.id)) continue;
        const id = flatCopy(e.id);
        dedupe.claim(owner, id);
        claimed.push([owner, id]);
        stored.push(e);
        text += '{"e":' + (texts ? texts[i] : JSON.stringify(e)) + '}\n';
      }
      const release = () => {
        for (const [owner, id] of claimed) dedupe.unclaim(owner, id);
      };
      // The first event of a new UTC day: seal the previous day first (its barrier is queued ahead
      // of this insert unless a snapshot is running; then the seal follows after this group).
      if (stored.length && !snapshotting && dayChanged()) {
        sealNow('day change').catch(() => {});
      }
      // Only duplicates: a barrier-sized no-op, still answered in order after the writes before it.
      return enqueue(text, () => {
        // Runs after the fsync, in journal order.
        if (failure) {
          release();
          throw failure;
        }
        for (const [owner, id] of claimed) {
          dedupe.unclaim(owner, id);
          dedupe.add(owner, id);
        }
        if (hotDay === null && stored.length) hotDay = Math.floor(clock() / 86_400_000);
        outbox += text;
        return stored;
      }, release);
    },
    async scanErrors(query) {
      alive();
      return request<ErrorScan>({ op: 'errors', query });
    },
    async list(q): Promise<EventPage> {
      alive();
      const { before, ...filter } = q;
      // The cursor is decoded here, so that a bad one is an InvalidCursorError (the worker's errors
      // arrive as plain Errors).
      const beforeSeq = before === undefined ? undefined : decodeCursor(before);
      const page = await request<RowsResult>({ op: 'rows', query: { ...filter, beforeSeq, order: 'newest' } });
      return { events: page.events, nextCursor: page.more ? encodeCursor(page.lastSeq!) : null };
    },
    async *export(q) {
      alive();
      const { batchSize = EXPORT_BATCH, ...filter } = q;
      const limit = Math.max(1, batchSize);
      // One request per batch, each queued behind whatever the worker has to do: the export never
      // holds the database between batches, and stopping the iteration stops the requests.
      let afterSeq = 0;
      let maxSeq: number | undefined;
      for (;;) {
        const batch = await request<RowsResult>({ op: 'rows', query: { ...filter, afterSeq, maxSeq, limit, order: 'oldest' } });
        maxSeq ??= batch.maxSeq;
        if (batch.events.length) yield batch.events;
        if (!batch.more) return;
        afterSeq = batch.lastSeq!;
      }
    },
    async stats(userId, now, range, projectId): Promise<Stats> {
      alive();
      // Checked here: a RangeError thrown in the worker would arrive as a plain Error.
      const resolved = resolveRange(range, now);
      return request<Stats>({ op: 'stats', userId, now, range: resolved ? range : undefined, projectId });
    },
    upsertUser(u: UserSync, now) {
      const user = appUser(u, now);
      const line = JSON.stringify({ u: user }) + '\n';
      return enqueue(line, () => {
        if (failure) throw failure;
        outbox += line;
        return user;
      });
    },
    async getUser(id) {
      alive();
      return request<AppUser | null>({ op: 'getUser', idpUserId: id });
    },
    async health(): Promise<StoreHealth> {
      alive();
      const figures = await request<HealthFigures>({ op: 'health' });
      return {
        storage: 'sqlite',
        databasePath: path,
        eventCount: figures.eventCount,
        usersWithEvents: figures.usersWithEvents,
        databaseBytes: figures.databaseBytes,
        snapshotBytes: figures.snapshotBytes,
        journalBytes: writer.bytes,
        journalMaxBytes,
        lastSnapshot: figures.lastSnapshot,
        retentionDays,
        maxEvents,
        prunedEvents: figures.prunedEvents,
        startup: figures.startup,
        segments: { ...figures.segments, dedupeFilterBytes: dedupe.filterBytes },
        cacheMb,
        memory: { rssBytes: memoryUsage().rss, main: threadMemory(), worker: figures.workerMemory },
      };
    },
    async flush() {
      alive();
      await snapshotNow('flush');
    },
    async close() {
      if (closed) return;
      closing = true;
      clearInterval(quietTimer);
      clearInterval(retentionTimer);
      try {
        if (!failure) {
          // A seal under way first: the hot segment it leaves is what the check below is about.
          if (snapshotting) await snapshotting.catch(() => {});
          // A hot segment past its bound (a seal that close() kept from starting) is sealed, not
          // written whole as the snapshot: the next start-up loads and derives at most a segment's
          // rows. Otherwise restarts in a row, each replaying a journal, grow it every time.
          if (overBound()) await sealNow('shutdown').catch(() => {});
          if (writer.bytes > 0) await snapshotNow('shutdown');
          else await enqueue('', () => undefined);
          if (snapshotting) await snapshotting.catch(() => {});
          await request({ op: 'close' });
        }
      } finally {
        closed = true;
        try {
          await writer.close();
          if (writer.bytes === 0) await fs.remove(segmentPath(path, writer.seq));
          // An unref'd worker does not keep the process alive while it exits: a caller awaiting
          // close() with nothing else pending would see the process end mid-close (exit code 13).
          worker.ref();
          await worker.terminate();
        } finally {
          await lock.release();
        }
      }
    },
  };
}

/**
 * A flat copy of a string. Ids generated here (uuidv7) are concatenations, which V8 keeps as a tree
 * of parts: held by the dedupe set, 1M of them took 249 MB of heap, flat copies 73 MB.
 */
function flatCopy(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string;
}

function unref(timer: unknown) {
  (timer as { unref?: () => void }).unref?.();
}
