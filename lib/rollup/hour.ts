// One user's events of one UTC hour, reduced to what the statistics need (README "Statistics"):
// counts by type, errors by version, the distinct sessions, feedback ratings, and per route the
// pageload count, the summed durations in µs and the exact count of each duration at 1 ms; per
// breakdown name (lib/breakdowns.ts) its events and sessions; per page and vital the exact count
// of each value.
// HourRollup is the mutable form that takes events one by one (and gives them back: the memory
// store evicts); FrozenHour (codec.ts) is the compact, immutable form a sealed hour is kept in.
// Both offer the same read side, RollupPart, which is all that assembleStats reads.
import { CUSTOM_EVENTS, dimensionNames, LEGACY_DIMENSIONS, PART_DIMENSIONS, PROPERTIES, vitalOf } from '../breakdowns.ts';
import { propertiesOf } from '../properties.ts';
import type { StoredEvent } from '../event.ts';
import { feedbackRating, HOUR_MS, micros, pageloadDuration, roundMs } from '../stats.ts';
import { routeKey, UNKNOWN } from '../event-keys.ts';
import { dimColumns, vitalEntries } from './layout.ts';

/** The fields of one event that rollups read; a store with columns can fill it without an event. */
export interface RollupRow {
  receivedMs: number;
  type: string;
  /** deployVersion; errors without one count under "unknown". */
  version: string | null;
  session: string | null;
  /** Route key (routeKey) and duration of a pageload with a numeric duration; both null otherwise. */
  route: string | null;
  duration: number | null;
  /** A valid feedback rating 1–5, else null. */
  rating: number | null;
  /** The event's name in each breakdown (DIMENSIONS order, dimensionNames), null where it does not count. */
  dims: readonly (string | null)[];
  /** The rollup names of a custom event's properties (propertiesOf), counted in list PROPERTIES; null without any. */
  props: readonly string[] | null;
  /** The web vital of a performance event (vitalOf), else null. */
  vital: { metric: number; units: number; page: string } | null;
}

/** The rollup row of a stored event (`receivedMs` when the caller already parsed receivedAt). */
export function rollupRow(e: StoredEvent, receivedMs = Date.parse(e.receivedAt)): RollupRow {
  const duration = pageloadDuration(e);
  const dims = dimensionNames(e);
  return {
    receivedMs,
    type: e.type,
    version: e.deployVersion,
    session: e.sessionId,
    route: duration === null ? null : routeKey(e),
    duration,
    rating: feedbackRating(e),
    dims,
    props: propertiesOf(e.type, dims[CUSTOM_EVENTS], e.data),
    vital: vitalOf(e),
  };
}

export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);

/**
 * Everything but the sessions, as parallel columns. Route i's duration values (whole ms, ascending)
 * and their counts are `values`/`valueCounts` from `routeEnds[i - 1]` (0 for the first) to
 * `routeEnds[i]`: flat typed arrays that are cheap to keep and fast to add up.
 */
export interface PartColumns {
  types: readonly string[];
  typeCounts: ArrayLike<number>;
  /** Error counts by deployVersion. */
  versions: readonly string[];
  versionCounts: ArrayLike<number>;
  /** Counts of ratings 1..5. */
  feedback: ArrayLike<number>;
  routes: readonly string[];
  routeCounts: ArrayLike<number>;
  routeSumMicros: ArrayLike<number>;
  routeEnds: ArrayLike<number>;
  values: ArrayLike<number>;
  valueCounts: ArrayLike<number>;
  /**
   * Breakdown names of every dimension the part holds (`dimEnds.length`: PART_DIMENSIONS, that is
   * DIMENSIONS and the properties; or in a part kept before them DIMENSIONS.length, or the first
   * LEGACY_DIMENSIONS), one after the other: dimension d's are `dimNames` from
   * `dimEnds[d - 1]` (0 for the first) to `dimEnds[d]`, ascending. Name i has `dimCounts[i]`
   * events and the sessions `dimSessions` from `dimSessionEnds[i - 1]` to `dimSessionEnds[i]`,
   * as indices into the part's sessions in the order forEachSession gives them.
   */
  dimNames: readonly string[];
  dimEnds: ArrayLike<number>;
  dimCounts: ArrayLike<number>;
  dimSessionEnds: ArrayLike<number>;
  dimSessions: ArrayLike<number>;
  /**
   * Vital values per (page, metric), sorted by page then metric (index into VITAL_NAMES); entry
   * i's values (in the metric's units, ascending) and counts are `vitalValues`/`vitalValueCounts`
   * from `vitalEnds[i - 1]` to `vitalEnds[i]`.
   */
  vitalPages: readonly string[];
  vitalMetrics: ArrayLike<number>;
  vitalEnds: ArrayLike<number>;
  vitalValues: ArrayLike<number>;
  vitalValueCounts: ArrayLike<number>;
}

