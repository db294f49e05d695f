// Recent error counts and page-load durations in memory, for the error_spike and slow_route rules.
// Fed with stored events off the ingest path; each process counts what it received, so behind a
// load balancer (several instances on PostgreSQL) a store query should answer AlertMetrics instead.
import type { StoredEvent } from '../event.ts';
import { pageloadDuration } from '../stats.ts';
import { routeKey } from '../event-keys.ts';
import { environmentOf } from '../issues/tags.ts';
import { type ErrorCounts, SLOW_ROUTE_WINDOW_MS, SPIKE_BASELINE_MS, SPIKE_WINDOW_MS } from './evaluate.ts';

/**
 * What the engine asks about recent traffic; a store may answer it with queries instead. An
 * `environment` counts only events of that environment; null or absent, all of them.
 */
export interface AlertMetrics {
  /** Errors of the owner (one project, or all when null) received in the last 5 minutes and the hour before. */
  errorCounts(userId: string, project: string | null, now: number, environment?: string | null): ErrorCounts | Promise<ErrorCounts>;
  /** Page-load durations (ms) per route key received in the last 15 minutes. */
  routeDurations(userId: string, project: string | null, now: number, environment?: string | null): Record<string, number[]> | Promise<Record<string, number[]>>;
}

const MINUTE = 60_000;
const KEEP_MINUTES = (SPIKE_WINDOW_MS + SPIKE_BASELINE_MS) / MINUTE + 1;
/** Bounds: owners tracked (least recently active forgotten first), routes per owner, durations per route. */
export const RECENT_OWNERS = 10_000;
export const RECENT_ROUTES = 500;
export const RECENT_SAMPLES = 2_000;

interface OwnerWindow {
  /** `project\0environment` → minute → errors. */
  errors: Map<string, Map<number, number>>;
  /** `project\0environment\0route` → [receive time, duration], oldest first. */
  loads: Map<string, [number, number][]>;
}

/**
 * Counts at minute granularity: "the last 5 minutes" is the current minute and the four before it,
 * "the previous hour" the sixty minutes before those.
 */
export class RecentMetrics implements AlertMetrics {
  private owners = new Map<string, OwnerWindow>();

  /** Takes one stored event into account (errors and page loads; other events are ignored). */
  record(e: StoredEvent): void {
    if (e.user_id === null || (e.type !== 'error' && e.type !== 'pageload')) return;
    const duration = e.type === 'pageload' ? pageloadDuration(e) : null;
    if (e.type === 'pageload' && duration === null) return;
    const at = Date.parse(e.receivedAt);
    let w = this.owners.get(e.user_id);
    if (w) this.owners.delete(e.user_id); // re-inserted last: the map's order is recency
    else w = { errors: new Map(), loads: new Map() };
    this.owners.set(e.user_id, w);
    if (this.owners.size > RECENT_OWNERS) this.owners.delete(this.owners.keys().next().value!);

    // '' is no environment: environments are 1–64 characters (tags.ts).
    const project = `${e.projectId ?? ''}\u0000${environmentOf(e) ?? ''}`;
    if (e.type === 'error') {
      let minutes = w.errors.get(project);
      if (!minutes) w.errors.set(project, (minutes = new Map()));
      const minute = Math.floor(at / MINUTE);
      minutes.set(minute, (minutes.get(minute) ?? 0) + 1);
      for (const m of minutes.keys()) if (m <= minute - KEEP_MINUTES) minutes.delete(m);
      return;
    }
    const key = `${project}\u0000${routeKey(e)}`;
    let samples = w.loads.get(key);
    if (!samples) {
      if (w.loads.size >= RECENT_ROUTES) return;
      w.loads.set(key, (samples = []));
    }
    samples.push([at, duration!]);
    trim(samples, at);
  }

  errorCounts(userId: string, project: string | null, now: number, environment: string | null = null): ErrorCounts {
    const counts = { last5Minutes: 0, previousHour: 0 };
    const w = this.owners.get(userId);
    if (!w) return counts;
    const current = Math.floor(now / MINUTE);
    const recentFrom = current - SPIKE_WINDOW_MS / MINUTE + 1;
    const baselineFrom = recentFrom - SPIKE_BASELINE_MS / MINUTE;
    for (const [key, minutes] of w.errors) {
      const [p, env] = key.split('\u0000');
      if ((project !== null && p !== project) || (environment !== null && env !== environment)) continue;
      for (const [m, n] of minutes) {
        if (m >= recentFrom && m <= current) counts.last5Minutes += n;
        else if (m >= baselineFrom && m < recentFrom) counts.previousHour += n;
      }
    }
    return counts;
  }

  routeDurations(userId: string, project: string | null, now: number, environment: string | null = null): Record<string, number[]> {
    const out: Record<string, number[]> = {};
    const w = this.owners.get(userId);
    if (!w) return out;
    for (const [key, samples] of w.loads) {
      const [p, env] = key.split('\u0000', 2);
      if ((project !== null && p !== project) || (environment !== null && env !== environment)) continue;
      const route = key.slice(p.length + env.length + 2);
      trim(samples, now);
      if (samples.length === 0) {
        w.loads.delete(key);
        continue;
      }
      (out[route] ??= []).push(...samples.map(([, d]) => d));
    }
    return out;
  }
}

/**
 * Drops samples older than the window, and keeps at most RECENT_SAMPLES. Past the bound, a busy
 * route is cut back only once it holds a quarter more, so that each page load does not shift the
 * whole array (measured: ~30 µs per load at the bound) but every few hundred loads do once.
 */
function trim(samples: [number, number][], now: number): void {
  let drop = 0;
  while (drop < samples.length && samples[drop][0] <= now - SLOW_ROUTE_WINDOW_MS) drop++;
  if (samples.length - drop > RECENT_SAMPLES * 1.25) drop = samples.length - RECENT_SAMPLES;
  if (drop > 0) samples.splice(0, drop);
}
