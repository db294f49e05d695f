// What a project's goals count over a range (docs/api.md#goals), from the names the breakdowns
// already keep: a page goal from the pageloads of every route key its pattern matches, an event
// goal from the custom events of that name. Their sessions are a union of those names' session
// sets, which the reference (computeStats) keeps as sets of ids and the rollups as bitsets: both
// pass their own union, so goals are exact over any range without reading an event again.
import { patternMatcher } from '../funnels/steps.ts';

export interface GoalDefinition {
  id: string;
  name: string;
  page: string | null;
  event: string | null;
}

export interface GoalRow {
  id: string;
  name: string;
  /** Events that reached the goal: matching pageloads, or custom events of that name. */
  conversions: number;
  /** Distinct sessions among them. */
  sessions: number;
  /** sessions / the range's distinct sessions, rounded to 4 decimals; 0 without sessions. */
  conversionRate: number;
}

/** A breakdown's rows: name → its events and its distinct sessions (a set of the caller's kind). */
export type NameRows<S> = ReadonlyMap<string, { events: number; sessions: S }>;

export function goalRows<S>(
  goals: readonly GoalDefinition[],
  pages: NameRows<S>,
  customEvents: NameRows<S>,
  /** How many distinct sessions the given sets hold together. */
  unionSize: (sets: S[]) => number,
  /** Distinct sessions of the whole range. */
  rangeSessions: number,
): GoalRow[] {
  return goals.map((goal) => {
    const sets: S[] = [];
    let conversions = 0;
    const take = (row: { events: number; sessions: S } | undefined) => {
      if (!row) return;
      conversions += row.events;
      sets.push(row.sessions);
    };
    if (goal.page !== null) {
      const matches = patternMatcher(goal.page);
      for (const [route, row] of pages) if (matches.test(route)) take(row);
    } else if (goal.event !== null) {
      take(customEvents.get(goal.event));
    }
    const sessions = sets.length ? unionSize(sets) : 0;
    return { id: goal.id, name: goal.name, conversions, sessions, conversionRate: rate(sessions, rangeSessions) };
  });
}

const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0);

/** The union's size of sets of strings (the reference's kind). */
export function stringUnionSize(sets: ReadonlySet<string>[]): number {
  if (sets.length === 1) return sets[0].size;
  const all = new Set<string>();
  for (const s of sets) for (const id of s) all.add(id);
  return all.size;
}
