// Alert rules, evaluation, cool-downs, messages and signatures (lib/alerts/*), without servers.
// Deliveries to real SMTP and webhook servers: alerts-delivery.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac } from 'node:crypto';
import { ConfigError } from '../lib/config.ts';
import { normalise, type RawEvent } from '../lib/event.ts';
import { HttpError } from '../lib/http.ts';
import { loadAlertConfig } from '../lib/alerts/config.ts';
import { BATCH_SAMPLES, idleCooldown, stepCooldown } from '../lib/alerts/cooldown.ts';
import { DEFAULT_RETRY, retryDelay } from '../lib/alerts/delivery.ts';
import { type Alert, evaluateErrorSpike, evaluateSlowRoute, evaluateTransition, SPIKE_FACTOR } from '../lib/alerts/evaluate.ts';
import { dashboardLinks, notificationOf, render, webhookBody } from '../lib/alerts/message.ts';
import { RecentMetrics } from '../lib/alerts/recent.ts';
import { type AlertRule, COOLDOWN_MS, parseAlertRule, patchAlertRule, publicRule } from '../lib/alerts/rules.ts';
import { signBody, verifySignature } from '../lib/alerts/webhook.ts';
import { applyEvent, type IssueEvent, setStatus } from '../lib/issues/state.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const MIN = 60_000;
const links = dashboardLinks('https://watchtower.example.com/');

const rule = (over: Partial<AlertRule> = {}): AlertRule => ({
  id: 'r1', userId: 'u1', project: null, kind: 'new_issue', threshold: null, route: null, cooldownMs: COOLDOWN_MS,
  webhook: null, email: ['dev@example.com'], enabled: true, createdAt: new Date(T0).toISOString(), ...over,
});
let seq = 0;
const issueEvent = (over: Partial<IssueEvent> = {}): IssueEvent => ({
  id: `e${++seq}`, fingerprint: `fp${seq}`, title: 'TypeError: x is undefined', culprit: 'applyCoupon (/assets/app.js)',
  owner: 'u1', project: 'shop', sessionId: 's1', version: '1.4.0', ...over,
});

function expect400(fn: () => unknown, field: string) {
  try {
    fn();
  } catch (e) {
    assert.instance(e, HttpError);
    assert.is((e as HttpError).status, 400);
    assert.is((e as HttpError).code, 'invalid_body');
    assert.ok((e as Error).message.includes(`"${field}"`), (e as Error).message);
    return;
  }
  assert.unreachable(`expected a 400 about ${field}`);
}

test('parseAlertRule: defaults, a generated webhook secret, and what each kind needs', () => {
  const ctx = { userId: 'u1', id: 'r9', now: T0 };
  const r = parseAlertRule({ on: 'new_issue', webhook: 'https://hooks.example.com/x' }, ctx);
  assert.equal({ ...r, webhook: { ...r.webhook!, secret: '' } }, {
    id: 'r9', userId: 'u1', project: null, kind: 'new_issue', threshold: null, route: null, environment: null, cooldownMs: COOLDOWN_MS,
    webhook: { url: 'https://hooks.example.com/x', secret: '' }, email: [], enabled: true, createdAt: '2026-05-16T12:00:00.000Z',
  });
  assert.match(r.webhook!.secret, /^[0-9a-f]{64}$/);
  assert.is(publicRule(r).webhook, 'https://hooks.example.com/x');
  assert.is((publicRule(r) as { secret?: string }).secret, undefined, 'the secret is not shown again');
  assert.is(publicRule(r, { secret: true }).secret, r.webhook!.secret, 'but once, on creation');
  const spike = parseAlertRule({ on: 'error_spike', threshold: 20, project: 'shop', email: 'dev@example.com', cooldownMinutes: 30 }, ctx);
  assert.equal([spike.threshold, spike.project, spike.email, spike.cooldownMs], [20, 'shop', ['dev@example.com'], 30 * MIN]);
  const slow = parseAlertRule({ on: 'slow_route', threshold: 2000, route: '/checkout', email: ['a@example.com', 'b@example.com'] }, ctx);
  assert.equal([slow.route, slow.email.length], ['/checkout', 2]);

  expect400(() => parseAlertRule({ on: 'everything', email: 'a@example.com' }, ctx), 'on');
  expect400(() => parseAlertRule({ on: 'new_issue' }, ctx), 'webhook');
  expect400(() => parseAlertRule({ on: 'error_spike', email: 'a@example.com' }, ctx), 'threshold');
  expect400(() => parseAlertRule({ on: 'new_issue', threshold: 5, email: 'a@example.com' }, ctx), 'threshold');
  expect400(() => parseAlertRule({ on: 'new_issue', webhook: 'ftp://x' }, ctx), 'webhook');
  expect400(() => parseAlertRule({ on: 'new_issue', email: 'not an address' }, ctx), 'email');
  expect400(() => parseAlertRule({ on: 'new_issue', email: 'a@example.com', cooldownMinutes: 0 }, ctx), 'cooldownMinutes');
  expect400(() => parseAlertRule({ on: 'new_issue', email: 'a@example.com', route: '/x' }, ctx), 'route');
  expect400(() => parseAlertRule({ on: 'new_issue', email: 'a@example.com', owner: 'u2' }, ctx), 'owner');
  expect400(() => parseAlertRule({ on: 'new_issue', webhook: 'https://h.example.com', secret: 'short' }, ctx), 'secret');
});

