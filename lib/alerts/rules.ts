// Alert rules: what a user wants to hear about, and where. Plain JSON values a store can keep.
import { HttpError } from '../http.ts';

export type AlertKind = 'new_issue' | 'regression' | 'error_spike' | 'slow_route';
export const ALERT_KINDS: readonly AlertKind[] = ['new_issue', 'regression', 'error_spike', 'slow_route'];

export interface WebhookTarget {
  url: string;
  /** HMAC-SHA256 key for the X-Watchtower-Signature header (webhook.ts). */
  secret: string;
}

export interface AlertRule {
  id: string;
  /** The owner: rules see only this user's issues and events. */
  userId: string;
  /** Only this project (the events' `appName`); null for all of the user's projects. */
  project: string | null;
  kind: AlertKind;
  /** error_spike: errors in 5 minutes; slow_route: page-load p95 in ms. Null for the issue kinds. */
  threshold: number | null;
  /** slow_route: the one route to watch; null watches every route. */
  route: string | null;
  /** At most one notification per this many ms (COOLDOWN_MS by default). */
  cooldownMs: number;
  webhook: WebhookTarget | null;
  /** E-mail recipients; empty for none. */
  email: string[];
  enabled: boolean;
  createdAt: string;
}

/** Default cool-down: one message per rule per 10 minutes; what happens meanwhile is counted in the next. */
export const COOLDOWN_MS = 10 * 60 * 1000;
export const MIN_COOLDOWN_MS = 60 * 1000;
export const MAX_COOLDOWN_MS = 24 * 60 * 60 * 1000;
export const MAX_RECIPIENTS = 10;

/** A fresh webhook secret: 32 random bytes as hex. */
export function newWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

const FIELDS = new Set(['kind', 'project', 'threshold', 'route', 'cooldownMinutes', 'webhookUrl', 'webhookSecret', 'email', 'enabled']);
const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/;

/**
 * Reads a rule from a request body (POST /api/alerts):
 * `{ kind, project?, threshold?, route?, cooldownMinutes?, webhookUrl?, webhookSecret?, email?, enabled? }`.
 * `threshold` is required for error_spike (errors, ≥ 1) and slow_route (ms, ≥ 1); `email` is one
 * address or a list; at least one of webhookUrl and email. The webhook secret is generated unless
 * given (≥ 16 characters). Anything else is `400 invalid_body` naming the field.
 */
export function parseAlertRule(body: unknown, ctx: { userId: string; id: string; now: number }): AlertRule {
  const invalid = (field: string, why: string) => new HttpError(400, 'invalid_body', `Invalid alert rule: "${field}" ${why}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_body', 'Invalid alert rule: the body must be an object');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!FIELDS.has(key)) throw invalid(key, 'is not a known field');

  if (!ALERT_KINDS.includes(b.kind as AlertKind)) throw invalid('kind', `must be one of ${ALERT_KINDS.join(', ')}`);
  const kind = b.kind as AlertKind;
  const project = optionalString(b.project, 128, () => invalid('project', 'must be a string of 1–128 characters'));
  const route = optionalString(b.route, 512, () => invalid('route', 'must be a path starting with /'));
  if (route !== null && (kind !== 'slow_route' || !route.startsWith('/'))) throw invalid('route', 'must be a path starting with / (slow_route only)');

  let threshold: number | null = null;
  if (kind === 'error_spike' || kind === 'slow_route') {
    if (typeof b.threshold !== 'number' || !Number.isFinite(b.threshold) || b.threshold < 1 || b.threshold > 1e9) {
      throw invalid('threshold', kind === 'error_spike' ? 'must be a number of errors ≥ 1' : 'must be a number of milliseconds ≥ 1');
    }
    threshold = b.threshold;
  } else if (b.threshold !== undefined && b.threshold !== null) {
    throw invalid('threshold', `does not apply to ${kind}`);
  }

  let cooldownMs = COOLDOWN_MS;
  if (b.cooldownMinutes !== undefined) {
    const m = b.cooldownMinutes;
    if (typeof m !== 'number' || !Number.isFinite(m) || m * 60_000 < MIN_COOLDOWN_MS || m * 60_000 > MAX_COOLDOWN_MS) {
      throw invalid('cooldownMinutes', 'must be a number of minutes from 1 to 1440');
    }
    cooldownMs = Math.round(m * 60_000);
  }

  let webhook: WebhookTarget | null = null;
  if (b.webhookUrl !== undefined && b.webhookUrl !== null) {
    if (typeof b.webhookUrl !== 'string' || b.webhookUrl.length > 2048 || !isHttpUrl(b.webhookUrl)) throw invalid('webhookUrl', 'must be an http(s) URL');
    let secret = newWebhookSecret();
    if (b.webhookSecret !== undefined) {
      if (typeof b.webhookSecret !== 'string' || b.webhookSecret.length < 16 || b.webhookSecret.length > 256) throw invalid('webhookSecret', 'must be a string of 16–256 characters');
      secret = b.webhookSecret;
    }
    webhook = { url: b.webhookUrl, secret };
  } else if (b.webhookSecret !== undefined) {
    throw invalid('webhookSecret', 'needs a webhookUrl');
  }

  const email = b.email === undefined || b.email === null ? [] : Array.isArray(b.email) ? b.email : [b.email];
  if (email.length > MAX_RECIPIENTS || !email.every((a) => typeof a === 'string' && a.length <= 254 && EMAIL.test(a))) {
    throw invalid('email', `must be an e-mail address or a list of at most ${MAX_RECIPIENTS}`);
  }
  if (webhook === null && email.length === 0) throw invalid('webhookUrl', 'or "email" is required: a rule needs somewhere to send to');
  if (b.enabled !== undefined && typeof b.enabled !== 'boolean') throw invalid('enabled', 'must be true or false');

  return {
    id: ctx.id,
    userId: ctx.userId,
    project,
    kind,
    threshold,
    route,
    cooldownMs,
    webhook,
    email: email as string[],
    enabled: b.enabled !== false,
    createdAt: new Date(ctx.now).toISOString(),
  };
}

function optionalString(v: unknown, max: number, fail: () => Error): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v === '' || v.length > max) throw fail();
  return v;
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** A rule as shown to its owner: the webhook secret is not repeated after creation. */
export function publicRule(rule: AlertRule): Omit<AlertRule, 'webhook'> & { webhook: { url: string } | null } {
  return { ...rule, webhook: rule.webhook ? { url: rule.webhook.url } : null };
}
