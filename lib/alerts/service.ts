// Alert rules and their deliveries in the record store, and the engine that evaluates them.
//
// Rules are records of kind 'alert' owned by their user. The engine needs every user's rules, and
// the record store reads one owner at a time, so one more record lists the owners that have rules;
// the service keeps all rules in memory (they are few), re-reads them every RULES_REFRESH_MS (rules
// changed through another instance), and updates them at once when they change through this one.
// Each rule's recent deliveries are one record of kind 'alert-deliveries', rewritten as they
// progress, so GET /api/alerts shows them from any instance and after a restart.
import { creationTime, type RecordStore } from '../records/types.ts';
import { HttpError } from '../http.ts';
import { createRateLimiter } from '../ratelimit.ts';
import { unref } from '../issues/timer.ts';
import type { AlertConfig } from './config.ts';
import type { DeliveryRecord, RetryPolicy } from './delivery.ts';
import { checkDestination, type DestinationPolicy, describeRefusal, type Refusal, type ResolveHost, refusalMessage } from './destination.ts';
import { AlertEngine, type IssueChange, METRICS_EVERY_MS, TICK_MS } from './engine.ts';
import type { Mailer } from './mailer.ts';
import { dashboardLinks } from './message.ts';
import type { AlertMetrics } from './recent.ts';
import { type AlertRule, parseAlertRule, patchAlertRule, publicRule } from './rules.ts';

export const ALERT_KIND = 'alert';
export const DELIVERIES_KIND = 'alert-deliveries';
/** The owners-with-rules list: one record under an owner no signed-in user has. */
const OWNERS_KIND = 'alert-owners';
const OWNERS_ID = 'all';
const SYSTEM_OWNER = 'watchtower:alerts';
export const RULES_REFRESH_MS = 30_000;
/** Rules per user. */
export const MAX_RULES = 100;
/** How long saving a rule waits for its webhook's host name to resolve; past it the rule is saved, and checked when it posts. */
export const RESOLVE_ON_SAVE_MS = 3000;

/**
 * Test notifications per user per minute (a burst of as many, then one every 60/N s). A test skips
 * the cool-down and may e-mail 10 recipients, so unbounded tests would make the service a relay.
 */
export const TESTS_PER_MINUTE = 5;

export interface AlertServiceOptions {
  records: RecordStore;
  config: AlertConfig;
  /** Without one, e-mail is disabled (no SMTP_URL): deliveries on that channel are logged as failed. */
  mailer: Mailer | null;
  metrics?: AlertMetrics | null;
  fetch?: typeof fetch;
  /** The runtime's host-name lookup (lib/adapter/resolve.ts); without one, webhooks to host names are refused unless config.allowPrivateWebhooks. */
  resolveHost?: ResolveHost | null;
  retry?: RetryPolicy;
  webhookTimeoutMs?: number;
  now: () => number;
  log: (msg: string) => void;
  tickMs?: number;
  metricsMs?: number;
}

export class AlertService {
  readonly engine: AlertEngine;
  private rules = new Map<string, AlertRule>();
  private loaded: Promise<void> | null = null;
  /** Counts rule changes made through this instance: a read of all rules begun before one is stale. */
  private changes = 0;
  /** Whether the stored delivery logs were read into the engine's log (once, at the first read). */
  private restored = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  /** Delivery-log writes, one rule after another, so a later state never loses to an earlier one. */
  private writes: Promise<unknown> = Promise.resolve();
  private tests = createRateLimiter({ rate: TESTS_PER_MINUTE / 60, burst: TESTS_PER_MINUTE, maxClients: 10_000 });

  private readonly destinations: DestinationPolicy;

  constructor(private readonly options: AlertServiceOptions) {
    this.destinations = { allowPrivate: options.config.allowPrivateWebhooks, resolveHost: options.resolveHost ?? null };
    this.engine = new AlertEngine({
      rules: async () => {
        await this.load();
        return [...this.rules.values()];
      },
      links: dashboardLinks(options.config.publicUrl),
      metrics: options.metrics ?? null,
      mailer: options.mailer,
      fetch: options.fetch,
      destinations: this.destinations,
      onDeliveryError: options.log,
      retry: options.retry,
      webhookTimeoutMs: options.webhookTimeoutMs,
      now: options.now,
      onError: (e) => options.log(`alert evaluation failed: ${e instanceof Error ? e.message : String(e)}`),
    });
    this.engine.log.subscribe((record) => this.persist(record));
  }

