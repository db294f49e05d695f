// When the sqlite store snapshots and seals, and the one-at-a-time line both run in.
//
// Snapshots run after a quiet period, at a pause in writes once the journal is large (at once past
// 4× that size, which bounds replay time), after start-up changed anything, on flush and on
// shutdown. Seals run when the hot segment is full or from an earlier UTC day (planSeal). At most
// one of either runs at a time (runExclusive): a second snapshot would only write the same
// database again, and a seal must not start while a snapshot's rotation is in flight.
import type { StoreFs } from '../fs.ts';
import type { WorkerClient } from './client.ts';
import type { CommitQueue } from './commit-queue.ts';
import type { Dedupe } from './dedupe.ts';
import type { Settings } from './options.ts';
import { sealHotSegment, type SealContext } from './seal.ts';

const DAY_MS = 86_400_000;

/** Why the hot segment must be sealed now, or null: full, or holding events of an earlier UTC day. */
export function planSeal(s: { hotCount: number; sealEvents: number; hotDay: number | null; now: number }): 'size' | 'day change' | null {
  if (s.hotCount >= s.sealEvents) return 'size';
  if (newDay(s.hotDay, s.now)) return 'day change';
  return null;
}

/** Whether `now` is on another UTC day than the hot segment's (null: it is empty). */
const newDay = (hotDay: number | null, now: number) => hotDay !== null && Math.floor(now / DAY_MS) !== hotDay;

/** Why a snapshot is due at a timer's tick, or null: after a quiet period, or at a pause once the journal is large. */
export function planSnapshot(s: { journalBytes: number; journalMaxBytes: number; idleMs: number; quietMs: number; gapMs: number }): string | null {
  if (s.journalBytes === 0) return null;
  if (s.idleMs >= s.quietMs) return 'quiet period';
  if (s.journalBytes >= s.journalMaxBytes && s.idleMs >= s.gapMs) return 'journal size';
  return null;
}

export class Maintenance {
  /** The snapshot or seal under way (at most one). */
  private running: Promise<void> | null = null;
  /** close() began: no new seal starts. */
  private closing = false;
  /** UTC day of the hot segment's oldest event (null: empty): a new day seals it. */
  private hotDay: number | null;
  private timers: ReturnType<typeof setInterval>[] = [];
  private readonly sealContext: SealContext;

  constructor(
    private readonly settings: Settings,
    fs: StoreFs,
    private readonly client: WorkerClient,
    private readonly queue: CommitQueue,
    private readonly dedupe: Dedupe,
    hotOldest: number | null,
  ) {
    this.hotDay = hotOldest === null ? null : Math.floor(hotOldest / DAY_MS);
    this.sealContext = {
      path: settings.path, fs, client, queue, dedupe, log: settings.log, now: settings.now,
      hotEmptied: () => (this.hotDay = null),
    };
  }

  /** A snapshot or seal is under way. */
  get busy(): boolean {
    return this.running !== null;
  }

  /**
   * Runs `task` once the snapshot or seal under way (if any) is done; the next one waits for it in
   * turn. Afterwards a seal that came due meanwhile starts.
   */
  private runExclusive(task: () => Promise<void>): Promise<void> {
    const previous = this.running;
    const run = (async () => {
      if (previous) await previous.catch(() => {});
      await task();
    })();
    const tracked: Promise<void> = run.finally(() => {
      if (this.running === tracked) this.running = null;
      this.sealIfDue();
    });
    tracked.catch(() => {});
    this.running = tracked;
    this.queue.barrierStarted();
    return tracked;
  }

  /**
   * Rotates the journal inside the commit queue and sends the snapshot request right after, so the
   * worker exports exactly the closed segments' lines; resolves once the file is in place.
   */
  snapshot(reason: string): Promise<void> {
    return this.runExclusive(async () => {
      // The worker writes the rows counted so far first, without holding reads as the snapshot
      // does (after start-up's replay, ~1 s of them).
      await this.client.request({ op: 'drainTail' });
      let done!: Promise<void>;
      await this.queue.enqueue('', async () => {
        const covered = await this.queue.writer.rotate();
        done = this.client.request<void>({ op: 'snapshot', covered, reason, now: this.settings.now() });
      });
      await done;
    });
  }

