// Rollups as additive counter rows, for a database that merges buckets itself (PostgreSQL:
// `ON CONFLICT DO UPDATE SET n = n + excluded.n`). An event adds 1 to a few counters of its hour;
// counters of the same key add up across events, batches and instances in any order, so a
// database can keep them exact under concurrent writers without reading them first.
// Distinct sessions are not additive: the database keeps them as sets (one row per session and
// hour, and per session and day) and counts what each insert newly added to them.
// CounterRollups is the read side: the counters a store summed for a stats request, offered to
// assembleStats as a RollupSource.
import { type PartColumns, type RollupPart, type RollupRow } from './hour.ts';
import { dimColumns, vitalEntries } from './layout.ts';
import { micros, roundMs } from '../stats.ts';
import { UNKNOWN } from '../event-keys.ts';
import { PROPERTIES } from '../breakdowns.ts';
import type { RollupSource } from './user.ts';
import type { CrossDays } from './cross-days.ts';
import type { SpanCache } from './span-totals.ts';

/**
 * Kinds of counter. `key` is the type, deployVersion, rating ("1".."5") or route; `ms` is a whole
 * millisecond duration for ROUTE and 0 otherwise; `micros` sums micros(duration) for ROUTE.
 * HOUR_SESSIONS / DAY_SESSIONS count the distinct sessions of an hour / of the UTC day starting
 * at that hour (key "").
 */
export const TYPE = 't', VERSION = 'v', RATING = 'f', ROUTE = 'd', HOUR_SESSIONS = 's', DAY_SESSIONS = 'S';
/**
 * Breakdown counters, one kind per dimension (DIMENSIONS order), key the name: events with it.
 * Their sessions are kept as sets (watchtower_breakdown_sessions), not counted. The last kind,
 * PROPERTY, counts custom event properties (lib/properties.ts), keyed by their rollup names.
 */
export const DIM_KINDS = ['P', 'R', 'B', 'O', 'D', 'V', 'N', 'U', 'M', 'C', 'G', 'X', 'Q'] as const;
export const PROPERTY = DIM_KINDS[PROPERTIES];
/** Vital counters, one kind per metric (VITAL_NAMES order), key the page, `ms` the value in units. */
export const VITAL_KINDS = ['0', '1', '2', '3', '4'] as const;
const DIM_OF = new Map<string, number>(DIM_KINDS.map((k, d) => [k, d]));
const VITAL_OF = new Map<string, number>(VITAL_KINDS.map((k, m) => [k, m]));

export interface Counter { kind: string; key: string; ms: number; n: number; micros: number }

/** The counters one event adds 1 to (sessions aside), as computeStats would count it. */
export function eventCounters(row: RollupRow): Omit<Counter, 'n'>[] {
  const out: Omit<Counter, 'n'>[] = [{ kind: TYPE, key: row.type, ms: 0, micros: 0 }];
  if (row.type === 'error') out.push({ kind: VERSION, key: row.version ?? UNKNOWN, ms: 0, micros: 0 });
  if (row.rating !== null) out.push({ kind: RATING, key: String(row.rating), ms: 0, micros: 0 });
  if (row.route !== null && row.duration !== null) {
    out.push({ kind: ROUTE, key: row.route, ms: roundMs(row.duration), micros: micros(row.duration) });
  }
  row.dims.forEach((name, d) => {
    if (name !== null) out.push({ kind: DIM_KINDS[d], key: name, ms: 0, micros: 0 });
  });
  if (row.props) for (const name of row.props) out.push({ kind: PROPERTY, key: name, ms: 0, micros: 0 });
  if (row.vital) out.push({ kind: VITAL_KINDS[row.vital.metric], key: row.vital.page, ms: row.vital.units, micros: 0 });
  return out;
}

/**
 * A part built from summed counters: `total` and `types` of one series bucket (its hour is any
 * hour of the bucket), or the versions, ratings, routes, breakdown counts and vitals of a whole
 * range with total 0. Its sessions are those of breakdown names only: `dimSessions` rows are
 * (dimension kind, name, its distinct sessions), a name without counters counting 0 events.
 * CounterRollups answers the sessions of hours and days from the session counters.
 */
