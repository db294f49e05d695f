// Sentry `transaction` events → a pageload and its web vitals (docs/sentry.md#transactions), so
// that an app instrumented with a Sentry SDK's tracing fills the latency and vitals panels as our
// own SDK does. Only what those panels read is kept: the route (the transaction's name), the
// page's load time and time to first byte, and the vitals the SDK measured. Spans, breadcrumbs and
// the rest of the transaction are not stored.
import { isPlainObject, type RawEvent } from '../event.ts';
import { isoTimestamp, pageUrl, sentryEventId } from './fields.ts';

type Obj = Record<string, unknown>;

/** Sentry's measurement names → the vital names of `performance` events (lib/breakdowns.ts). */
const VITALS: [string, string][] = [['lcp', 'LCP'], ['inp', 'INP'], ['cls', 'CLS'], ['fcp', 'FCP'], ['ttfb', 'TTFB']];
/** Span ops of the navigation timing's load event: today's, and older SDKs' (`browser` + description). */
const LOAD_EVENT_OP = 'browser.load_event';
/** Spans looked at for the load event: a pageload transaction has a few dozen; more are ignored. */
const MAX_SPANS = 1000;

const obj = (v: unknown): Obj | undefined => (isPlainObject(v) ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v !== '' ? v.slice(0, max) : undefined);

/** Whether a Sentry event payload is a transaction (its `type`). */
export const isTransaction = (event: Obj): boolean => event.type === 'transaction';

/**
 * A transaction → raw events: for a page load (`contexts.trace.op` "pageload") a `pageload` with
 * `duration` (load event end since navigation start, when the SDK measured it) and `ttfb`, and for
 * a page load or a navigation one `performance` event per web vital measured. Other transactions
 * (and page loads whose route is unknown) yield nothing. Ids derive from the transaction's, so a
 * retried envelope dedupes.
 */
export function transactionToRaw(event: Obj, envelopeEventId?: unknown): RawEvent[] {
  const op = obj(obj(event.contexts)?.trace)?.op;
  if (op !== 'pageload' && op !== 'navigation') return [];
  const id = sentryEventId(event.event_id) ?? sentryEventId(envelopeEventId);
  const route = text(event.transaction, 2048);
  if (!id || !route) return [];
  const request = obj(event.request);
  const common = {
    timestamp: isoTimestamp(event.start_timestamp) ?? isoTimestamp(event.timestamp),
    deployVersion: text(event.release, 64),
    environment: text(event.environment, 64),
    url: pageUrl(request?.url, true),
    route,
  };
  const measurements = obj(event.measurements) ?? {};
  const measured = (name: string) => num(obj(measurements[name])?.value);
  const out: RawEvent[] = [];
  if (op === 'pageload') {
    const start = num(event.start_timestamp);
    const loaded = loadEventEnd(event.spans);
    const data: Obj = { sdk: 'sentry', navigationType: 'navigate' };
    if (start !== undefined && loaded !== undefined && loaded >= start) data.duration = Math.round((loaded - start) * 1000);
    const ttfb = measured('ttfb');
    if (ttfb !== undefined && ttfb >= 0) data.ttfb = Math.round(ttfb);
    out.push(defined({ ...common, type: 'pageload', id: `${id}-pageload`, data }));
  }
  for (const [key, name] of VITALS) {
    const value = measured(key);
    if (value === undefined || value < 0) continue;
    out.push(defined({ ...common, type: 'performance', id: `${id}-${key}`, data: { name, value: name === 'CLS' ? Math.round(value * 10000) / 10000 : Math.round(value), sdk: 'sentry' } }));
  }
  return out;
}

/** The end (seconds since the epoch) of the load event's span, if the transaction has one. */
function loadEventEnd(spans: unknown): number | undefined {
  if (!Array.isArray(spans)) return undefined;
  for (let i = 0; i < spans.length && i < MAX_SPANS; i++) {
    const span = obj(spans[i]);
    if (!span) continue;
    if (span.op === LOAD_EVENT_OP || (span.op === 'browser' && span.description === 'loadEvent')) return num(span.timestamp);
  }
  return undefined;
}

