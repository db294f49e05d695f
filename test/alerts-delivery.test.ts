// Alert deliveries to real servers on 127.0.0.1: an SMTP server (smtp-server, with authentication)
// receives the e-mail sent through nodemailer, and node:http webhook receivers get signed JSON,
// fail and time out on purpose. The engine's clock is injected, so cool-downs need no waiting.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { normalise } from '../lib/event.ts';
import { type DeliveryRecord, DeliveryLog } from '../lib/alerts/delivery.ts';
import { AlertEngine, type AlertEngineOptions } from '../lib/alerts/engine.ts';
import { dashboardLinks } from '../lib/alerts/message.ts';
import { RecentMetrics } from '../lib/alerts/recent.ts';
import { type AlertRule, COOLDOWN_MS } from '../lib/alerts/rules.ts';
import { createSmtpMailer } from '../lib/alerts/smtp.ts';
import { DELIVERY_HEADER, SIGNATURE_HEADER } from '../lib/alerts/webhook.ts';
import { applyEvent, type IssueEvent } from '../lib/issues/state.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const MIN = 60_000;
const SECRET = 'test-secret-0123456789abcdef';
const PUBLIC_URL = 'http://watchtower.test';
/** Retries without real waits: the policy's attempts, with the sleep between them skipped. */
const FAST = { retry: { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 8000 }, sleep: async () => {} };
/** The receivers listen on 127.0.0.1, which webhooks may reach only when allowed (ALERT_ALLOW_PRIVATE_WEBHOOKS). */
const INTERNAL = { destinations: { allowPrivate: true, resolveHost: null } };

let seq = 0;
/** A new issue (and its transition) of user u1 in project shop. */
function newIssue(title = 'TypeError: cart is undefined', at = T0) {
  const e: IssueEvent = { id: `e${++seq}`, fingerprint: `fp${seq}`, title, culprit: 'checkout (/assets/app.js)', owner: 'u1', project: 'shop', sessionId: 's1', version: '1.4.0' };
  const { issue, transition } = applyEvent(null, e, at);
  return { issue, transition, at };
}

const rule = (over: Partial<AlertRule>): AlertRule => ({
  id: `r${++seq}`, userId: 'u1', project: 'shop', kind: 'new_issue', threshold: null, route: null, cooldownMs: COOLDOWN_MS,
  webhook: null, email: [], enabled: true, createdAt: new Date(T0).toISOString(), ...over,
});

function engine(rules: AlertRule[], over: Partial<AlertEngineOptions> = {}) {
  const clock = { now: T0 };
  const e = new AlertEngine({ rules: () => rules, links: dashboardLinks(PUBLIC_URL), now: () => clock.now, ...FAST, ...INTERNAL, ...over });
  return { engine: e, clock };
}

// ---- a webhook receiver whose answers the test decides ----

interface Received { headers: IncomingMessage['headers']; body: string }
type Answer = (req: Received, res: ServerResponse) => void;

async function receiver(answers: Answer[] = []) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(r);
      const answer = answers[received.length - 1] ?? ((_r: Received, s: ServerResponse) => s.writeHead(204).end());
      answer(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/watchtower`;
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url, received, close };
}

const status = (code: number): Answer => (_r, res) => res.writeHead(code).end('no');
const silence: Answer = () => {}; // never answers

/** Checks the signature as a receiver would, with node:crypto rather than the code under test. */
function validSignature(r: Received, secret = SECRET): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`);
  const got = Buffer.from(String(r.headers[SIGNATURE_HEADER.toLowerCase()] ?? ''));
  return got.length === expected.length && timingSafeEqual(got, expected);
}

function watch(log: DeliveryLog) {
  const seen: DeliveryRecord[] = [];
  log.subscribe((r) => seen.push(r));
  return seen;
}

test('webhook: signed JSON with a Slack-compatible text, the issue and a link', async () => {
  const hook = await receiver();
  try {
    const r = rule({ webhook: { url: hook.url, secret: SECRET } });
    const { engine: e } = engine([r]);
    const change = newIssue();
    e.push(change);
    const sent = await e.tick();
    await e.idle();
    assert.is(sent.length, 1);
    assert.is(hook.received.length, 1);
    const got = hook.received[0];
    assert.ok(validSignature(got), 'the signature verifies with the rule secret');
    assert.not.ok(validSignature(got, 'another-secret-0123456789'), 'and not with another');
    assert.is(got.headers['content-type'], 'application/json');
    assert.is(got.headers[DELIVERY_HEADER.toLowerCase()], sent[0].id);
    const body = JSON.parse(got.body);
    assert.is(body.text, `New issue in shop: TypeError: cart is undefined at checkout (/assets/app.js)\n${PUBLIC_URL}/issues/?id=${change.issue.id}`);
    assert.equal([body.kind, body.count, body.rule.id], ['new_issue', 1, r.id]);
    assert.is(body.alerts[0].issue.id, change.issue.id);
    assert.is(body.alerts[0].url, `${PUBLIC_URL}/issues/?id=${change.issue.id}`);
    assert.equal(e.log.list(r.id).map((d) => [d.channel, d.status, d.attempts]), [['webhook', 'sent', 1]]);
  } finally {
    await hook.close();
  }
});

