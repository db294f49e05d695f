// Event shapes and their pure normalisation: ingest fields → stored shape (docs/api.md#events).
import { referrerOrigin } from './event-keys.ts';
import { customEventName, environmentOf, utmOf, type Utm } from './event-fields.ts';
import type { ClientInfo } from './client-info.ts';

/** Types the service recognises (docs/api.md#event-fields). Others are accepted as they are. */
export const KNOWN_EVENT_TYPES = [
  'page_view', 'error', 'performance', 'interaction', 'feedback',
  'custom', 'pageload', 'click', 'login', 'logout',
] as const;

/** An inbound event as posted by an SDK, after envelope validation. */
export type RawEvent = Record<string, unknown> & { type: string };

/** The stored and returned shape (docs/api.md#stored-shape): camelCase and column-aligned fields side by side. */
export interface StoredEvent {
  [custom: string]: unknown;
  id: string;
  type: string;
  timestamp: string;
  receivedAt: string;
  received_at: string;
  user_id: string | null;
  sessionId: string | null;
  session_id: string | null;
  deployVersion: string | null;
  app_version: string | null;
  appName: string | null;
  url: string | null;
  page_url: string | null;
  route: string | null;
  source: string | null;
  message: string | null;
  severity: string | null;
  data: Record<string, unknown>;
  /**
   * The project whose ingest key the event came with (README "Projects"); set by the server only,
   * absent on events sent without a key. A client's own `projectId` field is dropped by normalise.
   */
  projectId?: string;
  /**
   * Browser, OS and device of the sender, from the request's User-Agent (lib/client-info.ts); set by
   * POST /api/events and /api/beacon, replacing a client's own `client` field. Never the raw header.
   * `country`: of the client address (lib/geo.ts), null when unknown or looked up by no one.
   */
  client?: ClientInfo & { country?: string | null };
  /** The environment the event was sent from (`production`, `staging`); absent when none. */
  environment?: string;
  /** The campaign parameters of the page URL's query; absent when it has none. */
  utm?: Utm;
}

/** Client timestamps further ahead than this are replaced by server time (clock skew). */
export const MAX_FUTURE_SKEW_MS = 24 * 60 * 60 * 1000;

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const first = (...values: unknown[]): string | null => {
  for (const v of values) {
    const s = str(v);
    if (s !== null) return s;
  }
  return null;
};

// Fields normalise() maps to the stored shape; any other field of the payload is kept as sent.
// (`userId` is kept as sent too: the owner is `user_id`, which only the server sets.)
const MAPPED = new Set([
  'id', 'type', 'timestamp', 'sessionId', 'session_id', 'deployVersion', 'appVersion', 'app_version',
  'appName', 'app_name', 'url', 'pageUrl', 'page_url', 'route', 'source', 'message', 'severity', 'data', 'user_id',
  'referrer', 'environment', 'utm',
]);

export interface NormaliseContext {
  /** Server time in ms since the epoch. */
  now: number;
  /** Owning user id, resolved by resolveOwner (null = anonymous). */
  owner: string | null;
  /** Id generator; UUIDv7 by default. */
  newId?: () => string;
  /**
   * Server time minus the client's clock when it sent the batch (`sentAt`), added to client
   * timestamps so a device whose clock is off still reports when things happened (as Sentry and
   * PostHog do). 0 when the client sent no sentAt.
   */
  clockOffsetMs?: number;
  /** `now` as ISO 8601, when the caller already has it (one per batch, not one per event). */
  receivedAt?: string;
}

const RESERVED = new Set(['__proto__', 'projectId']);

