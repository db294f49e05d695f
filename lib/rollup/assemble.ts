// The one place a Stats answer is built from rollups, for every store: plan what to read, read it,
// assemble. A store calls planStats, rolls up raw events of the plan's rawSpans (the partial hours
// at a range's edges) with HourRollup.fromRows, takes Recents from its LiveWindow (or, when that
// answers null, from raw events), and calls assembleStats. The result equals computeStats over the
// same events; the property tests check that.
import {
  breakdownLists, BROWSERS, CUSTOM_EVENTS, DIMENSIONS, PAGES, PART_DIMENSIONS, PROPERTIES, topRows, vitalSummary, vitalsOf,
  type BreakdownRow, type PageRow, type VitalSummary,
} from '../breakdowns.ts';
import type { RangeCounts, Recents } from '../live-window.ts';
import {
  averageMs, breakdownCounts, dayIndex, DAY_MS, HOUR_MS, resolveRange, round2, roundMs, seriesLabels, SERIES_DAYS,
  type LatencySummary, type ResolvedRange, type Stats, type StatsRange,
} from '../stats.ts';
import { Totals, type SpanTotals, type VitalTotals } from './span-totals.ts';
import { SessionIds } from './session-ids.ts';
import { NameSessions, type DayView } from './cross-days.ts';
import { IdSet } from './id-set.ts';
import type { PartColumns, RollupPart } from './hour.ts';
import type { RollupSource } from './user.ts';
import { goalRows, type GoalDefinition } from '../goals/evaluate.ts';
import { propertyAnswer, propertyPrefix, type PropertyQuery } from '../properties.ts';

export { IdSet };

export interface StatsPlan {
  now: number;
  /** null: the answer without a range (all events, the 7-day series). */
  range: ResolvedRange | null;
  /** Hour numbers [from, to) whose whole parts count. */
  fullHours: [number, number];
  /** Receive-time spans [start, end) whose raw events the store rolls up into `edges`. */
  rawSpans: [number, number][];
  /** The goals the answer counts (StatsRange.goals), with a range only. */
  goals: readonly GoalDefinition[];
  /** The properties the answer counts (StatsRange.property), with a range only; else null. */
  property: PropertyQuery | null;
}

/**
 * What to read for a stats request. Whole hours in range come from rollups; the partial hours at
 * its edges from raw events. `newest` (the user's latest receive time, or any later time) lets the
 * last hour count whole when nothing at or after `to` exists yet, as with a range ending now:
 * then only a `from` that is not on an hour needs raw events. Throws RangeError for a bad range.
 */
export function planStats(now: number, range?: StatsRange, newest = Infinity): StatsPlan {
  const r = resolveRange(range, now);
  if (r === null) return { now, range: null, fullHours: [-Infinity, Infinity], rawSpans: [], goals: [], property: null };
  const goals = range?.goals ?? [];
  const property = range?.property ?? null;
  const first = Math.ceil(r.from / HOUR_MS);
  const end = r.to > newest ? Math.ceil(r.to / HOUR_MS) : Math.floor(r.to / HOUR_MS);
  if (first >= end) return { now, range: r, fullHours: [first, first], rawSpans: [[r.from, r.to]], goals, property };
  const rawSpans: [number, number][] = [];
  if (r.from < first * HOUR_MS) rawSpans.push([r.from, first * HOUR_MS]);
  if (end * HOUR_MS < r.to) rawSpans.push([end * HOUR_MS, r.to]);
  return { now, range: r, fullHours: [first, end], rawSpans, goals, property };
}

/**
 * What the plan's events hold of the kinds the recents list: its events, its errors and each
 * route's pageloads (the same rollups and edges assembleStats reads). A store that builds recents
 * from raw events newest first stops once it has them (RecentsBuilder).
 */
export function rangeCounts(plan: StatsPlan, rollups: RollupSource, edges: readonly RollupPart[]): RangeCounts {
  let events = 0, errors = 0;
  const pageloads = new Map<string, number>();
  const add = (part: RollupPart) => {
    const c = part.columns();
    events += part.total;
    const e = c.types.indexOf('error');
    if (e >= 0) errors += c.typeCounts[e];
    for (let i = 0; i < c.routes.length; i++) pageloads.set(c.routes[i], (pageloads.get(c.routes[i]) ?? 0) + c.routeCounts[i]);
  };
  rollups.forEachPart(plan.fullHours[0], plan.fullHours[1], add, true);
  edges.forEach(add);
  return { events, errors, pageloads };
}

