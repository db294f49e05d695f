// Envelope validation (DESIGN.md "Ingestion") and request schemas, with valibot.
import * as v from 'valibot';
import { HttpError } from './http.ts';
import { isPlainObject, type RawEvent } from './event.ts';

export const MAX_BATCH = 500;
export const MAX_EVENT_BYTES = 64 * 1024;

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

const text = (max: number) => v.nullish(v.pipe(v.string(), v.maxLength(max)));
const timestamp = v.nullish(
  v.pipe(v.string(), v.maxLength(40), v.regex(ISO_8601), v.check((s) => Number.isFinite(Date.parse(s)))),
);

/** The ingest envelope. Unknown fields are kept (custom fields travel in metadata). */
export const EventEnvelope = v.looseObject({
  type: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(64)),
  id: text(128),
  timestamp,
  sessionId: text(128),
  session_id: text(128),
  deployVersion: text(64),
  appVersion: text(64),
  app_version: text(64),
  userId: text(256),
  appName: text(128),
  url: text(2048),
  pageUrl: text(2048),
  page_url: text(2048),
  route: text(2048),
  source: text(2048),
  message: text(8192),
  severity: text(32),
  data: v.nullish(v.custom<Record<string, unknown>>(isPlainObject, 'data must be an object')),
});

/**
 * The valid events of a batch and the count of those dropped. `bodyBytes` lets small bodies skip
 * the per-event size check: no event can be larger than the body it came in.
 */
export function validateEvents(items: unknown[], bodyBytes: number): { valid: RawEvent[]; rejected: number } {
  const valid: RawEvent[] = [];
  for (const item of items) {
    const result = v.safeParse(EventEnvelope, item);
    if (!result.success) continue;
    if (bodyBytes > MAX_EVENT_BYTES && JSON.stringify(item).length > MAX_EVENT_BYTES) continue;
    valid.push(result.output as RawEvent);
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

/** SPEC 4.1: the body is one event or `{ events: [...] }`. */
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
  limit: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,7}$/), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(MAX_LIST_LIMIT)),
    String(DEFAULT_LIST_LIMIT),
  ),
});

/** GET /api/events query parameters; a bad value is a 400 that names it. */
export function parseEventsQuery(params: URLSearchParams): { type?: string; version?: string; limit: number } {
  const input: Record<string, string> = {};
  for (const name of ['type', 'version', 'limit']) {
    const value = params.get(name);
    if (value !== null && value !== '') input[name] = value;
  }
  const result = v.safeParse(EventsQuery, input);
  if (!result.success) {
    const name = v.getDotPath(result.issues[0]) ?? 'query';
    const hint = name === 'limit' ? `an integer from 1 to ${MAX_LIST_LIMIT}` : 'a string of at most 64 characters';
    throw new HttpError(400, 'invalid_query', `Query parameter "${name}" must be ${hint}`);
  }
  return result.output;
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