/** Pure: a validated inbound event → the stored shape. */
export function normalise(raw: RawEvent, ctx: NormaliseContext): StoredEvent {
  const data = isPlainObject(raw.data) ? (raw.data as Record<string, unknown>) : {};
  const receivedAt = ctx.receivedAt ?? new Date(ctx.now).toISOString();
  const sessionId = first(raw.sessionId, raw.session_id);
  const deployVersion = first(raw.deployVersion, raw.appVersion, raw.app_version);
  // A fixed literal first, custom fields after: every stored event shares one object shape.
  const event: StoredEvent = {
    id: first(raw.id) ?? (ctx.newId ?? uuidv7)(),
    type: raw.type,
    timestamp: clientTimestamp(raw.timestamp, ctx.now, ctx.clockOffsetMs) ?? receivedAt,
    receivedAt,
    received_at: receivedAt,
    user_id: ctx.owner,
    sessionId,
    session_id: sessionId,
    deployVersion,
    app_version: deployVersion,
    appName: first(raw.appName, raw.app_name),
    url: first(raw.url, raw.pageUrl, raw.page_url),
    page_url: first(raw.pageUrl, raw.page_url, raw.url, raw.route),
    route: str(raw.route),
    source: first(raw.source, data.source),
    message: first(raw.message, data.message),
    severity: first(raw.severity) ?? (raw.type === 'error' ? 'critical' : null),
    data,
  };
  // A field named __proto__ (JSON.parse makes it an own property) would set the prototype of the
  // stored event if assigned: it is dropped.
  // projectId is the server's to set (from a project key): a client's would claim a project.
  for (const key in raw) if (!MAPPED.has(key) && !RESERVED.has(key) && Object.hasOwn(raw, key)) event[key] = raw[key];
  // Only the referring site's origin is kept, whatever a client sends: a path or query can hold
  // search terms or tokens (README "Breakdowns"). A referrer that is no http(s) URL is dropped.
  const referrer = referrerOrigin(raw.referrer);
  if (referrer !== null) event.referrer = referrer;
  // Set only when present, as the referrer is: most events of most apps have none of them.
  const environment = environmentOf(raw.environment);
  if (environment !== null) event.environment = environment;
  // A page load's only: campaigns are counted per page load (docs/api.md#breakdowns), and every
  // other event keeps its URL, which holds the same parameters. Kept on every event, the object
  // cost sqlite's ingest a fifth more CPU per batch (BENCHMARKS.md, ingest cost of campaigns).
  if (raw.type === 'pageload') {
    const utm = utmOf(event.url ?? event.page_url);
    if (utm !== null) event.utm = utm;
  }
  // A custom event's name is one field whichever the client used (docs/api.md#event-fields).
  if (raw.type === 'custom') {
    const name = customEventName(raw.name, raw.eventName, data);
    if (name !== null) event.name = name;
  }
  return event;
}

// Fields within their ranges, so a match is a real instant without asking Date.parse.
const CANONICAL = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/** A parseable client timestamp, corrected and normalised to ISO 8601; null when absent or too far ahead. */
export function clientTimestamp(value: unknown, now: number, clockOffsetMs = 0): string | null {
  if (typeof value !== 'string' || value === '') return null;
  // Already canonical (what SDKs send) and uncorrected: canonical strings sort like the instants
  // they name, so comparing with the latest allowed one replaces a Date.parse per event.
  if (clockOffsetMs === 0 && CANONICAL.test(value)) return value <= latestAllowed(now) ? value : null;
  const t = Date.parse(value) + clockOffsetMs;
  if (!Number.isFinite(t) || t - now > MAX_FUTURE_SKEW_MS) return null;
  return new Date(t).toISOString();
}

const latestAllowed = (now: number) => isoTime(now + MAX_FUTURE_SKEW_MS, 1);

const isoCache = ['', ''];
const isoCacheFor = [NaN, NaN];
/** `new Date(ms).toISOString()`, remembered per slot: one ingest formats the same instant for every event. */
export function isoTime(ms: number, slot: 0 | 1 = 0): string {
  if (isoCacheFor[slot] !== ms) {
    isoCacheFor[slot] = ms;
    isoCache[slot] = new Date(ms).toISOString();
  }
  return isoCache[slot];
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * UUIDv7 (RFC 9562): 48-bit ms timestamp, version 7, 74 random bits. Time-ordered ids keep inserts
 * into an indexed B-tree local, which measured 2–3× faster than random v4 ids. The random part is
 * taken from randomUUID (a v4: same variant bits, and ~5× faster than getRandomValues per id on Node).
 */
export function uuidv7(now = Date.now()): string {
  // Formatting a 48-bit number in hex is slow in V8 (not a small integer); reuse it within a ms.
  if (now !== lastMs) {
    const ms = now.toString(16).padStart(12, '0');
    lastMs = now;
    lastPrefix = `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7`;
  }
  return lastPrefix + crypto.randomUUID().slice(15);
}
let lastMs = -1;
let lastPrefix = '';
