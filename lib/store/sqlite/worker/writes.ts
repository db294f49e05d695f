// The hot segment's writes. An insert's work on the worker is only counting its events (seq, the
// owner's rollups and live window): its row waits in the tail (hot-tail.ts) and is written to its
// segment's database a slice at a time when no message waits, so a read never waits behind the
// writes of the inserts before it, only behind one slice.
import { setImmediate } from 'node:timers';
import type { StoredEvent } from '../../../event.ts';
import type { RollupRow } from '../../../rollup/hour.ts';
import { withinDepth } from '../../../shape.ts';
import type { JournalEntry } from '../journal.ts';
import { ownerKey, tailRow } from '../row.ts';
import { log, type WorkerState } from './state.ts';

/** Rows written to a segment's database in one transaction. */
const WRITE_BATCH = 32;
/** Rows written in one transaction when every counted row is written at once (before retention deletes hot rows): fewer commits. */
const BULK_BATCH = 1000;
/** Time a turn of the event loop spends writing rows (a read waits at most about this for them). */
const WRITE_SLICE_MS = 4;

/** The keys of every hot row counted while starting (recovery.ts: hotKeys). */
export interface StartKeys { seqs: number[]; owners: string[]; ids: string[] }

export class HotWrites {
  /** A snapshot is writing the hot database as it is: no row may be written meanwhile. */
  private paused = false;
  private scheduled = false;
  /** While starting: the (seq, owner, id) of every hot row counted, for the main thread's dedupe set. */
  startKeys: StartKeys | null = null;
  /** While starting: (owner, id) of every hot row, so that the replay skips what the snapshot holds. */
  startSeen: Set<string> | null = null;

  constructor(private readonly s: WorkerState) {}

  /** Counts a hot row into the statistics; while starting, also keeps its key. */
  count(seq: number, owner: string, row: RollupRow, e: StoredEvent): void {
    this.s.scopes.add(owner, row, e, this.s.hotId);
    const keys = this.startKeys;
    if (!keys) return;
    keys.seqs.push(seq);
    keys.owners.push(owner);
    keys.ids.push(e.id);
  }

  /**
   * Counts events into the hot segment (seq, rollups, live window) and queues their rows for
   * writing. Returns how many were new: a replay meets events the snapshot holds already; live
   * inserts were deduped by the main thread.
   */
  private accept(events: StoredEvent[]): number {
    const s = this.s;
    let added = 0;
    const seen = this.startSeen;
    for (const given of events) {
      // Journal lines written before ingest bounded the shape of events may nest deeper: such an
      // event is counted, written and held cut at MAX_DEPTH, as reads return it (eventFromRow).
      const e = withinDepth(given);
      const owner = ownerKey(e.user_id);
      if (seen) {
        const key = owner + '\n' + e.id;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      const { tail, row } = tailRow(e, s.hotId, s.hot.format, ++s.maxSeq);
      s.tail.push(tail);
      s.hotCount++;
      s.noteReceived(row.receivedMs);
      added++;
      this.count(tail.seq, owner, row, e);
    }
    this.schedule();
    return added;
  }

  /**
   * Journal entries in journal order: events are counted (accept) and their rows written later,
   * users written as they come (their table is apart, and a snapshot holding a user newer than
   * its rows is replayed the same).
   */
  applyEntries(entries: JournalEntry[]): number {
    let added = 0;
    let events: StoredEvent[] = [];
    for (const entry of entries) {
      if (!('u' in entry)) {
        events.push(entry.e as unknown as StoredEvent);
        continue;
      }
      added += this.accept(events);
      events = [];
      this.s.applyUser(entry.u);
    }
    return added + this.accept(events);
  }

  /** Journal lines the main thread acknowledged; settles once their rows are in the database. */
  apply(lines: string): Promise<void> {
    const entries: JournalEntry[] = [];
    for (const line of lines.split('\n')) if (line) entries.push(JSON.parse(line) as JournalEntry);
    this.applyEntries(entries);
    return this.s.tail.drained();
  }

  /**
   * Writes rows of the tail to their segments' databases, oldest first, `batchSize` to a
   * transaction, for about `budgetMs`: a read waits at most for one slice.
   */
  private writeSlice(budgetMs: number, batchSize = WRITE_BATCH): void {
    const { tail } = this.s;
    const t0 = performance.now();
    for (let first = tail.peek(); first && performance.now() - t0 < budgetMs; first = tail.peek()) {
      const target = first.segment === this.s.hotId ? this.s.hot : first.segment === this.s.sealing?.id ? this.s.sealing.db : null;
      if (!target) throw new Error(`row ${first.seq} belongs to segment ${first.segment}, which takes no rows`);
      const batch = tail.front(batchSize, first.segment);
      target.insert(batch);
      tail.advance(batch.length);
    }
  }

  /** Writes every counted row now (retention deletes hot rows from the database). */
  writeTailNow(): void {
    this.writeSlice(Infinity, BULK_BATCH);
  }

  /** Writes the tail a slice at a time, one slice per turn of the event loop, while it holds rows. */
  private schedule(): void {
    if (this.scheduled || this.paused || this.s.closed || !this.s.tail.size) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.paused || this.s.closed) return;
      try {
        this.writeSlice(WRITE_SLICE_MS);
      } catch (err) {
        // Reads would miss counted rows from here on: every wait for them fails, and the main
        // thread stops the store (a restart replays the journal).
        log(`writing rows failed: ${err instanceof Error ? err.message : String(err)}`);
        this.s.tail.fail(err);
        return;
      }
      this.schedule();
    });
  }

  /** A snapshot holds the hot database as it is: no row is written until resume(). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.schedule();
  }
}