export interface StatsInput {
  plan: StatsPlan;
  /** The user's rollups; only the plan's fullHours are read. */
  rollups: RollupSource;
  /** Rollups of exactly the user's events inside the plan's rawSpans (HourRollup.fromRows). */
  edges: readonly RollupPart[];
  /** From LiveWindow.recents, or from raw events (recentsOf) when the window answers null. */
  recents: Recents;
  /**
   * false: the rollups carry no breakdowns or vitals, so the answer leaves them out even with a
   * range (the PostgreSQL store's counters do not keep them yet; docs/api.md#breakdowns).
   */
  breakdowns?: boolean;
  /**
   * The dimensions every event in range was counted in, when the rollups cannot tell themselves
   * (PostgreSQL's counters of events stored before the newer dimensions); default all.
   */
  dimensions?: number;
}

export function assembleStats({ plan, rollups, edges, recents, breakdowns = true, dimensions = PART_DIMENSIONS }: StatsInput): Stats {
  const { now, range: r } = plan;
  const withBreakdowns = r !== null && breakdowns;
  const [h0, h1] = plan.fullHours;
  const buckets = r ? r.buckets : SERIES_DAYS;
  const bucketEvents = new Array<number>(buckets).fill(0);
  // Hours never straddle a bucket: buckets are whole UTC hours or days.
  const bucketOf = r
    ? (hour: number) => Math.floor((hour * HOUR_MS) / r.bucketMs) - r.firstBucket
    : (hour: number) => dayIndex(hour * HOUR_MS, now);
  let total = 0;
  // Breakdowns and vitals, with a range only: per dimension, name → events and distinct sessions.
  // Sessions are counted as small integers: each session id is looked up once per hour part
  // (SessionIds), and each name's sessions are a bitset of those (IdSet) rather than a set of
  // strings: a 30-day range adds ~500k (name, session) pairs at 1M events. A merged day read
  // through its view (cross-days.ts) looks up only its sessions that may cross into other parts,
  // and adds its others to each name as a count.
  const dims = Array.from({ length: PART_DIMENSIONS }, () => new Map<string, { events: number; sessions: NameSessions }>());
  // The properties list is read only when asked, and then only the names of the key asked.
  const property = withBreakdowns ? plan.property : null;
  const readDims = property ? PART_DIMENSIONS : DIMENSIONS.length;
  const prefix = property ? propertyPrefix(property) : '';
  // Names whose sessions are united with other names' (goals, properties): they keep the days
  // that counted them (NameSessions.addLocal).
  const unites = new Uint8Array(PART_DIMENSIONS);
  if (plan.goals.length) unites[PAGES] = unites[CUSTOM_EVENTS] = 1;
  if (property) unites[PROPERTIES] = 1;
  // Buckets of a day or more (and the 7-day series without a range) read nothing finer than a day.
  const parts: RollupPart[] = [];
  rollups.forEachPart(h0, h1, (p) => void parts.push(p), r === null || r.bucketMs >= DAY_MS);
  parts.push(...edges);
  const views = withBreakdowns ? crossViews(rollups, parts) : [];
  let sessionCount = 0;
  if (withBreakdowns) parts.forEach((p, k) => (sessionCount += views[k]?.crossed.length ?? p.sessionCount));
  const sessionIds = new SessionIds(sessionCount);
  // Types, versions, feedback, routes and vitals: the merged days' sums come from the span cache.
  const sums = new Totals(withBreakdowns);
  const span = spanOf(rollups, parts);
  const inSpan = new Set(span?.days);

  // How many dimensions every part read holds: a part kept before the newer ones lacks them, and
  // their lists are then left out (breakdownLists) rather than counted from some parts only.
  let known: number = dimensions;
  const addBreakdowns = (part: RollupPart, c: PartColumns, view: DayView | undefined) => {
    // A day's view: ids of its crossing sessions only, each name's place in them (crossRefs).
    const sessions = !c.dimSessions.length ? null : view ? sessionIds.at(part, view.crossed) : sessionIds.of(part);
    const ends = view ? view.crossEnds : c.dimSessionEnds, refs = view ? view.crossRefs : c.dimSessions;
    known = Math.min(known, c.dimEnds.length);
    for (let d = 0, i = 0; d < Math.min(c.dimEnds.length, readDims); d++) {
      const names = dims[d];
      let end = c.dimEnds[d];
      if (d === PROPERTIES && prefix !== '') [i, end] = prefixSpan(c.dimNames, prefix, i, end);
      for (; i < end; i++) {
        let row = names.get(c.dimNames[i]);
        if (!row) names.set(c.dimNames[i], (row = { events: 0, sessions: new NameSessions() }));
        row.events += c.dimCounts[i];
        if (view) row.sessions.addLocal(view, i, unites[d] === 1);
        const ids = row.sessions.ids;
        for (let j = i ? ends[i - 1] : 0; j < ends[i]; j++) ids.add(sessions![refs[j]]);
      }
    }
  };

  const add = (part: RollupPart, k: number) => {
    const c = part.columns();
    if (withBreakdowns) addBreakdowns(part, c, views[k]);
    total += part.total;
    const b = bucketOf(part.hour);
    if (b >= 0 && b < buckets) bucketEvents[b] += part.total;
    if (!inSpan.has(part)) sums.add(c);
  };
  parts.forEach(add);
  if (span) sums.add(span);
  const { byType, byVersion, feedback, routes, vitals, vitalPages } = sums;

  const latencyByRoute: Record<string, LatencySummary> = {};
  const routeP75 = new Map<string, number>();
  let latencyMicros = 0, latencyCount = 0;
  for (const [key, route] of routes) {
    const [p50, p75, p95] = route.durations.nearestRanks(route.count, [50, 75, 95]);
    routeP75.set(key, roundMs(p75));
    latencyByRoute[key] = {
      count: route.count,
      p50: roundMs(p50),
      p95: roundMs(p95),
      avg: averageMs(route.sumMicros, route.count),
      points: recents.points.get(key) ?? [],
    };
    latencyMicros += route.sumMicros;
    latencyCount += route.count;
  }

  const n = (t: string) => byType.get(t) ?? 0;
  const feedbackTotal = feedback[0] + feedback[1] + feedback[2] + feedback[3] + feedback[4];
  const feedbackSum = feedback[0] + 2 * feedback[1] + 3 * feedback[2] + 4 * feedback[3] + 5 * feedback[4];
  const labels = seriesLabels(r);
  const stats: Stats = {
    activeUsers: recents.activeUsers,
    totalEvents: total,
    totalErrors: n('error'),
    errorsByVersion: Object.fromEntries(byVersion),
    latencyByRoute,
    recentErrors: recents.errors,
    eventsByType: Object.fromEntries(byType),
    averageLatency: averageMs(latencyMicros, latencyCount),
    recentActivity: recents.activity,
    analytics: {
      breakdownCounts: breakdownCounts(n),
      feedbackBreakdown: { '1': feedback[0], '2': feedback[1], '3': feedback[2], '4': feedback[3], '5': feedback[4] },
      feedbackTotal,
      feedbackAverage: feedbackTotal ? round2(feedbackSum / feedbackTotal) : 0,
      customActivityTotal: n('custom'),
      userSeries: { labels, values: sessionSeries(plan, rollups, edges) },
      activitySeries: { labels: [...labels], values: bucketEvents },
    },
  };
  if (!withBreakdowns) return stats;
  const rows = (d: number): BreakdownRow[] =>
    topRows([...dims[d]].map(([name, row]) => ({ name, events: row.events, sessions: row.sessions.size })));
  const pages: PageRow[] = rows(0).map((row) => ({ ...row, p75: routeP75.get(row.name) ?? null }));
  stats.breakdowns = breakdownLists(rows, pages, known);
  // Event goals need the custom events' names: over rollups kept before them, no goals at all.
  if (plan.goals.length && known > CUSTOM_EVENTS) {
    // The range's sessions: those with ids, and per day read through a view the others (localAny).
    let rangeSessions = IdSet.unionSize([...dims[BROWSERS].values()].map((row) => row.sessions.ids));
    for (const view of new Set(views)) if (view) rangeSessions += view.localAny[BROWSERS];
    stats.goals = goalRows(plan.goals, dims[PAGES], dims[CUSTOM_EVENTS], NameSessions.unionSize, rangeSessions);
  }
  const summary = (m: number, t: VitalTotals | undefined): VitalSummary | undefined =>
    t && t.count ? vitalSummary(m, t.count, t.values.nearestRanks(t.count, [75])[0], t.ratings) : undefined;
  stats.vitals = vitalsOf(vitals, vitalPages, summary);
  // Properties only where every part read counts them: otherwise left out, not given partial.
  if (property && known > PROPERTIES) Object.assign(stats, propertyAnswer(property, dims[PROPERTIES], NameSessions.unionSize));
  return stats;
}

