// Pure statistics of GET /api/stats (docs/api.md#stats). computeStats over raw events is the
// reference: every store must return exactly what it returns for the same events and range
// (docs/architecture.md, invariant 9; the store contract suite checks that). Stores build the same
// answer from rollups (lib/rollup/).
import {
  breakdownLists, BROWSERS, CUSTOM_EVENTS, DIMENSIONS, dimensionNames, PAGES, topRows, vitalOf, vitalRating, vitalSummary, VITAL_NAMES, vitalsOf,
  type BreakdownRow, type Breakdowns, type PageRow, type Vitals, type VitalSummary,
} from './breakdowns.ts';
import type { StoredEvent } from './event.ts';
import { goalRows, stringUnionSize, type GoalDefinition, type GoalRow } from './goals/evaluate.ts';
import { routeKey, UNKNOWN } from './event-keys.ts';
import { propertiesOf, propertyAnswer, type PropertyAnswer, type PropertyQuery } from './properties.ts';

export interface LatencyPoint { duration: number; ttfb: number | null; timestamp: string }
export interface LatencySummary { count: number; p50: number; p95: number; avg: number; points: LatencyPoint[] }
export interface Series { labels: string[]; values: number[] }
export interface Analytics {
  breakdownCounts: { performance: number; errors: number; feedback: number; clicks: number };
  feedbackBreakdown: Record<'1' | '2' | '3' | '4' | '5', number>;
  feedbackTotal: number;
  feedbackAverage: number;
  customActivityTotal: number;
  userSeries: Series;
  activitySeries: Series;
}
export interface Stats {
  activeUsers: number;
  totalEvents: number;
  totalErrors: number;
  errorsByVersion: Record<string, number>;
  latencyByRoute: Record<string, LatencySummary>;
  recentErrors: StoredEvent[];
  eventsByType: Record<string, number>;
  averageLatency: number;
  recentActivity: StoredEvent[];
  analytics: Analytics;
  /** With a range only (docs/api.md#breakdowns): pages, referrers, clients and versions. */
  breakdowns?: Breakdowns;
  /** With a range only: web vitals over the range, and per page. */
  vitals?: Vitals;
  /** With a range and the project's goals (StatsRange.goals), while custom events are counted. */
  goals?: GoalRow[];
  /** With a range and StatsRange.property: a key's values (docs/api.md#properties). */
  properties?: PropertyAnswer['properties'];
  /** With a range and StatsRange.property.keys: the property keys seen. */
  propertyKeys?: PropertyAnswer['propertyKeys'];
}

export const ACTIVE_WINDOW_MS = 5 * 60 * 1000;
export const RECENT_ERRORS = 50;
export const RECENT_ACTIVITY = 20;
export const LATENCY_POINTS = 100;
export const SERIES_DAYS = 7;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/**
 * Statistics over a window of receive time, ms since the epoch: `from` inclusive, `to` exclusive
 * (default: now), series in buckets of `interval` (default: hour up to 48 h, else day).
 */
export interface StatsRange {
  from?: number;
  to?: number;
  interval?: 'hour' | 'day';
  /** A project's goals, counted over the range (docs/api.md#goals); ignored without `from`. */
  goals?: readonly GoalDefinition[];
  /** Custom event properties to answer (docs/api.md#properties); ignored without `from`. */
  property?: PropertyQuery;
}

/** A checked range with its series buckets: UTC-aligned starts, the first and last may be partial. */
export interface ResolvedRange {
  from: number;
  to: number;
  interval: 'hour' | 'day';
  bucketMs: number;
  /** Number (start / bucketMs) of the bucket holding `from`. */
  firstBucket: number;
  buckets: number;
}

/** Most series buckets one answer may hold: 100 days of hours, more than the 90-day default retention. */
export const MAX_SERIES_BUCKETS = 2400;
/** Ranges up to this long default to hourly buckets, longer ones to daily. */
export const HOURLY_UP_TO_MS = 48 * HOUR_MS;
// What a Date can hold: series labels are ISO strings.
const MAX_TIME = 8.64e15;

