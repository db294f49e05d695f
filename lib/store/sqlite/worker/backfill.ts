// The backfill of old manifests: segments sealed before project statistics were kept (manifest
// layouts 1 and 3) have no project parts. Idle time rolls them up from the rows, newest segment
// first, a slice of seqs at a time, and rewrites the manifest before the parts count; until then
// a project's statistics read those segments' rows (reads.ts). Once no such manifest remains
// anywhere, this file and its calls can go.
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
  /** The segment under way and what its slices collected so far. */
  private current: { id: number; nextSeq: number; rows: Map<string, Map<string, RollupRow[]>> } | null = null;

  constructor(private readonly s: WorkerState, private readonly reads: Reads) {}

  /** Start-up: the segments to roll up, oldest first as given. */
  set segments(ids: number[]) {
    this.pending = [...ids].reverse();
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
    if (!segment || segment.projectsKnown) {
      this.pending.shift();
      return this.pending.length > 0;
    }
    let b = this.current;
    if (b?.id !== id) b = this.current = { id, nextSeq: segment.minSeq, rows: new Map() };
    // Opened for each slice: between two, a read may have let the cache close it.
    const db = await s.sealed.open(id);
    if (s.closed || this.current !== b || !s.sealed.has(id)) return !s.closed;
    const end = Math.min(b.nextSeq + BACKFILL_SLICE, segment.maxSeq + 1);
    db.projectRows(b.nextSeq, end, ({ owner, row, e }) => {
      let projects = b.rows.get(owner);
      if (!projects) b.rows.set(owner, (projects = new Map()));
      let rows = projects.get(e.projectId!);
      if (!rows) projects.set(e.projectId!, (rows = []));
      rows.push(row);
    });
    b.nextSeq = end;
    if (end <= segment.maxSeq) return true;
    const found: Record<string, Record<string, ScopeParts>> = {};
    for (const [owner, projects] of b.rows) {
      for (const [project, rows] of projects) (found[owner] ??= {})[project] = { count: rows.length, parts: HourRollup.fromRows(rows).map(encodePart) };
    }
    await this.rewriteManifest(id, found);
    this.pending.shift();
    this.current = null;
    // Retention may have dropped it meanwhile (its manifest goes too, or start-up removes it).
    if (!s.sealed.has(id) || s.closed) return !s.closed;
    for (const [owner, projects] of Object.entries(found)) {
      for (const [project, { parts }] of Object.entries(projects)) {
        for (const bytes of parts) s.scopes.setPart(owner, project, FrozenHour.decode(bytes), id);
      }
    }
    segment.projectsKnown = true;
    this.reads.projectsBackfilled++;
    const shares = Object.values(found).flatMap((p) => Object.values(p));
    log(`segment ${id}: its projects' statistics rolled up from its rows (${shares.reduce((n, p) => n + p.count, 0)} events in ${shares.length} projects)`);
    return this.pending.length > 0;
  }

  /** The manifest first: until the parts are set, reads take the segment's rows. */
  private async rewriteManifest(id: number, found: Record<string, Record<string, ScopeParts>>): Promise<void> {
    const { fs, args: { path } } = this.s;
    try {
      const file = manifestFile(path, id);
      const bytes = await fs.read(file);
      if (!bytes) throw new Error(`${file} is missing`);
      await writeManifestBytes(fs, path, id, await withProjects(bytes, file, found));
    } catch (err) {
      log(`segment ${id}: writing its projects' parts failed; the next start rolls them up again: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