/**
 * The sums of the merged days among `parts` (those the source's CrossDays holds), from the source's
 * span cache; null without one, or for too few days.
 */
function spanOf(rollups: RollupSource, parts: readonly RollupPart[]): SpanTotals | null {
  const cross = rollups.crossDays, spans = rollups.spans;
  if (!cross || !spans) return null;
  const days = parts.filter((p) => cross.heldOf(p) !== null).sort((a, b) => a.hour - b.hour);
  return spans.of(days);
}

/**
 * Views of the parts that are merged days the source's CrossDays holds (undefined for the others),
 * once every other part's sessions are marked in the days holding them: a session of a merged day
 * that any other part read holds then needs an id, and the day's others are counted.
 */
function crossViews(rollups: RollupSource, parts: readonly RollupPart[]): (DayView | undefined)[] {
  const cross = rollups.crossDays;
  if (!cross) return [];
  const held = parts.map((p) => cross.heldOf(p));
  if (!held.some((h) => h !== null)) return [];
  const wholeDays = new Set<number>();
  for (const h of held) if (h) wholeDays.add(h.day);
  parts.forEach((p, k) => held[k] === null && cross.markLoose(p, wholeDays.has(Math.floor(p.hour / 24))));
  return held.map((h) => (h ? cross.view(h) : undefined));
}

