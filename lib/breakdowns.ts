// What the breakdowns and the web-vitals summary of GET /api/stats count (docs/api.md#breakdowns):
// which name an event has in each breakdown, and which vital value it carries. Pure definitions,
// shared by the reference (computeStats) and the rollups, so that both count the same names; how
// they count (a scan of raw events, or sums of hour rollups) is their own.
import type { StoredEvent } from './event.ts';
import { routeKey, UNKNOWN } from './event-keys.ts';

/**
 * The breakdowns, in the order rollups keep them. New ones are only ever appended: a rollup part
 * written before them holds the first LEGACY_DIMENSIONS and reads as such (docs/architecture.md).
 */
export const DIMENSIONS = [
  'pages', 'referrers', 'browsers', 'os', 'devices', 'versions',
  'environments', 'utmSources', 'utmMediums', 'utmCampaigns', 'countries', 'customEvents',
] as const;
export type Dimension = (typeof DIMENSIONS)[number];
export const PAGES = 0;
/** Counts every event: its names' sessions together are the range's sessions. */
export const BROWSERS = DIMENSIONS.indexOf('browsers');
export const CUSTOM_EVENTS = DIMENSIONS.indexOf('customEvents');
/** The dimensions rollups kept before environments, campaigns, countries and custom events. */
export const LEGACY_DIMENSIONS = 6;
/**
 * Rollups keep one more list after the breakdowns: custom event properties (lib/properties.ts),
 * several names per event rather than one. It is no breakdown list of the answer; a part kept
 * before it holds DIMENSIONS.length lists (or LEGACY_DIMENSIONS) and reads as without properties.
 */
export const PROPERTIES = DIMENSIONS.length;
/** The lists a rollup part keeps now: the breakdowns and the properties. */
export const PART_DIMENSIONS = PROPERTIES + 1;

/** Referrer name of a pageload that came with none (typed in, bookmarked, or from the same site). */
export const DIRECT = 'direct';

/** Rows per breakdown list (and pages of the vitals summary): the answer stays bounded. */
export const BREAKDOWN_LIMIT = 100;

export interface BreakdownRow { name: string; events: number; sessions: number }
/** A page also has the nearest-rank p75 of its pageload durations in whole ms; null without any. */
export interface PageRow extends BreakdownRow { p75: number | null }
/**
 * The lists of docs/api.md#breakdowns. Those after the first six are left out of an answer over
 * rollups kept before them (a store upgraded with events in it), rather than given partial.
 */
export interface Breakdowns {
  pages: PageRow[];
  referrers: BreakdownRow[];
  browsers: BreakdownRow[];
  os: BreakdownRow[];
  devices: BreakdownRow[];
  versions: BreakdownRow[];
  environments?: BreakdownRow[];
  utmSources?: BreakdownRow[];
  utmMediums?: BreakdownRow[];
  utmCampaigns?: BreakdownRow[];
  countries?: BreakdownRow[];
  customEvents?: BreakdownRow[];
}

/**
 * An event's name in each dimension (DIMENSIONS order), null where it does not count: pages and
 * referrers count pageloads only, and the UTM lists pageloads with that parameter; custom events
 * count events of type `custom` (`unknown` without a name); browsers, OS, devices, versions,
 * environments and countries count every event (`unknown` without one).
 */
export function dimensionNames(e: StoredEvent): (string | null)[] {
  const pageload = e.type === 'pageload';
  const referrer = e.referrer;
  const client = e.client;
  // Events stored before ingest read utm kept a client's field as sent: only strings count.
  const utm = pageload && typeof e.utm === 'object' && e.utm !== null ? (e.utm as Record<string, unknown>) : null;
  return [
    pageload ? routeKey(e) : null,
    pageload ? (typeof referrer === 'string' && referrer !== '' ? referrer : DIRECT) : null,
    nameOr(client?.browser),
    nameOr(client?.os),
    nameOr(client?.device),
    e.deployVersion ?? UNKNOWN,
    nameOr(e.environment),
    utm ? nameOrNull(utm.source) : null,
    utm ? nameOrNull(utm.medium) : null,
    utm ? nameOrNull(utm.campaign) : null,
    nameOr(client?.country),
    e.type === 'custom' ? nameOr(e.name) : null,
  ];
}

const nameOr = (v: unknown): string => (typeof v === 'string' && v !== '' ? v : UNKNOWN);
const nameOrNull = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The breakdowns of the first `known` dimensions from each dimension's rows (`rows(d)`). */
export function breakdownLists(rows: (d: number) => BreakdownRow[], pages: PageRow[], known: number): Breakdowns {
  const out: Breakdowns = { pages, referrers: rows(1), browsers: rows(2), os: rows(3), devices: rows(4), versions: rows(5) };
  for (let d = LEGACY_DIMENSIONS; d < Math.min(known, DIMENSIONS.length); d++) out[DIMENSIONS[d] as 'environments'] = rows(d);
  return out;
}

