// The sealed segments' funnel indexes (../funnel-index.ts) on the worker: read from their files,
// kept in memory within a small budget (least recently used go first), and built from the segment
// when the file is missing, torn or stale. Segments sealed by this process are built when the worker
// is idle (Engine.idleStep), soon after the seal while the segment is still open; older ones (a
// store from before the indexes, or a crash between a seal and its index) on the first funnel that
// needs them.
import { writeNewFile, renameDurably } from '../../fs.ts';
import { buildFunnelIndex, decodeFunnelIndex, encodeFunnelIndex, funnelIndexBytes, funnelIndexFile, type FunnelIndex } from '../funnel-index.ts';
import type { SealedSegment } from '../segment-cache.ts';
import { log, type WorkerState } from './state.ts';

/** Memory budget of the indexes kept in memory (an index takes ~12 B per pageload or custom row). */
const BUDGET_BYTES = 24 << 20;

export class FunnelIndexes {
  private held = new Map<number, { index: FunnelIndex; bytes: number }>();
  private heldBytes = 0;
  /** Segments sealed by this process whose index is not built yet, oldest first. */
  private toBuild: number[] = [];

  constructor(private readonly s: WorkerState) {}

  /** A segment's seal is done (its file and manifest are written): its index is built when idle. */
  sealed(id: number): void {
    this.toBuild.push(id);
  }

  /** Idle work: builds one queued index; true while more are queued. */
  async step(): Promise<boolean> {
    const id = this.toBuild.shift();
    if (id === undefined) return false;
    const seg = this.s.sealed.get(id);
    if (seg && !seg.writing && !this.held.has(id)) await this.get(seg);
    return this.toBuild.length > 0;
  }

  /** The index of a sealed segment (written, not being written). */
  async get(seg: SealedSegment): Promise<FunnelIndex> {
    const kept = this.held.get(seg.id);
    if (kept && fits(kept.index, seg)) {
      this.held.delete(seg.id);
      this.held.set(seg.id, kept);
      return kept.index;
    }
    const path = funnelIndexFile(this.s.args.path, seg.id);
    const bytes = await this.s.fs.read(path).catch(() => null);
    let index = bytes && decodeFunnelIndex(bytes);
    if (!index || !fits(index, seg)) {
      const db = await this.s.sealed.open(seg.id);
      index = buildFunnelIndex(db, { count: seg.count, minSeq: seg.minSeq, maxSeq: seg.maxSeq });
      // Written whole under a temporary name, then renamed: a crash leaves no file or a whole one.
      // Failing to write costs only the next read a build.
      try {
        // Not for a segment retention dropped while it was read: the file would outlive it.
        if (!this.s.sealed.has(seg.id)) return index;
        await writeNewFile(this.s.fs, `${path}.tmp`, encodeFunnelIndex(index));
        await renameDurably(this.s.fs, `${path}.tmp`, path);
      } catch (err) {
        await this.s.fs.remove(`${path}.tmp`).catch(() => {});
        log(`funnel index of segment ${seg.id} not written: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.hold(seg.id, index);
    return index;
  }

  private hold(id: number, index: FunnelIndex): void {
    const bytes = funnelIndexBytes(index);
    if (bytes > BUDGET_BYTES) return;
    const old = this.held.get(id);
    if (old) this.heldBytes -= old.bytes;
    this.held.delete(id);
    this.held.set(id, { index, bytes });
    this.heldBytes += bytes;
    for (const [other, e] of this.held) {
      if (this.heldBytes <= BUDGET_BYTES) break;
      this.held.delete(other);
      this.heldBytes -= e.bytes;
    }
  }

}

// An index built for another segment of the same id (one whose seal a power loss undid, sealed
// again with other rows) is stale.
const fits = (x: FunnelIndex, seg: SealedSegment) => x.count === seg.count && x.minSeq === seg.minSeq && x.maxSeq === seg.maxSeq;
