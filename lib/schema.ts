// Envelope validation (docs/api.md#event-fields) and request schemas, with valibot.
import * as v from 'valibot';
import { HttpError } from './http.ts';
import { isPlainObject, type RawEvent } from './event.ts';
import { shapeProblem } from './shape.ts';
import { rangeProblem, type StatsRange } from './stats.ts';

export const MAX_BATCH = 500;
export const MAX_EVENT_BYTES = 64 * 1024;

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/** The named text fields of an event and their longest accepted length (UTF-16 units). */
const TEXT_FIELDS: Readonly<Record<string, number>> = {
  id: 128, sessionId: 128, session_id: 128, deployVersion: 64, appVersion: 64, app_version: 64, userId: 256,
  appName: 128, url: 2048, pageUrl: 2048, page_url: 2048, route: 2048, source: 2048, message: 8192, severity: 32,
};
const TEXT_ENTRIES = Object.entries(TEXT_FIELDS);
const MAX_TYPE = 64;
const MAX_TIMESTAMP = 40;

/** Whether `s` is a timestamp the service accepts: ISO 8601 with a four-digit year, a real date. */
export const isTimestamp = (s: string) => s.length <= MAX_TIMESTAMP && ISO_8601.test(s) && Number.isFinite(Date.parse(s));

/**
 * The ingest envelope, as a valibot schema: the readable statement of the rules. Unknown fields
 * are kept (custom fields travel in metadata); `type` is trimmed.
 */
export const EventEnvelope = v.looseObject({
  type: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(MAX_TYPE)),
  timestamp: v.nullish(v.pipe(v.string(), v.check(isTimestamp))),
  ...(Object.fromEntries(TEXT_ENTRIES.map(([key, max]) => [key, v.nullish(v.pipe(v.string(), v.maxLength(max)))])) as Record<
    string,
    v.NullishSchema<v.SchemaWithPipe<readonly [v.StringSchema<undefined>, v.MaxLengthAction<string, number, undefined>]>, undefined>
  >),
  data: v.nullish(v.custom<Record<string, unknown>>(isPlainObject, 'data must be an object')),
});

/**
 * The same rules as EventEnvelope, checked by hand on the hot path: valibot's looseObject took
 * ~3.6 µs an event here (more than JSON.parse of it), this takes a tenth of that. A property test
 * holds the two to the same answer for any input.
 */
export function isEnvelope(item: unknown): item is RawEvent {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const o = item as Record<string, unknown>;
  const type = o.type;
  if (typeof type !== 'string') return false;
  const trimmed = type.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_TYPE) return false;
  for (let i = 0; i < TEXT_ENTRIES.length; i++) {
    const value = o[TEXT_ENTRIES[i][0]];
    if (value != null && (typeof value !== 'string' || value.length > TEXT_ENTRIES[i][1])) return false;
  }
  const ts = o.timestamp;
  if (ts != null && (typeof ts !== 'string' || !isTimestamp(ts))) return false;
  return o.data == null || isPlainObject(o.data);
}

/**
 * The valid events of a batch and the count of those dropped. `bodyBytes` lets small bodies skip
 * the per-event size check: no event can be larger than the body it came in. An event nested
 * deeper than MAX_DEPTH or with an object of more than MAX_KEYS keys (lib/shape.ts) is dropped
 * before anything else walks it: JSON.stringify, which measures the size, recurses.
 */
export function validateEvents(items: unknown[], bodyBytes: number): { valid: RawEvent[]; rejected: number } {
  const valid: RawEvent[] = [];
  for (const item of items) {
    if (!isEnvelope(item)) continue;
    if (shapeProblem(item) !== null) continue;
    if (bodyBytes > MAX_EVENT_BYTES && JSON.stringify(item).length > MAX_EVENT_BYTES) continue;
    const type = item.type.trim();
    valid.push(type === item.type ? item : { ...item, type });
  }
  return { valid, rejected: items.length - valid.length };
}

/** The client's clock when it sent a batch (`{ sentAt, events }`), in ms, or null. */
export function batchSentAt(body: unknown): number | null {
  const sentAt = (body as { sentAt?: unknown }).sentAt;
  if (typeof sentAt !== 'string' || sentAt.length > 40 || !ISO_8601.test(sentAt)) return null;
  const t = Date.parse(sentAt);
  return Number.isFinite(t) ? t : null;
}

/** An ingest body is one event or `{ events: [...] }` (docs/api.md#ingest). */
export function batchItems(body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'invalid_body', 'Body must be an event object or { "events": [...] }');
  }
  const events = (body as { events?: unknown }).events;
  if (events === undefined) return [body];
  if (!Array.isArray(events)) throw new HttpError(400, 'invalid_body', '"events" must be an array');
  if (events.length > MAX_BATCH) {
    throw new HttpError(413, 'batch_too_large', `At most ${MAX_BATCH} events per request (got ${events.length})`);
  }
  return events;
}

export const MAX_LIST_LIMIT = 1000;
export const DEFAULT_LIST_LIMIT = 100;

const EventsQuery = v.object({
  type: v.optional(v.pipe(v.string(), v.maxLength(64))),
  version: v.optional(v.pipe(v.string(), v.maxLength(64))),
  environment: v.optional(v.pipe(v.string(), v.maxLength(64))),
  limit: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,7}$/), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(MAX_LIST_LIMIT)),
    String(DEFAULT_LIST_LIMIT),
  ),
});

