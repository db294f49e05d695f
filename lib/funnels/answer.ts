// The answer of POST /api/funnels/query from the counts a store gives (docs/api.md#funnels).
import type { FunnelCounts } from './count.ts';
import type { FunnelStep } from './steps.ts';

export interface FunnelStepAnswer {
  page?: string;
  event?: string;
  /** Sessions that reached this step in order, within the window. */
  sessions: number;
  /** sessions / the sessions of step 1, rounded to 4 decimals (0 when nobody reached step 1). */
  conversionRate: number;
  /** Sessions that reached the previous step but not this one (0 for step 1). */
  dropOff: number;
}

export function funnelAnswer(steps: readonly FunnelStep[], counts: FunnelCounts): { steps: FunnelStepAnswer[] } {
  const first = counts[0] ?? 0;
  return {
    steps: steps.map((step, k) => ({
      ...step,
      sessions: counts[k],
      conversionRate: first ? Math.round((counts[k] / first) * 10_000) / 10_000 : 0,
      dropOff: k === 0 ? 0 : counts[k - 1] - counts[k],
    })),
  };
}
