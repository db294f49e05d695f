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
   * every other request behind it; PostgreSQL, whose count runs in the process, for the same reason).
   * Absent: no bound.
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
  // Session → its number (the order it was first seen in), and per number the latest receive time
  // of an event ending a chain of k + 1 steps at [number * steps + k] (NaN: none yet). A session
  // with no time at k = 0 has no chain to continue. Typed arrays, so that a store reading numbered
  // sessions (a block's index on PostgreSQL) looks each up once per block, not once per event.
  private readonly ids = new Map<string, number>();
  private last = new Float64Array(0);

  constructor(private readonly steps: number, private readonly windowMs: number) {}

  /** The number of a session, given on first sight. */
  sessionId(session: string): number {
    let id = this.ids.get(session);
    if (id === undefined) {
      this.ids.set(session, (id = this.ids.size));
      if ((id + 1) * this.steps > this.last.length) {
        const grown = new Float64Array(Math.max(64, this.last.length * 2)).fill(NaN);
        grown.set(this.last);
        this.last = grown;
      }
    }
    return id;
  }

  /** The next event in insertion order: its session, receive time (ms) and step mask. */
  add(session: string, t: number, mask: number): void {
    if (mask === 0) return;
    const id = this.ids.get(session);
    // Nothing to continue: only step 1 starts a session's state.
    if (id === undefined && !(mask & 1)) return;
    this.addId(id ?? this.sessionId(session), t, mask);
  }

  /** add, for a session numbered by sessionId. */
  addId(id: number, t: number, mask: number): void {
    if (mask === 0) return;
    const last = this.last, at = id * this.steps;
    if (!(last[at] === last[at]) && !(mask & 1)) return;
    // Later steps first, so that one event is never two consecutive steps of a chain.
    for (let k = this.steps - 1; k >= 1; k--) {
      if (!(mask & (1 << k))) continue;
      const prev = last[at + k - 1];
      if (prev === prev && t - prev <= this.windowMs && !(last[at + k] >= t)) last[at + k] = t;
    }
    if (mask & 1 && !(last[at] >= t)) last[at] = t;
  }

  counts(): FunnelCounts {
    const out = new Array<number>(this.steps).fill(0);
    for (let id = 0; id < this.ids.size; id++) {
      for (let k = 0; k < this.steps && this.last[id * this.steps + k] === this.last[id * this.steps + k]; k++) out[k]++;
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
