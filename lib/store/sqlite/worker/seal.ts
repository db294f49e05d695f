// The worker's steps of a seal (docs/architecture.md, Time segments; ../seal.ts runs the main
// thread's steps and sends these as requests).
// 2. `cut`: prune the hot segment by age; take its parts and the live windows; swap in a new empty
//    hot segment (users copied, meta = the next hot id and the sealed journal) that takes the next
//    message, while the sealed database stays open for reads. Only this holds the message queue, so
//    it does no work that grows with the segment: the bounds are those inserts tracked. Then, a
//    slice at a time with other messages handled in between, write its last rows, copy its bytes
//    and freeze its hour parts; answer with the bytes and the manifest.
// 4. `finish`: the main thread wrote the files: snapshot the new hot segment over `<db>` and delete
//    the journal segments the seal covered.
import { encodePart, FrozenHour } from '../../../rollup/codec.ts';
import type { RollupPart } from '../../../rollup/hour.ts';
import type { Manifest, OwnerParts, ScopeParts } from '../manifest.ts';
import type { SealAnswer, SealFigures } from '../protocol.ts';
import type { SegmentDb } from '../segment.ts';
import { databaseFile } from '../sqljs.ts';
import type { Retention } from './retention.ts';
import type { Snapshots, SnapshotRun } from './snapshot.ts';
import { log, sealedOf, type WorkerState } from './state.ts';

/** Bytes of a sealed database copied between two turns of the event loop. */
const COPY_SLICE = 4 << 20;
/** Hour parts a seal encodes between two turns of the event loop (~10 ms of work). */
const ENCODE_SLICE = 24;

/** A part to freeze into the manifest entry of its owner (and project). */
type ToEncode = [entry: ScopeParts, parts: RollupPart[], owner: string, project: string | undefined];

const nextTurn = () => new Promise((r) => setTimeout(r, 0));

export class Sealer {
  last: SealFigures | null = null;
  private started = new Map<number, { t0: number; reason: string; count: number }>();

  constructor(private readonly s: WorkerState, private readonly retention: Retention, private readonly snapshots: Snapshots) {}

  /** Step 2. `swapped` settles once the new hot segment took over; `done` with the answer (null: nothing to seal). */
  cut(covered: number, reason: string, now: number): { swapped: Promise<unknown>; done: Promise<SealAnswer | null> } {
    let swap!: () => void;
    const swapped = new Promise<void>((resolve) => (swap = resolve));
    const done = (async () => {
      // Events already past retention are not sealed (sealed segments are only dropped whole).
      await this.retention.prune(now);
      if (this.s.hotCount === 0) return null;
      const { manifest, toEncode, old } = this.swap(covered, reason);
      swap(); // the next message sees the new hot segment, and the sealed one among the others
      return this.complete(manifest, toEncode, old);
    })().finally(swap);
    return { swapped, done };
  }

