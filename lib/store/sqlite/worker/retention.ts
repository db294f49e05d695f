// Retention by age and by count: whole sealed segments past it (oldest first), and the hot
// segment's oldest events one by one, a bounded batch at a time. The main thread's dedupe learns
// what went (forgetKeys, dropFilters), so that an event sent again is stored again.
import { removeGradually } from '../../fs.ts';
import { funnelIndexFile } from '../funnel-index.ts';
import { manifestFile, segmentFile } from '../manifest.ts';
import { rowFrom, TRACK_COLUMNS, type TrackedRow } from '../row.ts';
import type { SealedSegment } from '../segment-cache.ts';
import { DAY_MS, log, post, type WorkerState } from './state.ts';
import type { HotWrites } from './writes.ts';

/** Hot rows deleted in one transaction. */
export const PRUNE_BATCH = 2000;

export interface Pruned { byAge: number; byCount: number; dropped: number[] }

export class Retention {
  /** File removals of dropped segments, in order, off the message queue (dropSegment). */
  private removals: Promise<void> = Promise.resolve();
  private unloggedAge = 0;
  private unloggedCount = 0;
  private lastPruneLog = -Infinity;

  constructor(private readonly s: WorkerState, private readonly writes: HotWrites) {}

  /** Retention by age and count, at most `maxRows` hot rows of each. Returns what went. */
  async prune(now: number, maxRows = Infinity): Promise<Pruned> {
    const { retentionDays, maxEvents } = this.s.args;
    const cutoff = retentionDays > 0 ? now - retentionDays * DAY_MS : -Infinity;
    let { byAge, byCount, dropped } = this.dropSealed(cutoff);
    const s = this.s;
    // Hot rows are deleted from the database: those still in the tail are written first.
    if (s.tail.size && ((retentionDays > 0 && s.hotReceived.min < cutoff) || s.eventCount > maxEvents)) this.writes.writeTailNow();
    if (retentionDays > 0) {
      let n = 0;
      while (n < maxRows) {
        const k = this.pruneBatch(maxRows - n, (t) => t < cutoff);
        n += k;
        if (k < PRUNE_BATCH) break;
      }
      byAge += n;
    }
    while (s.eventCount > maxEvents && s.hotCount > 0 && byCount < maxRows) {
      const k = this.pruneBatch(Math.min(s.eventCount - maxEvents, maxRows - byCount), () => true);
      if (!k) break;
      byCount += k;
    }
    if (dropped.length) post({ dropFilters: dropped });
    this.report(now, byAge, byCount, maxRows === Infinity);
    return { byAge, byCount, dropped };
  }

  /** Whole sealed segments past retention, oldest first. */
  private dropSealed(cutoff: number): Pruned {
    const { maxEvents } = this.s.args;
    let byAge = 0, byCount = 0;
    const dropped: number[] = [];
    for (const seg of this.s.sealed.oldestFirst()) {
      if (seg.id >= this.s.durableHot || seg.writing) break;
      const old = seg.maxReceived < cutoff;
      if (!old && this.s.eventCount - seg.count < maxEvents) break;
      this.dropSegment(seg, old ? cutoff : seg.maxReceived + 1);
      dropped.push(seg.id);
      if (old) byAge += seg.count;
      else byCount += seg.count;
    }
    return { byAge, byCount, dropped };
  }

  /** At the count limit every write prunes a little: one log line a minute, not one per batch. */
  private report(now: number, byAge: number, byCount: number, whole: boolean): void {
    this.unloggedAge += byAge;
    this.unloggedCount += byCount;
    if ((this.unloggedAge || this.unloggedCount) && (now - this.lastPruneLog >= 60_000 || whole)) {
      this.lastPruneLog = now;
      if (this.unloggedAge) log(`retention: pruned ${this.unloggedAge} events received more than ${this.s.args.retentionDays} days ago`);
      if (this.unloggedCount) log(`retention: pruned ${this.unloggedCount} oldest events beyond SERVICE_MAX_EVENTS=${this.s.args.maxEvents}`);
      this.unloggedAge = this.unloggedCount = 0;
    }
  }

  /** Deletes up to PRUNE_BATCH of the hot segment's oldest rows matching `old`; returns how many. */
  private pruneBatch(limit: number, old: (receivedAt: number) => boolean): number {
    const s = this.s;
    const oldest = s.hot.statement(`SELECT ${TRACK_COLUMNS} FROM events ORDER BY seq LIMIT ?`);
    const rows: TrackedRow[] = [];
    oldest.bind([Math.min(limit, PRUNE_BATCH)]);
    try {
      while (oldest.step()) {
        const r = rowFrom(oldest.get(), s.hot.format);
        if (!old(r.row.receivedMs)) break;
        rows.push(r);
      }
    } finally {
      oldest.reset();
    }
    if (!rows.length) return 0;
    s.hot.db.exec('BEGIN');
    try {
      s.hot.statement('DELETE FROM events WHERE seq <= ?').run([rows[rows.length - 1].seq]);
      s.hot.db.exec('COMMIT');
    } catch (err) {
      s.hot.db.exec('ROLLBACK');
      throw err;
    }
    const keys: string[] = [];
    for (const { owner, row, e } of rows) {
      // Always the oldest stored, as LiveWindow.remove needs.
      s.scopes.remove(owner, row, e, s.hotId);
      keys.push(owner, e.id);
    }
    // The main thread's dedupe set must forget them, or a re-sent pruned event would be ignored.
    post({ forgetKeys: keys });
    s.hotCount -= rows.length;
    s.prunedTotal += rows.length;
    return rows.length;
  }

  /**
   * Drops a whole sealed segment: its manifest goes first (after that it no longer exists: a segment
   * file without a manifest is removed at start), then its file. Only a segment below the hot id
   * recorded in `<db>` on disk: until then a start-up would take that file's rows for unsealed ones.
   * Removals need not be durable: a segment that comes back after a power loss is past retention
   * again and dropped again at start. They run in the background, in order: reads no longer see the
   * segment, and holding the message queue for them made reads wait behind a seal (whose retention
   * pass drops a segment) while the journal's fsyncs kept the disk busy.
   */
  private dropSegment(seg: SealedSegment, cutoff: number): void {
    const s = this.s;
    s.sealed.remove(seg.id);
    s.prunedTotal += seg.count;
    s.scopes.drop(seg.id, cutoff);
    const { path } = s.args;
    this.removals = this.removals
      .then(async () => {
        // The funnel index first: whatever a crash leaves of a dropped segment, it is no orphan.
        await s.fs.remove(funnelIndexFile(path, seg.id));
        await s.fs.remove(manifestFile(path, seg.id));
        await removeGradually(s.fs, segmentFile(path, seg.id));
      })
      .catch((err) => log(`retention: removing segment ${seg.id}'s files failed; the next start removes them: ${err instanceof Error ? err.message : String(err)}`));
  }

  /** Resolves once the files of dropped segments are gone. */
  settled(): Promise<void> {
    return this.removals;
  }
}