/** Why a range cannot be answered (the route answers 400 with it), or null when it can. */
export function rangeProblem(range: StatsRange | undefined, now: number): string | null {
  try {
    resolveRange(range, now);
    return null;
  } catch (e) {
    if (e instanceof RangeError) return e.message;
    throw e;
  }
}

/**
 * The range a stats request covers, or null for the answer without a range (all events, 7-day
 * series). `from` starts a range: `to` or `interval` without it is an error, as is an empty range
 * or one needing more than MAX_SERIES_BUCKETS buckets. Throws RangeError with the reason.
 */
export function resolveRange(range: StatsRange | undefined, now: number): ResolvedRange | null {
  if (!range || (range.from === undefined && range.to === undefined && range.interval === undefined)) return null;
  const { from, to = now } = range;
  if (from === undefined) throw new RangeError('a range needs from (to and interval refine it)');
  for (const [name, t] of [['from', from], ['to', to]] as const) {
    if (!Number.isFinite(t) || Math.abs(t) > MAX_TIME) throw new RangeError(`${name} is not a time`);
  }
  if (from >= to) throw new RangeError('from must be before to');
  const interval = range.interval ?? (to - from <= HOURLY_UP_TO_MS ? 'hour' : 'day');
  if (interval !== 'hour' && interval !== 'day') throw new RangeError('interval must be hour or day');
  const bucketMs = interval === 'hour' ? HOUR_MS : DAY_MS;
  const firstBucket = Math.floor(from / bucketMs);
  // The bucket holding the last instant in range, to - 1 (receive times are whole ms).
  const buckets = Math.floor((Math.ceil(to) - 1) / bucketMs) - firstBucket + 1;
  if (buckets > MAX_SERIES_BUCKETS) {
    throw new RangeError(`the range needs ${buckets} ${interval} buckets; at most ${MAX_SERIES_BUCKETS} (try interval=day or a shorter range)`);
  }
  return { from, to, interval, bucketMs, firstBucket, buckets };
}

/** Labels of a series: "1".."7" without a range, else the ISO start of each bucket. */
export function seriesLabels(r: ResolvedRange | null = null): string[] {
  if (r === null) return Array.from({ length: SERIES_DAYS }, (_, i) => String(i + 1));
  return Array.from({ length: r.buckets }, (_, i) => new Date((r.firstBucket + i) * r.bucketMs).toISOString());
}

/**
 * Percentiles are at 1 ms resolution: rounding is monotonic, so the rounded nearest-rank sample
 * is the nearest-rank sample of the rounded values, which is what rollups count (one counter per
 * whole ms). `+ 0` turns -0 into 0.
 */
export const roundMs = (ms: number): number => Math.round(ms) + 0;

/**
 * A duration in whole microseconds, the unit averages are summed in. Sums of integers are exact
 * in float64 (below 2^53 µs, ~285 years), so an average does not depend on the order in which
 * events (or rollups) were added, as a float sum of fractional ms would. Clamped so that an absurd
 * duration cannot make a sum infinite.
 */
export const micros = (ms: number): number =>
  Math.max(-Number.MAX_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, Math.round(ms * 1000)));

/** The rounded mean in ms of `n` durations summing to `sumMicros` µs; 0 when there are none. */
export const averageMs = (sumMicros: number, n: number): number => (n ? roundMs(sumMicros / (n * 1000)) : 0);

/**
 * Exact nearest-rank percentile: the smallest sample such that at least p% of the samples are
 * less than or equal to it (rank = ceil(p/100 · n), 1-based). Needs ascending input; 0 when empty.
 */
export function percentile(sortedAsc: ArrayLike<number>, p: number): number {
  const n = sortedAsc.length;
  if (n === 0) return 0;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sortedAsc[rank - 1];
}

/** The pageload duration a latency summary counts, or null when the event has none. */
export function pageloadDuration(e: StoredEvent): number | null {
  if (e.type !== 'pageload') return null;
  const d = e.data.duration;
  return typeof d === 'number' && Number.isFinite(d) ? d : null;
}

/** Feedback rating 1–5 of an event, or null. */
export function feedbackRating(e: StoredEvent): 1 | 2 | 3 | 4 | 5 | null {
  if (e.type !== 'feedback') return null;
  const r = e.data.rating;
  return typeof r === 'number' && Number.isInteger(r) && r >= 1 && r <= 5 ? (r as 1 | 2 | 3 | 4 | 5) : null;
}

