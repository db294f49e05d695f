// Alerts through the API (docs/api.md#alerts), end to end with real servers on 127.0.0.1: rules
// created over HTTP, errors ingested over HTTP, e-mail received by an SMTP server (smtp-server) that
// the service reaches through SMTP_URL, and signed JSON received by a webhook receiver that fails on
// purpose. The handler's clock is injected, so cool-downs need no waiting.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { app } from './helpers/app.ts';
import { loadAlertConfig } from '../lib/alerts/config.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const MIN = 60_000;
const PUBLIC_URL = 'https://watchtower.example.com';
const INTERNAL = { SERVICE_PUBLIC_URL: PUBLIC_URL, ALERT_ALLOW_PRIVATE_WEBHOOKS: 'true' };

interface Hook { url: string; received: { body: string; signature: string; delivery: string }[]; failFirst: number; close(): Promise<void> }

/** A webhook receiver that answers 500 to its first `failFirst` requests. */
async function webhookReceiver(failFirst = 0): Promise<Hook> {
  const hook: Hook = { url: '', received: [], failFirst, close: async () => {} };
  let seen = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (++seen <= hook.failFirst) return void res.writeHead(500).end('not now');
      hook.received.push({ body, signature: String(req.headers['x-watchtower-signature']), delivery: String(req.headers['x-watchtower-delivery']) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hook.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  hook.close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return hook;
}

/** A receiver checks the signature as README "Alerts" tells it to: HMAC-SHA256 of the raw body. */
function signatureValid(secret: string, body: string, header: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

async function smtpServer() {
  const mails: { to: string[]; raw: string }[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth: (auth, _s, cb) => (auth.username === 'alerts' && auth.password === 'secret' ? cb(null, { user: 'alerts' }) : cb(new Error('Invalid username or password'))),
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((a) => a.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.server.address() as AddressInfo).port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Headers unfolded, body with quoted-printable soft breaks and escapes decoded. */
function readMail(raw: string): { headers: string; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split).replace(/\r\n(?=[ \t])/g, '');
  let body = raw.slice(split + 4);
  if (/content-transfer-encoding: quoted-printable/i.test(headers)) {
    body = body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
  return { headers, body };
}

async function setup(smtpPort?: number) {
  const clock = { now: T0 };
  const records = createMemoryRecords();
  await records.put([{ kind: 'project', id: '7', userId: 'u1', body: { name: 'shop' } }]);
  const env = smtpPort ? { SMTP_URL: `smtp://alerts:secret@127.0.0.1:${smtpPort}`, ALERT_FROM: 'Watchtower <alerts@watchtower.test>' } : {};
  const a = app({
    records,
    now: () => clock.now,
    // The webhook receivers listen on 127.0.0.1: internal destinations are allowed here.
    monitoring: { alerts: loadAlertConfig({ ...env, ...INTERNAL }), retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 40 } },
  });
  const call = async (method: string, path: string, body?: unknown, user = 'u1') => {
    const res = await a.send(method, path, { headers: a.as(user), body });
    return { status: res.status, body: await res.json() };
  };
  /** Ingests an error, then lets it become an issue and its alerts be delivered. */
  const error = async (message: string, fields: Record<string, unknown> = {}) => {
    assert.is((await a.send('POST', '/api/events', { headers: a.as('u1'), body: { type: 'error', message, ...fields } })).status, 200);
    await settle();
  };
  const settle = async () => {
    await a.handler.monitor.flush();
    await a.handler.monitor.alerts.idle();
  };
  return { ...a, clock, records, call, error, settle };
}

test('rules list in creation order, also when made in the same millisecond', async () => {
  const s = await setup();
  const ids = [];
  for (const on of ['new_issue', 'regression', 'new_issue', 'regression', 'new_issue']) {
    const created = await s.call('POST', '/api/alerts', { on, webhook: 'https://hooks.example.com/x' });
    assert.is(created.status, 201, JSON.stringify(created.body));
    ids.push(created.body.alert.id);
  }
  assert.equal((await s.call('GET', '/api/alerts')).body.alerts.map((r: { id: string }) => r.id), ids);
  await s.handler.close();
});

test('rules: create (the secret shown once), list, change, delete; bad rules are 400, others\' rules 404', async () => {
  const s = await setup();
  const created = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://hooks.example.com/x', project: '7' });
  assert.is(created.status, 201);
  const rule = created.body.alert;
  assert.match(rule.secret, /^[0-9a-f]{64}$/);
  assert.equal([rule.on, rule.project, rule.webhook, rule.cooldownMinutes, rule.enabled, rule.deliveries], ['new_issue', '7', 'https://hooks.example.com/x', 10, true, []]);

  const listed = await s.call('GET', '/api/alerts');
  assert.equal(listed.body.alerts.map((r: { id: string; secret?: string }) => [r.id, r.secret]), [[rule.id, undefined]]);
  assert.is(listed.body.email.enabled, false);

  const changed = await s.call('PATCH', `/api/alerts/${rule.id}`, { on: 'error_spike', threshold: 20, cooldownMinutes: 30 });
  assert.equal([changed.status, changed.body.alert.on, changed.body.alert.threshold, changed.body.alert.cooldownMinutes, changed.body.alert.secret], [200, 'error_spike', 20, 30, undefined]);

  for (const bad of [{}, { on: 'everything', email: 'a@example.com' }, { on: 'new_issue' }, { on: 'slow_route', email: 'a@example.com' }, { on: 'new_issue', email: 'a@example.com', project: '8' }]) {
    const res = await s.call('POST', '/api/alerts', bad);
    assert.equal([res.status, res.body.code], [400, 'invalid_body'], JSON.stringify(bad));
  }
  assert.is((await s.call('PATCH', `/api/alerts/${rule.id}`, { threshold: -1 })).status, 400);
  assert.is((await s.call('PATCH', `/api/alerts/${rule.id}`, { enabled: false }, 'u2')).status, 404);
  assert.is((await s.call('POST', `/api/alerts/${rule.id}/test`, undefined, 'u2')).status, 404);
  assert.is((await s.call('DELETE', `/api/alerts/${rule.id}`, undefined, 'u2')).status, 404);
  assert.equal((await s.call('GET', '/api/alerts', undefined, 'u2')).body.alerts, []);
  assert.is((await s.send('GET', '/api/alerts')).status, 401);

  assert.is((await s.call('DELETE', `/api/alerts/${rule.id}`)).status, 200);
  assert.is((await s.call('DELETE', `/api/alerts/${rule.id}`)).status, 404);
  assert.equal((await s.call('GET', '/api/alerts')).body.alerts, []);
  await s.handler.close();
});

test('a new issue and a regression: e-mail through SMTP with the title and a link, signed webhook JSON', async () => {
  const smtp = await smtpServer();
  const hook = await webhookReceiver();
  const s = await setup(smtp.port);
  try {
    const { body: { alert: onNew } } = await s.call('POST', '/api/alerts', { on: 'new_issue', email: 'dev@example.com', webhook: hook.url });
    await s.call('POST', '/api/alerts', { on: 'regression', email: ['dev@example.com', 'ops@example.com'] });
    assert.is((await s.call('GET', '/api/alerts')).body.email.enabled, true);
    assert.equal((await (await s.send('GET', '/api/health')).json()).alerts.email, 'enabled');

    await s.error('TypeError: cart is undefined');
    const [issue] = (await s.call('GET', '/api/issues')).body.issues;
    assert.is(smtp.mails.length, 1);
    const mail = readMail(smtp.mails[0].raw);
    assert.match(mail.headers, /^Subject: \[Watchtower\] New issue: TypeError: cart is undefined$/m);
    assert.ok(mail.body.includes(`${PUBLIC_URL}/issues/?id=${issue.id}`), mail.body);

    assert.is(hook.received.length, 1);
    const [got] = hook.received;
    assert.ok(signatureValid(onNew.secret, got.body, got.signature), 'the signature checks out with the rule\'s secret');
    assert.not.ok(signatureValid('another secret of some length', got.body, got.signature));
    const json = JSON.parse(got.body);
    assert.equal([json.kind, json.count, json.alerts[0].issue.id, json.id], ['new_issue', 1, issue.id, got.delivery]);
    assert.match(json.text, /^New issue: TypeError: cart is undefined/);

    s.clock.now += MIN;
    await s.call('PATCH', `/api/issues/${issue.id}`, { status: 'resolved' });
    s.clock.now += MIN;
    await s.error('TypeError: cart is undefined');
    assert.is(smtp.mails.length, 2);
    assert.equal(smtp.mails[1].to, ['dev@example.com', 'ops@example.com']);
    const regression = readMail(smtp.mails[1].raw);
    assert.match(regression.headers, /^Subject: \[Watchtower\] Regression: TypeError: cart is undefined is back after it was resolved$/m);
    assert.ok(regression.body.includes(`${PUBLIC_URL}/issues/?id=${issue.id}`));
    assert.is(hook.received.length, 1, 'the new-issue rule does not hear of a regression');

    const alerts = (await s.call('GET', '/api/alerts')).body.alerts;
    const shown = (on: string) => alerts.find((r: { on: string }) => r.on === on).deliveries.map((d: { channel: string; status: string }) => `${d.channel}:${d.status}`).sort();
    assert.equal([shown('new_issue'), shown('regression')], [['email:sent', 'webhook:sent'], ['email:sent']]);
  } finally {
    await s.handler.close();
    await hook.close();
    await smtp.close();
  }
});

test('a failing webhook is retried with backoff until it answers; the deliveries show it', async () => {
  const hook = await webhookReceiver(2);
  const s = await setup();
  try {
    const { body: { alert } } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: hook.url, secret: 'a-secret-of-sixteen+' });
    await s.error('ReferenceError: total is not defined');
    assert.is(hook.received.length, 1);
    assert.ok(signatureValid('a-secret-of-sixteen+', hook.received[0].body, hook.received[0].signature));
    const [d] = (await s.call('GET', '/api/alerts')).body.alerts[0].deliveries;
    assert.equal([d.channel, d.status, d.attempts, d.lastError], ['webhook', 'sent', 3, null]);

    hook.failFirst = Infinity;
    s.clock.now += 11 * MIN;
    await s.error('ReferenceError: price is not defined');
    const [last] = (await s.call('GET', `/api/alerts`)).body.alerts[0].deliveries;
    assert.equal([last.status, last.attempts, last.lastError], ['failed', 3, 'answered 500']);
    assert.is(alert.id, (await s.call('GET', '/api/alerts')).body.alerts[0].id);
  } finally {
    await s.handler.close();
    await hook.close();
  }
});

test('the cool-down merges a burst into one notification that says how many', async () => {
  const hook = await webhookReceiver();
  const s = await setup();
  try {
    await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: hook.url, cooldownMinutes: 5 });
    await s.error('Error: first bug');
    for (const m of ['second', 'third', 'fourth', 'fifth']) await s.error(`Error: ${m} bug`);
    assert.is(hook.received.length, 1, 'the rest is held during the cool-down');
    s.clock.now += 5 * MIN;
    await s.settle();
    assert.is(hook.received.length, 2);
    const burst = JSON.parse(hook.received[1].body);
    assert.equal([burst.count, burst.alerts.length], [4, 4]);
    assert.match(burst.text, /^4 new issues since the last message/);
  } finally {
    await s.handler.close();
    await hook.close();
  }
});

