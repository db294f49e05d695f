// Rollups of the blocks wholly inside a range's edges, merged in runs that later reads take whole.
// A range whose edge cuts a busy hour of a closed day (`from` = now − 30 days, when 30 days ago
// had a burst) takes the hour's blocks inside the edge as their rollups: 300 of them for a burst
// of 300,000 events, each a part whose sessions, names and values the read adds one by one. Blocks
// of a closed day never change, so the edge's blocks of one run of positions (RUN_SEQS) are merged
// once, one part per hour, and kept with the fold rows (DayPartCache, the same budget), keyed by
// exactly those blocks. As an edge moves with `now`, the runs it still holds whole are taken as
// one part each. The run it cuts holds other blocks at every read: a run is merged only the second
// time a read asks for the same blocks, so that run is taken block by block rather than merged anew.
import { encodePart, FrozenHour } from '../../../rollup/codec.ts';
import { HourRollup, type RollupPart } from '../../../rollup/hour.ts';
import type { DayPartCache } from '../day-cache.ts';

/** Positions per run: a busy owner's run holds about 16 blocks of 1,000 events. */
export const RUN_SEQS = 16_384n;
/** Fewer blocks than this in a run are taken one by one: a merge would save nothing. */
const MIN_RUN = 2;
/** The DayPartCache scopes of merged runs start with this (no rollup scope does; see plan.ts's BLOCKS). */
const RUNS = '\u0002run ';

/** A block wholly inside an edge: its day, first seq, and its rollup's hour parts (decoded when asked). */
export interface EdgeBlock { day: number; firstSeq: string; hours: () => readonly FrozenHour[] }

/**
 * The parts standing for `blocks`: runs of at least MIN_RUN blocks as their merged parts (kept, or
 * merged now and kept), the other blocks' own. The parts together hold exactly the blocks' events.
 */
export function edgeBlockParts(cache: DayPartCache, user: string, blocks: readonly EdgeBlock[]): RollupPart[] {
  const runs = new Map<string, EdgeBlock[]>();
  for (const b of blocks) {
    const k = `${b.day}:${BigInt(b.firstSeq) / RUN_SEQS}`;
    const run = runs.get(k);
    if (run) run.push(b);
    else runs.set(k, [b]);
  }
  const out: RollupPart[] = [];
  for (const run of runs.values()) {
    if (run.length < MIN_RUN) {
      for (const b of run) out.push(...b.hours());
      continue;
    }
    const seqOf = new Map(run.map((b) => [b, BigInt(b.firstSeq)]));
    run.sort((a, b) => (seqOf.get(a)! < seqOf.get(b)! ? -1 : 1));
    // Keyed by every block of the run: an edge that holds other blocks of it makes another key.
    const day = run[0].day, scope = RUNS + run.map((b) => b.firstSeq).join(',');
    let parts = cache.daysOf(user, scope).get(day)?.folds.get(0);
    if (!parts && !cache.seenBefore(`${user}\u0000${scope}`)) {
      for (const b of run) out.push(...b.hours());
      continue;
    }
    if (!parts) cache.set(user, scope, day, 0, (parts = mergeByHour(run.flatMap((b) => b.hours()))));
    out.push(...parts);
  }
  return out;
}

/** Parts of the same hours merged, one frozen part per hour. */
function mergeByHour(parts: readonly RollupPart[]): FrozenHour[] {
  const hours = new Map<number, HourRollup>();
  for (const p of parts) {
    let h = hours.get(p.hour);
    if (!h) hours.set(p.hour, (h = new HourRollup(p.hour)));
    h.merge(p);
  }
  return [...hours.values()].map((h) => FrozenHour.decode(encodePart(h)));
}
