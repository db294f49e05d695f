// The funnel as stores count it: one pass over a project's events in insertion order, keeping per
// session only the step times that can still lead somewhere (at most one number per step), so
// memory grows with the sessions that reached step 1, never with their events.
//
// The rule (docs/api.md#funnels), equal to the reference (./reference.ts) by the property test:
// a session reaches step k when it has events e1 … ek, each later than the one before in insertion
// order, e_i matching step i, and each received at most `windowMs` after the one before. Chains
// from every occurrence of step 1 are considered, so the session counts as far as its best chain
// goes. For a chain to continue, the best predecessor is the one received latest: keeping, per
// step, the latest receive time of an event ending a chain that far is enough.
import type { StoredEvent } from '../event.ts';
import { funnelFields, stepMatcher, stepTypes, type FunnelStep } from './steps.ts';

/** What a store is asked: one owner's events of one project received in [from, to). */
export interface FunnelQuery {
  userId: string;
  projectId: string;
  from: number;
  to: number;
  /** Most ms between an event of one step and that of the next. */
  windowMs: number;
  steps: FunnelStep[];
  /**
   * Most ms a store's process may spend reading the funnel's rows before it gives up with
   * FunnelTooLargeError (the sqlite worker, whose reads run one at a time: a longer read would hold
   * every other request behind it). Absent: no bound.
   */
  budgetMs?: number;
}

/** The funnel read more rows than its budget allows (FunnelQuery.budgetMs). */
export class FunnelTooLargeError extends Error {
  constructor(budgetMs: number) {
    super(`the funnel's events take more than ${budgetMs} ms to read`);
    this.name = 'FunnelTooLargeError';
  }
}

/** Sessions that reached each step (index 0: step 1), non-increasing. */
export type FunnelCounts = number[];

export class FunnelCounter {
  // Session → latest receive time of an event ending a chain of k + 1 steps (NaN: none yet).
  private readonly sessions = new Map<string, Float64Array>();

  constructor(private readonly steps: number, private readonly windowMs: number) {}

  /** The next event in insertion order: its session, receive time (ms) and step mask. */
  add(session: string, t: number, mask: number): void {
    if (mask === 0) return;
    let last = this.sessions.get(session);
    if (!last) {
      // Nothing to continue: only step 1 starts a session's state.
      if (!(mask & 1)) return;
      this.sessions.set(session, (last = new Float64Array(this.steps).fill(NaN)));
    }
    // Later steps first, so that one event is never two consecutive steps of a chain.
    for (let k = this.steps - 1; k >= 1; k--) {
      if (!(mask & (1 << k))) continue;
      const prev = last[k - 1];
      if (prev === prev && t - prev <= this.windowMs && !(last[k] >= t)) last[k] = t;
    }
    if (mask & 1 && !(last[0] >= t)) last[0] = t;
  }

  counts(): FunnelCounts {
    const out = new Array<number>(this.steps).fill(0);
    for (const last of this.sessions.values()) {
      for (let k = 0; k < this.steps && last[k] === last[k]; k++) out[k]++;
    }
    return out;
  }
}

/**
 * The funnel over held events in insertion order (the memory store's), by FunnelCounter: the
 * events of the query's owner and project with a session, received in [from, to).
 */
export function countFunnel(events: Iterable<StoredEvent>, q: FunnelQuery): FunnelCounts {
  const match = stepMatcher(q.steps);
  const counter = new FunnelCounter(q.steps.length, q.windowMs);
  const types = new Set(stepTypes(q.steps));
  for (const e of events) {
    if (e.user_id !== q.userId || e.projectId !== q.projectId || !e.sessionId || !types.has(e.type)) continue;
    const t = Date.parse(e.receivedAt);
    if (t >= q.from && t < q.to) counter.add(e.sessionId, t, match(funnelFields(e)));
  }
  return counter.counts();
}
