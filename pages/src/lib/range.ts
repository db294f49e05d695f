// The dashboard's view state (time range, project, filters, selected route) and its query string, and the
// time spans it asks the API for. Pure functions: no DOM, so tests run them directly.

export type Preset = '24h' | '7d' | '30d' | '90d' | 'all';
export type RangeKey = Preset | 'custom';

export const PRESETS: { key: RangeKey; label: string; ms: number }[] = [
  { key: '24h', label: '24 hours', ms: 24 * 3_600_000 },
  { key: '7d', label: '7 days', ms: 7 * 86_400_000 },
  { key: '30d', label: '30 days', ms: 30 * 86_400_000 },
  { key: '90d', label: '90 days', ms: 90 * 86_400_000 },
  { key: 'all', label: 'All', ms: 0 },
  { key: 'custom', label: 'Custom', ms: 0 },
];

export const DEFAULT_RANGE: RangeKey = '7d';
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Everything a bookmark restores. A custom range is whole UTC days, `to` inclusive (YYYY-MM-DD). */
export interface ViewState {
  range: RangeKey;
  from: string;
  to: string;
  /** A project's id, or '' for every event of the user (GET /api/projects). */
  project: string;
  type: string;
  version: string;
  route: string;
  /** The custom event property whose values are shown ('' none), and of which event ('' all). */
  property: string;
  event: string;
}

/** A time span for the API: [from, to) in ms, or null for "everything stored". */
export interface Span { from: number; to: number; interval: 'hour' | 'day' }

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A YYYY-MM-DD that names a real day, as ms at its UTC midnight; NaN otherwise. */
export function parseDay(s: string): number {
  if (!DATE.test(s)) return NaN;
  const t = Date.parse(s + 'T00:00:00Z');
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === s ? t : NaN;
}

export const dayString = (t: number): string => new Date(t).toISOString().slice(0, 10);

/** The view a query string describes; anything unknown or malformed falls back to the default. */
export function readState(search: string): ViewState {
  const q = new URLSearchParams(search);
  const text = (name: string) => (q.get(name) ?? '').slice(0, 256);
  let range = (q.get('range') ?? DEFAULT_RANGE) as RangeKey;
  if (!PRESETS.some((p) => p.key === range)) range = DEFAULT_RANGE;
  let from = '', to = '';
  if (range === 'custom') {
    from = text('from');
    to = text('to');
    const f = parseDay(from), t = parseDay(to);
    if (!(f <= t)) {
      range = DEFAULT_RANGE;
      from = to = '';
    }
  }
  // Project ids are digits (docs/api.md#projects); anything else means every project.
  const project = /^\d{1,20}$/.test(q.get('project') ?? '') ? q.get('project')! : '';
  // A property key as the API takes them (docs/api.md#properties); anything else is no choice.
  const key = q.get('property') ?? '';
  const property = key.length <= 40 && !/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(key) ? key : '';
  const event = text('event').trim().slice(0, 100);
  return { range, from, to, project, type: text('type'), version: text('version'), route: text('route'), property, event };
}