/** Sorted by events (descending), then name; at most BREAKDOWN_LIMIT rows. */
export function topRows<T extends { name: string; events: number }>(rows: T[]): T[] {
  return rows.sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).slice(0, BREAKDOWN_LIMIT);
}

// --- Web vitals -------------------------------------------------------------------------------

export const VITAL_NAMES = ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'] as const;
export type VitalName = (typeof VITAL_NAMES)[number];

/** "good" / "poor" boundaries of the Core Web Vitals (web.dev); between them: needs improvement. */
export const VITAL_THRESHOLDS: Record<VitalName, [number, number]> = {
  LCP: [2500, 4000],
  INP: [200, 500],
  CLS: [0.1, 0.25],
  FCP: [1800, 3000],
  TTFB: [800, 1800],
};

/** Units per metric value: vitals are counted in whole ms, CLS in thousandths. */
export const VITAL_SCALE: readonly number[] = VITAL_NAMES.map((n) => (n === 'CLS' ? 1000 : 1));

export interface VitalSummary { count: number; p75: number | null; good: number; needsImprovement: number; poor: number }
export interface VitalsPage { name: string; events: number; metrics: Partial<Record<VitalName, VitalSummary>> }
export interface Vitals { metrics: Record<VitalName, VitalSummary>; pages: VitalsPage[] }

/**
 * The vital a `performance` event reports: its metric (index into VITAL_NAMES), its value in
 * units (rounded: 1 ms, CLS 0.001) and its page (routeKey). Null for anything else.
 */
export function vitalOf(e: StoredEvent): { metric: number; units: number; page: string } | null {
  if (e.type !== 'performance') return null;
  const name = e.data.name, value = e.data.value;
  if (typeof name !== 'string' || typeof value !== 'number' || !Number.isFinite(value)) return null;
  const metric = (VITAL_NAMES as readonly string[]).indexOf(name.toUpperCase());
  if (metric < 0) return null;
  return { metric, units: Math.round(value * VITAL_SCALE[metric]) + 0, page: routeKey(e) };
}

/** 0 good, 1 needs improvement, 2 poor, for a value in units of the metric. */
export function vitalRating(metric: number, units: number): 0 | 1 | 2 {
  return units <= GOOD_UNITS[metric] ? 0 : units > POOR_UNITS[metric] ? 2 : 1;
}
const GOOD_UNITS = VITAL_NAMES.map((n, m) => Math.round(VITAL_THRESHOLDS[n][0] * VITAL_SCALE[m]));
const POOR_UNITS = VITAL_NAMES.map((n, m) => Math.round(VITAL_THRESHOLDS[n][1] * VITAL_SCALE[m]));

/**
 * The summary of one metric from its value counts. `p75`: the value at nearest rank of 75% in
 * the metric's unit (ms, or CLS), null when count is 0.
 */
export function vitalSummary(metric: number, count: number, p75Units: number | null, ratings: readonly number[]): VitalSummary {
  return {
    count,
    p75: p75Units === null ? null : p75Units / VITAL_SCALE[metric] + 0,
    good: ratings[0],
    needsImprovement: ratings[1],
    poor: ratings[2],
  };
}

/**
 * The vitals answer from what a counter gathered: `all[m]` for metric m over every page, and per
 * page its events and `metrics[m]`. `summary` turns one gathered value into a VitalSummary
 * (undefined when empty); the reference and the rollups gather differently and share the shape.
 * Every metric is listed, empty ones included; pages list only the metrics they have.
 */
export function vitalsOf<T>(
  all: readonly T[],
  pages: Map<string, { events: number; metrics: readonly (T | undefined)[] }>,
  summary: (metric: number, gathered: T | undefined) => VitalSummary | undefined,
): Vitals {
  const metrics = {} as Record<VitalName, VitalSummary>;
  VITAL_NAMES.forEach((name, m) => (metrics[name] = summary(m, all[m]) ?? { count: 0, p75: null, good: 0, needsImprovement: 0, poor: 0 }));
  const rows: VitalsPage[] = topRows([...pages].map(([name, page]) => {
    const ofPage: VitalsPage['metrics'] = {};
    VITAL_NAMES.forEach((metric, m) => {
      const s = summary(m, page.metrics[m]);
      if (s) ofPage[metric] = s;
    });
    return { name, events: page.events, metrics: ofPage };
  }));
  return { metrics, pages: rows };
}
