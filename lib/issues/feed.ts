// What issue grouping works through: the store's error events, read by position (Store.scanErrors)
// into one bounded queue per owner, served in turn. The store is the queue of record: nothing is
// dropped when memory is full, it is read again later. So a crash, a SIGTERM with work left, or one
// owner's flood loses nothing; it only delays.
//
// Positions:
// - `frontier`: the global scan has read every error up to here. An owner whose queue is full
//   stops taking events from it and is "behind" from a position; its own scans (the store's owner
//   index) catch it up to the frontier later, while the global scan goes on for everyone else.
// - `done[owner]`: the owner's errors up to here are applied to its issues. An owner's events are
//   applied in position order, so one number says which of them are counted.
// - `through` (the checkpoint): every owner's errors up to here are applied. Start-up resumes the
//   global scan from it and skips, per owner, what `done` says was counted after it.
// The processor writes `done` of the owners in a slice, and the checkpoint, in the same record-store
// put as the slice's issues (lib/issues/progress.ts): all or none, so no error is counted twice.
import type { StoredEvent } from '../event.ts';
import type { ErrorScan, ErrorScanQuery } from '../store/types.ts';

export interface ErrorSource {
  scanErrors(query: ErrorScanQuery): Promise<ErrorScan>;
}

export interface FeedLimits {
  /** Errors held per owner; past it the owner is read again from the store when it has room. */
  perOwner: number;
  /** Errors held in all; the global scan pauses past it. */
  total: number;
  /** Errors one scan asks for. */
  readBatch: number;
  /** Errors of one owner in a slice before the next owner's turn. */
  perTurn: number;
}

export const FEED_LIMITS: FeedLimits = { perOwner: 2_000, total: 50_000, readBatch: 2_000, perTurn: 100 };

/** One owner's errors taken for a slice, oldest first, with their positions. */
export interface Taken {
  owner: string;
  events: StoredEvent[];
  seqs: number[];
}

interface OwnerQueue {
  events: StoredEvent[];
  seqs: number[];
  /** Index of the first event not yet taken (the arrays are trimmed now and then). */
  head: number;
  /** Set while the owner is behind: its errors after this position are still in the store only. */
  behindAfter: number | null;
}

export class IssueFeed {
  private frontier: number;
  private readonly done: Map<string, number>;
  private readonly owners = new Map<string, OwnerQueue>();
  /** Owners with errors held, in turn order; `next` is whose turn it is. */
  private turns: string[] = [];
  private next = 0;
  private heldCount = 0;
  /** The store's highest position at the last scan. */
  head = 0;

  constructor(
    private readonly source: ErrorSource,
    start: { through: number; done: ReadonlyMap<string, number> },
    private readonly limits: FeedLimits = FEED_LIMITS,
  ) {
    this.frontier = start.through;
    this.done = new Map(start.done);
  }

  /** Errors held in memory, waiting for a slice. */
  get held(): number {
    return this.heldCount;
  }

  /** Owners whose errors are partly still in the store only. */
  get behind(): number {
    let n = 0;
    for (const q of this.owners.values()) if (q.behindAfter !== null) n++;
    return n;
  }

  /** Whether everything the store held at the last scan is taken. */
  get idle(): boolean {
    return this.heldCount === 0 && this.behind === 0 && this.frontier >= this.head;
  }

  /**
   * Reads from the store: first the owners that are behind and have room again, then new errors
   * for everyone, until the store has no more or memory is full.
   */
  async fill(): Promise<void> {
    const { perOwner, readBatch, total } = this.limits;
    for (const [owner, q] of this.owners) {
      if (q.behindAfter === null || this.pendingOf(q) > perOwner / 2) continue;
      const r = await this.source.scanErrors({ after: q.behindAfter, userId: owner, upTo: this.frontier, limit: perOwner - this.pendingOf(q) });
      for (let i = 0; i < r.events.length; i++) this.hold(owner, q, r.events[i], r.seqs[i]);
      q.behindAfter = r.through >= this.frontier ? null : r.through;
    }
    while (this.heldCount < total) {
      const r = await this.source.scanErrors({ after: this.frontier, limit: readBatch });
      this.head = r.head;
      for (let i = 0; i < r.events.length; i++) this.add(r.events[i], r.seqs[i]);
      this.frontier = Math.max(this.frontier, r.through);
      if (r.events.length < readBatch) break;
    }
  }