/** The query string of a view (with its `?`, or '' for the default view): only what differs from the default. */
export function writeState(s: ViewState): string {
  const q = new URLSearchParams();
  if (s.range !== DEFAULT_RANGE) q.set('range', s.range);
  if (s.range === 'custom') {
    q.set('from', s.from);
    q.set('to', s.to);
  }
  for (const k of ['project', 'type', 'version', 'route', 'property', 'event'] as const) if (s[k]) q.set(k, s[k]);
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** Hourly buckets up to two days (at most 48 points), daily beyond. */
export const intervalFor = (ms: number): 'hour' | 'day' => (ms <= 2 * DAY ? 'hour' : 'day');

/** The span a view covers at `now`, or null for "all". Presets end with the current hour. */
export function spanOf(s: Pick<ViewState, 'range' | 'from' | 'to'>, now: number): Span | null {
  if (s.range === 'all') return null;
  if (s.range === 'custom') {
    const from = parseDay(s.from);
    const to = parseDay(s.to) + DAY;
    return { from, to, interval: intervalFor(to - from) };
  }
  // Whole hours, the current one included: stores answer whole hours from their rollups and read
  // raw events only for a partial hour at either edge, which at a million events is the difference
  // between milliseconds and seconds.
  const ms = PRESETS.find((p) => p.key === s.range)!.ms;
  const to = Math.ceil(now / HOUR) * HOUR;
  return { from: to - ms, to, interval: intervalFor(ms) };
}

/** The period of the same length just before `span`, which the headline numbers compare with. */
export const previousSpan = (span: Span): Span => ({ from: 2 * span.from - span.to, to: span.from, interval: span.interval });

/** Whether the view reaches the present, so new events belong to it and it follows them live. */
export const endsNow = (s: Pick<ViewState, 'range' | 'from' | 'to'>, now: number): boolean =>
  s.range !== 'custom' || parseDay(s.to) + DAY > now;

/** What the properties panel asks with the range's statistics. */
export type PropertyAsk = Pick<ViewState, 'property' | 'event'>;

/** Query parameters of GET /api/stats for a span (none for "all") and a project ('' for all of them). */
export function statsQuery(span: Span | null, project = '', ask?: PropertyAsk): string {
  const q = new URLSearchParams(span ? { from: new Date(span.from).toISOString(), to: new Date(span.to).toISOString(), interval: span.interval } : {});
  if (project) q.set('project', project);
  // Properties come with a range only: the keys seen, and the chosen key's values (of one event).
  if (span && ask) {
    q.set('propertyKeys', '1');
    if (ask.property) q.set('property', ask.property);
    if (ask.event) q.set('event', ask.event);
  }
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** Query parameters of GET /api/events and /api/events/export for a span, the project and the filters. */
export function eventsQuery(span: Span | null, f: { type: string; version: string; project?: string }, extra: Record<string, string> = {}): URLSearchParams {
  const q = new URLSearchParams(extra);
  if (f.project) q.set('project', f.project);
  if (span) {
    q.set('since', new Date(span.from).toISOString());
    q.set('until', new Date(span.to).toISOString());
  }
  if (f.type) q.set('type', f.type);
  if (f.version) q.set('version', f.version);
  return q;
}

/** A short human description of a view's range ("the last 7 days", "1–3 May 2026 (UTC)"). */
export function describeRange(s: Pick<ViewState, 'range' | 'from' | 'to'>): string {
  if (s.range === 'all') return 'all stored events';
  if (s.range === 'custom') return s.from === s.to ? `${s.from} (UTC)` : `${s.from} to ${s.to} (UTC)`;
  return `the last ${PRESETS.find((p) => p.key === s.range)!.label}`;
}

/** The change of a headline number against the previous period. */
export interface Delta {
  /** What to show: "+12%", "−3%", "no change", "no previous data", "new". */
  text: string;
  /** up, down or flat; null when there is nothing to compare with. */
  direction: 'up' | 'down' | 'flat' | null;
}

/**
 * Compares `current` with `previous`. `previous` is null when the previous period held no events
 * at all, so there is nothing to compare with; a count that was 0 and is no longer has no finite
 * percentage, so it says "new" instead of an infinite one.
 */
export function delta(current: number, previous: number | null): Delta {
  if (previous === null) return { text: 'no previous data', direction: null };
  if (previous === 0) return current === 0 ? { text: 'no change', direction: 'flat' } : { text: 'new', direction: 'up' };
  const pct = ((current - previous) / previous) * 100;
  const rounded = Math.abs(pct) < 10 ? Math.round(pct * 10) / 10 : Math.round(pct);
  if (rounded === 0) return { text: 'no change', direction: 'flat' };
  return { text: `${rounded > 0 ? '+' : '−'}${Math.abs(rounded)}%`, direction: rounded > 0 ? 'up' : 'down' };
}

/** The file name of an export of a span's events. */
export function exportName(span: Span | null, ext: string): string {
  const stamp = span ? `${dayString(span.from)}-to-${dayString(span.to)}` : 'all';
  return `watchtower-events-${stamp}.${ext}`;
}
