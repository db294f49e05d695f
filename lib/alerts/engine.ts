// The alert engine: evaluation and delivery off the ingest path.
//
// The issue processor (lib/issues/processor.ts, itself off the ingest path) calls push() with an
// issue transition, which appends to a bounded array and returns (no I/O, no awaiting). A timer (start(), every second by default) drains that queue:
// it reads the rules, evaluates them, applies the cool-downs, and starts the deliveries, which
// run in the background with their retries. Another timer (every minute by default) asks the
// metrics for recent error counts and page-load durations and evaluates the error_spike and
// slow_route rules. A slow webhook or SMTP server therefore delays only its own deliveries.
import type { Issue, Transition } from '../issues/state.ts';
import { type CooldownState, idleCooldown, stepCooldown } from './cooldown.ts';
import { deliver, type DeliveryContext, DeliveryLog, type DeliveryRecord, type RetryPolicy } from './delivery.ts';
import { type Alert, evaluateErrorSpike, evaluateSlowRoute, evaluateTransition } from './evaluate.ts';
import type { Mailer } from './mailer.ts';
import { type Links, type Notification, notificationOf, render, webhookBody } from './message.ts';
import type { AlertMetrics } from './recent.ts';
import type { AlertRule } from './rules.ts';
import type { DestinationPolicy } from './destination.ts';
import { postWebhook, WebhookError } from './webhook.ts';
import { unref } from '../issues/timer.ts';

/** What ingestion hands over: an issue after applyEvent, its transition, and the event's receive time (ms). */
export interface IssueChange {
  issue: Issue;
  transition: Transition | null;
  at: number;
  /** The environment of the event behind it (null: none), and whether it was the issue's first there. */
  environment?: string | null;
  firstInEnvironment?: boolean;
}

export interface AlertEngineOptions {
  /** Every enabled rule (the store's); read once per evaluation. */
  rules: () => readonly AlertRule[] | Promise<readonly AlertRule[]>;
  links: Links;
  metrics?: AlertMetrics | null;
  /** Without a mailer, e-mail deliveries are logged as failed ("no SMTP server configured"). */
  mailer?: Mailer | null;
  fetch?: typeof fetch;
  /** Where webhooks may post (destination.ts): by default public addresses only, and no host names (no resolver). */
  destinations?: DestinationPolicy;
  /** Why a webhook attempt failed, in full (the connection's error, the address a name resolved to): for the server log, never the rule's owner. */
  onDeliveryError?: (detail: string) => void;
  log?: DeliveryLog;
  retry?: RetryPolicy;
  sleep?: (ms: number) => Promise<void>;
  webhookTimeoutMs?: number;
  now?: () => number;
  /** Queued changes beyond this are dropped and counted (`dropped`). */
  queueLimit?: number;
  /** Errors of evaluation (a store that cannot list rules, say); the queue is kept for the next tick. */
  onError?: (error: unknown) => void;
}

export const QUEUE_LIMIT = 10_000;
export const TICK_MS = 1000;
export const METRICS_EVERY_MS = 60_000;

export class AlertEngine {
  readonly log: DeliveryLog;
  /** Changes dropped because the queue was full. */
  dropped = 0;
  private queue: IssueChange[] = [];
  private cooldowns = new Map<string, CooldownState>();
  private deliveries = new Set<Promise<DeliveryRecord>>();
  private serial: Promise<unknown> = Promise.resolve();
  private timers: ReturnType<typeof setInterval>[] = [];
  private readonly now: () => number;

  constructor(private readonly options: AlertEngineOptions) {
    this.log = options.log ?? new DeliveryLog();
    this.now = options.now ?? Date.now;
  }

  /** From the ingest path: O(1), never throws, never waits. Changes without a transition are ignored. */
  push(change: IssueChange): void {
    if (change.transition === null) return;
    if (this.queue.length >= (this.options.queueLimit ?? QUEUE_LIMIT)) {
      this.dropped++;
      return;
    }
    this.queue.push(change);
  }

  /** Drains the queue, evaluates the issue rules, releases batches whose cool-down is over, starts deliveries. */
  tick(): Promise<Notification[]> {
    return this.exclusive(async () => {
      const changes = this.queue.splice(0);
      // Nothing new and nothing held: no need to ask the store for the rules every second.
      if (changes.length === 0 && ![...this.cooldowns.values()].some((s) => s.heldCount > 0)) return [];
      let rules: readonly AlertRule[];
      try {
        rules = await this.options.rules();
      } catch (e) {
        this.queue.unshift(...changes.slice(0, (this.options.queueLimit ?? QUEUE_LIMIT) - this.queue.length));
        throw e;
      }
      const alerts = new Map<string, Alert[]>();
      for (const change of changes) {
        for (const rule of rules) {
          const alert = evaluateTransition(rule, change.issue, change.transition, change.at, change);
          if (alert) add(alerts, rule.id, alert);
        }
      }
      return this.emit(rules, alerts);
    });
  }

