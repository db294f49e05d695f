// /alerts/: the signed-in user's alert rules: create one, send a test, delete it, and see how its
// recent deliveries went. Everything from the API reaches the page through textContent.
import type { DeliveryRecord } from '../../lib/alerts/delivery.ts';
import { byId, el, formatTime } from './lib/dom.ts';
import { api } from './lib/session.ts';
import { problemOf, showFailure, showPage, signedIn } from './lib/shell.ts';

interface Rule {
  id: string;
  on: string;
  project: string | null;
  threshold: number | null;
  route: string | null;
  environment?: string | null;
  cooldownMinutes: number;
  email: string[];
  webhook: string | null;
  secret?: string;
  enabled: boolean;
  createdAt: string;
  deliveries: DeliveryRecord[];
}

const KINDS: [string, string][] = [
  ['new_issue', 'A new issue'],
  ['regression', 'A regression (a resolved issue is back)'],
  ['error_spike', 'An error spike'],
  ['slow_route', 'A slow route (page-load p95)'],
];

const root = byId('alerts');
const notice = el('p', { class: 'problem', attrs: { role: 'alert' } });
const secretNote = el('p', { class: 'dev-badge', attrs: { role: 'status' } });
const emailState = el('p', { class: 'note', attrs: { 'data-email-channel': '' } });
const list = el('div', { class: 'rules' });

if (await signedIn('alerts')) {
  root.replaceChildren(el('h1', { text: 'Alerts' }), emailState, notice, secretNote, form(), el('h2', { text: 'Your rules' }), list);
  notice.hidden = true;
  secretNote.hidden = true;
  await load().then(showPage, (err) => showFailure('Alerts', err));
}

function problem(text: string | null) {
  notice.textContent = text ?? '';
  notice.hidden = text === null;
}

async function load(): Promise<void> {
  const r = await api('/api/alerts');
  if (!r.ok) throw new Error(await problemOf(r));
  const { alerts, email } = (await r.json()) as { alerts: Rule[]; email: { enabled: boolean } };
  emailState.textContent = email.enabled
    ? 'E-mail alerts are enabled.'
    : 'E-mail is disabled on this service (no SMTP server is configured: SMTP_URL). Webhooks work.';
  emailState.dataset.emailChannel = email.enabled ? 'enabled' : 'disabled';
  list.replaceChildren(...(alerts.length ? alerts.map(ruleCard) : [el('p', { class: 'empty', text: 'No rules yet.' })]));
}

function describe(rule: Rule): string {
  const kind = KINDS.find(([k]) => k === rule.on)?.[1] ?? rule.on;
  const extra = rule.on === 'error_spike' ? `, more than ${rule.threshold} errors in 5 minutes`
    : rule.on === 'slow_route' ? `, p95 over ${rule.threshold} ms${rule.route ? ` on ${rule.route}` : ''}` : '';
  return `${kind}${extra}${rule.project ? ` in project ${rule.project}` : ''}${rule.environment ? ` (${rule.environment} only)` : ''}; at most one message every ${rule.cooldownMinutes} min`;
}