  /** Seals the hot segment (seal.ts); resolves once the seal is durable. */
  seal(reason: string): Promise<void> {
    return this.runExclusive(() => sealHotSegment(this.sealContext, reason));
  }

  private plan() {
    return planSeal({ hotCount: this.dedupe.hotCount, sealEvents: this.settings.sealEvents, hotDay: this.hotDay, now: this.settings.now() });
  }

  /** Seals when planSeal says so, unless a snapshot or seal runs. */
  sealIfDue(): void {
    if (this.closing || this.client.failure || this.running) return;
    const reason = this.plan();
    if (reason) this.seal(reason).catch(() => {});
  }

  /** An insert stores events: the first of a new UTC day seals the previous day first. */
  storing(): void {
    // Its barrier is queued ahead of this insert unless a snapshot is running; then the seal
    // follows after this group.
    if (!this.running && newDay(this.hotDay, this.settings.now())) this.seal('day change').catch(() => {});
  }

  /** An insert's events are acknowledged: the hot segment's day starts with the first. */
  stored(): void {
    this.hotDay ??= Math.floor(this.settings.now() / DAY_MS);
  }

  /** After each group of the commit queue. */
  afterGroup(): void {
    // Past the soft size a snapshot waits for a pause in writes (the timer), so the worker's export
    // does not delay reads in the middle of a burst; past 4× it starts now.
    if (this.queue.writer.bytes >= 4 * this.settings.journalMaxBytes && !this.running) {
      this.snapshot('journal size, hard limit').catch(() => {});
    }
    this.sealIfDue();
  }

  /**
   * Starts the timers. `compact`: start-up replayed or pruned something, which a snapshot compacts
   * in the background like any other (the service need not wait for it); a hot segment the replay
   * took past its bound is sealed instead: one write instead of a snapshot and then a seal.
   */
  start(compact: boolean): void {
    const s = this.settings;
    if (compact) (this.plan() === 'size' ? this.seal('start-up') : this.snapshot('start-up')).catch(() => {});
    this.timers.push(setInterval(() => this.tick(), Math.max(50, Math.min(s.quietSnapshotMs, s.gapSnapshotMs, 5000) / 2)));
    this.timers.push(setInterval(() => {
      if (this.client.failure) return;
      this.client.request({ op: 'prune', now: s.now() }).catch(() => {});
      this.dedupe.expire(s.now());
    }, s.retentionIntervalMs));
    for (const t of this.timers) (t as { unref?: () => void }).unref?.();
  }

  private tick(): void {
    if (this.client.failure || this.queue.busy || this.running) return;
    this.sealIfDue();
    if (this.running) return;
    const reason = planSnapshot({
      journalBytes: this.queue.writer.bytes, journalMaxBytes: this.settings.journalMaxBytes,
      idleMs: this.settings.now() - this.queue.lastWriteAt, quietMs: this.settings.quietSnapshotMs, gapMs: this.settings.gapSnapshotMs,
    });
    if (reason) this.snapshot(reason).catch(() => {});
  }

  /**
   * Closing: the timers stop, a seal under way finishes, a hot segment past its bound is sealed (not
   * written whole as the snapshot: otherwise restarts in a row, each replaying a journal, grow it
   * every time), and the rest of the journal goes into a last snapshot.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    if (this.client.failure) return;
    if (this.running) await this.running.catch(() => {});
    if (this.plan() === 'size') await this.seal('shutdown').catch(() => {});
    if (this.queue.writer.bytes > 0) await this.snapshot('shutdown');
    else await this.queue.enqueue('', () => undefined);
    if (this.running) await this.running.catch(() => {});
  }
}