/**
 * Columns of a part without breakdowns or vitals (parts encoded before they existed): empty lists
 * of the dimensions kept then.
 */
export const NO_BREAKDOWNS = {
  dimNames: [], dimEnds: new Uint32Array(LEGACY_DIMENSIONS), dimCounts: [], dimSessionEnds: [], dimSessions: [],
  vitalPages: [], vitalMetrics: [], vitalEnds: [], vitalValues: [], vitalValueCounts: [],
} as const satisfies Partial<PartColumns>;

/** The read side shared by the mutable and the frozen form of an hour's rollup. */
export interface RollupPart {
  readonly hour: number;
  readonly total: number;
  /** Distinct sessions of the part. */
  readonly sessionCount: number;
  forEachSession(fn: (session: string) => void): void;
  /**
   * The sessions as 16 bytes each, in forEachSession's order, when the part keeps them so (all
   * UUIDs): SessionIds reads them without making strings.
   */
  packedSessions?(): ArrayLike<number> | null;
  columns(): PartColumns;
}

/** The same part read as a part of another hour: parts of a day merged into one (HourRollup.merge). */
export const asHour = (part: RollupPart, hour: number): RollupPart =>
  part.hour === hour ? part : { hour, total: part.total, sessionCount: part.sessionCount, forEachSession: (fn) => part.forEachSession(fn), columns: () => part.columns() };

interface RouteCounts {
  count: number;
  sumMicros: number;
  /** Duration in whole ms → events. */
  values: Map<number, number>;
}

const bump = <K>(m: Map<K, number>, key: K, by: number) => {
  const n = (m.get(key) ?? 0) + by;
  if (n === 0) m.delete(key);
  else m.set(key, n);
};

/** One breakdown name: its events and, per session, how many of them came with it. */
interface NameCounts { events: number; sessions: Map<string, number> }

/** Flat value columns of (value → count) maps: ends, ascending values and their counts. */
function valueColumns(maps: readonly Map<number, number>[]) {
  const ends = new Uint32Array(maps.length);
  let size = 0;
  maps.forEach((m, i) => (ends[i] = size += m.size));
  const values = new Float64Array(size), counts = new Float64Array(size);
  maps.forEach((m, i) => {
    let at = i ? ends[i - 1] : 0;
    for (const [v, n] of [...m].sort((a, b) => a[0] - b[0])) {
      values[at] = v;
      counts[at++] = n;
    }
  });
  return { ends, values, counts };
}

export class HourRollup implements RollupPart {
  total = 0;
  private readonly types = new Map<string, number>();
  private readonly versions = new Map<string, number>();
  /** Session → events of it here: removing an event must know whether it was the session's last. */
  private readonly sessions = new Map<string, number>();
  private readonly feedback = [0, 0, 0, 0, 0];
  private readonly routes = new Map<string, RouteCounts>();
  private readonly dims = Array.from({ length: PART_DIMENSIONS }, () => new Map<string, NameCounts>());
  /**
   * The dimensions it holds: all, unless a part kept before the newer ones was merged in, whose
   * events are then missing from those (so they are left out of its columns, not given partial).
   */
  private dimensions: number = PART_DIMENSIONS;
  /** Page → per metric (VITAL_NAMES index), value in units → events. */
  private readonly vitals = new Map<string, Map<number, Map<number, number>>>();
  /** columns() of the current content, dropped on every change. */
  private cached: PartColumns | null = null;

