// Rollups as additive counter rows, for a database that merges buckets itself (PostgreSQL:
// `ON CONFLICT DO UPDATE SET n = n + excluded.n`). An event adds 1 to a few counters of its hour;
// counters of the same key add up across events, batches and instances in any order, so a
// database can keep them exact under concurrent writers without reading them first.
// Distinct sessions are not additive: the database keeps them as sets (one row per session and
// hour, and per session and day) and counts what each insert newly added to them.
// CounterRollups is the read side: the counters a store summed for a stats request, offered to
// assembleStats as a RollupSource.
import { NO_BREAKDOWNS, type PartColumns, type RollupPart, type RollupRow } from './hour.ts';
import { micros, roundMs, UNKNOWN } from '../stats.ts';
import type { RollupSource } from './user.ts';

/**
 * Kinds of counter. `key` is the type, deployVersion, rating ("1".."5") or route; `ms` is a whole
 * millisecond duration for ROUTE and 0 otherwise; `micros` sums micros(duration) for ROUTE.
 * HOUR_SESSIONS / DAY_SESSIONS count the distinct sessions of an hour / of the UTC day starting
 * at that hour (key "").
 */
export const TYPE = 't', VERSION = 'v', RATING = 'f', ROUTE = 'd', HOUR_SESSIONS = 's', DAY_SESSIONS = 'S';

export interface Counter { kind: string; key: string; ms: number; n: number; micros: number }

/** The counters one event adds 1 to (sessions aside), as computeStats would count it. */
export function eventCounters(row: RollupRow): Omit<Counter, 'n'>[] {
  const out: Omit<Counter, 'n'>[] = [{ kind: TYPE, key: row.type, ms: 0, micros: 0 }];
  if (row.type === 'error') out.push({ kind: VERSION, key: row.version ?? UNKNOWN, ms: 0, micros: 0 });
  if (row.rating !== null) out.push({ kind: RATING, key: String(row.rating), ms: 0, micros: 0 });
  if (row.route !== null && row.duration !== null) {
    out.push({ kind: ROUTE, key: row.route, ms: roundMs(row.duration), micros: micros(row.duration) });
  }
  return out;
}

/**
 * A part built from summed counters: `total` and `types` of one series bucket (its hour is any
 * hour of the bucket), or the versions, ratings and routes of a whole range with total 0. A part
 * of counters has no sessions: CounterRollups answers those from the session counters.
 */
export function counterPart(hour: number, counters: readonly Counter[]): RollupPart {
  const types: string[] = [], typeCounts: number[] = [];
  const versions: string[] = [], versionCounts: number[] = [];
  const feedback = [0, 0, 0, 0, 0];
  const byRoute = new Map<string, { count: number; sumMicros: number; values: [number, number][] }>();
  let total = 0;
  for (const c of counters) {
    if (c.kind === TYPE) {
      types.push(c.key);
      typeCounts.push(c.n);
      total += c.n;
    } else if (c.kind === VERSION) {
      versions.push(c.key);
      versionCounts.push(c.n);
    } else if (c.kind === RATING) feedback[Number(c.key) - 1] += c.n;
    else if (c.kind === ROUTE) {
      let r = byRoute.get(c.key);
      if (!r) byRoute.set(c.key, (r = { count: 0, sumMicros: 0, values: [] }));
      r.count += c.n;
      r.sumMicros += c.micros;
      r.values.push([c.ms, c.n]);
    }
  }
  const routes = [...byRoute.keys()].sort();
  const routeEnds = new Uint32Array(routes.length);
  const values: number[] = [], valueCounts: number[] = [];
  routes.forEach((route, i) => {
    const merged = new Map<number, number>();
    for (const [ms, n] of byRoute.get(route)!.values) merged.set(ms, (merged.get(ms) ?? 0) + n);
    for (const [ms, n] of [...merged].sort((a, b) => a[0] - b[0])) {
      values.push(ms);
      valueCounts.push(n);
    }
    routeEnds[i] = values.length;
  });
  const columns: PartColumns = {
    types, typeCounts, versions, versionCounts, feedback, routes,
    routeCounts: routes.map((r) => byRoute.get(r)!.count),
    routeSumMicros: routes.map((r) => byRoute.get(r)!.sumMicros),
    routeEnds, values, valueCounts, ...NO_BREAKDOWNS,
  };
  return { hour, total, sessionCount: 0, forEachSession: () => {}, columns: () => columns };
}

/**
 * The rollups of one stats request, read from counters: parts for the whole hours [from, to),
 * the session counters of the hours and days the series asks for, and the sessions of the hours
 * of series buckets cut by the range's edges (the only ones assembleStats unions). Asking for
 * anything else is a bug in the caller, and throws rather than answering wrong.
 */
export class CounterRollups implements RollupSource {
  constructor(
    private readonly hours: [number, number],
    private readonly parts: readonly RollupPart[],
    private readonly hourCounts: ReadonlyMap<number, number>,
    private readonly dayCounts: ReadonlyMap<number, number>,
    /** Hour → its sessions, for every hour in `sessionHours`. */
    private readonly sessions: ReadonlyMap<number, readonly string[]>,
    private readonly sessionHours: readonly [number, number][],
  ) {}

  forEachPart(fromHour: number, toHour: number, fn: (part: RollupPart) => void): void {
    if (fromHour !== this.hours[0] || toHour !== this.hours[1]) throw new RangeError(`parts of hours [${fromHour}, ${toHour}) were not read`);
    this.parts.forEach(fn);
  }

  forEachSession(fromHour: number, toHour: number, fn: (session: string) => void): void {
    if (fromHour >= toHour) return;
    if (!this.sessionHours.some(([a, b]) => a <= fromHour && toHour <= b)) throw new RangeError(`sessions of hours [${fromHour}, ${toHour}) were not read`);
    for (let h = fromHour; h < toHour; h++) this.sessions.get(h)?.forEach(fn);
  }

  hourSessions(hour: number): number {
    return this.hourCounts.get(hour) ?? 0;
  }

  daySessions(day: number): number {
    return this.dayCounts.get(day) ?? 0;
  }
}
