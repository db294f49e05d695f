// Which days and blocks a read of one owner's events goes through: the fewest that can hold the
// answer, checked rather than assumed (seq is only nearly in receive order). Pure: the reads
// themselves are passed in (./owner.ts), so that a property test drives it without a database.
import { DAY_MS } from '../../../stats.ts';
import type { EventFilter } from '../../types.ts';

/**
 * A row of watchtower_event_days: one owner's events received on one UTC day. `moved`: how many of
 * them a compaction moved into blocks (watchtower_event_blocks); the rest are rows of the day's
 * partition. `counters`: whether the day may still have counter rows of the owner (it is not
 * compacted, or took events since).
 */
export interface EventDay {
  day: number; first: number; last: number; events: number; moved?: number; counters?: boolean; folded?: boolean; pointed?: number | null;
}

/** A block of watchtower_event_blocks: up to BLOCK_EVENTS of one owner's events of a closed day. */
export interface EventBlock { day: number; first: number; last: number; events: number }

/** The days of `days` that receive times within the filter's bounds can fall in. */
export const daysWithin = (days: readonly EventDay[], f: Pick<EventFilter, 'since' | 'until'>): EventDay[] =>
  days.filter((d) => (f.since === undefined || d.day >= Math.floor(f.since / DAY_MS)) &&
    (f.until === undefined || d.day <= Math.floor((f.until - 1) / DAY_MS)));

/** Something that holds rows of seqs first..last, `events` of them: a day, or a block. */
interface Unit { first: number; last: number; events: number }

/**
 * Reads, for each key, the first `want` rows in seq order (`desc`: newest first, `asc`: oldest
 * first) from the fewest units that can hold them. `units` are the candidates (those the query's
 * bounds and cursor leave); `read(chosen, keys)` reads the chosen units and answers rows per key in
 * the same order; `covered(chosen)` says which units that read covered (a read bounded by receive
 * days covers the days between the chosen ones too).
 *
 * It reads the units nearest the start of the order first, as many as hold `target` events (by
 * default twice `want`). The answer of a key is exact when no unit outside those read could hold
 * a row that belongs in it: there is no such unit at all, or the key got `want` rows and every unit
 * left out lies wholly after the last of them in seq order. Seq is only nearly in receive order,
 * so this is checked, not assumed. Keys still short are read again over more units: as many events
 * as the density of their rows in those read says they need, at least twice as many.
 */
async function readByUnits<U extends Unit, R extends { seq: string }>(
  units: readonly U[], order: 'asc' | 'desc', want: number, keys: readonly string[],
  read: (chosen: U[], keys: string[]) => Promise<Map<string, R[]>>, covered: (chosen: U[]) => (u: U) => boolean, target = want * 2,
): Promise<Map<string, R[]>> {
  const out = new Map<string, R[]>();
  if (!units.length || want <= 0) return out;
  const sorted = [...units].sort(order === 'desc' ? (a, b) => b.last - a.last : (a, b) => a.first - b.first);
  let pending = [...keys];
  while (pending.length) {
    let taken = 0, n = 0;
    while (n < sorted.length && taken < target) taken += sorted[n++].events;
    const chosen = sorted.slice(0, n);
    const inside = covered(chosen);
    const outside = sorted.filter((u) => !inside(u));
    const rows = await read(chosen, pending);
    let next = taken * 2;
    pending = pending.filter((key) => {
      const got = rows.get(key) ?? [];
      const last = got.length >= want ? Number(got[want - 1].seq) : NaN;
      const exact = outside.length === 0 ||
        outside.every((u) => (order === 'desc' ? u.last < last : u.first > last));
      if (exact) out.set(key, got.slice(0, want));
      else next = Math.max(next, got.length ? Math.ceil((taken * want * 1.25) / got.length) : taken * 8);
      return !exact;
    });
    target = next;
  }
  return out;
}