  /** Whether the e-mail channel works (SMTP_URL is set). */
  get emailEnabled(): boolean {
    return this.options.mailer !== null;
  }

  /** From the issue processor: O(1). */
  push(change: IssueChange): void {
    this.engine.push(change);
  }

  start(): void {
    if (this.timer) return;
    this.engine.start(this.options.tickMs ?? TICK_MS, this.options.metricsMs ?? METRICS_EVERY_MS);
    this.timer = unref(setInterval(() => {
      this.loaded = null;
      this.load().catch((e) => this.options.log(`alert rules could not be read: ${(e as Error).message}`));
    }, RULES_REFRESH_MS));
  }

  /** Stops evaluating; deliveries under way finish (idle()), then the mailer is closed. */
  async stop(): Promise<void> {
    this.engine.stop();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.idle();
    await this.options.mailer?.close?.();
  }

  /** Resolves once started deliveries have finished and their log is stored. */
  async idle(): Promise<void> {
    await this.engine.idle();
    await this.writes;
  }

  /** A user's rules with their recent deliveries (newest first). */
  async list(userId: string) {
    const records = await this.options.records.list<AlertRule>(ALERT_KIND, userId);
    const rules = records.map((r) => r.body).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
    return Promise.all(rules.map(async (rule) => ({ ...publicRule(rule), deliveries: await this.deliveries(rule) })));
  }

  /** A new rule of `userId`'s; `createdBy` names the member who made it on a project shared with them. */
  async create(userId: string, body: unknown, createdBy?: string) {
    const existing = await this.options.records.list<AlertRule>(ALERT_KIND, userId);
    const now = Date.parse(creationTime(this.options.now(), existing.map((r) => r.body.createdAt)));
    const parsed = parseAlertRule(body, { userId, id: crypto.randomUUID(), now });
    const rule: AlertRule = createdBy === undefined || createdBy === userId ? parsed : { ...parsed, createdBy };
    await this.checkProject(rule);
    if (existing.length >= MAX_RULES) throw new HttpError(409, 'too_many_rules', `A user may have at most ${MAX_RULES} alert rules`);
    await this.checkWebhook(rule);
    await this.addOwner(userId);
    await this.options.records.put([{ kind: ALERT_KIND, id: rule.id, userId, body: rule }]);
    this.rules.set(rule.id, rule);
    this.changes++;
    return { ...publicRule(rule, { secret: true }), deliveries: [] };
  }

  async update(userId: string, id: string, body: unknown) {
    const rule = await this.get(userId, id);
    const next = patchAlertRule(rule, body);
    await this.checkProject(next);
    // A webhook saved before is checked when it posts; refusing it here would keep its owner from
    // changing anything else (disabling the rule, say).
    if (next.webhook?.url !== rule.webhook?.url) await this.checkWebhook(next);
    await this.options.records.put([{ kind: ALERT_KIND, id, userId, body: next }]);
    this.rules.set(id, next);
    this.changes++;
    const secretChanged = next.webhook !== null && next.webhook.secret !== rule.webhook?.secret;
    return { ...publicRule(next, { secret: secretChanged }), deliveries: await this.deliveries(next) };
  }

  async remove(userId: string, id: string): Promise<void> {
    if (!(await this.options.records.delete(ALERT_KIND, id, userId))) throw notFound(id);
    await this.options.records.delete(DELIVERIES_KIND, id, userId);
    this.rules.delete(id);
    this.changes++;
    this.engine.log.forget(id);
  }

  /**
   * Sends a test notification on the rule's channels; answers the notification id. At most
   * TESTS_PER_MINUTE per user, then 429 `too_many_tests` with the seconds to wait.
   */
  async test(userId: string, id: string): Promise<{ notificationId: string }> {
    const rule = await this.get(userId, id);
    const wait = this.tests.take(userId, this.options.now());
    if (wait > 0) {
      throw new HttpError(429, 'too_many_tests', `At most ${TESTS_PER_MINUTE} test notifications a minute per user; try again in ${wait} s`, { 'retry-after': String(wait) });
    }
    return { notificationId: this.engine.sendTest(rule).id };
  }

