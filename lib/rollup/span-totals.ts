// The sums a Stats answer takes from every part it reads (event types, error versions, feedback,
// each route's count, time and durations, the vitals' values per page), and a cache of those sums
// over a span of whole merged days. A 30-day read added every day's per-route and per-vital value
// lists again on every read (about two thirds of its time); with the span's sums kept it adds one
// list per route and vital, plus the parts outside the span (today's hours, the range's edges).
// A span is keyed by the identity of its merged days' parts: a merged day that changes is a new
// part (UserRollups drops and rebuilds it), so a span of the old one can no longer match, and is
// dropped with it. Everything here is derived from merged days in memory, rebuilt after a restart.
import { VITAL_NAMES, vitalRating } from '../breakdowns.ts';
import { RouteDurations } from './durations.ts';
import type { PartColumns, RollupPart } from './hour.ts';

/** The columns of a part that Totals sums: a part's own, or a span's. */
export type SumColumns = Pick<
  PartColumns,
  'types' | 'typeCounts' | 'versions' | 'versionCounts' | 'feedback' | 'routes' | 'routeCounts' | 'routeSumMicros' | 'routeEnds' |
  'values' | 'valueCounts' | 'vitalPages' | 'vitalMetrics' | 'vitalEnds' | 'vitalValues' | 'vitalValueCounts'
>;

export interface RouteTotals { count: number; sumMicros: number; durations: RouteDurations }
/** One vital (of a page, or of all): its value counts, how many, and how many rate good / NI / poor. */
export interface VitalTotals { count: number; ratings: number[]; values: RouteDurations }
export type VitalPages = Map<string, { events: number; metrics: (VitalTotals | undefined)[] }>;
const vitalTotals = (): VitalTotals => ({ count: 0, ratings: [0, 0, 0], values: new RouteDurations() });

/** Sums of parts' columns; `vitals` false leaves the vitals out (an answer without breakdowns). */
export class Totals {
  readonly byType = new Map<string, number>();
  readonly byVersion = new Map<string, number>();
  readonly feedback = [0, 0, 0, 0, 0];
  readonly routes = new Map<string, RouteTotals>();
  readonly vitals = VITAL_NAMES.map(vitalTotals);
  readonly vitalPages: VitalPages = new Map();

  constructor(private readonly withVitals = true) {}

  add(c: SumColumns): void {
    for (let i = 0; i < c.types.length; i++) this.byType.set(c.types[i], (this.byType.get(c.types[i]) ?? 0) + c.typeCounts[i]);
    for (let i = 0; i < c.versions.length; i++) this.byVersion.set(c.versions[i], (this.byVersion.get(c.versions[i]) ?? 0) + c.versionCounts[i]);
    for (let i = 0; i < 5; i++) this.feedback[i] += c.feedback[i];
    for (let i = 0; i < c.routes.length; i++) {
      let route = this.routes.get(c.routes[i]);
      if (!route) this.routes.set(c.routes[i], (route = { count: 0, sumMicros: 0, durations: new RouteDurations() }));
      route.count += c.routeCounts[i];
      route.sumMicros += c.routeSumMicros[i];
      route.durations.addValues(c.values, c.valueCounts, i ? c.routeEnds[i - 1] : 0, c.routeEnds[i]);
    }
    if (!this.withVitals) return;
    // A span keeps all pages' lists merged too: added once rather than again page by page.
    const span = c instanceof SpanTotals ? c : null;
    this.addVitals(c, span === null);
    span?.allVitals.forEach(([values, counts], m) => {
      const all = this.vitals[m];
      all.values.addValues(values, counts, 0, values.length);
      for (let j = 0; j < values.length; j++) all.count += counts[j], (all.ratings[vitalRating(m, values[j])] += counts[j]);
    });
  }

