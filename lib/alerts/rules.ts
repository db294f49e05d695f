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
  /** Only this project (the events' `projectId`); null for all of the user's projects. */
  project: string | null;
  kind: AlertKind;
  /** error_spike: errors in 5 minutes; slow_route: page-load p95 in ms. Null for the issue kinds. */
  threshold: number | null;
  /** slow_route: the one route to watch; null watches every route. */
  route: string | null;
  /**
   * Only events of this environment (their `environment` field); null or absent: every event. A
   * new_issue rule with one hears an issue's first event in that environment.
   */
  environment?: string | null;
  /** At most one notification per this many ms (COOLDOWN_MS by default). */
  cooldownMs: number;
  webhook: WebhookTarget | null;
  /** E-mail recipients; empty for none. */
  email: string[];
  enabled: boolean;
  createdAt: string;
  /** Who made it, when not its owner: a member's rule on a project shared with them (docs/api.md#alerts). */
  createdBy?: string;
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

const FIELDS = new Set(['on', 'project', 'threshold', 'route', 'environment', 'cooldownMinutes', 'webhook', 'secret', 'email', 'enabled']);
const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/;

/**
 * Reads a rule from a request body (POST /api/alerts):
 * `{ on, project?, threshold?, route?, environment?, cooldownMinutes?, webhook?, secret?, email?, enabled? }`.
 * `threshold` is required for error_spike (errors, ≥ 1) and slow_route (ms, ≥ 1); `email` is one
 * address or a list; `webhook` a URL; at least one of webhook and email. The webhook secret is
 * generated unless given (≥ 16 characters). Anything else is `400 invalid_body` naming the field.
 */
export function parseAlertRule(body: unknown, ctx: { userId: string; id: string; now: number }): AlertRule {
  const invalid = (field: string, why: string) => new HttpError(400, 'invalid_body', `Invalid alert rule: "${field}" ${why}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_body', 'Invalid alert rule: the body must be an object');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!FIELDS.has(key)) throw invalid(key, 'is not a known field');

  if (!ALERT_KINDS.includes(b.on as AlertKind)) throw invalid('on', `must be one of ${ALERT_KINDS.join(', ')}`);
  const kind = b.on as AlertKind;
  const project = optionalString(b.project, 128, () => invalid('project', 'must be a string of 1–128 characters'));
  const route = optionalString(b.route, 512, () => invalid('route', 'must be a path starting with /'));
  if (route !== null && (kind !== 'slow_route' || !route.startsWith('/'))) throw invalid('route', 'must be a path starting with / (slow_route only)');
  const environment = optionalString(b.environment, 64, () => invalid('environment', 'must be a string of 1–64 characters'));

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
  if (b.webhook !== undefined && b.webhook !== null) {
    if (typeof b.webhook !== 'string' || b.webhook.length > 2048 || !isHttpUrl(b.webhook)) throw invalid('webhook', 'must be an http(s) URL');
    let secret = newWebhookSecret();
    if (b.secret !== undefined) {
      if (typeof b.secret !== 'string' || b.secret.length < 16 || b.secret.length > 256) throw invalid('secret', 'must be a string of 16–256 characters');
      secret = b.secret;
    }
    webhook = { url: b.webhook, secret };
  } else if (b.secret !== undefined) {
    throw invalid('secret', 'needs a webhook');
  }

  const email = b.email === undefined || b.email === null ? [] : Array.isArray(b.email) ? b.email : [b.email];
  if (email.length > MAX_RECIPIENTS || !email.every((a) => typeof a === 'string' && a.length <= 254 && EMAIL.test(a))) {
    throw invalid('email', `must be an e-mail address or a list of at most ${MAX_RECIPIENTS}`);
  }
  if (webhook === null && email.length === 0) throw invalid('webhook', 'or "email" is required: a rule needs somewhere to send to');
  if (b.enabled !== undefined && typeof b.enabled !== 'boolean') throw invalid('enabled', 'must be true or false');

  return {
    id: ctx.id,
    userId: ctx.userId,
    project,
    kind,
    threshold,
    route,
    environment,
    cooldownMs,
    webhook,
    email: email as string[],
    enabled: b.enabled !== false,
    createdAt: new Date(ctx.now).toISOString(),
  };
}

/**
 * A rule changed by a PATCH body (the fields of parseAlertRule, each optional; `null` clears an
 * optional one). The result is checked as a whole, as a new rule would be; id, owner and creation
 * time stay, and so does the webhook secret unless a new one is given or the webhook is removed.
 */
export function patchAlertRule(rule: AlertRule, body: unknown): AlertRule {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_body', 'Invalid alert rule: the body must be an object');
  const current: Record<string, unknown> = {
    on: rule.kind,
    project: rule.project,
    threshold: rule.threshold,
    route: rule.route,
    environment: rule.environment ?? null,
    cooldownMinutes: rule.cooldownMs / 60_000,
    webhook: rule.webhook?.url ?? null,
    email: rule.email,
    enabled: rule.enabled,
  };
  if (rule.webhook) current.secret = rule.webhook.secret;
  const merged = { ...current, ...(body as Record<string, unknown>) };
  if (merged.webhook === null) delete merged.secret;
  // A kind without a threshold or route drops the old one rather than rejecting it.
  if (merged.on !== 'error_spike' && merged.on !== 'slow_route' && !('threshold' in body)) merged.threshold = null;
  if (merged.on !== 'slow_route' && !('route' in body)) merged.route = null;
  const next = { ...parseAlertRule(merged, { userId: rule.userId, id: rule.id, now: Date.parse(rule.createdAt) }), createdAt: rule.createdAt };
  return rule.createdBy === undefined ? next : { ...next, createdBy: rule.createdBy };
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

/** A rule as its owner sees it (in the request's field names); the webhook secret is shown only once, when the rule is created. */
export function publicRule(rule: AlertRule, options: { secret?: boolean } = {}) {
  return {
    id: rule.id,
    on: rule.kind,
    project: rule.project,
    threshold: rule.threshold,
    route: rule.route,
    environment: rule.environment ?? null,
    cooldownMinutes: rule.cooldownMs / 60_000,
    email: rule.email,
    webhook: rule.webhook?.url ?? null,
    ...(options.secret && rule.webhook ? { secret: rule.webhook.secret } : {}),
    enabled: rule.enabled,
    createdAt: rule.createdAt,
    ...(rule.createdBy === undefined ? {} : { createdBy: rule.createdBy }),
  };
}