test('patchAlertRule: changes what is given, keeps id, creation time and secret, and checks the whole', () => {
  const r = parseAlertRule({ on: 'new_issue', webhook: 'https://hooks.example.com/x' }, { userId: 'u1', id: 'r9', now: T0 });
  const p = patchAlertRule(r, { enabled: false, email: 'dev@example.com' });
  assert.equal([p.id, p.createdAt, p.enabled, p.email, p.webhook], [r.id, r.createdAt, false, ['dev@example.com'], r.webhook]);
  const spike = patchAlertRule(r, { on: 'error_spike', threshold: 5 });
  assert.equal([spike.kind, spike.threshold], ['error_spike', 5]);
  assert.equal(patchAlertRule(spike, { on: 'regression' }).threshold, null, 'a kind without a threshold drops it');
  assert.equal(patchAlertRule(p, { webhook: null }).webhook, null);
  expect400(() => patchAlertRule(r, { webhook: null }), 'webhook');
  expect400(() => patchAlertRule(r, { cooldownMinutes: 'soon' }), 'cooldownMinutes');
  expect400(() => patchAlertRule(r, { id: 'other' }), 'id');
});

test('evaluateTransition: new_issue and regression rules hear their own transition, for their owner and project', () => {
  const created = applyEvent(null, issueEvent(), T0);
  assert.equal(evaluateTransition(rule(), created.issue, created.transition, T0), {
    kind: 'new_issue', at: T0,
    issue: { id: created.issue.id, title: 'TypeError: x is undefined', culprit: 'applyCoupon (/assets/app.js)', project: 'shop', count: 1, firstSeen: created.issue.firstSeen, lastSeen: created.issue.lastSeen, version: '1.4.0' },
  });
  assert.is(evaluateTransition(rule({ kind: 'regression' }), created.issue, created.transition, T0), null);
  assert.is(evaluateTransition(rule({ userId: 'u2' }), created.issue, created.transition, T0), null, 'another owner');
  assert.is(evaluateTransition(rule({ project: 'blog' }), created.issue, created.transition, T0), null, 'another project');
  assert.ok(evaluateTransition(rule({ project: 'shop' }), created.issue, created.transition, T0));
  assert.is(evaluateTransition(rule({ enabled: false }), created.issue, created.transition, T0), null, 'disabled');
  const again = applyEvent(created.issue, issueEvent({ fingerprint: created.issue.fingerprint }), T0 + 1);
  assert.is(evaluateTransition(rule(), again.issue, again.transition, T0), null, 'no transition, no alert');

  const resolved = setStatus(again.issue, { status: 'resolved' }, T0 + MIN);
  const back = applyEvent(resolved, issueEvent({ fingerprint: created.issue.fingerprint, version: '1.5.0' }), T0 + 2 * MIN);
  const alert = evaluateTransition(rule({ kind: 'regression' }), back.issue, back.transition, T0 + 2 * MIN);
  assert.is(alert?.kind, 'regression');
});