  constructor(readonly hour: number) {}

  /** Rollups of events grouped by hour, in ascending hours: the partial hours a store reads raw. */
  static fromRows(rows: Iterable<RollupRow>): HourRollup[] {
    const byHour = new Map<number, HourRollup>();
    for (const row of rows) {
      const h = hourOf(row.receivedMs);
      let part = byHour.get(h);
      if (!part) byHour.set(h, (part = new HourRollup(h)));
      part.add(row);
    }
    return [...byHour.values()].sort((a, b) => a.hour - b.hour);
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  forEachSession(fn: (session: string) => void): void {
    for (const s of this.sessions.keys()) fn(s);
  }

  add(row: RollupRow): void {
    this.apply(row, 1);
  }

  /** Takes back an event added before (the memory store's eviction). */
  remove(row: RollupRow): void {
    this.apply(row, -1);
  }

  private apply(row: RollupRow, sign: 1 | -1) {
    if (hourOf(row.receivedMs) !== this.hour) throw new RangeError(`event of hour ${hourOf(row.receivedMs)} given to hour ${this.hour}`);
    this.cached = null;
    this.total += sign;
    bump(this.types, row.type, sign);
    if (row.type === 'error') bump(this.versions, row.version ?? UNKNOWN, sign);
    if (row.session) bump(this.sessions, row.session, sign);
    if (row.rating !== null) this.feedback[row.rating - 1] += sign;
    if (row.route !== null && row.duration !== null) {
      let r = this.routes.get(row.route);
      if (!r) this.routes.set(row.route, (r = { count: 0, sumMicros: 0, values: new Map() }));
      r.count += sign;
      r.sumMicros += sign * micros(row.duration);
      const ms = roundMs(row.duration);
      const left = (r.values.get(ms) ?? 0) + sign;
      if (left === 0) r.values.delete(ms);
      else r.values.set(ms, left);
      if (r.count === 0) this.routes.delete(row.route);
    }
    row.dims.forEach((name, d) => {
      if (name !== null) this.bumpName(d, name, row.session, sign);
    });
    // An event's property names are distinct (one per key): each counts it once.
    if (row.props) for (const name of row.props) this.bumpName(PROPERTIES, name, row.session, sign);
    if (row.vital) this.bumpVital(row.vital.page, row.vital.metric, row.vital.units, sign);
  }

  private bumpName(d: number, name: string, session: string | null, sign: 1 | -1) {
    const n = this.nameCounts(d, name);
    n.events += sign;
    if (session) bump(n.sessions, session, sign);
    if (n.events === 0) this.dims[d].delete(name);
  }

  private nameCounts(d: number, name: string): NameCounts {
    let n = this.dims[d].get(name);
    if (!n) this.dims[d].set(name, (n = { events: 0, sessions: new Map() }));
    return n;
  }

  private bumpVital(page: string, metric: number, units: number, by: number) {
    let metrics = this.vitals.get(page);
    if (!metrics) this.vitals.set(page, (metrics = new Map()));
    let values = metrics.get(metric);
    if (!values) metrics.set(metric, (values = new Map()));
    bump(values, units, by);
    if (values.size === 0) metrics.delete(metric);
    if (metrics.size === 0) this.vitals.delete(page);
  }

  /**
   * Adds a whole part (another segment's share of the same hour, say). Its sessions count as seen
   * once each: events merged in this way cannot be removed one by one afterwards.
   */
  merge(part: RollupPart): void {
    if (part.hour !== this.hour) throw new RangeError(`part of hour ${part.hour} merged into hour ${this.hour}`);
    this.cached = null;
    const c = part.columns();
    this.total += part.total;
    c.types.forEach((t, i) => bump(this.types, t, c.typeCounts[i]));
    c.versions.forEach((v, i) => bump(this.versions, v, c.versionCounts[i]));
    for (let i = 0; i < 5; i++) this.feedback[i] += c.feedback[i];
    const sessions: string[] = [];
    part.forEachSession((s) => {
      sessions.push(s);
      bump(this.sessions, s, 1);
    });
    this.dimensions = Math.min(this.dimensions, c.dimEnds.length);
    for (let d = 0, i = 0; d < c.dimEnds.length; d++) {
      for (; i < c.dimEnds[d]; i++) {
        const n = this.nameCounts(d, c.dimNames[i]);
        n.events += c.dimCounts[i];
        for (let j = i ? c.dimSessionEnds[i - 1] : 0; j < c.dimSessionEnds[i]; j++) bump(n.sessions, sessions[c.dimSessions[j]], 1);
      }
    }
    c.vitalPages.forEach((page, i) => {
      for (let j = i ? c.vitalEnds[i - 1] : 0; j < c.vitalEnds[i]; j++) {
        this.bumpVital(page, c.vitalMetrics[i], c.vitalValues[j], c.vitalValueCounts[j]);
      }
    });
    c.routes.forEach((route, i) => {
      let r = this.routes.get(route);
      if (!r) this.routes.set(route, (r = { count: 0, sumMicros: 0, values: new Map() }));
      r.count += c.routeCounts[i];
      r.sumMicros += c.routeSumMicros[i];
      for (let j = i ? c.routeEnds[i - 1] : 0; j < c.routeEnds[i]; j++) {
        r.values.set(c.values[j], (r.values.get(c.values[j]) ?? 0) + c.valueCounts[j]);
      }
    });
  }

  columns(): PartColumns {
    if (this.cached) return this.cached;
    const routes = [...this.routes.keys()].sort();
    const routeEnds = new Uint32Array(routes.length);
    let size = 0;
    routes.forEach((r, i) => (routeEnds[i] = size += this.routes.get(r)!.values.size));
    const values = new Float64Array(size);
    const valueCounts = new Float64Array(size);
    routes.forEach((r, i) => {
      const entries = [...this.routes.get(r)!.values].sort((a, b) => a[0] - b[0]);
      const at = i ? routeEnds[i - 1] : 0;
      entries.forEach(([v, n], j) => {
        values[at + j] = v;
        valueCounts[at + j] = n;
      });
    });
    const types = [...this.types.keys()].sort();
    const versions = [...this.versions.keys()].sort();
    // Sessions are referred to by their place in forEachSession's order, which is the map's.
    const sessionIndex = new Map<string, number>();
    for (const s of this.sessions.keys()) sessionIndex.set(s, sessionIndex.size);
    const dim = dimColumns(this.dims.slice(0, this.dimensions), (n) => n.events, (n) => n.sessions.keys(), (s) => sessionIndex.get(s)!);
    const { vitalPages, vitalMetrics, lists: vitalMaps } = vitalEntries(this.vitals);
    const vital = valueColumns(vitalMaps);
    return (this.cached = {
      types,
      typeCounts: types.map((t) => this.types.get(t)!),
      versions,
      versionCounts: versions.map((v) => this.versions.get(v)!),
      feedback: [...this.feedback],
      routes,
      routeCounts: routes.map((r) => this.routes.get(r)!.count),
      routeSumMicros: routes.map((r) => this.routes.get(r)!.sumMicros),
      routeEnds,
      values,
      valueCounts,
      ...dim,
      vitalPages,
      vitalMetrics,
      vitalEnds: vital.ends,
      vitalValues: vital.values,
      vitalValueCounts: vital.counts,
    });
  }
}
