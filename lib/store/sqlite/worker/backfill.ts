// The backfill of old manifests: segments sealed before project statistics were kept (manifest
// layouts 1 and 3) have no project parts, and segments sealed before the newer breakdown
// dimensions (lib/breakdowns.ts LEGACY_DIMENSIONS) or before custom event properties
// (PART_DIMENSIONS) have parts without them. Idle time rolls them
// up from the rows, newest segment first, a slice of seqs at a time, and rewrites the manifest
// before the parts count. Until then a project's statistics read those segments' rows (reads.ts),
// and statistics over parts without the newer dimensions leave their lists out (assembleStats).
// Once no such manifest remains anywhere, this file and its calls can go.
import { encodePart, FrozenHour } from '../../../rollup/codec.ts';
import { HourRollup, type RollupRow } from '../../../rollup/hour.ts';
import { manifestFile, withProjects, writeManifestBytes, type ScopeParts } from '../manifest.ts';
import type { Reads } from './reads.ts';
import { log, type WorkerState } from './state.ts';

/** Seqs of a segment the backfill reads between two turns of the event loop (~5 ms). */
const BACKFILL_SLICE = 4000;

export class Backfill {
  /** Sealed segments whose manifest predates project statistics, newest first. */
  private pending: number[] = [];
  /** Of those, the segments whose parts lack the newer dimensions: their owners' parts are rebuilt too. */
  private whole = new Set<number>();
  /** The segment under way and what its slices collected so far: rows by owner and project, and by owner. */
  private current: { id: number; nextSeq: number; rows: Map<string, Map<string, RollupRow[]>>; own: Map<string, RollupRow[]> } | null = null;

  constructor(private readonly s: WorkerState, private readonly reads: Reads) {}

  /**
   * Start-up: the segments to roll up, oldest first as given; `whole` are those whose owners'
   * parts are rebuilt as well (parts kept before the newer dimensions).
   */
  setSegments(ids: number[], whole: number[] = []): void {
    this.whole = new Set(whole);
    this.pending = [...new Set([...ids, ...whole])].sort((a, b) => a - b).reverse();
  }

  get remaining(): number {
    return this.pending.length;
  }

  /**
   * One slice: BACKFILL_SLICE seqs of the newest segment still without its projects' parts, whose
   * rows with a project are collected by owner and project. After the last slice the parts are set
   * and the segment counts as known, at once (reads then stop reading its rows for a project), and
   * its manifest is rewritten with the parts. True while work is left.
   */
  async step(): Promise<boolean> {
    const s = this.s;
    const id = this.pending[0];
    if (id === undefined) return false;
    const segment = s.sealed.get(id);
    const whole = this.whole.has(id);
    if (!segment || (segment.projectsKnown && !whole)) {
      this.pending.shift();
      return this.pending.length > 0;
    }
    let b = this.current;
    if (b?.id !== id) b = this.current = { id, nextSeq: segment.minSeq, rows: new Map(), own: new Map() };
    // Opened for each slice: between two, a read may have let the cache close it.
    const db = await s.sealed.open(id);
    if (s.closed || this.current !== b || !s.sealed.has(id)) return !s.closed;
    const end = Math.min(b.nextSeq + BACKFILL_SLICE, segment.maxSeq + 1);
    db.projectRows(b.nextSeq, end, ({ owner, row, e }) => {
      // As Scopes.add counts them: owned events only.
      if (owner === '') return;
      if (whole) {
        let own = b.own.get(owner);
        if (!own) b.own.set(owner, (own = []));
        own.push(row);
      }
      if (e.projectId === undefined) return;
      let projects = b.rows.get(owner);
      if (!projects) b.rows.set(owner, (projects = new Map()));
      let rows = projects.get(e.projectId!);
      if (!rows) projects.set(e.projectId!, (rows = []));
      rows.push(row);
    }, whole);
    b.nextSeq = end;
    if (end <= segment.maxSeq) return true;
    const found: Record<string, Record<string, ScopeParts>> = {};
    for (const [owner, projects] of b.rows) {
      for (const [project, rows] of projects) (found[owner] ??= {})[project] = { count: rows.length, parts: HourRollup.fromRows(rows).map(encodePart) };
    }
    const own: Record<string, Uint8Array[]> = {};
    for (const [owner, rows] of b.own) own[owner] = HourRollup.fromRows(rows).map(encodePart);
    await this.rewriteManifest(id, found, own);
    this.pending.shift();
    this.whole.delete(id);
    this.current = null;
    // Retention may have dropped it meanwhile (its manifest goes too, or start-up removes it).
    if (!s.sealed.has(id) || s.closed) return !s.closed;
    for (const [owner, parts] of Object.entries(own)) {
      for (const bytes of parts) s.scopes.setPart(owner, undefined, FrozenHour.decode(bytes), id);
    }
    for (const [owner, projects] of Object.entries(found)) {
      for (const [project, { parts }] of Object.entries(projects)) {
        for (const bytes of parts) s.scopes.setPart(owner, project, FrozenHour.decode(bytes), id);
      }
    }
    segment.projectsKnown = true;
    this.reads.projectsBackfilled++;
    const shares = Object.values(found).flatMap((p) => Object.values(p));
    log(`segment ${id}: its ${whole ? 'owners\' and ' : ''}projects' statistics rolled up from its rows (${shares.reduce((n, p) => n + p.count, 0)} events in ${shares.length} projects)`);
    return this.pending.length > 0;
  }

  /** The manifest first: until the parts are set, reads take the segment's rows. */
  private async rewriteManifest(id: number, found: Record<string, Record<string, ScopeParts>>, own: Record<string, Uint8Array[]>): Promise<void> {
    const { fs, args: { path } } = this.s;
    try {
      const file = manifestFile(path, id);
      const bytes = await fs.read(file);
      if (!bytes) throw new Error(`${file} is missing`);
      await writeManifestBytes(fs, path, id, await withProjects(bytes, file, found, own));
    } catch (err) {
      log(`segment ${id}: writing its projects' parts failed; the next start rolls them up again: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