  /** The manifest of the hot segment as inserts tracked it, and a new hot segment in its place. */
  private swap(covered: number, reason: string): { manifest: Manifest; toEncode: ToEncode[]; old: SegmentDb } {
    const s = this.s;
    const t0 = performance.now();
    const id = s.hotId;
    const old = s.hot;
    const minSeq = old.scalar('SELECT MIN(seq) FROM events') ?? s.tail.of(id)[0]?.seq ?? s.maxSeq;
    // The parts of this segment (inserts from now on go to the next one's) and the windows.
    const { shares, windows, projectWindows, environmentsFull } = s.scopes.sealed(id);
    const owners: Manifest['owners'] = {};
    const toEncode: ToEncode[] = [];
    const total = (parts: RollupPart[]) => parts.reduce((n, p) => n + p.total, 0);
    for (const { owner, parts, projects } of shares) {
      const entry: OwnerParts = (owners[owner] = { count: total(parts), parts: [], projects: {} });
      toEncode.push([entry, parts, owner, undefined]);
      for (const [project, own] of projects) {
        entry.projects[project] = { count: total(own), parts: [] };
        toEncode.push([entry.projects[project], own, owner, project]);
      }
    }
    const { db: fresh, users } = s.freshHot();
    const manifest: Manifest = {
      id, journal: covered, count: s.hotCount, minSeq, maxSeq: s.maxSeq, minReceived: s.hotReceived.min, maxReceived: s.hotReceived.max,
      bytes: 0, // once its last rows are written
      owners, windows, projectWindows, projectsKnown: true, environmentsKnown: true, environmentsFull, users,
      // The main thread fills it in from the exact ids it holds for this segment.
      filter: new Float64Array(0),
    };
    s.hot = fresh;
    s.hotId = id + 1;
    s.hotCount = 0;
    s.hotReceived = { min: Infinity, max: -Infinity };
    s.sealedJournal = covered;
    s.setMeta();
    const segment = sealedOf(manifest);
    segment.writing = true;
    s.sealing = { id, db: old };
    s.sealed.add(segment, old);
    this.started.set(id, { t0, reason, count: manifest.count });
    return { manifest, toEncode, old };
  }

  /** After the swap, a slice at a time: the last rows, the bytes, the frozen parts. */
  private async complete(manifest: Manifest, toEncode: ToEncode[], old: SegmentDb): Promise<SealAnswer | null> {
    const s = this.s;
    const id = manifest.id;
    // Its rows still in the tail go to it before any of the new hot segment's (reads see them there
    // meanwhile); then nothing writes to it any more.
    await s.tail.drained();
    s.sealing = null;
    const file = databaseFile(old.db) ?? old.export();
    manifest.bytes = file.length;
    s.sealed.setBytes(id, file.length);
    // A copy for the main thread to gzip and write: the sealed database stays open here for reads.
    // Copied a slice at a time, the messages that arrive meanwhile handled between slices.
    const database = new Uint8Array(file.length);
    for (let at = 0; at < file.length; at += COPY_SLICE) {
      await nextTurn();
      database.set(file.subarray(at, at + COPY_SLICE), at);
    }
    // Encoded in slices too, reads and inserts handled between them. Each part is replaced by its
    // frozen form, which takes less memory and reads the same.
    for (const [entry, parts, owner, project] of toEncode) {
      for (let i = 0; i < parts.length; i += ENCODE_SLICE) {
        if (i > 0) await nextTurn();
        // Retention dropped the segment meanwhile (only when it alone exceeds the event limit).
        if (!s.sealed.has(id)) return null;
        for (const part of parts.slice(i, i + ENCODE_SLICE)) {
          const bytes = encodePart(part);
          entry.parts.push(bytes);
          s.scopes.setPart(owner, project, FrozenHour.decode(bytes), id);
        }
      }
    }
    return { manifest, database };
  }

  /**
   * Step 4. `<db>` still names the sealed segment as hot, so it is replaced by a snapshot of the new
   * hot segment (small this soon after the seal), which also drops the journal segments the seal
   * covered.
   */
  finish(id: number, covered: number, diskBytes: number, now: number): SnapshotRun {
    const segment = this.s.sealed.get(id);
    if (segment) segment.writing = false;
    const started = this.started.get(id);
    this.started.delete(id);
    // Only the covered journal segments must be in it, and their rows are in the sealed segment:
    // the hot segment's tail need not be written first.
    const { released, done } = this.snapshots.take(covered, `after sealing segment ${id}`, now, false);
    return {
      released,
      done: done.then(() => {
        if (!started) return;
        const ms = Math.round(performance.now() - started.t0);
        this.last = { at: new Date(now).toISOString(), segment: id, events: started.count, bytes: diskBytes, ms };
        log(`sealed segment ${id} (${started.reason}): ${started.count} events, ${(diskBytes / 1048576).toFixed(1)} MiB on disk, ${ms} ms`);
      }),
    };
  }
}