/** The non-empty query parameters among `names`. */
function present(params: URLSearchParams, names: readonly string[]): Record<string, string> {
  const input: Record<string, string> = {};
  for (const name of names) {
    const value = params.get(name);
    if (value !== null && value !== '') input[name] = value;
  }
  return input;
}

/** GET /api/events query parameters (docs/api.md#list); a bad value is a 400 that names it. */
export function parseEventsQuery(params: URLSearchParams): {
  type?: string; version?: string; environment?: string; limit: number; since?: number; until?: number; before?: string;
} {
  const result = v.safeParse(EventsQuery, present(params, ['type', 'version', 'environment', 'limit']));
  if (!result.success) {
    const name = v.getDotPath(result.issues[0]) ?? 'query';
    const hint = name === 'limit' ? `an integer from 1 to ${MAX_LIST_LIMIT}` : 'a string of at most 64 characters';
    throw new HttpError(400, 'invalid_query', `Query parameter "${name}" must be ${hint}`);
  }
  const before = params.get('before');
  // The cursor is opaque and the store decodes it; this only keeps absurd text away from it.
  if (before !== null && before !== '' && !/^[\w-]{1,64}$/.test(before)) {
    throw new HttpError(400, 'invalid_cursor', 'Query parameter "before" must be a nextCursor as it was given');
  }
  return { ...result.output, ...timeWindow(params), ...(before ? { before } : {}) };
}

/** GET /api/events/export query parameters (docs/api.md#export). */
export function parseExportQuery(params: URLSearchParams): { type?: string; version?: string; since?: number; until?: number } {
  const result = v.safeParse(ExportQuery, present(params, ['type', 'version']));
  if (!result.success) {
    const name = v.getDotPath(result.issues[0]) ?? 'query';
    throw new HttpError(400, 'invalid_query', `Query parameter "${name}" must be a string of at most 64 characters`);
  }
  return { ...result.output, ...timeWindow(params) };
}
const ExportQuery = v.object({
  type: v.optional(v.pipe(v.string(), v.maxLength(64))),
  version: v.optional(v.pipe(v.string(), v.maxLength(64))),
});

/** `since` (inclusive) and `until` (exclusive) of a read, in ms; 400 invalid_range when wrong. */
function timeWindow(params: URLSearchParams): { since?: number; until?: number } {
  const { since, until } = present(params, ['since', 'until']);
  const out: { since?: number; until?: number } = {};
  if (since !== undefined) out.since = timeParam('since', since);
  if (until !== undefined) out.until = timeParam('until', until);
  if (out.since !== undefined && out.until !== undefined && out.since >= out.until) {
    throw new HttpError(400, 'invalid_range', 'Invalid range: since must be before until');
  }
  return out;
}

/** GET /api/stats query parameters (docs/api.md#stats): a range, or undefined for the answer without one. */
export function parseStatsQuery(params: URLSearchParams, now: number): StatsRange | undefined {
  const { from, to, interval } = present(params, ['from', 'to', 'interval']);
  if (from === undefined && to === undefined && interval === undefined) return undefined;
  if (interval !== undefined && interval !== 'hour' && interval !== 'day') {
    throw new HttpError(400, 'invalid_range', 'Query parameter "interval" must be hour or day');
  }
  const range: StatsRange = {
    from: from === undefined ? undefined : timeParam('from', from),
    to: to === undefined ? undefined : timeParam('to', to),
    interval,
  };
  // The rules of a range are resolveRange's (lib/stats.ts); this turns its refusal into a 400.
  const problem = rangeProblem(range, now);
  if (problem !== null) throw new HttpError(400, 'invalid_range', `Invalid range: ${problem}`);
  return range;
}

function timeParam(name: string, value: string): number {
  const t = parseIsoTime(value);
  if (t === null) {
    throw new HttpError(400, 'invalid_range', `Query parameter "${name}" must be an ISO 8601 date or date-time (2026-05-16 or 2026-05-16T12:00:00Z)`);
  }
  return t;
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2}))?)?$/i;

/**
 * A time parameter in ms: a date (midnight UTC) or a date and time with optional seconds and
 * fraction and a `Z` or ±hh:mm offset; without one the time is UTC, never the server's zone. Every
 * field must exist: Date.parse would turn February 30 into March 2. Null when it is none of these.
 */
export function parseIsoTime(text: string): number | null {
  const m = text.length <= 40 ? ISO_TIME.exec(text) : null;
  if (!m) return null;
  const [year, month, day, hour = 0, minute = 0, second = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((x) => (x === undefined ? undefined : Number(x))) as number[];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (days === undefined || day < 1 || day > days || hour > 23 || minute > 59 || second > 59) return null;
  const offsetMinutes = m[9] === undefined ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
  if (m[9] !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return null;
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, Number((m[7] ?? '').padEnd(3, '0').slice(0, 3))));
  // Date.UTC reads years 0–99 as 1900–1999; the year is set apart (2000 is a leap year, like any year here with a February 29).
  date.setUTCFullYear(year);
  return date.getTime() - offsetMinutes * 60_000;
}

const UserSyncBody = v.object({
  idpUserId: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  email: v.optional(v.pipe(v.string(), v.maxLength(320)), ''),
  displayName: v.optional(v.pipe(v.string(), v.maxLength(256)), ''),
});

export function parseUserSync(body: unknown): v.InferOutput<typeof UserSyncBody> {
  const result = v.safeParse(UserSyncBody, body);
  if (!result.success) {
    const name = v.getDotPath(result.issues[0]) ?? 'body';
    throw new HttpError(400, 'invalid_body', `Field "${name}" is invalid: ${result.issues[0].message}`);
  }
  return result.output;
}