/** The span of [from, to) of the ascending `names` that start with `prefix`: found by binary search. */
function prefixSpan(names: readonly string[], prefix: string, from: number, to: number): [number, number] {
  let lo = from, hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (names[mid] < prefix) lo = mid + 1;
    else hi = mid;
  }
  let end = lo;
  while (end < to && names[end].startsWith(prefix)) end++;
  return [lo, end];
}

/**
 * Whether a series bucket of a UTC day [startHour, endHour) that the range's end cuts holds exactly
 * the day's sessions: it starts within the range's whole hours, and the day has no event after
 * them, since they reach past `to` (planStats takes the last hour whole only when nothing was
 * received at or after `to`). Then its distinct sessions are the day's count, not a union of its
 * hours' sessions: today's, thousands after a burst, on every read of a range ending now.
 */
export function dayBucketWhole({ range: r, fullHours: [h0, h1] }: StatsPlan, startHour: number, endHour: number): boolean {
  return r !== null && endHour - startHour === 24 && startHour >= h0 && endHour > h1 && h1 * HOUR_MS > r.to;
}

/** Distinct sessions per bucket: cached day counts where a bucket is a whole day of rollups. */
function sessionSeries(plan: StatsPlan, rollups: RollupSource, edges: readonly RollupPart[]): number[] {
  const { now, range: r, fullHours: [h0, h1] } = plan;
  if (r === null) {
    const today = Math.floor(now / DAY_MS);
    return Array.from({ length: SERIES_DAYS }, (_, i) => rollups.daySessions(today - SERIES_DAYS + 1 + i));
  }
  const perHour = r.bucketMs / HOUR_MS;
  return Array.from({ length: r.buckets }, (_, i) => {
    const start = (r.firstBucket + i) * perHour;
    const end = start + perHour;
    if (start >= h0 && end <= h1) return perHour === 1 ? rollups.hourSessions(start) : rollups.daySessions(start / 24);
    if (dayBucketWhole(plan, start, end)) return rollups.daySessions(start / 24);
    // A bucket cut by the range's edges: the union of its whole hours and its edge rollups.
    const union = new Set<string>();
    const add = (s: string) => union.add(s);
    rollups.forEachSession(Math.max(start, h0), Math.min(end, h1), add);
    for (const part of edges) if (part.hour >= start && part.hour < end) part.forEachSession(add);
    return union.size;
  });
}
