// GET /api/developer/insights (docs/api.md#developer-insights): what a developer looks at first. Pure.
import type { StoredEvent } from './event.ts';
import { VITAL_THRESHOLDS as THRESHOLDS } from './breakdowns.ts';
import { percentile, type Stats } from './stats.ts';
import { UNKNOWN } from './event-keys.ts';

export interface ErrorGroup {
  fingerprint: string;
  message: string;
  topFrame: string | null;
  count: number;
  firstSeen: string;
  lastSeen: string;
  versions: string[];
  /** Id of the most recent event of the group. */
  latestEventId: string;
}
export interface VersionErrors {
  version: string;
  events: number;
  errors: number;
  /** errors / events, 4 decimals. */
  errorRate: number;
  previous: string | null;
  /** errorRate minus the previous version's, 4 decimals; null for the first version. */
  errorRateChange: number | null;
}
export interface VitalSummary { count: number; p75: number; good: number; needsImprovement: number; poor: number }
export interface Insights {
  /** How many of the user's most recent events the groups and versions cover. */
  window: number;
  errorGroups: ErrorGroup[];
  errorsByVersion: VersionErrors[];
  slowestRoutes: { route: string; count: number; p50: number; p95: number; avg: number }[];
  webVitals: Record<string, VitalSummary> | null;
}

/** "good" / "poor" boundaries of the Core Web Vitals, defined with the breakdowns' vitals. */
export const VITAL_THRESHOLDS: Record<string, [number, number]> = THRESHOLDS;

/** The first stack line that names a frame (V8 "at …" or Firefox/Safari "fn@file:line:col"). */
export function topFrame(stack: unknown): string | null {
  if (typeof stack !== 'string') return null;
  for (const raw of stack.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('at ')) return line.slice(3);
    // "@", then at least one character, then ":" and a digit. (Not /@.+:\d+/: on a line of "@"s
    // every "@" scans to the end, quadratic in the line's length.)
    const at = line.indexOf('@');
    if (at >= 0 && /:\d/.test(line.slice(at + 2))) return line;
  }
  return null;
}

/** Variable parts (numbers, hex ids, quoted values) would split one bug into many groups. */
export function normaliseMessage(message: string): string {
  return message
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\b0x[0-9a-f]+\b/gi, '<hex>')
    .replace(/\d+/g, '<n>')
    .slice(0, 300);
}

/** FNV-1a 32-bit, hex: stable across runtimes and processes. */
export function fingerprint(message: string, frame: string | null): string {
  let h = 0x811c9dc5;
  const text = `${normaliseMessage(message)}\n${frame ?? ''}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

const round4 = (n: number) => Math.round(n * 10_000) / 10_000;

/**
 * @param recent the user's most recent events, most recent first (a bounded window)
 * @param stats the user's full statistics (for exact route latencies)
 */
export function computeInsights(recent: readonly StoredEvent[], stats: Stats, maxGroups = 50): Insights {
  const groups = new Map<string, ErrorGroup & { versionSet: Set<string> }>();
  const versions = new Map<string, { events: number; errors: number; first: number }>();
  const vitals = new Map<string, number[]>();
  const ratings = new Map<string, { good: number; needsImprovement: number; poor: number }>();

  // Oldest first, so "first seen" and version order come out naturally.
  for (let i = recent.length - 1; i >= 0; i--) {
    const e = recent[i];
    const version = e.deployVersion ?? UNKNOWN;
    let v = versions.get(version);
    if (!v) versions.set(version, (v = { events: 0, errors: 0, first: i }));
    v.events++;
    if (e.type === 'error') {
      v.errors++;
      const message = e.message ?? (typeof e.data.message === 'string' ? e.data.message : '(no message)');
      const frame = topFrame(e.data.stack ?? e.stack);
      const fp = fingerprint(message, frame);
      let g = groups.get(fp);
      if (!g) {
        g = { fingerprint: fp, message, topFrame: frame, count: 0, firstSeen: e.timestamp, lastSeen: e.timestamp, versions: [], latestEventId: e.id, versionSet: new Set() };
        groups.set(fp, g);
      }
      g.count++;
      g.lastSeen = e.timestamp;
      g.latestEventId = e.id;
      g.versionSet.add(version);
    }
    if (e.type === 'performance') {
      const name = typeof e.data.name === 'string' ? e.data.name.toUpperCase() : null;
      const value = e.data.value;
      if (name && name in VITAL_THRESHOLDS && typeof value === 'number' && Number.isFinite(value)) {
        let list = vitals.get(name);
        if (!list) vitals.set(name, (list = []));
        list.push(value);
        let r = ratings.get(name);
        if (!r) ratings.set(name, (r = { good: 0, needsImprovement: 0, poor: 0 }));
        const [good, poor] = VITAL_THRESHOLDS[name];
        if (value <= good) r.good++;
        else if (value > poor) r.poor++;
        else r.needsImprovement++;
      }
    }
  }

  const errorGroups = [...groups.values()]
    .sort((a, b) => b.count - a.count || (a.lastSeen < b.lastSeen ? 1 : -1))
    .slice(0, maxGroups)
    .map(({ versionSet, ...g }) => ({ ...g, versions: [...versionSet] }));

  const ordered = [...versions.entries()].sort((a, b) => b[1].first - a[1].first);
  const errorsByVersion: VersionErrors[] = ordered.map(([version, v], i) => {
    const errorRate = round4(v.errors / v.events);
    const prev = i > 0 ? ordered[i - 1] : null;
    return {
      version,
      events: v.events,
      errors: v.errors,
      errorRate,
      previous: prev ? prev[0] : null,
      errorRateChange: prev ? round4(errorRate - prev[1].errors / prev[1].events) : null,
    };
  });

  const slowestRoutes = Object.entries(stats.latencyByRoute)
    .map(([route, s]) => ({ route, count: s.count, p50: s.p50, p95: s.p95, avg: s.avg }))
    .sort((a, b) => b.p95 - a.p95)
    .slice(0, 10);

  let webVitals: Record<string, VitalSummary> | null = null;
  for (const [name, values] of vitals) {
    values.sort((a, b) => a - b);
    webVitals ??= {};
    webVitals[name] = { count: values.length, p75: percentile(values, 75), ...ratings.get(name)! };
  }

  return { window: recent.length, errorGroups, errorsByVersion, slowestRoutes, webVitals };
}
