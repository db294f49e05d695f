// Sentry event payloads → Watchtower raw events, the shape POST /api/events takes (docs/sentry.md#mapping).
// The results still go through the service's validation and normalise(); this module only reshapes,
// clips text to the limits of docs/api.md#event-fields, and keeps each event under 64 KiB.
import { isPlainObject, type RawEvent } from '../event.ts';
import { MAX_EVENT_BYTES } from '../schema.ts';
import { isoTimestamp, pageUrl, sentryEventId } from './fields.ts';
import { MAX_DEPTH, shapeProblem } from '../shape.ts';
import { breadcrumbs } from './breadcrumbs.ts';

type Obj = Record<string, unknown>;

/** Frames kept per stack, innermost first: deep recursion would otherwise fill the event. */
export const MAX_FRAMES = 50;

/** One stack frame as kept in `data.frames`. */
export interface SentryFrame {
  function?: string;
  file?: string;
  line?: number;
  col?: number;
  inApp?: boolean;
  module?: string;
}

// Sentry's levels; the aliases are what Sentry's own ingestion renames.
const LEVELS = new Set(['fatal', 'error', 'warning', 'info', 'debug']);
const LEVEL_ALIASES: Record<string, string> = { critical: 'fatal', warn: 'warning', log: 'info' };

const obj = (v: unknown): Obj | undefined => (isPlainObject(v) ? v : undefined);
const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v !== '' ? v.slice(0, max) : undefined);
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The object without its undefined fields: stored events must read back deep-equal on every store. */
function compact<T extends Obj>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/**
 * A Sentry event (an `event` or `feedback` item, or a `/store/` body) → one raw event:
 * `feedback` when it is one (item type or payload `type`), otherwise `error`, messages included.
 * `envelopeEventId` is the envelope header's `event_id`, used when the payload has none.
 */
export function sentryEventToRaw(event: Obj, itemType = 'event', envelopeEventId?: unknown): RawEvent {
  const isFeedback = itemType === 'feedback' || event.type === 'feedback';
  const raw = isFeedback ? feedbackFields(event) : errorFields(event);
  const data = raw.data as Obj;
  const request = obj(event.request);
  const headers = obj(request?.headers);
  Object.assign(data, compact({
    tags: tags(event.tags),
    user: obj(event.user),
    contexts: contexts(event.contexts),
    extra: obj(event.extra),
    fingerprint: Array.isArray(event.fingerprint) ? event.fingerprint.filter((f) => typeof f === 'string').slice(0, 20) : undefined,
    sdk: sdk(event.sdk),
    platform: text(event.platform, 64),
    userAgent: text(headers?.['User-Agent'] ?? headers?.['user-agent'], 512),
    breadcrumbs: isFeedback ? undefined : breadcrumbs(event.breadcrumbs),
  }));
  Object.assign(raw, compact({
    id: sentryEventId(event.event_id) ?? sentryEventId(envelopeEventId) ?? newEventId(),
    timestamp: isoTimestamp(event.timestamp),
    deployVersion: text(event.release, 64),
    environment: text(event.environment, 64),
    url: (raw.url as string | undefined) ?? pageUrl(request?.url, true),
    route: text(event.transaction, 2048),
  }));
  return fit(compact(raw));
}