test(`evaluateErrorSpike: above the threshold and above ${SPIKE_FACTOR}× the previous hour's rate`, () => {
  const r = rule({ kind: 'error_spike', threshold: 20 });
  assert.is(evaluateErrorSpike(r, { last5Minutes: 20, previousHour: 0 }, T0), null, 'at the threshold is not above it');
  assert.equal(evaluateErrorSpike(r, { last5Minutes: 21, previousHour: 0 }, T0), { kind: 'error_spike', at: T0, project: null, errors: 21, threshold: 20, baselinePer5Minutes: 0 });
  // 120 errors in the previous hour: 10 per 5 minutes; a spike needs more than 30.
  assert.is(evaluateErrorSpike(r, { last5Minutes: 30, previousHour: 120 }, T0), null, 'a steady high rate is not a spike');
  assert.ok(evaluateErrorSpike(r, { last5Minutes: 31, previousHour: 120 }, T0));
  assert.is(evaluateErrorSpike(rule({ kind: 'slow_route', threshold: 20 }), { last5Minutes: 100, previousHour: 0 }, T0), null, 'other kinds');
});

test('evaluateSlowRoute: p95 over the threshold from enough page loads; the slowest route; one route when set', () => {
  const r = rule({ kind: 'slow_route', threshold: 2000 });
  assert.is(evaluateSlowRoute(r, { '/checkout': [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000] }, T0), null);
  const alert = evaluateSlowRoute(r, { '/': [900, 2100, 2500, 2600, 2700], '/checkout': [3000, 3100, 3200, 3300, 3400, 3500] }, T0);
  assert.equal(alert, { kind: 'slow_route', at: T0, project: null, route: '/checkout', p95: 3500, samples: 6, threshold: 2000 });
  assert.is(evaluateSlowRoute(r, { '/checkout': [9000, 9000, 9000, 9000] }, T0), null, 'four loads are too few');
  assert.is(evaluateSlowRoute(rule({ kind: 'slow_route', threshold: 2000, route: '/' }), { '/checkout': Array(20).fill(5000) }, T0), null, 'another route');
});

test('cool-down: the first alert goes at once, later ones are held and counted, then sent as one', () => {
  const a = (i: number): Alert => ({ kind: 'error_spike', at: T0 + i, project: null, errors: i, threshold: 1, baselinePer5Minutes: 0 });
  let s = idleCooldown();
  let step = stepCooldown(s, [a(1)], T0, 10 * MIN);
  assert.equal(step.batch, { alerts: [a(1)], count: 1 });
  s = step.state;
  step = stepCooldown(s, [a(2), a(3)], T0 + MIN, 10 * MIN);
  assert.is(step.batch, null, 'within the cool-down');
  s = step.state;
  step = stepCooldown(s, [], T0 + 5 * MIN, 10 * MIN);
  assert.is(step.batch, null);
  s = step.state;
  const many = Array.from({ length: 20 }, (_, i) => a(10 + i));
  step = stepCooldown(s, many, T0 + 10 * MIN, 10 * MIN);
  assert.is(step.batch!.count, 22, 'everything held, counted');
  assert.is(step.batch!.alerts.length, BATCH_SAMPLES);
  assert.equal(step.batch!.alerts.slice(0, 2), [a(2), a(3)], 'the first ones are shown');
  assert.equal(stepCooldown(step.state, [], T0 + 30 * MIN, 10 * MIN).batch, null, 'nothing held, nothing sent');
});