/** Index 0..6 of the 7-day series (6 = today, UTC) for a time, or -1 outside the window. */
export function dayIndex(t: number, now: number): number {
  const diff = Math.floor(now / DAY_MS) - Math.floor(t / DAY_MS);
  return diff >= 0 && diff < SERIES_DAYS ? SERIES_DAYS - 1 - diff : -1;
}

/** analytics.breakdownCounts (docs/api.md#stats), in one place for every store: which types count in which bucket. */
export function breakdownCounts(count: (type: string) => number): Analytics['breakdownCounts'] {
  return {
    performance: count('pageload') + count('performance'),
    errors: count('error'),
    feedback: count('feedback'),
    clicks: count('click') + count('interaction'),
  };
}

export const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * Statistics over one user's events, given in insertion order (oldest first). Time windows use
 * receivedAt, the server's clock, never the client's. With a range every field covers only the
 * events received in [from, to); the series cover the range in buckets of its interval, and
 * activeUsers counts the sessions of the last 5 minutes before `now` among those events.
 * This is the reference: it scans everything and shares no code with the rollups.
 */
export function computeStats(events: readonly StoredEvent[], now: number, range?: StatsRange): Stats {
  const r = resolveRange(range, now);
  const times = events.map((e) => Date.parse(e.receivedAt));
  const inRange = (t: number) => r === null || (t >= r.from && t < r.to);
  const buckets = r === null ? SERIES_DAYS : r.buckets;
  const bucketOf = (t: number) => (r === null ? dayIndex(t, now) : Math.floor(t / r.bucketMs) - r.firstBucket);

  const eventsByType: Record<string, number> = {};
  const errorsByVersion: Record<string, number> = {};
  const sessionsNow = new Set<string>();
  const bucketSessions = Array.from({ length: buckets }, () => new Set<string>());
  const bucketEvents = new Array<number>(buckets).fill(0);
  const routes = new Map<string, { durations: number[]; points: LatencyPoint[]; sumMicros: number }>();
  const feedbackBreakdown = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
  let total = 0, feedbackSum = 0, feedbackTotal = 0, latencyMicros = 0, latencyCount = 0;
  // Breakdowns and vitals (with a range only): name → events and sessions per dimension; the
  // rounded values of each vital, over all pages and per page.
  const dims = DIMENSIONS.map(() => new Map<string, { events: number; sessions: Set<string> }>());
  const vitalValues = VITAL_NAMES.map(() => [] as number[]);
  const vitalPages = new Map<string, { events: number; metrics: number[][] }>();
  const props = new Map<string, { events: number; sessions: Set<string> }>();

  events.forEach((e, i) => {
    const received = times[i];
    if (!inRange(received)) return;
    total++;
    eventsByType[e.type] = (eventsByType[e.type] ?? 0) + 1;
    if (e.sessionId && now - received <= ACTIVE_WINDOW_MS && received <= now) sessionsNow.add(e.sessionId);
    const bucket = bucketOf(received);
    if (bucket >= 0) {
      bucketEvents[bucket]++;
      if (e.sessionId) bucketSessions[bucket].add(e.sessionId);
    }
    if (e.type === 'error') {
      const v = e.deployVersion ?? UNKNOWN;
      errorsByVersion[v] = (errorsByVersion[v] ?? 0) + 1;
    }
    const duration = pageloadDuration(e);
    if (duration !== null) {
      const key = routeKey(e);
      let route = routes.get(key);
      if (!route) routes.set(key, (route = { durations: [], points: [], sumMicros: 0 }));
      route.durations.push(duration);
      route.sumMicros += micros(duration);
      const ttfb = typeof e.data.ttfb === 'number' && Number.isFinite(e.data.ttfb) ? e.data.ttfb : null;
      route.points.push({ duration, ttfb, timestamp: e.timestamp });
      if (route.points.length > LATENCY_POINTS) route.points.shift();
      latencyMicros += micros(duration);
      latencyCount++;
    }
    const rating = feedbackRating(e);
    if (rating !== null) {
      feedbackBreakdown[String(rating) as '1']++;
      feedbackSum += rating;
      feedbackTotal++;
    }
    if (r === null) return;
    const names = dimensionNames(e);
    const count = (m: Map<string, { events: number; sessions: Set<string> }>, name: string) => {
      let row = m.get(name);
      if (!row) m.set(name, (row = { events: 0, sessions: new Set() }));
      row.events++;
      if (e.sessionId) row.sessions.add(e.sessionId);
    };
    names.forEach((name, d) => name !== null && count(dims[d], name));
    if (range?.property) for (const name of propertiesOf(e.type, names[CUSTOM_EVENTS], e.data) ?? []) count(props, name);
    const vital = vitalOf(e);
    if (vital) {
      vitalValues[vital.metric].push(vital.units);
      let page = vitalPages.get(vital.page);
      if (!page) vitalPages.set(vital.page, (page = { events: 0, metrics: VITAL_NAMES.map(() => []) }));
      page.events++;
      page.metrics[vital.metric].push(vital.units);
    }
  });

  const latencyByRoute: Record<string, LatencySummary> = {};
  for (const [key, route] of routes) {
    const sorted = Float64Array.from(route.durations).sort();
    latencyByRoute[key] = {
      count: sorted.length,
      p50: roundMs(percentile(sorted, 50)),
      p95: roundMs(percentile(sorted, 95)),
      avg: averageMs(route.sumMicros, sorted.length),
      points: route.points,
    };
  }

  const recentErrors: StoredEvent[] = [];
  const recentActivity: StoredEvent[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    if (recentActivity.length >= RECENT_ACTIVITY && recentErrors.length >= RECENT_ERRORS) break;
    const e = events[i];
    if (!inRange(times[i])) continue;
    if (recentActivity.length < RECENT_ACTIVITY) recentActivity.push(e);
    if (e.type === 'error' && recentErrors.length < RECENT_ERRORS) recentErrors.push(e);
  }

  const n = (t: string) => eventsByType[t] ?? 0;
  const labels = seriesLabels(r);
  const stats: Stats = {
    activeUsers: sessionsNow.size,
    totalEvents: total,
    totalErrors: n('error'),
    errorsByVersion,
    latencyByRoute,
    recentErrors,
    eventsByType,
    averageLatency: averageMs(latencyMicros, latencyCount),
    recentActivity,
    analytics: {
      breakdownCounts: breakdownCounts(n),
      feedbackBreakdown,
      feedbackTotal,
      feedbackAverage: feedbackTotal ? round2(feedbackSum / feedbackTotal) : 0,
      customActivityTotal: n('custom'),
      userSeries: { labels, values: bucketSessions.map((s) => s.size) },
      activitySeries: { labels: [...labels], values: bucketEvents },
    },
  };
  if (r === null) return stats;
  const rows = (d: number): BreakdownRow[] =>
    topRows([...dims[d]].map(([name, row]) => ({ name, events: row.events, sessions: row.sessions.size })));
  const pages: PageRow[] = rows(0).map((row) => {
    const route = latencyByRoute[row.name];
    const durations = routes.get(row.name)?.durations.map(roundMs).sort((a, b) => a - b);
    return { ...row, p75: route && durations ? percentile(durations, 75) : null };
  });
  stats.breakdowns = breakdownLists(rows, pages, DIMENSIONS.length);
  if (range?.goals?.length) {
    const all = stringUnionSize([...dims[BROWSERS].values()].map((row) => row.sessions));
    stats.goals = goalRows(range.goals, dims[PAGES], dims[CUSTOM_EVENTS], stringUnionSize, all);
  }
  const summary = (m: number, values: number[] | undefined): VitalSummary | undefined => {
    if (!values?.length) return undefined;
    values.sort((a, b) => a - b);
    const ratings = [0, 0, 0];
    for (const v of values) ratings[vitalRating(m, v)]++;
    return vitalSummary(m, values.length, percentile(values, 75), ratings);
  };
  stats.vitals = vitalsOf(vitalValues, vitalPages, summary);
  if (range?.property) Object.assign(stats, propertyAnswer(range.property, props, stringUnionSize));
  return stats;
}
