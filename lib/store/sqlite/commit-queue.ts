// The journal's group commit, and the backpressure that keeps the worker's backlog bounded.
//
// An event is acknowledged only after its journal line is fsynced; the requests that arrive while
// one write and fsync run share the next one. After the fsync each op of the group is applied on
// this thread (synchronously, in journal order) and the group's new lines are posted to the worker
// in one message before any op is resolved, so a read issued after an acknowledgement is queued in
// the worker behind the events it acknowledged (docs/architecture.md, invariant 7). A barrier (an
// op without lines: a snapshot's or seal's rotation of the journal) ends a group, so that what it
// covers is exactly the lines written before it.
import { StoreUnavailableError } from '../types.ts';
import type { WorkerClient } from './client.ts';
import type { JournalWriter } from './journal.ts';

/**
 * Journal text sent to the worker whose rows are not written yet, past which the commit loop waits:
 * it bounds the memory of the backlog during a bulk load, and since the worker counts every insert
 * message queued to it before it writes the next slice of rows, a larger backlog answers nothing
 * for longer (BENCHMARKS.md, Ingest throughput). Ordinary traffic and a snapshot's export never get near.
 */
const MAX_UNAPPLIED_BYTES = 2 * 1024 * 1024;
/**
 * The same bound once a snapshot or seal has fallen behind: the worker does its part of those
 * between the messages queued ahead of it, one file operation at a time, and behind a full backlog
 * a seal took far longer while the hot segment grew past its bound. A short queue keeps inserts
 * going and lets the seal finish.
 */
const SEALING_UNAPPLIED_BYTES = 256 * 1024;
/**
 * Journal text acknowledged since the running snapshot or seal began, past which it counts as
 * behind and the short queue applies. Applied from the start, the short queue held every
 * acknowledgement behind the seal's own work on the worker (BENCHMARKS.md, History); 8 MiB is
 * ~1.5 s of a bulk load and far more than an ordinary seal lets through.
 */
const OVERDUE_BYTES = 8 * 1024 * 1024;

interface Op {
  /** Journal lines (each ending in \n); '' for a barrier. */
  lines: string;
  apply: () => unknown;
  /** The op was not applied (its journal write failed). */
  abandon?: () => void;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export interface CommitQueueHooks {
  log(msg: string): void;
  now(): number;
  /** Whether a snapshot or seal is running (the backlog's bound then depends on OVERDUE_BYTES). */
  maintaining(): boolean;
  /** After every group: maintenance decides whether a snapshot or seal is due. */
  afterGroup(): void;
  /** The store is closed: nothing more is queued. */
  closed(): boolean;
}

export class CommitQueue {
  private queue: Op[] = [];
  private running = false;
  private tornTail = false;
  /** When the journal was last written (a quiet period is measured from it). */
  lastWriteAt: number;
  /** Journal text posted to the worker whose application it has not confirmed yet. */
  private unappliedBytes = 0;
  /** Journal text posted since the running snapshot or seal began (OVERDUE_BYTES). */
  private sentSinceBarrier = 0;
  /** New entries of the current group, sent to the worker in one message after the fsync. */
  private outbox = '';
  private drainWaiters: (() => void)[] = [];
  private readonly encoder = new TextEncoder();

  constructor(readonly writer: JournalWriter, private readonly client: WorkerClient, private readonly hooks: CommitQueueHooks) {
    this.lastWriteAt = hooks.now();
  }

  /** A group is being written or applied. */
  get busy(): boolean {
    return this.running;
  }

