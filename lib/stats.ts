// Pure statistics of GET /api/stats (docs/api.md#stats). Every store must return exactly what
// computeStats returns for the same events (docs/architecture.md, invariant 9); the store contract
// suite checks that.
import type { StoredEvent } from './event.ts';

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
}

export const ACTIVE_WINDOW_MS = 5 * 60 * 1000;
export const RECENT_ERRORS = 50;
export const RECENT_ACTIVITY = 20;
export const LATENCY_POINTS = 100;
export const SERIES_DAYS = 7;
const DAY_MS = 86_400_000;
/** Key used when an error carries no deployVersion, or a pageload neither route nor URL. */
export const UNKNOWN = 'unknown';

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

/** Route key of a pageload: its route, else the path of its URL, else "unknown". */
export function routeKey(e: Pick<StoredEvent, 'route' | 'url' | 'page_url'>): string {
  if (e.route) return e.route;
  const url = e.url ?? e.page_url;
  if (!url) return UNKNOWN;
  try {
    return new URL(url, 'http://x').pathname;
  } catch {
    return UNKNOWN;
  }
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

export const seriesLabels = (): string[] => Array.from({ length: SERIES_DAYS }, (_, i) => String(i + 1));
export const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * Statistics over one user's events, given in insertion order (oldest first).
 * Time windows use receivedAt, the server's clock, never the client's.
 */
export function computeStats(events: readonly StoredEvent[], now: number): Stats {
  const eventsByType: Record<string, number> = {};
  const errorsByVersion: Record<string, number> = {};
  const sessionsNow = new Set<string>();
  const daySessions = Array.from({ length: SERIES_DAYS }, () => new Set<string>());
  const dayEvents = new Array<number>(SERIES_DAYS).fill(0);
  const routes = new Map<string, { durations: number[]; points: LatencyPoint[]; sum: number }>();
  const feedbackBreakdown = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
  let feedbackSum = 0, feedbackTotal = 0, latencySum = 0, latencyCount = 0;

  for (const e of events) {
    eventsByType[e.type] = (eventsByType[e.type] ?? 0) + 1;
    const received = Date.parse(e.receivedAt);
    if (e.sessionId && now - received <= ACTIVE_WINDOW_MS && received <= now) sessionsNow.add(e.sessionId);
    const day = dayIndex(received, now);
    if (day >= 0) {
      dayEvents[day]++;
      if (e.sessionId) daySessions[day].add(e.sessionId);
    }
    if (e.type === 'error') {
      const v = e.deployVersion ?? UNKNOWN;
      errorsByVersion[v] = (errorsByVersion[v] ?? 0) + 1;
    }
    const duration = pageloadDuration(e);
    if (duration !== null) {
      const key = routeKey(e);
      let r = routes.get(key);
      if (!r) routes.set(key, (r = { durations: [], points: [], sum: 0 }));
      r.durations.push(duration);
      r.sum += duration;
      const ttfb = typeof e.data.ttfb === 'number' && Number.isFinite(e.data.ttfb) ? e.data.ttfb : null;
      r.points.push({ duration, ttfb, timestamp: e.timestamp });
      if (r.points.length > LATENCY_POINTS) r.points.shift();
      latencySum += duration;
      latencyCount++;
    }
    const rating = feedbackRating(e);
    if (rating !== null) {
      feedbackBreakdown[String(rating) as '1']++;
      feedbackSum += rating;
      feedbackTotal++;
    }
  }

  const latencyByRoute: Record<string, LatencySummary> = {};
  for (const [key, r] of routes) {
    const sorted = Float64Array.from(r.durations).sort();
    latencyByRoute[key] = {
      count: sorted.length,
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      avg: Math.round(r.sum / sorted.length),
      points: r.points,
    };
  }

  const recentErrors: StoredEvent[] = [];
  const recentActivity: StoredEvent[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (recentActivity.length < RECENT_ACTIVITY) recentActivity.push(e);
    if (e.type === 'error' && recentErrors.length < RECENT_ERRORS) recentErrors.push(e);
    if (recentActivity.length >= RECENT_ACTIVITY && recentErrors.length >= RECENT_ERRORS) break;
  }

  const n = (t: string) => eventsByType[t] ?? 0;
  return {
    activeUsers: sessionsNow.size,
    totalEvents: events.length,
    totalErrors: n('error'),
    errorsByVersion,
    latencyByRoute,
    recentErrors,
    eventsByType,
    averageLatency: latencyCount ? Math.round(latencySum / latencyCount) : 0,
    recentActivity,
    analytics: {
      breakdownCounts: breakdownCounts(n),
      feedbackBreakdown,
      feedbackTotal,
      feedbackAverage: feedbackTotal ? round2(feedbackSum / feedbackTotal) : 0,
      customActivityTotal: n('custom'),
      userSeries: { labels: seriesLabels(), values: daySessions.map((s) => s.size) },
      activitySeries: { labels: seriesLabels(), values: dayEvents },
    },
  };
}