  /** Evaluates the error_spike and slow_route rules against the metrics now. */
  checkMetrics(): Promise<Notification[]> {
    return this.exclusive(async () => {
      const metrics = this.options.metrics;
      const rules = await this.options.rules();
      const alerts = new Map<string, Alert[]>();
      const now = this.now();
      if (metrics) {
        for (const rule of rules) {
          if (!rule.enabled) continue;
          let alert: Alert | null = null;
          if (rule.kind === 'error_spike') alert = evaluateErrorSpike(rule, await metrics.errorCounts(rule.userId, rule.project, now, rule.environment ?? null), now);
          if (rule.kind === 'slow_route') alert = evaluateSlowRoute(rule, await metrics.routeDurations(rule.userId, rule.project, now, rule.environment ?? null), now);
          if (alert) add(alerts, rule.id, alert);
        }
      }
      return this.emit(rules, alerts);
    });
  }

  /** Sends a test notification for a rule now, on each of its channels, outside its cool-down. */
  sendTest(rule: AlertRule): Notification {
    const n: Notification = { ...notificationOf(rule, { alerts: [], count: 0 }, this.now()), test: true };
    this.send(rule, n);
    return n;
  }

  /** Resolves when every delivery started so far has finished (sent or given up). */
  async idle(): Promise<void> {
    while (this.deliveries.size > 0) await Promise.all(this.deliveries);
  }

  /** Runs tick() every `tickMs` and checkMetrics() every `metricsMs`; the timers do not keep a process alive. */
  start(tickMs = TICK_MS, metricsMs = METRICS_EVERY_MS): void {
    if (this.timers.length > 0) return;
    const report = (e: unknown) => this.options.onError?.(e);
    this.timers.push(unref(setInterval(() => this.tick().catch(report), tickMs)));
    if (this.options.metrics) this.timers.push(unref(setInterval(() => this.checkMetrics().catch(report), metricsMs)));
  }

  /** Stops the timers; deliveries under way go on (await idle() to wait for them). */
  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** Evaluations one at a time: they share the cool-down states. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn, fn);
    this.serial = run.catch(() => {});
    return run;
  }

  private emit(rules: readonly AlertRule[], alerts: Map<string, Alert[]>): Notification[] {
    const now = this.now();
    const sent: Notification[] = [];
    const live = new Set<string>();
    for (const rule of rules) {
      live.add(rule.id);
      const state = this.cooldowns.get(rule.id) ?? idleCooldown();
      const step = stepCooldown(state, alerts.get(rule.id) ?? [], now, rule.cooldownMs);
      if (step.state !== state) this.cooldowns.set(rule.id, step.state);
      if (!step.batch) continue;
      const notification = notificationOf(rule, step.batch, now);
      this.send(rule, notification);
      sent.push(notification);
    }
    // Deleted rules: forget their cool-downs (the states are bounded by the rules that exist).
    for (const id of this.cooldowns.keys()) if (!live.has(id)) this.cooldowns.delete(id);
    return sent;
  }

  private send(rule: AlertRule, n: Notification): void {
    const { subject, text } = render(n, this.options.links);
    const ctx: DeliveryContext = { log: this.log, policy: this.options.retry, sleep: this.options.sleep, now: this.now };
    const base = { notificationId: n.id, ruleId: rule.id, subject };
    if (rule.webhook) {
      const { url, secret } = rule.webhook;
      const body = webhookBody(n, this.options.links);
      const { fetch, destinations, webhookTimeoutMs: timeoutMs, onDeliveryError } = this.options;
      const attempt = async () => {
        try {
          await postWebhook({ url, secret, body, deliveryId: n.id, fetch, timeoutMs, destinations });
        } catch (e) {
          if (e instanceof WebhookError && e.detail !== null) onDeliveryError?.(`webhook of alert rule ${rule.id}: ${e.detail}`);
          throw e;
        }
      };
      this.track(deliver({ ...base, id: `${n.id}:webhook`, channel: 'webhook', target: url }, attempt, ctx));
    }
    if (rule.email.length > 0) {
      const mailer = this.options.mailer;
      const attempt = mailer
        ? () => mailer.send({ to: rule.email, subject, text })
        : () => Promise.reject(new Error('no SMTP server configured (SMTP_URL)'));
      this.track(deliver({ ...base, id: `${n.id}:email`, channel: 'email', target: rule.email.join(', ') }, attempt,
        mailer ? ctx : { ...ctx, policy: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }));
    }
  }

  private track(p: Promise<DeliveryRecord>): void {
    this.deliveries.add(p);
    void p.finally(() => this.deliveries.delete(p));
  }
}

function add(map: Map<string, Alert[]>, key: string, alert: Alert): void {
  const list = map.get(key);
  if (list) list.push(alert);
  else map.set(key, [alert]);
}
