// Error monitoring behind the handler: stored events → issues (lib/issues) → alerts (lib/alerts),
// wired to the record store. Ingestion only pushes stored events onto the processor's bounded
// queue; grouping, symbolication, issue writes, rule evaluation and deliveries all run on timers
// off the request path, so a slow record store, webhook or SMTP server never slows ingestion.
import type { StoredEvent } from './event.ts';
import type { RecordStore } from './records/types.ts';
import type { Store } from './store/types.ts';
import type { AlertConfig } from './alerts/config.ts';
import type { RetryPolicy } from './alerts/delivery.ts';
import type { ResolveHost } from './alerts/destination.ts';
import type { Mailer } from './alerts/mailer.ts';
import { RecentMetrics } from './alerts/recent.ts';
import { AlertService } from './alerts/service.ts';
import { createSmtpMailer } from './alerts/smtp.ts';
import { IssueProcessor } from './issues/processor.ts';
import { RecordIssueStore } from './issues/records.ts';
import { SourceMapCache } from './issues/sourcemap.ts';
import { SourceMapStore } from './issues/sourcemap-store.ts';

export interface MonitorOptions {
  /** Alert settings (lib/alerts/config.ts loadAlertConfig); default: no SMTP, links to http://localhost:3000. */
  alerts?: AlertConfig;
  /** How e-mail is sent; default: SMTP through SMTP_URL when set (lib/alerts/smtp.ts), else none. */
  mailer?: Mailer | null;
  /** Issues without an event for this many days are deleted (the event store's retention); 0 keeps them. */
  retentionDays?: number;
  /** Source map text one project may hold, bytes (SERVICE_SOURCEMAP_MAX_MB; default 100 MiB). */
  sourceMapQuotaBytes?: number;
  /** How often queued events are grouped, and alerts evaluated (ms). */
  processEveryMs?: number;
  alertTickMs?: number;
  metricsEveryMs?: number;
  /** Webhook retries and timeout (lib/alerts/delivery.ts DEFAULT_RETRY, webhook.ts WEBHOOK_TIMEOUT_MS). */
  retry?: RetryPolicy;
  webhookTimeoutMs?: number;
  fetch?: typeof fetch;
  /**
   * Host-name lookup for webhook destinations: `resolveHost` from the runtime's adapter
   * (lib/adapter/resolve.ts, through watchtower/node, /deno or /bun). Without it, webhooks to host
   * names are refused (they cannot be checked), unless alerts.allowPrivateWebhooks.
   */
  resolveHost?: ResolveHost;
}

export interface Monitor {
  issues: RecordIssueStore;
  sourceMaps: SourceMapStore;
  processor: IssueProcessor;
  alerts: AlertService;
  /** How e-mail goes out (alerts, invitations); null without SMTP_URL. */
  mailer: Mailer | null;
  /** Ingestion's one call: queue stored events (errors and page loads), never waits. */
  push(events: readonly StoredEvent[]): void;
  start(): void;
  /** Groups every error stored so far, then evaluates alerts now (tests). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_ALERT_CONFIG: AlertConfig = { smtpUrl: null, alertFrom: null, publicUrl: 'http://localhost:3000', allowPrivateWebhooks: false };
export const PROCESS_EVERY_MS = 500;

/** How long closing may keep grouping errors; what is left is grouped at the next start. */
export const CLOSE_GROUPING_MS = 3_000;

export function createMonitor(store: Store, records: RecordStore, deps: { now: () => number; log: (msg: string) => void }, options: MonitorOptions = {}): Monitor {
  const config = options.alerts ?? DEFAULT_ALERT_CONFIG;
  // smtp.ts loads nodemailer only when the first message goes out.
  const mailer = options.mailer !== undefined ? options.mailer
    : config.smtpUrl && config.alertFrom ? createSmtpMailer({ url: config.smtpUrl, from: config.alertFrom }) : null;
  const days = options.retentionDays ?? 0;
  const issues = new RecordIssueStore(records, { retentionMs: days > 0 ? days * 86_400_000 : undefined });
  const sourceMaps = new SourceMapStore(records, { now: deps.now, projectQuotaBytes: options.sourceMapQuotaBytes });
  const metrics = new RecentMetrics();
  const alerts = new AlertService({
    records,
    config,
    mailer,
    metrics,
    fetch: options.fetch,
    resolveHost: options.resolveHost,
    retry: options.retry,
    webhookTimeoutMs: options.webhookTimeoutMs,
    now: deps.now,
    log: deps.log,
    tickMs: options.alertTickMs,
    metricsMs: options.metricsEveryMs,
  });
  const processor = new IssueProcessor({
    issues,
    records,
    source: store,
    sourceMaps: (owner, project) => sourceMaps.lookup(owner, project),
    cache: new SourceMapCache(),
    onTransition: (change) => alerts.push(change),
    onEvent: (event) => metrics.record(event),
    onError: (e, event) => deps.log(`issue processing failed${event ? ` for event ${event.id}` : ''}: ${e instanceof Error ? e.message : String(e)}`),
  });
  return {
    issues,
    sourceMaps,
    processor,
    alerts,
    mailer,
    push: (events) => processor.push(events),
    start() {
      processor.start(options.processEveryMs ?? PROCESS_EVERY_MS);
      alerts.start();
    },
    async flush() {
      await processor.drain();
      await alerts.engine.tick();
    },
    async close() {
      // The store is the queue: errors not grouped by then are read again at the next start.
      processor.stop(CLOSE_GROUPING_MS);
      await processor.drain().catch(() => {});
      await alerts.engine.tick().catch(() => {});
      await alerts.stop();
    },
  };
}
