// The main thread's side of the database worker: starting it, its requests and their pending
// answers, the errors they settle with, and what happens when it dies.
//
// - Every request settles. An answer the worker cannot post comes back as an error answer
//   (protocol.ts: postAnswer), and a request this thread cannot post is refused at once.
// - If the worker dies, every pending and later request answers StoreUnavailableError (503)
//   instead of hanging; acknowledged events are in the journal and come back at the next start.
// - The worker must not keep the process alive by itself, but the process must stay alive while
//   someone waits for an answer. A timer does that, not the worker's own ref: terminate() refs the
//   worker until it has exited, and a late answer that unref'd it again let Node end the process
//   mid-await (exit code 13).
import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from '../types.ts';
import type { SqliteTesting } from './options.ts';
import type { FromWorker, ToWorker, WorkerRequest } from './protocol.ts';

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

/** What the worker tells the main thread unasked (retention's work on the dedupe, log lines). */
export interface WorkerEvents {
  log(msg: string): void;
  forgetKeys(keys: string[]): void;
  dropFilters(segments: number[]): void;
  /** The worker is gone (`failure` says why); called once. */
  failed(failure: StoreUnavailableError): void;
}

declare const Deno: unknown;

/**
 * Starts the worker. Node 20 does not apply the main thread's `--import tsx` loader inside workers,
 * so when this module runs as TypeScript on Node the worker first registers tsx, then imports the
 * worker module. Deno and Bun run TypeScript workers natively. The test seam's file operations go
 * in the worker's start data, not in a message.
 */
function startWorker(testing: SqliteTesting): Worker {
  const url = new URL('./worker' + (import.meta.url.endsWith('.ts') ? '.ts' : '.js'), import.meta.url);
  const workerData = testing.fs ? { fs: testing.fs } : undefined;
  const native = typeof Deno !== 'undefined' || typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';
  if (native || !url.pathname.endsWith('.ts')) return new Worker(url, { workerData });
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(url.href)}); });`,
    { eval: true, workerData },
  );
}

export class WorkerClient {
  private readonly worker: Worker;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private waiting: ReturnType<typeof setInterval> | null = null;
  /** Why the worker is gone; once set, every request answers it. */
  failure: StoreUnavailableError | null = null;
  /** The store is closing: the worker's exit is expected. */
  private stopping = false;

  /**
   * Started before the database's lock is taken, so that it loads its modules and sql.js meanwhile
   * (~0.2 s): it touches no file of the database before 'open'.
   */
  constructor(private readonly path: string, private readonly events: WorkerEvents, testing: SqliteTesting) {
    this.worker = startWorker(testing);
    testing.onWorker?.(this.worker);
    this.worker.unref();
    this.worker.on('message', (msg: FromWorker) => this.received(msg));
    this.worker.on('error', (err: unknown) => this.fail(err instanceof Error ? err.message : String(err), err));
    this.worker.on('exit', (code: number) => {
      if (!this.stopping) this.fail(`exit code ${code}`);
    });
  }

  request<T>(req: WorkerRequest): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.nextId;
    this.holdOpen(true);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      try {
        this.worker.postMessage({ id, req } satisfies ToWorker);
      } catch (err) {
        // Not sent (a request structured clone refuses): no answer will come, so none is awaited.
        this.pending.delete(id);
        if (this.pending.size === 0) this.holdOpen(false);
        reject(err);
      }
    });
  }

  /** The worker can no longer be trusted with acknowledged events: every request fails from now on. */
  fail(reason: string, cause?: unknown): void {
    if (this.failure) return;
    this.failure = new StoreUnavailableError(`The database worker stopped (${reason}); acknowledged events are in the journal`, { cause });
    this.events.log(`sqlite: ${this.failure.message}`);
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
    this.holdOpen(false);
    this.events.failed(this.failure);
    void this.worker.terminate();
  }

  /** Stops the worker (closing, or a start-up that failed). */
  async terminate(): Promise<void> {
    this.stopping = true;
    // An unref'd worker does not keep the process alive while it exits: a caller awaiting close()
    // with nothing else pending would see the process end mid-close (exit code 13).
    this.worker.ref();
    await this.worker.terminate();
  }

  private received(msg: FromWorker): void {
    if ('log' in msg) return this.events.log(msg.log);
    if ('forgetKeys' in msg) return this.events.forgetKeys(msg.forgetKeys);
    if ('dropFilters' in msg) return this.events.dropFilters(msg.dropFilters);
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (this.pending.size === 0) this.holdOpen(false);
    if (msg.ok) p.resolve(msg.value);
    else if (msg.error.name === 'CorruptDatabaseError') p.reject(new CorruptDatabaseError(this.path, new Error(msg.error.message)));
    else p.reject(Object.assign(new Error(msg.error.message), { name: msg.error.name }));
  }

  private holdOpen(on: boolean): void {
    if (on) this.waiting ??= setInterval(() => {}, 1 << 30);
    else if (this.waiting !== null) {
      clearInterval(this.waiting);
      this.waiting = null;
    }
  }
}
