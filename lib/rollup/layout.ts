// The flat layout of a part's breakdown and vital columns (PartColumns), built the same way from
// an open hour's maps (hour.ts) and from counters a database summed (counters.ts), so the two
// cannot drift apart: assembleStats and the codec read them by position.

/** Breakdown columns: per dimension its names ascending, each with its events and session indexes. */
export interface DimColumns {
  dimNames: string[];
  dimEnds: Uint32Array;
  dimCounts: number[];
  dimSessionEnds: number[];
  dimSessions: number[];
}

/**
 * Lays out per-dimension maps of name → row. `sessionIndex` gives a session's place in the
 * part's session order (it may assign a new one).
 */
export function dimColumns<T>(
  dims: readonly ReadonlyMap<string, T>[],
  events: (row: T) => number,
  sessions: (row: T) => Iterable<string>,
  sessionIndex: (session: string) => number,
): DimColumns {
  const out: DimColumns = { dimNames: [], dimEnds: new Uint32Array(dims.length), dimCounts: [], dimSessionEnds: [], dimSessions: [] };
  dims.forEach((names, d) => {
    for (const name of [...names.keys()].sort()) {
      const row = names.get(name)!;
      out.dimNames.push(name);
      out.dimCounts.push(events(row));
      for (const s of sessions(row)) out.dimSessions.push(sessionIndex(s));
      out.dimSessionEnds.push(out.dimSessions.length);
    }
    out.dimEnds[d] = out.dimNames.length;
  });
  return out;
}

/** Vital entries sorted by page, then metric (index into VITAL_NAMES), with each entry's values. */
export function vitalEntries<L>(vitals: ReadonlyMap<string, ReadonlyMap<number, L>>) {
  const vitalPages: string[] = [], vitalMetrics: number[] = [], lists: L[] = [];
  for (const page of [...vitals.keys()].sort()) {
    const metrics = vitals.get(page)!;
    for (const m of [...metrics.keys()].sort((a, b) => a - b)) {
      vitalPages.push(page);
      vitalMetrics.push(m);
      lists.push(metrics.get(m)!);
    }
  }
  return { vitalPages, vitalMetrics, lists };
}
