// GET /api/stats?environment=<name> (docs/api.md#stats): statistics over the events of one
// environment. Rollups are kept per owner and project, not per environment, so these are built at
// request time from the events themselves, read once in insertion order through the store's export
// (which every store filters by environment): each event goes into fresh hour rollups, and the few
// events each recent list could show are kept aside. The answer is then assembled as every store's
// is (lib/rollup/assemble.ts), so it equals computeStats over the environment's events. A read costs
// what the range's events of the environment cost, so it has a time budget per request.
import type { StoredEvent } from './event.ts';
import { routeKey } from './event-keys.ts';
import { activeSpan, recentsOf } from './live-window.ts';
import { assembleStats, planStats } from './rollup/assemble.ts';
import { rollupRow } from './rollup/hour.ts';
import { UserRollups } from './rollup/user.ts';
import { HOUR_MS, LATENCY_POINTS, pageloadDuration, RECENT_ACTIVITY, RECENT_ERRORS, resolveRange, type Stats, type StatsRange } from './stats.ts';
import type { Store } from './store/types.ts';

/** Reading time one environment's statistics may take (docs/api.md#stats). */
export const ENVIRONMENT_STATS_BUDGET_MS = 5_000;

/** The environment's events took longer to read than the budget allows. */
export class EnvironmentStatsTooLargeError extends Error {
  constructor(budgetMs: number) {
    super(`the environment's events take more than ${budgetMs} ms to read`);
    this.name = 'EnvironmentStatsTooLargeError';
  }
}

export interface EnvironmentStatsRequest {
  owner: string;
  projectId?: string;
  environment: string;
  now: number;
  range?: StatsRange;
  budgetMs?: number;
}

export async function environmentStats(store: Store, q: EnvironmentStatsRequest): Promise<Stats> {
  const r = resolveRange(q.range, q.now);
  const rollups = new UserRollups();
  const tail = new RecentTail(activeSpan(q.now, r));
  const t0 = performance.now();
  const budget = q.budgetMs ?? ENVIRONMENT_STATS_BUDGET_MS;
  const batches = store.export({ userId: q.owner, projectId: q.projectId, environment: q.environment, since: r?.from, until: r?.to });
  for await (const batch of batches) {
    for (const e of batch) {
      rollups.add(rollupRow(e));
      tail.add(e);
    }
    if (performance.now() - t0 > budget) throw new EnvironmentStatsTooLargeError(budget);
  }
  // Only the range's events were rolled up: every hour it touches counts whole.
  const plan = planStats(q.now, q.range);
  if (r !== null) {
    plan.fullHours = [Math.floor(r.from / HOUR_MS), Math.ceil(r.to / HOUR_MS)];
    plan.rawSpans = [];
  }
  return assembleStats({ plan, rollups, edges: [], recents: recentsOf(tail.events(), q.now, r) });
}

/**
 * Of events given in insertion order, those recentsOf could pick (the latest activity, errors and
 * points per route, and every event in the active span), still in insertion order: recentsOf over
 * them answers what it would over all of them, without holding all of them.
 */
class RecentTail {
  private n = 0;
  private readonly activity = new Kept(RECENT_ACTIVITY);
  private readonly errors = new Kept(RECENT_ERRORS);
  private readonly points = new Map<string, Kept>();
  private readonly active: [number, StoredEvent][] = [];

  constructor(private readonly span: [number, number] | null) {}

  add(e: StoredEvent): void {
    const i = this.n++;
    this.activity.push(i, e);
    if (e.type === 'error') this.errors.push(i, e);
    if (pageloadDuration(e) !== null) {
      const route = routeKey(e);
      let kept = this.points.get(route);
      if (!kept) this.points.set(route, (kept = new Kept(LATENCY_POINTS)));
      kept.push(i, e);
    }
    if (this.span && e.sessionId) {
      const t = Date.parse(e.receivedAt);
      if (t >= this.span[0] && t < this.span[1]) this.active.push([i, e]);
    }
  }

  events(): StoredEvent[] {
    const all = new Map<number, StoredEvent>(this.active);
    for (const kept of [this.activity, this.errors, ...this.points.values()]) for (const [i, e] of kept.items()) all.set(i, e);
    return [...all].sort((a, b) => a[0] - b[0]).map(([, e]) => e);
  }
}

/** The `limit` latest of what is pushed, trimmed now and then rather than shifted each time. */
class Kept {
  private list: [number, StoredEvent][] = [];
  constructor(private readonly limit: number) {}
  push(i: number, e: StoredEvent): void {
    this.list.push([i, e]);
    if (this.list.length >= 2 * this.limit) this.list = this.list.slice(-this.limit);
  }
  items(): [number, StoredEvent][] {
    return this.list.slice(-this.limit);
  }
}