function ruleCard(rule: Rule): HTMLElement {
  const test = el('button', { text: 'Send a test', attrs: { type: 'button', 'data-action': 'test' } });
  test.addEventListener('click', async () => {
    const r = await api(`/api/alerts/${encodeURIComponent(rule.id)}/test`, { method: 'POST' });
    if (!r.ok) return problem(`The test could not be sent: ${await problemOf(r)}`);
    problem(null);
    // Deliveries progress in the background (retries take seconds): show them as they go.
    for (const wait of [300, 1000, 3000]) setTimeout(() => void load(), wait);
  });
  const remove = el('button', { text: 'Delete', attrs: { type: 'button', 'data-action': 'delete' } });
  remove.addEventListener('click', async () => {
    const r = await api(`/api/alerts/${encodeURIComponent(rule.id)}`, { method: 'DELETE' });
    if (!r.ok) return problem(`The rule could not be deleted: ${await problemOf(r)}`);
    await load();
  });
  const channels = [...rule.email.map((a) => `e-mail ${a}`), ...(rule.webhook ? [`webhook ${rule.webhook}`] : [])].join(', ');
  const deliveries = rule.deliveries.length
    ? el('div', { class: 'table-wrap' }, el('table', { class: 'deliveries' },
        el('thead', {}, el('tr', {}, ...['When', 'Channel', 'Message', 'Status', 'Attempts', 'Last error'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
        el('tbody', {}, ...rule.deliveries.map((d) => el('tr', { attrs: { 'data-delivery': d.id } },
          el('td', { text: formatTime(d.updatedAt) }),
          el('td', { text: `${d.channel} (${d.target})` }),
          el('td', { class: 'details', text: d.subject }),
          el('td', {}, el('span', { class: `tag tag-delivery-${d.status}`, text: d.status, attrs: { 'data-delivery-status': d.status } })),
          el('td', { class: 'num', text: String(d.attempts) }),
          el('td', { class: 'details', text: d.lastError ?? '' }))))))
    : el('p', { class: 'empty', text: 'Nothing sent yet.' });
  return el('section', { class: 'panel rule', attrs: { 'data-rule': rule.id } },
    el('h3', { text: describe(rule) }),
    el('p', { class: 'note', text: `To: ${channels}${rule.enabled ? '' : ' (disabled)'}` }),
    el('div', { class: 'actions' }, test, remove),
    deliveries);
}

function form(): HTMLElement {
  const input = (name: string, label: string, attrs: Record<string, string> = {}) => {
    const i = el('input', { attrs: { name, autocomplete: 'off', ...attrs } });
    return [el('label', {}, el('span', { text: label }), i), i] as const;
  };
  const on = el('select', { attrs: { name: 'on' } }, ...KINDS.map(([v, t]) => el('option', { text: t, attrs: { value: v } })));
  const [emailLabel, email] = input('email', 'E-mail to', { type: 'email', placeholder: 'dev@example.com' });
  const [webhookLabel, webhook] = input('webhook', 'Webhook URL', { type: 'url', placeholder: 'https://hooks.slack.com/…' });
  const [projectLabel, project] = input('project', 'Project id (optional)', { inputmode: 'numeric' });
  const [thresholdLabel, threshold] = input('threshold', 'Threshold', { type: 'number', min: '1' });
  const [routeLabel, route] = input('route', 'Route (optional)', { placeholder: '/checkout' });
  const [environmentLabel, environment] = input('environment', 'Environment (optional)', { placeholder: 'production', maxlength: '64' });
  const [cooldownLabel, cooldown] = input('cooldownMinutes', 'Cool-down (minutes)', { type: 'number', min: '1', max: '1440', value: '10' });
  const submit = el('button', { text: 'Create rule', class: 'primary', attrs: { type: 'submit' } });
  const sync = () => {
    thresholdLabel.hidden = on.value !== 'error_spike' && on.value !== 'slow_route';
    (thresholdLabel.firstChild as HTMLElement).textContent = on.value === 'slow_route' ? 'p95 threshold (ms)' : 'Errors in 5 minutes above';
    routeLabel.hidden = on.value !== 'slow_route';
  };
  on.addEventListener('change', sync);
  sync();
  const f = el('form', { class: 'panel dev-form alert-form', attrs: { 'aria-label': 'New alert rule' } },
    el('h2', { text: 'New rule' }),
    el('label', {}, el('span', { text: 'Alert me on' }), on),
    thresholdLabel, routeLabel, emailLabel, webhookLabel, projectLabel, environmentLabel, cooldownLabel, submit);
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body: Record<string, unknown> = { on: on.value, cooldownMinutes: Number(cooldown.value) || 10 };
    if (email.value.trim()) body.email = email.value.trim();
    if (webhook.value.trim()) body.webhook = webhook.value.trim();
    if (project.value.trim()) body.project = project.value.trim();
    if (environment.value.trim()) body.environment = environment.value.trim();
    if (!thresholdLabel.hidden) body.threshold = Number(threshold.value);
    if (!routeLabel.hidden && route.value.trim()) body.route = route.value.trim();
    const r = await api('/api/alerts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) return problem(`The rule could not be created: ${await problemOf(r)}`);
    problem(null);
    const { alert } = (await r.json()) as { alert: Rule };
    secretNote.hidden = !alert.secret;
    secretNote.textContent = alert.secret ? `Webhook signing secret (shown only now): ${alert.secret}` : '';
    f.reset();
    sync();
    await load();
  });
  return f;
}