test('webhook: a receiver failing twice, then answering, is retried: retrying → sent, the same signed body each time', async () => {
  const hook = await receiver([status(500), status(503)]);
  try {
    const r = rule({ webhook: { url: hook.url, secret: SECRET } });
    const { engine: e } = engine([r]);
    const seen = watch(e.log);
    e.push(newIssue());
    await e.tick();
    await e.idle();
    assert.equal(seen.map((d) => [d.status, d.attempts, d.lastError]), [
      ['sending', 0, null],
      ['retrying', 1, 'answered 500'],
      ['retrying', 2, 'answered 503'],
      ['sent', 3, null],
    ]);
    assert.ok(seen[1].nextAttemptAt !== null);
    assert.is(hook.received.length, 3);
    assert.ok(hook.received.every((x) => x.body === hook.received[0].body && validSignature(x)));
    assert.is(new Set(hook.received.map((x) => x.headers[DELIVERY_HEADER.toLowerCase()])).size, 1, 'one delivery id for every attempt');
    assert.equal(e.log.list(r.id).map((d) => d.status), ['sent'], 'the log keeps the latest state of each delivery');
  } finally {
    await hook.close();
  }
});

test('webhook: no answer within the timeout is a failed attempt; a receiver that always fails ends failed', async () => {
  const slow = await receiver([silence]);
  const broken = await receiver([status(500), status(500), status(500), status(500)]);
  try {
    const r1 = rule({ webhook: { url: slow.url, secret: SECRET } });
    const r2 = rule({ webhook: { url: broken.url, secret: SECRET } });
    const { engine: e } = engine([r1, r2], { webhookTimeoutMs: 300 });
    e.push(newIssue());
    await e.tick();
    await e.idle();
    const [timedOut] = e.log.list(r1.id);
    assert.equal([timedOut.status, timedOut.attempts], ['sent', 2]);
    assert.is(slow.received.length, 2);
    const [failed] = e.log.list(r2.id);
    assert.equal([failed.status, failed.attempts, failed.lastError, failed.nextAttemptAt], ['failed', 4, 'answered 500', null]);
    assert.is(broken.received.length, 4, 'bounded attempts');
  } finally {
    await slow.close();
    await broken.close();
  }
});

test('webhook: a timed-out attempt says so in the log', async () => {
  const slow = await receiver([silence]);
  try {
    const r = rule({ webhook: { url: slow.url, secret: SECRET } });
    const { engine: e } = engine([r], { webhookTimeoutMs: 300 });
    const seen = watch(e.log);
    e.push(newIssue());
    await e.tick();
    await e.idle();
    assert.is(seen.find((d) => d.status === 'retrying')?.lastError, 'no answer within 300 ms');
  } finally {
    await slow.close();
  }
});

test('a burst within the cool-down becomes one notification that counts them; what follows waits for the cool-down', async () => {
  const hook = await receiver();
  try {
    const r = rule({ webhook: { url: hook.url, secret: SECRET }, cooldownMs: 10 * MIN });
    const { engine: e, clock } = engine([r]);
    for (let i = 0; i < 5; i++) e.push(newIssue(`Error number ${i}`));
    const first = await e.tick();
    await e.idle();
    assert.equal(first.map((n) => n.count), [5]);
    assert.is(hook.received.length, 1);
    const burst = JSON.parse(hook.received[0].body);
    assert.is(burst.count, 5);
    assert.ok(burst.text.startsWith('5 new issues in shop since the last message'), burst.text);
    assert.is(burst.alerts.length, 5);

    clock.now = T0 + 1 * MIN;
    for (let i = 0; i < 3; i++) e.push(newIssue(`Later error ${i}`, clock.now));
    assert.equal(await e.tick(), [], 'held: within the cool-down');
    clock.now = T0 + 9 * MIN;
    assert.equal(await e.tick(), []);
    clock.now = T0 + 10 * MIN;
    const released = await e.tick();
    await e.idle();
    assert.equal(released.map((n) => n.count), [3]);
    assert.is(hook.received.length, 2);
    assert.is(JSON.parse(hook.received[1].body).count, 3);
  } finally {
    await hook.close();
  }
});