export function counterPart(hour: number, counters: readonly Counter[], dimSessions: readonly DimSessions[] = []): RollupPart {
  const types: string[] = [], typeCounts: number[] = [];
  const versions: string[] = [], versionCounts: number[] = [];
  const feedback = [0, 0, 0, 0, 0];
  const byRoute = new Map<string, { count: number; sumMicros: number; values: [number, number][] }>();
  const dims = DIM_KINDS.map(() => new Map<string, { n: number; sessions: readonly string[] }>());
  const vitals = new Map<string, Map<number, [number, number][]>>();
  const named = (kind: string, key: string) => {
    const names = dims[DIM_OF.get(kind)!];
    let row = names.get(key);
    if (!row) names.set(key, (row = { n: 0, sessions: [] }));
    return row;
  };
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
    } else if (DIM_OF.has(c.kind)) named(c.kind, c.key).n += c.n;
    else if (VITAL_OF.has(c.kind)) {
      let metrics = vitals.get(c.key);
      if (!metrics) vitals.set(c.key, (metrics = new Map()));
      const m = VITAL_OF.get(c.kind)!;
      let values = metrics.get(m);
      if (!values) metrics.set(m, (values = []));
      values.push([c.ms, c.n]);
    }
  }
  for (const [kind, key, list] of dimSessions) if (DIM_OF.has(kind)) named(kind, key).sessions = list;
  const routes = [...byRoute.keys()].sort();
  const route = valueLists(routes.map((r) => byRoute.get(r)!.values));
  // Each session once in the part, names pointing at it by index (as a frozen part keeps them).
  const sessions: string[] = [];
  const index = new Map<string, number>();
  const dim = dimColumns(dims, (row) => row.n, (row) => row.sessions, (s) => {
    let i = index.get(s);
    if (i === undefined) {
      index.set(s, (i = sessions.length));
      sessions.push(s);
    }
    return i;
  });
  const { vitalPages, vitalMetrics, lists: vitalLists } = vitalEntries(vitals);
  const vital = valueLists(vitalLists);
  const columns: PartColumns = {
    types, typeCounts, versions, versionCounts, feedback, routes,
    routeCounts: routes.map((r) => byRoute.get(r)!.count),
    routeSumMicros: routes.map((r) => byRoute.get(r)!.sumMicros),
    routeEnds: route.ends, values: route.values, valueCounts: route.counts,
    ...dim,
    vitalPages, vitalMetrics, vitalEnds: vital.ends, vitalValues: vital.values, vitalValueCounts: vital.counts,
  };
  return { hour, total, sessionCount: sessions.length, forEachSession: (fn) => sessions.forEach((s) => fn(s)), columns: () => columns };
}

/** A breakdown name's distinct sessions: (dimension kind, name, sessions). */
export type DimSessions = readonly [string, string, readonly string[]];

/** Flat columns of (value, count) lists: each list's values merged and ascending, and its end. */
function valueLists(lists: readonly [number, number][][]) {
  const ends = new Uint32Array(lists.length);
  const values: number[] = [], counts: number[] = [];
  lists.forEach((list, i) => {
    const merged = new Map<number, number>();
    for (const [v, n] of list) merged.set(v, (merged.get(v) ?? 0) + n);
    for (const [v, n] of [...merged].sort((a, b) => a[0] - b[0])) {
      values.push(v);
      counts.push(n);
    }
    ends[i] = values.length;
  });
  return { ends, values, counts };
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
    /** The store's merged days (the parts among `parts` it holds) and their spans, if it keeps them. */
    private readonly merged?: { readonly crossDays: CrossDays; readonly spans: SpanCache },
  ) {}

  get crossDays(): CrossDays | undefined {
    return this.merged?.crossDays;
  }

  get spans(): SpanCache | undefined {
    return this.merged?.spans;
  }

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