  /** A rule's project must be one of its owner's projects (records of kind 'project'). */
  private async checkProject(rule: AlertRule): Promise<void> {
    if (rule.project !== null && !(await this.options.records.get('project', rule.project, rule.userId))) {
      throw new HttpError(400, 'invalid_body', `Invalid alert rule: "project" ${rule.project} is not one of your projects`);
    }
  }

  /**
   * A webhook whose destination is refused (destination.ts) is `400 webhook_destination_refused`:
   * an internal address, `localhost`, or a name that resolves to one now. A name that does not
   * resolve (yet), or not within RESOLVE_ON_SAVE_MS, is saved: every delivery checks it again.
   */
  private async checkWebhook(rule: AlertRule): Promise<void> {
    if (!rule.webhook) return;
    let refusal: Refusal | null;
    try {
      refusal = await checkDestination(rule.webhook.url, this.destinations, AbortSignal.timeout(RESOLVE_ON_SAVE_MS));
    } catch {
      return;
    }
    if (!refusal) return;
    this.options.log(`alert rule webhook refused for user ${rule.userId}: ${describeRefusal(refusal)}`);
    throw new HttpError(400, 'webhook_destination_refused',
      `Webhook destination refused: ${refusalMessage(refusal)}. Webhooks post to public addresses only, unless the server sets ALERT_ALLOW_PRIVATE_WEBHOOKS=true`);
  }

  private async get(userId: string, id: string): Promise<AlertRule> {
    const record = await this.options.records.get<AlertRule>(ALERT_KIND, id, userId);
    if (!record) throw notFound(id);
    return record.body;
  }

  private async deliveries(rule: AlertRule): Promise<DeliveryRecord[]> {
    const stored = await this.options.records.get<DeliveryRecord[]>(DELIVERIES_KIND, rule.id, rule.userId);
    return [...(stored?.body ?? [])].reverse();
  }

  private persist(record: DeliveryRecord): void {
    const rule = this.rules.get(record.ruleId);
    if (!rule) return;
    const list = this.engine.log.list(record.ruleId);
    this.writes = this.writes
      .then(() => this.options.records.put([{ kind: DELIVERIES_KIND, id: rule.id, userId: rule.userId, body: list }]))
      .catch((e) => this.options.log(`alert deliveries could not be stored: ${(e as Error).message}`));
  }

  /** Reads every owner's rules, and their delivery logs the first time. */
  private load(): Promise<void> {
    return (this.loaded ??= (async () => {
      const started = this.changes;
      const owners = await this.options.records.get<string[]>(OWNERS_KIND, OWNERS_ID, SYSTEM_OWNER);
      const rules = new Map<string, AlertRule>();
      for (const owner of owners?.body ?? []) {
        for (const r of await this.options.records.list<AlertRule>(ALERT_KIND, owner)) rules.set(r.id, r.body);
      }
      // A rule changed here meanwhile is in this.rules already; the read may predate it.
      if (this.changes !== started) {
        this.loaded = null;
        return;
      }
      this.rules = rules;
      if (!this.restored) {
        this.restored = true;
        for (const rule of rules.values()) {
          if (this.engine.log.list(rule.id).length > 0) continue;
          const stored = await this.options.records.get<DeliveryRecord[]>(DELIVERIES_KIND, rule.id, rule.userId);
          if (stored) this.engine.log.restore(stored.body);
        }
      }
    })().catch((e) => {
      this.loaded = null;
      throw e;
    }));
  }

  private async addOwner(userId: string): Promise<void> {
    await this.load();
    const owners = (await this.options.records.get<string[]>(OWNERS_KIND, OWNERS_ID, SYSTEM_OWNER))?.body ?? [];
    if (owners.includes(userId)) return;
    await this.options.records.put([{ kind: OWNERS_KIND, id: OWNERS_ID, userId: SYSTEM_OWNER, body: [...owners, userId] }]);
  }
}

const notFound = (id: string) => new HttpError(404, 'not_found', `No alert rule ${id}`);