test('error_spike through the engine: recent errors above the threshold and the hour before notify once', async () => {
  const hook = await receiver();
  try {
    const r = rule({ kind: 'error_spike', threshold: 10, webhook: { url: hook.url, secret: SECRET } });
    const metrics = new RecentMetrics();
    const { engine: e, clock } = engine([r], { metrics });
    let n = 0;
    const error = (t: number) => metrics.record({ ...normalise({ type: 'error', message: 'boom' }, { now: t, owner: 'u1', newId: () => `x${++n}` }), projectId: 'shop' });
    for (let i = 0; i < 10; i++) error(T0 - 30 * MIN); // a baseline of 10 an hour
    for (let i = 0; i < 10; i++) error(T0);
    assert.equal(await e.checkMetrics(), [], 'ten is not above the threshold');
    for (let i = 0; i < 5; i++) error(T0);
    const sent = await e.checkMetrics();
    await e.idle();
    assert.equal(sent.map((x) => x.kind), ['error_spike']);
    const body = JSON.parse(hook.received[0].body);
    assert.match(body.text, /^Error spike in shop: 15 errors in the last 5 minutes \(threshold 10; the previous hour averaged 0.83 per 5 minutes\)/);
    clock.now = T0 + MIN;
    assert.equal(await e.checkMetrics(), [], 'still spiking: held by the cool-down');
  } finally {
    await hook.close();
  }
});

test('e-mail without a mailer is logged as failed with the reason; nothing else is affected', async () => {
  const r = rule({ email: ['dev@example.com'] });
  const { engine: e } = engine([r]);
  e.push(newIssue());
  await e.tick();
  await e.idle();
  const [d] = e.log.list(r.id);
  assert.equal([d.channel, d.status, d.attempts, d.lastError], ['email', 'failed', 1, 'no SMTP server configured (SMTP_URL)']);
});

test('push is bounded: beyond the queue limit changes are dropped and counted', () => {
  const { engine: e } = engine([], { queueLimit: 2 });
  for (let i = 0; i < 5; i++) e.push(newIssue());
  e.push({ ...newIssue(), transition: null });
  assert.is(e.dropped, 3);
});

// ---- e-mail through a real SMTP server ----

interface Mail { from: string; to: string[]; user: unknown; raw: string }

async function smtpServer() {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'], // plain SMTP on loopback; nodemailer then sends without TLS
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === 'alerts' && auth.password === 'p@ss word') callback(null, { user: 'alerts' });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const envelope = session.envelope;
        mails.push({
          from: envelope.mailFrom ? envelope.mailFrom.address : '',
          to: envelope.rcptTo.map((a) => a.address),
          user: session.user,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The message's headers unfolded, and its text body with quoted-printable decoded. */
function readMail(raw: string): { headers: string; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split).replace(/\r\n(?=[ \t])/g, '');
  let body = raw.slice(split + 4);
  if (/content-transfer-encoding: quoted-printable/i.test(headers)) {
    body = body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
  return { headers, body };
}

test('e-mail: an authenticated SMTP server receives the alert with the issue title and a link', async () => {
  const smtp = await smtpServer();
  const mailer = createSmtpMailer({ url: `smtp://alerts:${encodeURIComponent('p@ss word')}@127.0.0.1:${smtp.port}`, from: 'Watchtower <alerts@watchtower.test>' });
  try {
    const r = rule({ email: ['dev@example.com', 'ops@example.com'] });
    const { engine: e } = engine([r], { mailer });
    const change = newIssue('TypeError: cart is undefined');
    e.push(change);
    await e.tick();
    await e.idle();
    assert.equal(e.log.list(r.id).map((d) => [d.channel, d.status, d.target]), [['email', 'sent', 'dev@example.com, ops@example.com']]);
    assert.is(smtp.mails.length, 1);
    const mail = smtp.mails[0];
    assert.is(mail.user, 'alerts', 'signed in with the credentials of the URL');
    assert.is(mail.from, 'alerts@watchtower.test');
    assert.equal(mail.to, ['dev@example.com', 'ops@example.com']);
    const { headers, body } = readMail(mail.raw);
    assert.match(headers, /^Subject: \[Watchtower\] New issue in shop: TypeError: cart is undefined at checkout \(\/assets\/app\.js\)$/m);
    assert.match(headers, /^From: Watchtower <alerts@watchtower\.test>$/m);
    assert.ok(body.includes('New issue in shop: TypeError: cart is undefined'), body);
    assert.ok(body.includes(`${PUBLIC_URL}/issues/?id=${change.issue.id}`), body);
  } finally {
    await mailer.close?.();
    await smtp.close();
  }
});

test('e-mail: refused credentials are retried and end failed with the server reason', async () => {
  const smtp = await smtpServer();
  const mailer = createSmtpMailer({ url: `smtp://alerts:wrong@127.0.0.1:${smtp.port}`, from: 'alerts@watchtower.test' });
  try {
    const r = rule({ email: ['dev@example.com'] });
    const { engine: e } = engine([r], { mailer, retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 } });
    e.push(newIssue());
    await e.tick();
    await e.idle();
    const [d] = e.log.list(r.id);
    assert.equal([d.status, d.attempts], ['failed', 2]);
    assert.match(d.lastError!, /Invalid username or password/);
    assert.is(smtp.mails.length, 0);
  } finally {
    await mailer.close?.();
    await smtp.close();
  }
});

test.run();