test('messages: one alert names the issue and links to it; a burst says how many', () => {
  const issue = applyEvent(null, issueEvent({ title: 'TypeError: x is undefined' }), T0).issue;
  const one = notificationOf(rule(), { alerts: [{ kind: 'new_issue', at: T0, issue: { ...issue, version: '1.4.0' } }], count: 1 }, T0, 'n1');
  const r1 = render(one, links);
  assert.is(r1.subject, '[Watchtower] New issue in shop: TypeError: x is undefined at applyCoupon (/assets/app.js)');
  assert.ok(r1.text.includes(`https://watchtower.example.com/issues/?id=${issue.id}`));
  assert.ok(r1.text.includes('https://watchtower.example.com/alerts/'));

  const alerts: Alert[] = Array.from({ length: 3 }, (_, i) => ({ kind: 'new_issue', at: T0, issue: { ...issue, id: `i${i}`, title: `Error ${i}`, version: null } }));
  const burst = notificationOf(rule({ project: 'shop' }), { alerts, count: 12 }, T0, 'n2');
  const r2 = render(burst, links);
  assert.is(r2.subject, '[Watchtower] 12 new issues in shop');
  assert.ok(r2.text.startsWith('12 new issues in shop since the last message'));
  assert.ok(r2.text.includes('Error 2') && r2.text.includes('/issues/?id=i2'));
  assert.ok(r2.text.includes('…and 9 more: https://watchtower.example.com/issues/?project=shop'));

  const forged = notificationOf(rule(), { alerts: [{ kind: 'new_issue', at: T0, issue: { ...issue, title: 'Error: a\r\nBcc: victim@example.com', version: null } }], count: 1 }, T0, 'n3');
  assert.is(render(forged, links).subject, '[Watchtower] New issue in shop: Error: a Bcc: victim@example.com at applyCoupon (/assets/app.js)', 'client text stays on one line');

  const body = JSON.parse(webhookBody(burst, links));
  assert.is(body.text, r2.summary, 'Slack shows text');
  assert.equal([body.id, body.kind, body.count, body.rule], ['n2', 'new_issue', 12, { id: 'r1', kind: 'new_issue', project: 'shop' }]);
  assert.is(body.alerts[0].url, 'https://watchtower.example.com/issues/?id=i0');
  assert.is(body.alerts[0].at, '2026-05-16T12:00:00.000Z');
});

test('signatures: HMAC-SHA256 of the exact body, as node:crypto computes it; verification rejects any change', async () => {
  const body = '{"text":"New issue: TypeError"}';
  const header = await signBody('s3cret-s3cret-s3cret', body);
  assert.is(header, `sha256=${createHmac('sha256', 's3cret-s3cret-s3cret').update(body).digest('hex')}`);
  assert.ok(await verifySignature('s3cret-s3cret-s3cret', body, header));
  assert.ok(await verifySignature('s3cret-s3cret-s3cret', new TextEncoder().encode(body), header));
  assert.not.ok(await verifySignature('s3cret-s3cret-s3cret', body.replace('New', 'Old'), header));
  assert.not.ok(await verifySignature('another-secret-here', body, header));
  assert.not.ok(await verifySignature('s3cret-s3cret-s3cret', body, header.replace('sha256=', 'sha1=')));
  assert.not.ok(await verifySignature('s3cret-s3cret-s3cret', body, null));
});

test('retryDelay: doubles from the base, capped, at most half taken off by jitter', () => {
  assert.equal([1, 2, 3, 4].map((n) => retryDelay(n, DEFAULT_RETRY, 0)), [1000, 2000, 4000, 8000]);
  assert.is(retryDelay(1, DEFAULT_RETRY, 1), 500);
  assert.is(retryDelay(20, DEFAULT_RETRY, 0), DEFAULT_RETRY.maxDelayMs);
});