function errorFields(event: Obj): RawEvent {
  const exceptions = exceptionValues(event.exception);
  const main = exceptions.at(-1);
  const synthetic = obj(main?.mechanism)?.synthetic === true;
  const logMessage = messageText(event);
  const title = main && !synthetic ? exceptionTitle(main) : undefined;
  // Frames of the main exception, else of a stack attached to a message (attachStacktrace).
  const frames = stackFrames(obj(main?.stacktrace) ?? obj(event.stacktrace));
  const top = frames.find((f) => f.inApp !== false) ?? frames[0];
  const mechanism = obj(main?.mechanism);
  // The thrown error, then its causes (Sentry lists the root cause first).
  const chain = [{ head: title ?? logMessage ?? 'Error', frames }];
  for (const cause of exceptions.slice(0, -1).reverse()) {
    chain.push({ head: `Caused by: ${exceptionTitle(cause) ?? 'Error'}`, frames: stackFrames(obj(cause.stacktrace)) });
  }
  const stack = frames.length || chain.length > 1 ? stackText(chain) : undefined;
  const data: Obj = compact({
    name: synthetic ? undefined : text(main?.type, 256),
    source: text(top?.file, 2048),
    line: top?.line,
    col: top?.col,
    stack,
    frames: frames.length ? frames : undefined,
    mechanism: text(mechanism?.type, 128),
    handled: typeof mechanism?.handled === 'boolean' ? mechanism.handled : undefined,
    logMessage: title && logMessage && logMessage !== title ? logMessage : undefined,
  });
  return compact({ type: 'error', message: (title ?? logMessage)?.slice(0, 8192), severity: level(event.level, 'error'), data });
}

function feedbackFields(event: Obj): RawEvent {
  const feedback = obj(obj(event.contexts)?.feedback) ?? {};
  const message = text(feedback.message, 8192);
  const data: Obj = compact({
    comment: message,
    name: text(feedback.name, 256),
    email: text(feedback.contact_email, 320),
    associatedEventId: text(feedback.associated_event_id, 128),
    replayId: text(feedback.replay_id, 128),
    // Sentry's `source` (widget, api…) is not a location: under `source` it would be lifted into the
    // event's `source`, which holds a file for errors.
    feedbackSource: text(feedback.source, 128),
  });
  return compact({ type: 'feedback', message, severity: level(event.level, 'info'), url: pageUrl(feedback.url, true), data });
}

/**
 * A legacy `user_report` item (`{ event_id, name, email, comments }`) → a `feedback` event. Its
 * `event_id` names the error it comments on, so its own id is derived from it (a retry still
 * dedupes) without colliding with that error's id. Null without a usable event id.
 */
export function userReportToRaw(report: Obj, envelopeEventId?: unknown): RawEvent | null {
  const associated = sentryEventId(envelopeEventId) ?? sentryEventId(report.event_id);
  if (!associated) return null;
  const message = text(report.comments, 8192);
  return compact({
    type: 'feedback',
    id: `${associated}-user-report`,
    message,
    severity: 'info',
    data: compact({ comment: message, name: text(report.name, 256), email: text(report.email, 320), associatedEventId: associated }),
  });
}

/** Sentry levels as sent (`warn`, `log`, `critical` renamed as Sentry does); anything else is the fallback. */
function level(value: unknown, fallback: string): string {
  if (typeof value !== 'string') return fallback;
  const v = Object.hasOwn(LEVEL_ALIASES, value) ? LEVEL_ALIASES[value] : value;
  return LEVELS.has(v) ? v : fallback;
}

/** `exception` as `{ values: [...] }` or, in old SDKs, a bare array; causes first, the thrown error last. */
function exceptionValues(exception: unknown): Obj[] {
  const values = Array.isArray(exception) ? exception : obj(exception)?.values;
  return Array.isArray(values) ? values.filter(isPlainObject).slice(-10) : [];
}

function exceptionTitle(e: Obj): string | undefined {
  const type = text(e.type, 256);
  const value = text(e.value, 8192);
  return type && value ? `${type}: ${value}` : value ?? type;
}

/** `logentry` (formatted first) or `message`, which old SDKs send as a string or as a logentry. */
function messageText(event: Obj): string | undefined {
  for (const m of [event.logentry, event.message]) {
    if (typeof m === 'string' && m !== '') return m;
    const o = obj(m);
    const t = text(o?.formatted, 8192) ?? text(o?.message, 8192);
    if (t) return t;
  }
  return undefined;
}

