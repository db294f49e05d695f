// Event shapes and the pure normalisation of SPEC 2.1 → 2.3.

/** Types the service recognises (SPEC 2.1). Others are accepted as they are. */
export const KNOWN_EVENT_TYPES = [
  'page_view', 'error', 'performance', 'interaction', 'feedback',
  'custom', 'pageload', 'click', 'login', 'logout',
] as const;

/** An inbound event as posted by an SDK, after envelope validation. */
export type RawEvent = Record<string, unknown> & { type: string };

/** The stored and returned shape (SPEC 2.3): camelCase and column-aligned fields side by side. */
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

// snake_case aliases are folded into their camelCase names and not repeated in the stored object.
const ALIASES = ['session_id', 'app_version', 'appVersion', 'page_url', 'pageUrl', 'user_id'];

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
}

/** Pure: a validated inbound event → the stored shape. */
export function normalise(raw: RawEvent, ctx: NormaliseContext): StoredEvent {
  const data = isPlainObject(raw.data) ? (raw.data as Record<string, unknown>) : {};
  const receivedAt = new Date(ctx.now).toISOString();
  const custom: Record<string, unknown> = {};
  for (const key of Object.keys(raw)) if (!ALIASES.includes(key)) custom[key] = raw[key];

  const sessionId = first(raw.sessionId, raw.session_id);
  const deployVersion = first(raw.deployVersion, raw.appVersion, raw.app_version);
  const url = first(raw.url, raw.pageUrl, raw.page_url);
  const route = str(raw.route);
  const severity = first(raw.severity) ?? (raw.type === 'error' ? 'critical' : null);

  return {
    ...custom,
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
    url,
    page_url: first(raw.pageUrl, raw.page_url, raw.url, raw.route),
    route,
    source: first(raw.source, data.source),
    message: first(raw.message, data.message),
    severity,
    data,
  };
}

/** A parseable client timestamp, corrected and normalised to ISO 8601; null when absent or too far ahead. */
export function clientTimestamp(value: unknown, now: number, clockOffsetMs = 0): string | null {
  if (typeof value !== 'string' || value === '') return null;
  const t = Date.parse(value) + clockOffsetMs;
  if (!Number.isFinite(t) || t - now > MAX_FUTURE_SKEW_MS) return null;
  return new Date(t).toISOString();
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * UUIDv7 (RFC 9562): 48-bit ms timestamp + random bits. Time-ordered ids keep inserts into an
 * indexed B-tree local, which measured 2–3× faster than random v4 ids.
 */
export function uuidv7(now = Date.now()): string {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  let t = now;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  let h = '';
  for (let i = 0; i < 16; i++) h += (b[i] < 16 ? '0' : '') + b[i].toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
