// The sealed segments of the sqlite store, and which of them are open. A sealed segment is read
// from its file (gunzipped, opened by sql.js) when a read first needs it, and kept open while the
// open ones fit the memory budget (SERVICE_CACHE_MB); past it the least recently used go. A segment
// still being written is never closed: it has no file to come back from yet. Reads are handled one
// at a time by the worker and use each database right after opening it, so nothing else can be in use.
import type { SegmentBounds } from './manifest.ts';
import type { SegmentDb } from './segment.ts';

export interface SealedSegment extends SegmentBounds {
  /** Owners with events in it. */
  owners: Set<string>;
  /** Being written: readable from memory only. */
  writing: boolean;
  /** Its manifest has its projects' rollup parts (see Manifest.projectsKnown). */
  projectsKnown: boolean;
  /** Its manifest has its environments' rollup parts (see Manifest.environmentsKnown). */
  environmentsKnown: boolean;
}

interface Entry { segment: SealedSegment; db: SegmentDb | null; loading: Promise<SegmentDb> | null }

export class SegmentCache {
  /** By id, ascending (segments are added in id order). */
  private entries = new Map<number, Entry>();
  /** Open ids, least recently used first. */
  private lru = new Set<number>();
  openBytes = 0;
  eventCount = 0;

  constructor(private budgetBytes: number, private load: (id: number) => Promise<SegmentDb>) {}

  get size() {
    return this.entries.size;
  }

  get openCount() {
    return this.lru.size;
  }

  has(id: number) {
    return this.entries.has(id);
  }

  get(id: number): SealedSegment | undefined {
    return this.entries.get(id)?.segment;
  }

  /** A new segment, open already when `db` is given (one just sealed). */
  add(segment: SealedSegment, db: SegmentDb | null = null): void {
    this.entries.set(segment.id, { segment, db, loading: null });
    this.eventCount += segment.count;
    if (db) this.opened(segment.id, db);
  }

  oldestFirst(): SealedSegment[] {
    return [...this.entries.values()].map((e) => e.segment);
  }

  newestFirst(): SealedSegment[] {
    return this.oldestFirst().reverse();
  }

  async open(id: number): Promise<SegmentDb> {
    const entry = this.entries.get(id);
    if (!entry) throw new Error(`segment ${id} is not held`);
    if (entry.db) {
      this.lru.delete(id);
      this.lru.add(id);
      return entry.db;
    }
    entry.loading ??= this.load(id).then((db) => {
      entry.loading = null;
      if (!this.entries.has(id)) {
        db.close(); // dropped while it loaded
        return db;
      }
      entry.db = db;
      this.opened(id, db);
      return db;
    }, (err: unknown) => {
      entry.loading = null;
      throw err;
    });
    return entry.loading;
  }

  private opened(id: number, _db: SegmentDb) {
    const entry = this.entries.get(id)!;
    this.lru.add(id);
    this.openBytes += entry.segment.bytes;
    // The one just opened stays, even alone over the budget.
    for (const other of [...this.lru]) {
      if (this.openBytes <= this.budgetBytes) break;
      const e = this.entries.get(other)!;
      if (other === id || e.segment.writing) continue;
      this.close1(other);
    }
  }

  private close1(id: number) {
    const e = this.entries.get(id);
    if (!e?.db) return;
    e.db.close();
    e.db = null;
    this.lru.delete(id);
    this.openBytes -= e.segment.bytes;
  }

  /** A segment added open while still taking its last rows has its final size. */
  setBytes(id: number, bytes: number): void {
    const e = this.entries.get(id);
    if (!e) return;
    if (e.db) this.openBytes += bytes - e.segment.bytes;
    e.segment.bytes = bytes;
  }

  /** Retention dropped it. */
  remove(id: number): void {
    this.close1(id);
    const e = this.entries.get(id);
    if (!e) return;
    this.eventCount -= e.segment.count;
    this.entries.delete(id);
  }

  close(): void {
    for (const id of [...this.lru]) this.close1(id);
  }
}
