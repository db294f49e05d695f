// POST /api/developer/query (docs/api.md#developer-query): a structured query, never SQL from the
// client. The schema admits only known fields, fixed group and metric names, and filter values of
// safe shapes; the store's scan is parameterised, and grouping happens here.
import * as v from 'valibot';
import type { StoredEvent } from './event.ts';
import { HttpError } from './http.ts';
import { pageloadDuration, percentile } from './stats.ts';
import { routeKey, UNKNOWN } from './event-keys.ts';

export const GROUP_BY = ['type', 'version', 'route', 'sessionId', 'appName', 'severity', 'day', 'hour'] as const;
export const METRICS = ['count', 'sessions', 'avgDuration', 'p50Duration', 'p95Duration'] as const;
export const MAX_QUERY_LIMIT = 1000;
/** Most recent events one query scans; `truncated` in the answer says when it reached this. */
export const SCAN_LIMIT = 100_000;

const ISO = v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/), v.check((s) => Number.isFinite(Date.parse(s)), 'must be a date'));

const Filter = v.strictObject({
  type: v.optional(v.pipe(v.string(), v.regex(/^[\w.:-]{1,64}$/, 'letters, digits, _ . : - only'))),
  version: v.optional(v.pipe(v.string(), v.regex(/^[\w.+-]{1,64}$/, 'letters, digits, _ . + - only'))),
  route: v.optional(v.pipe(v.string(), v.maxLength(512), v.regex(/^\/[\w\-.~/%:@]*$/, 'a path starting with /'))),
  sessionId: v.optional(v.pipe(v.string(), v.regex(/^[\w-]{1,128}$/, 'letters, digits, _ - only'))),
  since: v.optional(ISO),
  until: v.optional(ISO),
});

export const DeveloperQuery = v.strictObject({
  filter: v.optional(Filter, {}),
  groupBy: v.optional(v.pipe(v.array(v.picklist(GROUP_BY)), v.maxLength(3)), []),
  metrics: v.optional(v.pipe(v.array(v.picklist(METRICS)), v.minLength(1), v.maxLength(METRICS.length)), ['count']),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_QUERY_LIMIT)), 100),
});
export type DeveloperQuery = v.InferOutput<typeof DeveloperQuery>;

export function parseDeveloperQuery(body: unknown): DeveloperQuery {
  const result = v.safeParse(DeveloperQuery, body);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = v.getDotPath(issue) ?? 'body';
  throw new HttpError(400, 'invalid_query', `Invalid query at "${path}": ${issue.message}`);
}

type Row = Record<string, string | number | null>;

const groupValue = (e: StoredEvent, key: (typeof GROUP_BY)[number]): string => {
  switch (key) {
    case 'type': return e.type;
    case 'version': return e.deployVersion ?? UNKNOWN;
    case 'route': return routeKey(e);
    case 'sessionId': return e.sessionId ?? UNKNOWN;
    case 'appName': return e.appName ?? UNKNOWN;
    case 'severity': return e.severity ?? UNKNOWN;
    case 'day': return e.receivedAt.slice(0, 10);
    case 'hour': return e.receivedAt.slice(0, 13) + ':00';
  }
};

/** Filters on route, session and receive time the store's scan did not apply, then groups. Pure. */
export function evaluateQuery(events: readonly StoredEvent[], q: DeveloperQuery): Row[] {
  const since = q.filter.since ? Date.parse(q.filter.since) : -Infinity;
  const until = q.filter.until ? Date.parse(q.filter.until) : Infinity;
  const groups = new Map<string, { keys: string[]; count: number; sessions: Set<string>; durations: number[] }>();
  for (const e of events) {
    if (q.filter.type !== undefined && e.type !== q.filter.type) continue;
    if (q.filter.version !== undefined && e.deployVersion !== q.filter.version) continue;
    if (q.filter.route !== undefined && routeKey(e) !== q.filter.route) continue;
    if (q.filter.sessionId !== undefined && e.sessionId !== q.filter.sessionId) continue;
    const t = Date.parse(e.receivedAt);
    if (t < since || t > until) continue;
    const keys = q.groupBy.map((k) => groupValue(e, k));
    const id = keys.join('\u0000');
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { keys, count: 0, sessions: new Set(), durations: [] }));
    g.count++;
    if (e.sessionId) g.sessions.add(e.sessionId);
    const d = pageloadDuration(e);
    if (d !== null) g.durations.push(d);
  }
  const rows: Row[] = [];
  for (const g of groups.values()) {
    const row: Row = {};
    q.groupBy.forEach((k, i) => (row[k] = g.keys[i]));
    const sorted = g.durations.sort((a, b) => a - b);
    for (const m of q.metrics) {
      if (m === 'count') row.count = g.count;
      else if (m === 'sessions') row.sessions = g.sessions.size;
      else if (m === 'avgDuration') row.avgDuration = sorted.length ? Math.round(sorted.reduce((a, b) => a + b, 0) / sorted.length) : null;
      else if (m === 'p50Duration') row.p50Duration = sorted.length ? percentile(sorted, 50) : null;
      else row.p95Duration = sorted.length ? percentile(sorted, 95) : null;
    }
    (row as { _n?: number })._n = g.count;
    rows.push(row);
  }
  rows.sort((a, b) => (b._n as number) - (a._n as number));
  return rows.slice(0, q.limit).map(({ _n, ...row }) => row);
}
