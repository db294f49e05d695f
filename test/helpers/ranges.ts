// Seeded random statistics ranges for tests that compare a store's answer with computeStats: edges
// inside hours, hour and day series, open-ended ones, and (first) the unranged read.
import type { StatsRange } from '../../lib/stats.ts';

/**
 * `count` ranges within `span` from `seed`, after the unranged read when `unranged`. An open range
 * (no `to`: it ends at the read's `now`) is made only of a `from` before `now`, so that a span
 * reaching past now never gives a range that ends before it starts, whatever the time of day.
 */
export function randomRanges(seed: number, count: number, span: [number, number], unranged = true, now = Infinity): (StatsRange | undefined)[] {
  const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296);
  const out: (StatsRange | undefined)[] = unranged ? [undefined] : [];
  for (let i = 0; i < count; i++) {
    const a = span[0] + Math.floor(rand() * (span[1] - span[0])), b = span[0] + Math.floor(rand() * (span[1] - span[0]));
    const [from, to] = a < b ? [a, b] : [b, a + 1];
    out.push(rand() < 0.3 && from < now ? { from } : { from, to, interval: rand() < 0.5 ? 'hour' : 'day' });
  }
  return out;
}