/**
 * readByUnits over days, for reads bounded by receive time: `read(d0, d1, keys)` runs the query
 * bounded to the receive days d0..d1, so that the planner prunes every other partition.
 */
export function readByDays<R extends { seq: string }>(
  days: readonly EventDay[], order: 'asc' | 'desc', want: number, keys: readonly string[],
  read: (d0: number, d1: number, keys: string[]) => Promise<Map<string, R[]>>, target = want * 2,
): Promise<Map<string, R[]>> {
  const span = (chosen: EventDay[]) => [Math.min(...chosen.map((d) => d.day)), Math.max(...chosen.map((d) => d.day))] as const;
  return readByUnits(days, order, want, keys, (chosen, keys) => read(...span(chosen), keys), (chosen) => {
    const [d0, d1] = span(chosen);
    return (d) => d.day >= d0 && d.day <= d1;
  }, target);
}

/** How readEvents reads one owner's events: rows of days, the blocks of days, and rows of blocks. */
export interface EventReads<R> {
  rows: (d0: number, d1: number, keys: string[]) => Promise<Map<string, R[]>>;
  blocksOf: (d0: number, d1: number) => Promise<EventBlock[]>;
  blocks: (chosen: EventBlock[], keys: string[]) => Promise<Map<string, R[]>>;
}

/**
 * readByDays over the events of `days` wherever they are: the rows of their partitions, and the
 * blocks a compaction moved the closed days' rows into. The rows are read first (the newest days,
 * which pages and statistics mostly want, are rows); blocks only of days that could hold a row of
 * an answer the rows left open, by days as rows are (the fewest days that can hold the answer),
 * and within those days block by block; the two answers are merged.
 *
 * `cursor`, if given, is the seq the reads start past (below it for `desc`, above it for `asc`):
 * days and blocks wholly on its other side are no candidates. A day holds ~50 blocks at 10M
 * events; counting those past the cursor as candidates had a page deep in a day read them first,
 * and read again over more blocks each time it found nothing there.
 */
export async function readEvents<R extends { seq: string }>(
  allDays: readonly EventDay[], order: 'asc' | 'desc', want: number, keys: readonly string[], reads: EventReads<R>,
  { target = want * 2, cursor }: { target?: number; cursor?: number } = {},
): Promise<Map<string, R[]>> {
  const ahead = (u: Unit) => cursor === undefined || (order === 'desc' ? u.first < cursor : u.last > cursor);
  const days = allDays.filter(ahead);
  const rowDays = days.filter((d) => d.events > (d.moved ?? 0)).map((d) => ({ ...d, events: d.events - (d.moved ?? 0) }));
  const rows = await readByDays(rowDays, order, want, keys, reads.rows, target);
  const open = (d: EventDay) => keys.some((key) => {
    const got = rows.get(key) ?? [];
    if (got.length < want) return true;
    const last = Number(got[want - 1].seq);
    return order === 'desc' ? d.last > last : d.first < last;
  });
  const blockDays = days.filter((d) => (d.moved ?? 0) > 0 && open(d));
  if (!blockDays.length) return rows;
  const movedDays = blockDays.map((d) => ({ ...d, events: d.moved ?? 0 }));
  const fromBlocks = await readByDays(movedDays, order, want, keys, async (d0, d1, keys) =>
    readByUnits((await reads.blocksOf(d0, d1)).filter(ahead), order, want, keys, reads.blocks, (chosen) => {
      const read = new Set(chosen);
      return (b) => read.has(b);
    }, target), target);
  const bySeq = order === 'desc' ? (a: R, b: R) => Number(b.seq) - Number(a.seq) : (a: R, b: R) => Number(a.seq) - Number(b.seq);
  for (const key of keys) {
    rows.set(key, [...(rows.get(key) ?? []), ...(fromBlocks.get(key) ?? [])].sort(bySeq).slice(0, want));
  }
  return rows;
}