  /** Adds a part's vital values to each page's totals, and unless `toAll` is false to all pages'. */
  private addVitals(c: SumColumns, toAll: boolean): void {
    for (let i = 0; i < c.vitalPages.length; i++) {
      const m = c.vitalMetrics[i];
      let page = this.vitalPages.get(c.vitalPages[i]);
      if (!page) this.vitalPages.set(c.vitalPages[i], (page = { events: 0, metrics: [] }));
      const ofPage = (page.metrics[m] ??= vitalTotals()), all = this.vitals[m];
      const start = i ? c.vitalEnds[i - 1] : 0, end = c.vitalEnds[i];
      ofPage.values.addValues(c.vitalValues, c.vitalValueCounts, start, end);
      if (toAll) all.values.addValues(c.vitalValues, c.vitalValueCounts, start, end);
      for (let j = start; j < end; j++) {
        const n = c.vitalValueCounts[j], rating = vitalRating(m, c.vitalValues[j]);
        page.events += n;
        ofPage.count += n;
        ofPage.ratings[rating] += n;
        if (toAll) all.count += n, (all.ratings[rating] += n);
      }
    }
  }
}

/** The sums of a span of merged days, as one part's columns (each list merged and ascending). */
export class SpanTotals implements SumColumns {
  readonly types: string[] = [];
  readonly typeCounts: number[] = [];
  readonly versions: string[] = [];
  readonly versionCounts: number[] = [];
  readonly feedback: number[];
  readonly routes: string[] = [];
  readonly routeCounts: number[] = [];
  readonly routeSumMicros: number[] = [];
  readonly routeEnds: number[] = [];
  readonly values: Numbers;
  readonly valueCounts: Numbers;
  readonly vitalPages: string[] = [];
  readonly vitalMetrics: number[] = [];
  readonly vitalEnds: number[] = [];
  readonly vitalValues: Numbers;
  readonly vitalValueCounts: Numbers;
  /** Per vital (index into VITAL_NAMES), all pages' values and counts merged. */
  readonly allVitals: [Numbers, Numbers][];
  /** Memory held, estimated: 8 bytes a number, 2 a character and 40 a string. */
  readonly bytes: number;

  /** `days`: merged days' parts, ascending by hour. */
  constructor(readonly days: readonly RollupPart[]) {
    const t = new Totals();
    for (const part of days) t.add(part.columns());
    for (const [type, n] of t.byType) this.types.push(type), this.typeCounts.push(n);
    for (const [version, n] of t.byVersion) this.versions.push(version), this.versionCounts.push(n);
    this.feedback = t.feedback;
    const lists: Float64Array[][] = [];
    for (const [route, r] of t.routes) {
      const { values, counts } = r.durations.collapse();
      lists.push([values, counts]);
      this.routes.push(route), this.routeCounts.push(r.count), this.routeSumMicros.push(r.sumMicros);
      this.routeEnds.push((this.routeEnds.at(-1) ?? 0) + values.length);
    }
    [this.values, this.valueCounts] = concat(lists);
    const vitals: Float64Array[][] = [];
    for (const [page, { metrics }] of t.vitalPages) {
      metrics.forEach((m, metric) => {
        if (!m) return;
        const { values, counts } = m.values.collapse();
        vitals.push([values, counts]);
        this.vitalPages.push(page), this.vitalMetrics.push(metric);
        this.vitalEnds.push((this.vitalEnds.at(-1) ?? 0) + values.length);
      });
    }
    [this.vitalValues, this.vitalValueCounts] = concat(vitals);
    this.allVitals = t.vitals.map((v) => {
      const { values, counts } = v.values.collapse();
      return concat([[values, counts]]);
    });
    const text = (names: readonly string[]) => names.reduce((s, x) => s + 40 + 2 * x.length, 0);
    this.bytes = text(this.types) + text(this.versions) + text(this.routes) + text(this.vitalPages) +
      8 * (this.types.length + this.versions.length + 3 * this.routes.length + 2 * this.vitalPages.length) +
      this.values.byteLength + this.valueCounts.byteLength + this.vitalValues.byteLength + this.vitalValueCounts.byteLength + 8 * days.length +
      this.allVitals.reduce((n, [v, c]) => n + v.byteLength + c.byteLength, 0);
  }