function defined(raw: Obj): RawEvent {
  for (const k of Object.keys(raw)) if (raw[k] === undefined) delete raw[k];
  return raw as RawEvent;
}

/**
 * Spans as SDKs that stream them send them (an item of type `span`, `{ version: 2, items: [...] }`,
 * attributes as `{ value, type }`) → the same events a transaction gives: a `pageload` for a page
 * load's segment span (its load time from the `browser.load_event` span of the same segment, its
 * TTFB from its attribute), and one `performance` event per `browser.web_vital.<name>.value`
 * attribute on any span (LCP, CLS and INP arrive as spans of their own). At most MAX_SPANS spans.
 */
export function spansToRaw(body: Obj): RawEvent[] {
  const items = Array.isArray(body.items) ? body.items.slice(0, MAX_SPANS).map(obj).filter((s): s is Obj => s !== undefined) : [];
  const spans = items.map((s) => ({ span: s, attrs: attributes(s.attributes) }));
  const pageOf = new Map<string, string>();
  const loadEnd = new Map<string, number>();
  for (const { span, attrs } of spans) {
    const id = text(span.span_id, 64);
    const page = pagePath(attrs);
    if (id && span.is_segment === true && page) pageOf.set(id, page);
    const segment = text(attrs['sentry.segment.id'], 64);
    const end = num(span.end_timestamp);
    if (attrs['sentry.op'] === LOAD_EVENT_OP && segment && end !== undefined) loadEnd.set(segment, end);
  }
  const out: RawEvent[] = [];
  for (const { span, attrs } of spans) {
    const trace = text(span.trace_id, 64), id = text(span.span_id, 64);
    if (!trace || !id) continue;
    const segment = text(attrs['sentry.segment.id'], 64);
    const route = pagePath(attrs) ?? (segment ? pageOf.get(segment) : undefined) ?? pathName(attrs['sentry.segment.name']);
    const common = {
      timestamp: isoTimestamp(span.start_timestamp),
      deployVersion: text(attrs['sentry.release'], 64),
      environment: text(attrs['sentry.environment'], 64),
      url: pageUrl(attrs['url.full'], true),
      route,
    };
    if (span.is_segment === true && attrs['sentry.op'] === 'pageload' && route) {
      const origin = num(attrs['browser.performance.time_origin']) ?? num(span.start_timestamp);
      const loaded = loadEnd.get(id);
      const data: Obj = { sdk: 'sentry', navigationType: text(attrs['browser.navigation.type'], 32) ?? 'navigate' };
      if (origin !== undefined && loaded !== undefined && loaded >= origin) data.duration = Math.round((loaded - origin) * 1000);
      const ttfb = num(attrs['browser.web_vital.ttfb.value']);
      if (ttfb !== undefined && ttfb >= 0) data.ttfb = Math.round(ttfb);
      out.push(defined({ ...common, type: 'pageload', id: `${trace}-${id}-pageload`, data }));
    }
    for (const [key, name] of VITALS) {
      const value = num(attrs[`browser.web_vital.${key}.value`]);
      if (value === undefined || value < 0) continue;
      out.push(defined({ ...common, type: 'performance', id: `${trace}-${id}-${key}`, data: { name, value: name === 'CLS' ? Math.round(value * 10000) / 10000 : Math.round(value), sdk: 'sentry' } }));
    }
  }
  return out;
}

/** Span attributes `{ key: { value, type } }` → `{ key: value }` (own keys only). */
function attributes(value: unknown): Obj {
  const out: Obj = {};
  const attrs = obj(value);
  if (!attrs) return out;
  for (const key of Object.keys(attrs).slice(0, 200)) {
    const v = obj(attrs[key])?.value;
    if (v !== undefined && key !== '__proto__') out[key] = v;
  }
  return out;
}

/** The page a span is about: its `url.path`, else the path of its `url.full`. */
function pagePath(attrs: Obj): string | undefined {
  return text(attrs['url.path'], 2048) ?? pathName(attrs['url.full']);
}

function pathName(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > 4096) return undefined;
  if (value.startsWith('/')) return value.replace(/[?#].*/s, '').slice(0, 2048);
  try {
    return new URL(value).pathname.slice(0, 2048);
  } catch {
    return undefined;
  }
}