  /** Up to `max` errors, a turn of at most `perTurn` per owner, owners in rotation. */
  take(max: number): Taken[] {
    const out: Taken[] = [];
    let taken = 0;
    let passes = 0;
    while (taken < max && this.turns.length && passes < this.turns.length) {
      if (this.next >= this.turns.length) this.next = 0;
      const owner = this.turns[this.next];
      const q = this.owners.get(owner)!;
      const n = Math.min(this.limits.perTurn, max - taken, this.pendingOf(q));
      if (n > 0) {
        out.push({ owner, events: q.events.slice(q.head, q.head + n), seqs: q.seqs.slice(q.head, q.head + n) });
        q.head += n;
        taken += n;
        this.heldCount -= n;
        passes = 0;
      } else passes++;
      this.next++;
    }
    return out;
  }

  /** The slice's errors are applied and durable: the owners' `done` moves past them. */
  applied(slice: readonly Taken[]): void {
    for (const t of slice) {
      if (t.seqs.length) this.done.set(t.owner, Math.max(this.done.get(t.owner) ?? 0, t.seqs[t.seqs.length - 1]));
      const q = this.owners.get(t.owner);
      if (q && this.pendingOf(q) === 0 && q.behindAfter === null) this.drop(t.owner);
      else if (q && q.head > 1024) {
        q.events = q.events.slice(q.head);
        q.seqs = q.seqs.slice(q.head);
        q.head = 0;
      }
    }
  }

  /**
   * The checkpoint: every owner's errors up to here are applied (the frontier, held back by the
   * first error of any owner not yet applied). `done` entries at or below it say nothing more.
   */
  checkpoint(): { through: number; done: Map<string, number> } {
    const through = this.through();
    for (const [owner, seq] of this.done) if (seq <= through) this.done.delete(owner);
    return { through, done: new Map(this.done) };
  }

  /** The checkpoint's position alone, changing nothing (health reads it). */
  through(): number {
    let through = this.frontier;
    for (const q of this.owners.values()) {
      if (this.pendingOf(q) > 0) through = Math.min(through, q.seqs[q.head] - 1);
      if (q.behindAfter !== null) through = Math.min(through, q.behindAfter);
    }
    return through;
  }

  /** How far `owner`'s errors are applied, at least (progress records of the owners in a slice). */
  doneOf(owner: string): number {
    return this.done.get(owner) ?? 0;
  }

  private add(e: StoredEvent, seq: number): void {
    const owner = e.user_id!;
    let q = this.owners.get(owner);
    if (!q) {
      if (seq <= (this.done.get(owner) ?? -1)) return;
      this.owners.set(owner, (q = { events: [], seqs: [], head: 0, behindAfter: null }));
      this.turns.push(owner);
    }
    if (q.behindAfter !== null) return;
    if (this.pendingOf(q) >= this.limits.perOwner) {
      q.behindAfter = seq - 1;
      return;
    }
    this.hold(owner, q, e, seq);
  }

  private hold(owner: string, q: OwnerQueue, e: StoredEvent, seq: number): void {
    // Counted before a crash: the checkpoint lagged behind this owner's own progress.
    if (seq <= (this.done.get(owner) ?? -1)) return;
    q.events.push(e);
    q.seqs.push(seq);
    this.heldCount++;
  }

  private pendingOf(q: OwnerQueue): number {
    return q.events.length - q.head;
  }

  private drop(owner: string): void {
    this.owners.delete(owner);
    const i = this.turns.indexOf(owner);
    this.turns.splice(i, 1);
    if (i < this.next) this.next--;
  }
}