  /** Whether these are the sums of exactly `days` (the same parts, in the same order). */
  matches(days: readonly RollupPart[]): boolean {
    return days.length === this.days.length && days.every((d, i) => d === this.days[i]);
  }
}

type Numbers = Float64Array | Int32Array | Uint32Array;

/** The lists one after the other: 4 bytes a number where every one fits (whole ms, counts), else 8. */
function concat(lists: Float64Array[][]): [Numbers, Numbers] {
  const n = lists.reduce((s, [v]) => s + v.length, 0);
  const values = new Float64Array(n), counts = new Float64Array(n);
  let at = 0;
  for (const [v, c] of lists) values.set(v, at), counts.set(c, at), (at += v.length);
  const fits = (a: Float64Array, Narrow: Int32ArrayConstructor | Uint32ArrayConstructor) => {
    const narrow = Narrow.from(a);
    return narrow.every((x, i) => x === a[i]) ? narrow : a;
  };
  return [fits(values, Int32Array), fits(counts, Uint32Array)];
}

/** Spans kept per user at most: a range read now and then, its comparison period, one more. */
const SPANS = 3;
/** Fewer merged days than this in a read are summed day by day: a span would save little. */
const MIN_DAYS = 2;
/**
 * The share of its merged days' bytes a user's span sums may take: a span keeps no sessions or
 * breakdowns, only merged value lists, so one is far smaller than a merged day.
 */
export const SPAN_SHARE = 1 / 2;

/**
 * A user's spans, least recently used first, within SPANS and `limitBytes()` (the owner's share
 * of its merged days' memory: UserRollups, and the PostgreSQL store's DayPartCache).
 */
export class SpanCache {
  private spans: SpanTotals[] = [];
  /** Bytes of the last span built that did not fit: none is built again until the limit reaches it. */
  private tooBig = 0;
  /** Reads answered from a span kept (for tests). */
  hits = 0;

  constructor(private readonly limitBytes: () => number) {}

  /** Bytes of the spans kept. */
  get bytes(): number {
    return this.spans.reduce((s, t) => s + t.bytes, 0);
  }

  /** The bound now. */
  get limit(): number {
    return this.limitBytes();
  }

  get size(): number {
    return this.spans.length;
  }

  /**
   * The sums of `days` (merged days' parts, ascending by hour), kept or built and kept (evicting
   * the least recently used); null for too few days or a span past the limit (summed day by day).
   */
  of(days: readonly RollupPart[]): SpanTotals | null {
    if (days.length < MIN_DAYS) return null;
    const at = this.spans.findIndex((s) => s.matches(days));
    if (at >= 0) {
      const [span] = this.spans.splice(at, 1);
      this.spans.push(span);
      this.hits++;
      return span;
    }
    const limit = this.limitBytes();
    // Building a span costs about as much as summing its days once: not for one read.
    if (limit < this.tooBig) return null;
    const span = new SpanTotals(days);
    if (span.bytes > limit) {
      this.tooBig = span.bytes;
      return null;
    }
    this.tooBig = 0;
    this.spans.push(span);
    while (this.spans.length > SPANS || this.bytes > limit) this.spans.shift();
    return span;
  }

  /**
   * Drops the spans that hold `day` (UTC day number): one of its parts changed or went. The limit
   * may have fallen with it (fewer merged days): the least recently used go until within it.
   */
  dropDay(day: number): void {
    if (!this.spans.length) return;
    this.spans = this.spans.filter((s) => !s.days.some((p) => Math.floor(p.hour / 24) === day));
    const limit = this.limitBytes();
    while (this.bytes > limit) this.spans.shift();
  }
}