test('rules and their deliveries live in the record store: a restarted handler has them and alerts with them', async () => {
  const hook = await webhookReceiver();
  const s = await setup();
  try {
    await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: hook.url });
    await s.error('Error: before the restart');
    await s.handler.close();
    assert.is(hook.received.length, 1);

    const again = app({ records: s.records, now: () => s.clock.now, monitoring: { alerts: loadAlertConfig(INTERNAL) } });
    const [rule] = (await (await again.send('GET', '/api/alerts', { headers: again.as('u1') })).json()).alerts;
    assert.equal(rule.deliveries.map((d: { status: string }) => d.status), ['sent']);
    await again.send('POST', '/api/events', { headers: again.as('u1'), body: { type: 'error', message: 'Error: after the restart' } });
    await again.handler.monitor.flush();
    await again.handler.monitor.alerts.idle();
    assert.is(hook.received.length, 2, 'the restarted handler found the rule through the owners record');
    assert.match(JSON.parse(hook.received[1].body).text, /after the restart/);
    await again.handler.close();
  } finally {
    await hook.close();
  }
});

test('POST /api/alerts/:id/test sends a test on every channel; without SMTP_URL e-mail fails saying why', async () => {
  const hook = await webhookReceiver();
  const s = await setup();
  try {
    const { body: { alert } } = await s.call('POST', '/api/alerts', { on: 'regression', webhook: hook.url, email: 'dev@example.com', project: '7' });
    const res = await s.call('POST', `/api/alerts/${alert.id}/test`);
    assert.is(res.status, 202);
    await s.settle();
    assert.is(hook.received.length, 1);
    const body = JSON.parse(hook.received[0].body);
    assert.equal([body.test, body.kind, body.count], [true, 'regression', 0]);
    assert.match(body.text, /^Test notification: your regression alert rule in 7 reaches this channel/);
    const deliveries = (await s.call('GET', '/api/alerts')).body.alerts[0].deliveries;
    const email = deliveries.find((d: { channel: string }) => d.channel === 'email');
    assert.equal([email.status, email.lastError], ['failed', 'no SMTP server configured (SMTP_URL)']);
  } finally {
    await s.handler.close();
    await hook.close();
  }
});

test('test notifications: 5 a minute per user, then 429 too_many_tests with Retry-After', async () => {
  const hook = await webhookReceiver();
  const s = await setup();
  try {
    const { body: { alert } } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: hook.url });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await s.call('POST', `/api/alerts/${alert.id}/test`)).status);
    assert.equal(statuses, [202, 202, 202, 202, 202, 429]);
    const res = await s.send('POST', `/api/alerts/${alert.id}/test`, { headers: s.as('u1') });
    assert.equal([res.status, res.headers.get('retry-after'), (await res.json()).code], [429, '12', 'too_many_tests']);
    assert.is((await s.call('POST', `/api/alerts/${alert.id}/test`, undefined, 'u2')).status, 404, "another user's rule is still a 404");
    s.clock.now += 12_000;
    assert.is((await s.call('POST', `/api/alerts/${alert.id}/test`)).status, 202, 'one more after 12 s');
    await s.settle();
    assert.is(hook.received.length, 6);
  } finally {
    await s.handler.close();
    await hook.close();
  }
});

test.run();