/** Sentry lists frames oldest call first; browsers print the innermost first, and so do we. */
function stackFrames(stacktrace: Obj | undefined): SentryFrame[] {
  const frames = stacktrace?.frames;
  if (!Array.isArray(frames)) return [];
  const out: SentryFrame[] = [];
  for (let i = frames.length - 1; i >= 0 && out.length < MAX_FRAMES; i--) {
    const f = obj(frames[i]);
    if (!f) continue;
    const fn = text(f.function, 256);
    out.push(compact({
      function: fn === '?' ? undefined : fn,
      file: text(f.filename, 2048) ?? text(f.abs_path, 2048),
      line: int(f.lineno),
      col: int(f.colno),
      inApp: typeof f.in_app === 'boolean' ? f.in_app : undefined,
      module: text(f.module, 256),
    }));
  }
  return out;
}

/**
 * The stack as V8 prints it (`Type: value` then `    at fn (file:line:col)` lines, innermost
 * first), so the dashboard and error grouping (lib/insights.ts topFrame) read it like a browser's.
 */
function stackText(chain: { head: string; frames: SentryFrame[] }[]): string {
  return chain.map((c) => [c.head, ...c.frames.map(frameLine)].join('\n')).join('\n').slice(0, 16_000);
}

function frameLine(f: SentryFrame): string {
  let where = f.file ?? '<anonymous>';
  if (f.line !== undefined) where += `:${f.line}${f.col !== undefined ? `:${f.col}` : ''}`;
  return f.function ? `    at ${f.function} (${where})` : `    at ${where}`;
}

/** Tags as an object or as `[[key, value], ...]` pairs (both are Sentry's protocol). */
function tags(value: unknown): Obj | undefined {
  if (Array.isArray(value)) {
    const pairs = value.filter((p): p is [string, unknown] => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string');
    return pairs.length ? Object.fromEntries(pairs) : undefined;
  }
  return obj(value);
}

/** Contexts without `feedback` (mapped into the event itself) and `trace` (tracing is not kept). */
function contexts(value: unknown): Obj | undefined {
  const c = obj(value);
  if (!c) return undefined;
  const { feedback: _feedback, trace: _trace, ...rest } = c;
  return Object.keys(rest).length ? rest : undefined;
}

function sdk(value: unknown): Obj | undefined {
  const s = obj(value);
  return s && compact({ name: text(s.name, 128), version: text(s.version, 64) });
}

/** An id in Sentry's form, so the answer can name the event even when the SDK sent none. */
const newEventId = () => crypto.randomUUID().replace(/-/g, '');

/** The parts of `data` that carry a client's objects as sent; the rest is built here from text and numbers. */
const CLIENT_PARTS = ['extra', 'contexts', 'tags', 'user'];

/**
 * Keeps the event within the service's bounds. First its shape (lib/shape.ts): a client's part
 * (extra, contexts, tags, user) that nests too deep or has an object with too many keys is dropped,
 * so an error whose `extra` nests thousands of levels deep is kept without it rather than rejected;
 * this comes first because JSON.stringify, which measures the size, recurses. Then its 64 KiB
 * per-event limit (measured as lib/schema.ts measures it), by dropping, in order, what matters least
 * for finding the bug: extra data, contexts, all but the 10 innermost frames, tags, user. A bigger
 * event is left as it is and rejected by validation.
 */
function fit(raw: RawEvent): RawEvent {
  const data = raw.data as Obj;
  // In the event, data.extra and its siblings are level 3: they may nest MAX_DEPTH - 2 levels themselves.
  for (const part of CLIENT_PARTS) if (data[part] !== undefined && shapeProblem(data[part], MAX_DEPTH - 2) !== null) delete data[part];
  const steps = [
    () => delete data.extra,
    () => delete data.breadcrumbs,
    () => delete data.contexts,
    () => {
      if (Array.isArray(data.frames)) data.frames = data.frames.slice(0, 10);
      if (typeof data.stack === 'string') data.stack = data.stack.split('\n').slice(0, 11).join('\n');
    },
    () => delete data.tags,
    () => delete data.user,
  ];
  for (const step of steps) {
    if (JSON.stringify(raw).length <= MAX_EVENT_BYTES) break;
    step();
  }
  return raw;
}