test('RecentMetrics: errors in the last 5 minutes and the hour before, durations of the last 15 minutes', () => {
  const m = new RecentMetrics();
  let n = 0;
  // The project is the server's to set (from a project key): given here beside the client's fields.
  const at = ({ projectId, ...raw }: RawEvent & { projectId?: string }, t: number, owner = 'u1') =>
    m.record({ ...normalise(raw, { now: t, owner, newId: () => `m${++n}` }), ...(projectId ? { projectId } : {}) });
  for (let i = 0; i < 12; i++) at({ type: 'error', projectId: 'shop' }, T0 - 30 * MIN);
  for (let i = 0; i < 3; i++) at({ type: 'error', projectId: 'blog' }, T0 - 2 * MIN);
  at({ type: 'error', projectId: 'shop' }, T0);
  at({ type: 'error', projectId: 'shop' }, T0 - 90 * MIN); // too old for both windows
  at({ type: 'error', projectId: 'shop' }, T0, 'u2');
  at({ type: 'click' }, T0);
  assert.equal(m.errorCounts('u1', 'shop', T0), { last5Minutes: 1, previousHour: 12 });
  assert.equal(m.errorCounts('u1', null, T0), { last5Minutes: 4, previousHour: 12 });
  assert.equal(m.errorCounts('nobody', null, T0), { last5Minutes: 0, previousHour: 0 });

  at({ type: 'pageload', projectId: 'shop', route: '/checkout', data: { duration: 3000 } }, T0 - 20 * MIN);
  at({ type: 'pageload', projectId: 'shop', route: '/checkout', data: { duration: 2500 } }, T0 - 5 * MIN);
  at({ type: 'pageload', projectId: 'shop', url: 'https://shop.example.com/?q=1', data: { duration: 800 } }, T0);
  at({ type: 'pageload', projectId: 'shop', route: '/checkout', data: {} }, T0);
  assert.equal(m.routeDurations('u1', 'shop', T0), { '/checkout': [2500], '/': [800] });
  assert.equal(m.routeDurations('u1', 'blog', T0), {});
});

test('loadAlertConfig: SMTP_URL needs ALERT_FROM; bad values name their variable', () => {
  assert.equal(loadAlertConfig({}), { smtpUrl: null, alertFrom: null, publicUrl: 'http://localhost:3000', allowPrivateWebhooks: false });
  assert.equal(loadAlertConfig({ SMTP_URL: 'smtp://u:p@mail.example.com:587', ALERT_FROM: 'Watchtower <alerts@example.com>', SERVICE_PUBLIC_URL: 'https://wt.example.com/' }), {
    smtpUrl: 'smtp://u:p@mail.example.com:587', alertFrom: 'Watchtower <alerts@example.com>', publicUrl: 'https://wt.example.com', allowPrivateWebhooks: false,
  });
  for (const on of ['true', 'TRUE', '1']) assert.is(loadAlertConfig({ ALERT_ALLOW_PRIVATE_WEBHOOKS: on }).allowPrivateWebhooks, true, on);
  for (const off of ['false', '0', '']) assert.is(loadAlertConfig({ ALERT_ALLOW_PRIVATE_WEBHOOKS: off }).allowPrivateWebhooks, false, off);
  for (const [env, variable] of [
    [{ SMTP_URL: 'smtp://mail.example.com' }, 'ALERT_FROM'],
    [{ SMTP_URL: 'http://mail.example.com', ALERT_FROM: 'a@example.com' }, 'SMTP_URL'],
    [{ SMTP_URL: 'not a url', ALERT_FROM: 'a@example.com' }, 'SMTP_URL'],
    [{ ALERT_FROM: 'nobody' }, 'ALERT_FROM'],
    [{ SERVICE_PUBLIC_URL: 'ftp://x' }, 'SERVICE_PUBLIC_URL'],
    [{ ALERT_ALLOW_PRIVATE_WEBHOOKS: 'yes' }, 'ALERT_ALLOW_PRIVATE_WEBHOOKS'],
  ] as const) {
    try {
      loadAlertConfig(env);
      assert.unreachable(JSON.stringify(env));
    } catch (e) {
      assert.instance(e, ConfigError);
      assert.is((e as ConfigError).variable, variable);
    }
  }
});

test.run();
