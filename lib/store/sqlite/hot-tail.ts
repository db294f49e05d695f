// The rows the sqlite store's worker has counted but not written to a database yet. An insert is
// counted (seq, rollups, live window) the moment it arrives, and its row is written to its
// segment's database a slice at a time when nothing else waits (worker/writes.ts): a read then
// never waits behind the writes of the inserts before it, only behind one slice. Reads see a
// segment as its database's rows followed by its rows here (SegmentView): every row here has a
// higher seq than every row of its segment's database, because rows are written in seq order.
//
// A segment's reader here (SegmentView) applies the same row filter (row-filter.ts) to the tail as
// its database applies in SQL.
import { errorFilter, rowFilter } from './row-filter.ts';
import { eventOfTail, trackedOfTail, type TailRow, type TrackedRow } from './row.ts';
import { trackBounds, type SegmentReader, type SeqRows, type SegmentDb, type TrackQuery } from './segment.ts';
import type { RowsQuery } from './protocol.ts';

export class HotTail {
  private rows: TailRow[] = [];
  /** Index of the first row not written yet (written rows are dropped from the front in bulk). */
  private head = 0;
  /** Rows ever pushed / ever taken: positions that `drained` waits for. */
  private pushed = 0;
  private taken = 0;
  private waiters: { upTo: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private failure: unknown = null;

  get size(): number {
    return this.rows.length - this.head;
  }

  push(row: TailRow): void {
    this.rows.push(row);
    this.pushed++;
  }

  /** The next row to write (undefined: none). */
  peek(): TailRow | undefined {
    return this.rows[this.head];
  }

  /** Up to `max` rows from the front, as long as they belong to `segment`. */
  front(max: number, segment: number): TailRow[] {
    const out: TailRow[] = [];
    for (let i = this.head; i < this.rows.length && out.length < max && this.rows[i].segment === segment; i++) out.push(this.rows[i]);
    return out;
  }

  /** The first `count` rows are in their databases. */
  advance(count: number): void {
    this.head += count;
    this.taken += count;
    // Written rows are let go soon: held on, they outlive the young generation and fill the old one.
    if (this.head === this.rows.length || (this.head > 1024 && this.head * 2 > this.rows.length)) {
      this.rows = this.rows.slice(this.head);
      this.head = 0;
    }
    while (this.waiters.length && this.waiters[0].upTo <= this.taken) this.waiters.shift()!.resolve();
  }

  /** Settles once every row pushed so far is written (or writing failed). */
  drained(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.taken >= this.pushed) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ upTo: this.pushed, resolve, reject }));
  }

  /** Writing failed: every wait fails, now and later. */
  fail(err: unknown): void {
    this.failure = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  /** The rows of one segment not written yet, oldest first. */
  of(segment: number): TailRow[] {
    const out: TailRow[] = [];
    for (let i = this.head; i < this.rows.length; i++) if (this.rows[i].segment === segment) out.push(this.rows[i]);
    return out;
  }
}

/**
 * One segment as reads see it: its database, then its rows still in the tail. Used only within one
 * turn of the event loop (the tail may be written in the next).
 */
export class SegmentView implements SegmentReader {
  constructor(readonly db: SegmentDb, readonly pending: readonly TailRow[]) {}

  /** SegmentDb.rows over the database and the pending rows. */
  rows(q: RowsQuery, limit: number): SeqRows {
    if (!this.pending.length) return this.db.rows(q, limit);
    const { matches } = rowFilter(q);
    const tail: SeqRows = { events: [], seqs: [] };
    const take = (r: TailRow) => {
      if (tail.events.length >= limit || !matches(r)) return;
      tail.events.push(eventOfTail(r, this.db.format));
      tail.seqs.push(r.seq);
    };
    if (q.order === 'newest') {
      for (let i = this.pending.length - 1; i >= 0 && tail.events.length < limit; i--) take(this.pending[i]);
      if (tail.events.length >= limit) return tail;
      const older = this.db.rows(q, limit - tail.events.length);
      return { events: [...tail.events, ...older.events], seqs: [...tail.seqs, ...older.seqs] };
    }
    const older = this.db.rows(q, limit);
    if (older.events.length >= limit) return older;
    for (const r of this.pending) take(r);
    const room = limit - older.events.length;
    return { events: [...older.events, ...tail.events.slice(0, room)], seqs: [...older.seqs, ...tail.seqs.slice(0, room)] };
  }

  /** SegmentDb.errors over the database and the pending rows (which follow every written row). */
  errors(after: number, upTo: number, limit: number): SeqRows {
    const out = this.db.errors(after, upTo, limit);
    const { matches } = errorFilter(after, upTo);
    for (const r of this.pending) {
      if (out.events.length >= limit) break;
      if (!matches(r)) continue;
      out.events.push(eventOfTail(r, this.db.format));
      out.seqs.push(r.seq);
    }
    return out;
  }

  /** SegmentDb.track over the database and the pending rows. */
  track(q: TrackQuery, each: (r: TrackedRow) => boolean | void): void {
    if (!this.pending.length) return this.db.track(q, each);
    const { matches: match } = rowFilter(trackBounds(q));
    const visit = (r: TailRow) => each(trackedOfTail(r, this.db.format)) !== false;
    if (q.order === 'DESC') {
      for (let i = this.pending.length - 1; i >= 0; i--) if (match(this.pending[i]) && !visit(this.pending[i])) return;
      return this.db.track(q, each);
    }
    let going = true;
    this.db.track(q, (r) => (going = each(r) !== false));
    if (!going) return;
    for (const r of this.pending) if (match(r) && !visit(r)) return;
  }
}
