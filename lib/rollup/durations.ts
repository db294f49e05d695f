// Nearest-rank percentiles over duration counts gathered from many parts. Merging hundreds of
// hours' (value, count) lists into maps would allocate per value; instead every count is added
// into one scratch array indexed by the value in ms (page loads are almost always under 65.5 s),
// with a map only for values outside it (negative or longer), then walked once in value order.
// Parts' values are whole ms, ascending within a route (PartColumns says so; both forms keep it).
import type { PartColumns } from './hour.ts';

const DENSE = 1 << 16;
/** Slices of at most this many values are copied rather than referred to. */
const FEW = 4;
/**
 * Values per block of the scratch array. Each block's total count is kept beside it, so the walk in
 * value order skips whole blocks below the next rank (clearing them with one fill) and looks at
 * single values only in the blocks where a rank falls: walking every value from the lowest to the
 * highest was ~5 ms of a 30-day statistics read (125 lists: routes, pages' vitals, vitals).
 */
const BLOCK_BITS = 8;
// Shared scratch, zero between calls: nearestRanks never yields, so no two calls interleave.
const scratch = new Float64Array(DENSE);
const blocks = new Float64Array(DENSE >> BLOCK_BITS);

/** Value counts (ascending whole values, and their counts) from `start` to `end` of two columns. */
interface Slice { values: ArrayLike<number>; counts: ArrayLike<number>; start: number; end: number }

/**
 * The duration counts of one route (or the values of one vital), gathered from parts before the
 * percentiles are read.
 */
export class RouteDurations {
  private readonly slices: Slice[] = [];
  /** Values and counts of short slices, copied (see addValues). */
  private readonly few: { values: number[]; counts: number[] } = { values: [], counts: [] };

  /** Adds route `i` of a part's columns. */
  add(c: PartColumns, i: number): void {
    this.addValues(c.values, c.valueCounts, i ? c.routeEnds[i - 1] : 0, c.routeEnds[i]);
  }

  /** Adds the values (ascending whole numbers) and counts of [start, end). */
  addValues(values: ArrayLike<number>, counts: ArrayLike<number>, start: number, end: number): void {
    if (end - start > FEW) this.slices.push({ values, counts, start, end });
    // A page's vital has one or two values an hour: copying them beats an object per slice
    // (a 30-day range's vitals made ~150k of them).
    else for (let j = start; j < end; j++) {
      this.few.values.push(values[j]);
      this.few.counts.push(counts[j]);
    }
  }

  /**
   * Every value added once, ascending, with its summed count: the merged list a span of days keeps
   * (span-totals.ts), so later reads add one list instead of one per day. Uses the scratch array
   * as nearestRanks does and leaves it zero.
   */
  collapse(): { values: Float64Array; counts: Float64Array } {
    const [lo, hi, sparse] = this.gather();
    const values: number[] = [], counts: number[] = [];
    const others = [...sparse.keys()].sort((a, b) => a - b);
    let o = 0;
    const push = (v: number, c: number) => void (values.push(v), counts.push(c));
    while (o < others.length && others[o] < 0) push(others[o], sparse.get(others[o++])!);
    for (let b = lo >> BLOCK_BITS; hi >= lo && b <= hi >> BLOCK_BITS; b++) {
      if (blocks[b] === 0) continue;
      blocks[b] = 0;
      for (let v = b << BLOCK_BITS, end = v + (1 << BLOCK_BITS); v < end; v++) {
        if (scratch[v] !== 0) push(v, scratch[v]), (scratch[v] = 0);
      }
    }
    while (o < others.length) push(others[o], sparse.get(others[o++])!);
    return { values: Float64Array.from(values), counts: Float64Array.from(counts) };
  }

  /**
   * The nearest-rank percentile for each p (same ranks as stats.ts percentile) of the `n`
   * durations added: the smallest value whose cumulative count reaches ceil(p/100 · n).
   * `ps` ascending.
   */
  nearestRanks(n: number, ps: readonly number[]): number[] {
    const out = ps.map(() => 0);
    if (ps.some((p, i) => i > 0 && p < ps[i - 1])) throw new RangeError('percentiles must be asked in ascending order');
    if (n === 0) return out;
    const ranks = ps.map((p) => Math.min(n, Math.max(1, Math.ceil((p / 100) * n))));
    const [lo, hi, sparse] = this.gather();
    // Walk values in ascending order: sparse ones below the dense range (negative), the dense
    // range block by block, the rest (above it).
    const others = [...sparse.keys()].sort((a, b) => a - b);
    let seen = 0, q = 0, o = 0;
    const take = (value: number, count: number) => {
      seen += count;
      while (q < ranks.length && ranks[q] <= seen) out[q++] = value;
    };
    while (o < others.length && others[o] < 0) take(others[o], sparse.get(others[o++])!);
    if (hi >= lo) {
      for (let b = lo >> BLOCK_BITS; b <= hi >> BLOCK_BITS; b++) {
        const inBlock = blocks[b];
        if (inBlock === 0) continue;
        blocks[b] = 0;
        const first = b << BLOCK_BITS, end = first + (1 << BLOCK_BITS);
        if (q >= ranks.length || seen + inBlock < ranks[q]) {
          // No rank falls in this block: count it whole.
          seen += inBlock;
          scratch.fill(0, first, end);
          continue;
        }
        for (let v = first; v < end; v++) {
          const c = scratch[v];
          if (c === 0) continue;
          scratch[v] = 0;
          take(v, c);
        }
      }
    }
    while (o < others.length) take(others[o], sparse.get(others[o++])!);
    return out;
  }

  /** Adds every count into the scratch array (values outside it into a map): [lowest, highest, map]. */
  private gather(): [number, number, Map<number, number>] {
    let lo = DENSE, hi = -1;
    const sparse = new Map<number, number>();
    const addEach = (values: ArrayLike<number>, valueCounts: ArrayLike<number>, start: number, end: number) => {
      for (let j = start; j < end; j++) {
        const v = values[j];
        if (v >= 0 && v < DENSE) {
          scratch[v] += valueCounts[j];
          blocks[v >> BLOCK_BITS] += valueCounts[j];
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        } else sparse.set(v, (sparse.get(v) ?? 0) + valueCounts[j]);
      }
    };
    for (const { values, counts: valueCounts, start, end } of this.slices) {
      // A route's values are ascending whole ms: when the first and last fit the scratch array,
      // all do, and the loop is a bare add (most hours of most routes).
      if (values[start] >= 0 && values[end - 1] < DENSE) {
        if (values[start] < lo) lo = values[start];
        if (values[end - 1] > hi) hi = values[end - 1];
        for (let j = start; j < end; j++) {
          scratch[values[j]] += valueCounts[j];
          blocks[values[j] >> BLOCK_BITS] += valueCounts[j];
        }
      } else addEach(values, valueCounts, start, end);
    }
    // The copied values are in no order.
    addEach(this.few.values, this.few.counts, 0, this.few.values.length);
    return [lo, hi, sparse];
  }
}
