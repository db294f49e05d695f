// What a notification says: a subject and text for e-mail, and a JSON body for webhooks whose
// `text` field is what Slack (and Slack-compatible chat tools) show.
import type { Batch } from './cooldown.ts';
import type { Alert } from './evaluate.ts';
import type { AlertKind, AlertRule } from './rules.ts';

export interface Notification {
  /** Unique per notification; webhook retries repeat it (X-Watchtower-Delivery), so receivers can drop duplicates. */
  id: string;
  ruleId: string;
  userId: string;
  kind: AlertKind;
  /** The rule's project (null: all projects). */
  project: string | null;
  /** How many alerts this notification stands for; `alerts` holds the first of them. */
  count: number;
  alerts: Alert[];
  createdAt: string;
  /** A test the rule's owner asked for (POST /api/alerts/:id/test): says so, and stands for no alert. */
  test?: boolean;
}

export function notificationOf(rule: AlertRule, batch: Batch, now: number, id: string = crypto.randomUUID()): Notification {
  return { id, ruleId: rule.id, userId: rule.userId, kind: rule.kind, project: rule.project, count: batch.count, alerts: batch.alerts, createdAt: new Date(now).toISOString() };
}

/** Where messages link to. */
export interface Links {
  issue(id: string): string;
  issues(project: string | null): string;
  alerts(): string;
}

/** Page links under the service's public URL: /issues/?id=<id>, /issues/?project=<id>, /alerts/ (README, "Issues"). */
export function dashboardLinks(publicUrl: string): Links {
  const base = publicUrl.replace(/\/+$/, '');
  return {
    issue: (id) => `${base}/issues/?id=${encodeURIComponent(id)}`,
    issues: (project) => `${base}/issues/${project ? `?project=${encodeURIComponent(project)}` : ''}`,
    alerts: () => `${base}/alerts/`,
  };
}

const ms = (n: number) => `${Math.round(n).toLocaleString('en-US')} ms`;
const where = (project: string | null) => (project ? ` in ${project}` : '');
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** Client text (titles, culprits, routes) on one line: a line break must not forge a header or a list item. */
const flat = (s: string) => s.replace(/[\r\n\t]+/g, ' ');

/** One line per alert. */
function line(a: Alert): string {
  return flat(describe(a));
}

function describe(a: Alert): string {
  switch (a.kind) {
    case 'new_issue':
      return `New issue${where(a.issue.project)}: ${a.issue.title}${a.issue.culprit ? ` at ${a.issue.culprit}` : ''}`;
    case 'regression':
      return `Regression${where(a.issue.project)}: ${a.issue.title} is back${a.issue.version ? ` in ${a.issue.version}` : ''} after it was resolved`;
    case 'error_spike':
      return `Error spike${where(a.project)}: ${a.errors} errors in the last 5 minutes (threshold ${a.threshold}; the previous hour averaged ${a.baselinePer5Minutes} per 5 minutes)`;
    case 'slow_route':
      return `Slow route${where(a.project)}: ${a.route} page loads p95 ${ms(a.p95)} over the last 15 minutes (threshold ${ms(a.threshold)}, ${plural(a.samples, 'load', 'loads')})`;
  }
}

const link = (a: Alert, links: Links, project: string | null): string =>
  a.kind === 'new_issue' || a.kind === 'regression' ? links.issue(a.issue.id) : links.issues(a.project ?? project);

const HEADINGS: Record<AlertKind, [string, string]> = {
  new_issue: ['New issue', 'new issues'],
  regression: ['Regression', 'regressions'],
  error_spike: ['Error spike', 'error spikes'],
  slow_route: ['Slow route', 'slow-route alerts'],
};

/**
 * Subject, summary (the message itself) and text (summary and a footer naming the rule) of a
 * notification; a burst says how many and lists the first ones.
 */
export function render(n: Notification, links: Links): { subject: string; summary: string; text: string } {
  const first = n.alerts[0];
  const [one, many] = HEADINGS[n.kind];
  if (n.test) {
    const summary = `Test notification: your ${one.toLowerCase()} alert rule${where(n.project)} reaches this channel. Its alerts will link to ${links.issues(n.project)}`;
    return { subject: `[Watchtower] Test of your ${one.toLowerCase()} alert rule${where(n.project)}`, summary, text: `${summary}\n\n--\n${one} alert rule ${n.ruleId}. Manage your alerts: ${links.alerts()}\n` };
  }
  const subject = n.count === 1 && first
    ? `[Watchtower] ${line(first)}`.slice(0, 200)
    : `[Watchtower] ${n.count} ${many}${where(n.project)}`;
  const lines = n.count === 1 && first
    ? [line(first), link(first, links, n.project)]
    : [
        `${n.count} ${many}${where(n.project)} since the last message (alerts are sent at most once per cool-down):`,
        ...n.alerts.map((a) => `- ${line(a)}\n  ${link(a, links, n.project)}`),
        ...(n.count > n.alerts.length ? [`…and ${n.count - n.alerts.length} more: ${links.issues(n.project)}`] : []),
      ];
  const summary = lines.join('\n');
  return { subject, summary, text: `${summary}\n\n--\n${one} alert rule ${n.ruleId}. Manage your alerts: ${links.alerts()}\n` };
}

/**
 * The webhook body: `text` (Slack-compatible) and the structured notification. Serialised once, so
 * every retry sends the same bytes under the same signature.
 */
export function webhookBody(n: Notification, links: Links): string {
  return JSON.stringify({
    text: render(n, links).summary,
    id: n.id,
    kind: n.kind,
    rule: { id: n.ruleId, kind: n.kind, project: n.project },
    count: n.count,
    alerts: n.alerts.map((a) => ({ ...a, at: new Date(a.at).toISOString(), url: link(a, links, n.project) })),
    createdAt: n.createdAt,
    ...(n.test ? { test: true } : {}),
  });
}
