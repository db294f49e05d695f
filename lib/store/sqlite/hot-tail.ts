// The rows the sqlite store's worker has counted but not written to a database yet. An insert is
// counted (seq, rollups, live window) the moment it arrives, and its row is written to its
// segment's database a slice at a time when nothing else waits (sqlite-worker.ts): a read then
// never waits behind the writes of the inserts before it, only behind one slice. Reads see a
// segment as its database's rows followed by its rows here (SegmentView): every row here has a
// higher seq than every row of its segment's database, because rows are written in seq order.
//
// The filters below are the SQL of SegmentDb.rows and SegmentDb.track, over the same column values.
import type { StoredEvent } from '../../event.ts';
import { rollupRow, type RollupRow } from '../../rollup/hour.ts';
import { isoBounds } from '../filter.ts';
import { rowFrom, type SeqRows, type SegmentDb, type TrackQuery, type TrackedRow } from './segment.ts';
import type { RowsQuery } from './protocol.ts';
import { eventFromRow, metadataOf, ownerKey, type ColValues } from './row.ts';

/**
 * A row as it is written: column values and metadata, not the event. Rows wait here for
 * milliseconds to seconds, long enough to leave V8's young generation; holding the parsed events
 * (three times the bytes, and object graphs to trace) grew the worker's heap by ~50 MiB at 4M events.
 */
export interface TailRow {
  /** The segment whose database the row goes to. */
  segment: number;
  seq: number;
  /** Column values (ColValues order) and metadata, as SegmentDb writes and reads them. */
  cols: ColValues;
  metadata: string;
  projectId: string | undefined;
}

const OWNER = 4, RECEIVED = 3, TYPE = 1, VERSION = 6;

/** The row of a stored event, to be written to segment `segment` with `seq`, and its rollup row. */
export function tailRow(e: StoredEvent, segment: number, seq: number): { tail: TailRow; row: RollupRow } {
  const receivedMs = Date.parse(e.receivedAt);
  const received = Number.isFinite(receivedMs) ? new Date(receivedMs).toISOString() : String(e.receivedAt);
  const cols: ColValues = [
    e.id, e.type, e.timestamp, received, ownerKey(e.user_id), e.sessionId || null, e.deployVersion ?? null,
    e.page_url ?? null, e.source ?? null, e.message ?? null, e.severity ?? null,
  ];
  return { tail: { segment, seq, cols, metadata: metadataOf(e, cols), projectId: e.projectId }, row: rollupRow(e, receivedMs) };
}

export class HotTail {
  private rows: TailRow[] = [];
  /** Index of the first row not written yet (written rows are dropped from the front in bulk). */
  private head = 0;
  /** Rows ever pushed / ever taken: positions that `written` waits for. */
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
  written(): Promise<void> {
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

/** A TailRow read back as SegmentDb reads its rows. */
const eventOf = (r: TailRow): StoredEvent => eventFromRow([...r.cols, r.metadata]);

/**
 * One segment as reads see it: its database, then its rows still in the tail. Used only within one
 * turn of the event loop (the tail may be written in the next).
 */
export class SegmentView {
  constructor(private readonly db: SegmentDb, private readonly pending: readonly TailRow[]) {}

  /** SegmentDb.rows over the database and the pending rows. */
  rows(q: RowsQuery, limit: number): SeqRows {
    if (!this.pending.length) return this.db.rows(q, limit);
    const { since, until } = isoBounds(q);
    const match = (r: TailRow) =>
      r.cols[OWNER] === q.userId &&
      (q.type === undefined || r.cols[TYPE] === q.type) &&
      (q.version === undefined || r.cols[VERSION] === q.version) &&
      (q.projectId === undefined || r.projectId === q.projectId) &&
      (since === undefined || r.cols[RECEIVED] >= since) &&
      (until === undefined || r.cols[RECEIVED] < until) &&
      (q.beforeSeq === undefined || r.seq < q.beforeSeq) &&
      (q.afterSeq === undefined || r.seq > q.afterSeq) &&
      (q.maxSeq === undefined || r.seq <= q.maxSeq);
    const tail: SeqRows = { events: [], seqs: [] };
    const take = (r: TailRow) => {
      if (tail.events.length >= limit || !match(r)) return;
      tail.events.push(eventOf(r));
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
    for (const r of this.pending) {
      if (out.events.length >= limit) break;
      if (r.seq <= after || r.seq > upTo || r.cols[TYPE] !== 'error' || r.cols[OWNER] === '') continue;
      out.events.push(eventOf(r));
      out.seqs.push(r.seq);
    }
    return out;
  }

  /** SegmentDb.track over the database and the pending rows. */
  track(q: TrackQuery, each: (r: TrackedRow) => boolean | void): void {
    if (!this.pending.length) return this.db.track(q, each);
    const { since, until } = isoBounds({ since: q.start, until: q.end });
    const match = (r: TailRow) =>
      r.cols[OWNER] === q.userId &&
      (q.type === undefined || r.cols[TYPE] === q.type) &&
      (q.projectId === undefined || r.projectId === q.projectId) &&
      (since === undefined || r.cols[RECEIVED] >= since) &&
      (until === undefined || r.cols[RECEIVED] < until);
    // Read back as SegmentDb.track reads a row of the database (rowFrom).
    const visit = (r: TailRow) => each(rowFrom([r.seq, ...r.cols, r.metadata])) !== false;
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