  /**
   * Queues journal `lines`; once they are fsynced, `apply` runs in journal order and its value
   * answers. `abandon` runs instead when the write failed. A barrier has no lines and is alone in
   * its group; only a barrier's `apply` may return a promise (the loop waits for it).
   */
  enqueue<T>(lines: string, apply: () => T, abandon?: () => void): Promise<Awaited<T>> {
    if (this.hooks.closed()) return Promise.reject(new StoreUnavailableError('The store is closed'));
    if (this.client.failure) return Promise.reject(this.client.failure);
    return new Promise<Awaited<T>>((resolve, reject) => {
      this.queue.push({ lines, apply, abandon, resolve: resolve as (v: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        void this.loop();
      }
    });
  }

  /** Sends `lines` to the worker with the rest of the current group (call from an op's `apply`). */
  send(lines: string): void {
    this.outbox += lines;
  }

  /** A snapshot or seal begins: the bytes it lets through are counted from here. */
  barrierStarted(): void {
    this.sentSinceBarrier = 0;
  }

  /** The worker is gone: the loop stops waiting for it. */
  wake(): void {
    for (const w of this.drainWaiters.splice(0)) w();
  }

  private sendOutbox(): void {
    if (!this.outbox) return;
    const text = this.outbox;
    this.outbox = '';
    this.unappliedBytes += text.length;
    this.sentSinceBarrier += text.length;
    this.client.request({ op: 'apply', lines: text, now: this.hooks.now() }).then(
      () => {
        this.unappliedBytes -= text.length;
        this.wake();
      },
      // The journal has these lines but the database does not: a restart replays them. Until then
      // reads would miss acknowledged events, so the store stops answering rather than lie.
      (err: unknown) => this.client.fail(`applying acknowledged events failed: ${err instanceof Error ? err.message : String(err)}`, err),
    );
  }

  private unappliedBound(): number {
    return this.hooks.maintaining() && this.sentSinceBarrier > OVERDUE_BYTES ? SEALING_UNAPPLIED_BYTES : MAX_UNAPPLIED_BYTES;
  }

  private async loop(): Promise<void> {
    try {
      while (this.queue.length) {
        while (this.unappliedBytes > this.unappliedBound() && !this.client.failure) {
          await new Promise<void>((r) => this.drainWaiters.push(r));
        }
        // A barrier (lines === '') ends a group: a snapshot must not cover lines written after it.
        let end = this.queue.findIndex((op) => op.lines === '');
        end = end === -1 ? this.queue.length : end === 0 ? 1 : end;
        const group = this.queue.slice(0, end);
        this.queue = this.queue.slice(end);
        if (!(await this.write(group))) continue;
        await this.settle(group);
        this.hooks.afterGroup();
      }
    } finally {
      this.running = false;
    }
  }

  /** Appends and fsyncs the group's lines; false (the group answered with 503) if that failed. */
  private async write(group: Op[]): Promise<boolean> {
    const text = group.map((op) => op.lines).join('');
    if (!text) return true;
    try {
      // After a failed write the file may end in a partial line: start on a fresh one.
      await this.writer.append(this.encoder.encode(this.tornTail ? '\n' + text : text));
      this.tornTail = false;
      this.lastWriteAt = this.hooks.now();
      return true;
    } catch (err) {
      this.tornTail = true;
      this.hooks.log(`journal: write failed: ${err instanceof Error ? err.message : String(err)}`);
      for (const op of group) {
        op.abandon?.();
        op.reject(new StoreUnavailableError('The journal could not be written', { cause: err }));
      }
      return false;
    }
  }

  /** Applies every op of a written group, posts its new lines, then answers each op. */
  private async settle(group: Op[]): Promise<void> {
    // Applied synchronously (no await in between), and the new entries posted before any op is
    // resolved (see the top of this file).
    const results = group.map((op) => {
      try {
        return { ok: true as const, value: op.apply() };
      } catch (err) {
        return { ok: false as const, err };
      }
    });
    this.sendOutbox();
    for (let i = 0; i < group.length; i++) {
      const r = results[i];
      if (!r.ok) {
        group[i].reject(r.err);
        continue;
      }
      // Only a barrier returns a promise (the rotation); it is alone in its group, and the loop
      // must not append again before it is done.
      try {
        group[i].resolve(await r.value);
      } catch (err) {
        group[i].reject(err);
      }
    }
  }
}
