// Webhook destinations end to end (README "Webhook destinations"): rules whose webhook names an
// internal address, in any spelling, are refused when saved (400 webhook_destination_refused) and
// when they post; a name is checked on what it resolves to at delivery (DNS rebinding); the rule's
// owner sees refused / request failed / no answer / answered N, the server log the detail; and
// ALERT_ALLOW_PRIVATE_WEBHOOKS=true lets a receiver on 127.0.0.1 hear them. Test resolvers stand
// in for DNS and a recording fetch for the network: the only server ever connected to is on 127.0.0.1.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { app } from './helpers/app.ts';
import { REFUSED_SPELLINGS } from './helpers/destinations.ts';
import { startServer } from './helpers/server.ts';
import { loadAlertConfig } from '../lib/alerts/config.ts';
import { type DeliveryRecord } from '../lib/alerts/delivery.ts';
import type { ResolveHost } from '../lib/alerts/destination.ts';
import { AlertEngine, type AlertEngineOptions } from '../lib/alerts/engine.ts';
import { dashboardLinks } from '../lib/alerts/message.ts';
import { type AlertRule, COOLDOWN_MS } from '../lib/alerts/rules.ts';
import { applyEvent } from '../lib/issues/state.ts';
import type { MonitorOptions } from '../lib/monitor.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const PUBLIC_URL = 'https://watchtower.example.com';
const REFUSED = /^refused: /;
/** What must never reach the rule's owner: connection errors, errno codes, resolver messages, addresses a name resolved to. */
const LEAKS = /ECONN|ENOTFOUND|EAI_|getaddrinfo|fetch failed|os error|connect|tcp|socket|10\.1\.2\.3/i;

// ---- a receiver on 127.0.0.1, and a fetch that records instead of connecting ----

async function receiver(answer: (res: ServerResponse) => void = (res) => res.writeHead(204).end()) {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(`${req.url} ${body}`);
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { port, url: `http://127.0.0.1:${port}/hook`, received, close };
}

/** Stands in for the network: records each URL fetched and answers 204, so that public destinations go nowhere. */
function recordingFetch() {
  const urls: string[] = [];
  const fetch = (async (input: string | URL | Request) => {
    urls.push(String(input instanceof Request ? input.url : input));
    return new Response(null, { status: 204 });
  }) as typeof globalThis.fetch;
  return { urls, fetch };
}

/** A test resolver whose answers the test changes as it goes; names it does not know do not resolve. */
function dns(table: Record<string, string[]>) {
  const asked: string[] = [];
  const resolveHost: ResolveHost = async (name) => {
    asked.push(name);
    if (!table[name]) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return table[name];
  };
  return { table, asked, resolveHost };
}

// ---- through the API ----

async function setup(options: { env?: Record<string, string>; monitoring?: MonitorOptions } = {}) {
  const logs: string[] = [];
  const a = app({
    now: () => T0,
    log: (msg) => logs.push(msg),
    monitoring: { alerts: loadAlertConfig({ SERVICE_PUBLIC_URL: PUBLIC_URL, ...options.env }), retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 }, ...options.monitoring },
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await a.send(method, path, { headers: a.as('u1'), body });
    return { status: res.status, body: await res.json() };
  };
  /** Sends the rule's test notification and waits for its deliveries; answers them (newest first). */
  const sendTest = async (id: string): Promise<DeliveryRecord[]> => {
    assert.is((await call('POST', `/api/alerts/${id}/test`)).status, 202);
    await a.handler.monitor.alerts.idle();
    return (await call('GET', '/api/alerts')).body.alerts.find((r: { id: string }) => r.id === id).deliveries;
  };
  return { ...a, logs, call, sendTest };
}

test('saving a rule whose webhook is an internal address, in any spelling, is 400 webhook_destination_refused', async () => {
  const resolver = dns({ 'hooks.example.com': ['203.0.113.7'] });
  const s = await setup({ monitoring: { resolveHost: resolver.resolveHost } });
  try {
    const { status, body } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://hooks.example.com/x' });
    assert.is(status, 201, JSON.stringify(body));
    const id = body.alert.id;
    const wrong: string[] = [];
    for (const [spelling, cls] of REFUSED_SPELLINGS) {
      const url = `http://${spelling}:8080/hook`;
      const host = new URL(url).hostname;
      const expected = `Webhook destination refused: ${host} is not a public address (${cls}). Webhooks post to public addresses only, unless the server sets ALERT_ALLOW_PRIVATE_WEBHOOKS=true`;
      const created = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: url });
      const patched = await s.call('PATCH', `/api/alerts/${id}`, { webhook: url });
      for (const [what, res] of [['POST', created], ['PATCH', patched]] as const) {
        if (res.status !== 400 || res.body.code !== 'webhook_destination_refused' || res.body.error !== expected) wrong.push(`${what} ${url}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    assert.equal(wrong, []);
    const rules = (await s.call('GET', '/api/alerts')).body.alerts;
    assert.equal(rules.map((r: { webhook: string }) => r.webhook), ['https://hooks.example.com/x'], 'nothing refused was saved');
    assert.equal([...new Set(resolver.asked)], ['hooks.example.com'], 'address literals and localhost names are refused without resolving');
  } finally {
    await s.handler.close();
  }
});

test('a host name is refused when saved if it resolves to an internal address then; one that does not resolve yet is saved', async () => {
  const resolver = dns({ 'intranet.example.com': ['10.1.2.3'], 'dual.example.com': ['203.0.113.7', '::1'], 'hooks.example.com': ['203.0.113.7'] });
  const s = await setup({ monitoring: { resolveHost: resolver.resolveHost } });
  try {
    for (const host of ['intranet.example.com', 'dual.example.com']) {
      const { status, body } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: `https://${host}/hook` });
      assert.equal([status, body.code], [400, 'webhook_destination_refused'], host);
      assert.is(body.error, `Webhook destination refused: ${host} resolves to an address that is not public. Webhooks post to public addresses only, unless the server sets ALERT_ALLOW_PRIVATE_WEBHOOKS=true`);
    }
    assert.ok(s.logs.some((l) => l.includes('intranet.example.com resolves to 10.1.2.3')), 'the server log has the address');
    assert.is((await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://hooks.example.com/hook' })).status, 201);
    assert.is((await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://not-yet.example.com/hook' })).status, 201, 'checked again when it posts');
    // A rule's other fields change without its saved webhook being checked again (so its owner can disable it).
    const { body: { alert } } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://hooks.example.com/other' });
    resolver.table['hooks.example.com'] = ['127.0.0.1'];
    assert.is((await s.call('PATCH', `/api/alerts/${alert.id}`, { enabled: false })).status, 200);
    assert.is((await s.call('PATCH', `/api/alerts/${alert.id}`, { webhook: 'https://hooks.example.com/moved' })).body.code, 'webhook_destination_refused');
  } finally {
    await s.handler.close();
  }
});

test('without a resolver, host names are refused (they cannot be checked); public address literals are not', async () => {
  const s = await setup();
  try {
    const { status, body } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://hooks.example.com/x' });
    assert.equal([status, body.code], [400, 'webhook_destination_refused']);
    assert.match(body.error, /hooks\.example\.com is a host name, and this server has no resolver to check it with/);
    assert.is((await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://203.0.113.9/x' })).status, 201);
  } finally {
    await s.handler.close();
  }
});

test('DNS rebinding: a name that resolved to a public address when saved and to 127.0.0.1 when it posts is refused then', async () => {
  const resolver = dns({ 'hooks.rebind.example': ['203.0.113.7'] });
  const net = recordingFetch();
  const s = await setup({ monitoring: { resolveHost: resolver.resolveHost, fetch: net.fetch } });
  try {
    const { status, body: { alert } } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: 'https://hooks.rebind.example/hook' });
    assert.is(status, 201);
    const [sent] = await s.sendTest(alert.id);
    assert.equal([sent.status, sent.attempts], ['sent', 1]);
    assert.equal(net.urls, ['https://hooks.rebind.example/hook'], 'while the name is public, the webhook posts');

    resolver.table['hooks.rebind.example'] = ['127.0.0.1'];
    const [refused] = await s.sendTest(alert.id);
    assert.equal([refused.status, refused.attempts, refused.lastError], ['failed', 1, 'refused: hooks.rebind.example resolves to an address that is not public']);
    // And an alert, not only a test: a new issue of u1.
    await s.send('POST', '/api/events', { headers: s.as('u1'), body: { type: 'error', message: 'TypeError: rebound' } });
    await s.handler.monitor.flush();
    await s.handler.monitor.alerts.idle();
    const deliveries = (await s.call('GET', '/api/alerts')).body.alerts[0].deliveries as DeliveryRecord[];
    assert.equal(deliveries.map((d) => [d.status, d.lastError]), [
      ['failed', 'refused: hooks.rebind.example resolves to an address that is not public'],
      ['failed', 'refused: hooks.rebind.example resolves to an address that is not public'],
      ['sent', null],
    ]);
    assert.is(net.urls.length, 1, 'nothing was posted once the name pointed inside');
    assert.ok(s.logs.some((l) => l.includes('hooks.rebind.example resolves to 127.0.0.1')), s.logs.join('\n'));
  } finally {
    await s.handler.close();
  }
});

// ---- at delivery, in the engine (rules saved before the check, or by another version) ----

let seq = 0;
const rule = (url: string): AlertRule => ({
  id: `r${++seq}`, userId: 'u1', project: null, kind: 'new_issue', threshold: null, route: null, cooldownMs: COOLDOWN_MS,
  webhook: { url, secret: 'destination-test-secret' }, email: [], enabled: true, createdAt: new Date(T0).toISOString(),
});

async function deliverAll(rules: AlertRule[], over: Partial<AlertEngineOptions>) {
  const details: string[] = [];
  const e = new AlertEngine({
    rules: () => rules, links: dashboardLinks(PUBLIC_URL), now: () => T0, sleep: async () => {},
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 }, onDeliveryError: (d) => details.push(d), ...over,
  });
  const { issue, transition } = applyEvent(null, { id: `e${++seq}`, fingerprint: `fp${seq}`, title: 'Error: boom', culprit: 'x', owner: 'u1', project: null, sessionId: 's', version: '1' }, T0);
  e.push({ issue, transition, at: T0 });
  await e.tick();
  await e.idle();
  return { records: rules.map((r) => e.log.list(r.id)[0]), details };
}

test('at delivery, every spelling of an internal address is refused before anything is sent, without retries', async () => {
  const net = recordingFetch();
  const rules = REFUSED_SPELLINGS.map(([spelling]) => rule(`http://${spelling}:8080/hook`));
  const { records, details } = await deliverAll(rules, { fetch: net.fetch, destinations: { allowPrivate: false, resolveHost: dns({}).resolveHost } });
  assert.equal(net.urls, [], 'nothing was fetched');
  const wrong = records.flatMap((d, i) => {
    const [spelling, cls] = REFUSED_SPELLINGS[i];
    const host = new URL(rules[i].webhook!.url).hostname;
    const ok = d.status === 'failed' && d.attempts === 1 && d.lastError === `refused: ${host} is not a public address (${cls})`;
    return ok ? [] : [`${spelling}: ${JSON.stringify([d.status, d.attempts, d.lastError])}`];
  });
  assert.equal(wrong, []);
  assert.is(details.length, rules.length, 'each refusal is in the server log');
});

test('at delivery, spellings of 127.0.0.1 never reach a receiver listening there', async () => {
  const hook = await receiver();
  try {
    const spellings = ['127.0.0.1', '2130706433', '0x7f000001', '0177.0.0.1', '127.1', '127.0.0.1.', 'localhost', 'localhost.', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]'];
    const rules = spellings.map((s) => rule(`http://${s}:${hook.port}/hook`));
    const { records } = await deliverAll(rules, {});
    assert.equal(records.map((d) => d.status), spellings.map(() => 'failed'));
    assert.ok(records.every((d) => REFUSED.test(d.lastError!)), JSON.stringify(records.map((d) => d.lastError)));
    assert.equal(hook.received, []);
  } finally {
    await hook.close();
  }
});

test('at delivery, a name is checked on what it resolves to now: 127.0.0.1 is refused, a public address posts', async () => {
  const resolver = dns({ 'hooks.example.com': ['203.0.113.7'], 'rebound.example.com': ['127.0.0.1'], 'mapped.example.com': ['2001:db8::1', '::ffff:169.254.169.254'] });
  const net = recordingFetch();
  const rules = ['https://hooks.example.com/a', 'https://rebound.example.com/b', 'https://mapped.example.com/c'].map(rule);
  const { records, details } = await deliverAll(rules, { fetch: net.fetch, destinations: { allowPrivate: false, resolveHost: resolver.resolveHost } });
  assert.equal(records.map((d) => [d.status, d.attempts, d.lastError]), [
    ['sent', 1, null],
    ['failed', 1, 'refused: rebound.example.com resolves to an address that is not public'],
    ['failed', 1, 'refused: mapped.example.com resolves to an address that is not public'],
  ]);
  assert.equal(net.urls, ['https://hooks.example.com/a']);
  // Deliveries run concurrently: their log lines come in either order.
  assert.equal([...details].sort(), [
    `webhook of alert rule ${rules[1].id}: refused: rebound.example.com resolves to 127.0.0.1, not a public address (loopback)`,
    `webhook of alert rule ${rules[2].id}: refused: mapped.example.com resolves to ::ffff:169.254.169.254, not a public address (link-local)`,
  ].sort());
});

test('the owner sees request failed, no answer, answered N: never the connection error or the resolver message, which go to the server log', async () => {
  // A port that was just free: nothing listens on it.
  const gone = await receiver();
  await gone.close();
  const silent = await receiver(() => {});
  const wrongMethod = await receiver((res) => res.writeHead(405).end('Method Not Allowed'));
  try {
    const resolver = dns({});
    const rules = [rule(gone.url), rule(silent.url), rule(wrongMethod.url)];
    const { records, details } = await deliverAll(rules, { destinations: { allowPrivate: true, resolveHost: resolver.resolveHost }, webhookTimeoutMs: 200 });
    assert.equal(records.map((d) => [d.status, d.attempts, d.lastError]), [
      ['failed', 3, 'request failed'],
      ['failed', 3, 'no answer within 200 ms'],
      ['failed', 3, 'answered 405'],
    ]);
    assert.not.match(JSON.stringify(records), LEAKS);
    assert.ok(details.some((d) => d.startsWith(`webhook of alert rule ${rules[0].id}: `) && d.length > `webhook of alert rule ${rules[0].id}: request failed`.length),
      `the connection's error is logged: ${details.join('\n')}`);
  } finally {
    await silent.close();
    await wrongMethod.close();
  }
  // A name that does not resolve when it posts: the same, without the resolver's words.
  const resolver = dns({});
  const r = rule('https://gone.example.com/hook');
  const { records: [d], details } = await deliverAll([r], { destinations: { allowPrivate: false, resolveHost: resolver.resolveHost } });
  assert.equal([d.status, d.attempts, d.lastError], ['failed', 3, 'request failed']);
  assert.ok(details.every((x) => x.includes('getaddrinfo ENOTFOUND gone.example.com')), details.join('\n'));
  assert.not.match(JSON.stringify(d), LEAKS);
});

test('the API shows only the sanitised error in lastError', async () => {
  const gone = await receiver();
  await gone.close();
  const s = await setup({ env: { ALERT_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
  try {
    const { body: { alert } } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: gone.url });
    const [d] = await s.sendTest(alert.id);
    assert.equal([d.status, d.attempts, d.lastError], ['failed', 3, 'request failed']);
    const text = JSON.stringify((await s.call('GET', '/api/alerts')).body);
    assert.not.match(text, LEAKS);
    assert.ok(s.logs.some((l) => l.startsWith(`webhook of alert rule ${alert.id}: `) && LEAKS.test(l)), `the detail is in the server log: ${s.logs.join('\n')}`);
  } finally {
    await s.handler.close();
  }
});

test('ALERT_ALLOW_PRIVATE_WEBHOOKS=true: a receiver on 127.0.0.1 gets the webhook, in the spellings that were refused', async () => {
  const hook = await receiver();
  const s = await setup({ env: { ALERT_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
  try {
    const paths: string[] = [];
    for (const host of ['127.0.0.1', '2130706433', '0x7f000001', 'localhost']) {
      const { status, body } = await s.call('POST', '/api/alerts', { on: 'new_issue', webhook: `http://${host}:${hook.port}/${host}` });
      assert.is(status, 201, JSON.stringify(body));
      const [d] = await s.sendTest(body.alert.id);
      assert.equal([d.status, d.lastError], ['sent', null], host);
      paths.push(`/${host}`);
    }
    assert.equal(hook.received.map((r) => r.split(' ')[0]), paths);
  } finally {
    await s.handler.close();
    await hook.close();
  }
});

test('redirects are not followed: the answer is the delivery\'s status, and the target hears nothing', async () => {
  const target = await receiver();
  const redirecting = await receiver((res) => res.writeHead(307, { location: target.url }).end());
  try {
    const { records: [d] } = await deliverAll([rule(redirecting.url)], { destinations: { allowPrivate: true, resolveHost: null } });
    assert.equal([d.status, d.lastError], ['failed', 'answered 307']);
    assert.is(redirecting.received.length, 3);
    assert.equal(target.received, []);
  } finally {
    await target.close();
    await redirecting.close();
  }
});

test('the real server: 127.0.0.1 refused by default, delivered to with ALERT_ALLOW_PRIVATE_WEBHOOKS=true', async () => {
  const hook = await receiver();
  const headers = { 'content-type': 'application/json', 'x-idp-user-id': 'u1' };
  const create = (base: string) => fetch(`${base}/api/alerts`, { method: 'POST', headers, body: JSON.stringify({ on: 'new_issue', webhook: hook.url }) });
  try {
    const strict = await startServer({ ALERT_ALLOW_PRIVATE_WEBHOOKS: '' });
    try {
      const res = await create(strict.url);
      assert.equal([res.status, (await res.json()).code], [400, 'webhook_destination_refused']);
    } finally {
      await strict.stop();
    }
    const open = await startServer({ ALERT_ALLOW_PRIVATE_WEBHOOKS: 'true' });
    try {
      const res = await create(open.url);
      assert.is(res.status, 201);
      const { alert } = await res.json();
      assert.is((await fetch(`${open.url}/api/alerts/${alert.id}/test`, { method: 'POST', headers })).status, 202);
      for (let i = 0; i < 100 && hook.received.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.is(hook.received.length, 1);
      assert.match(hook.received[0], /^\/hook \{"text":/);
    } finally {
      await open.stop();
    }
  } finally {
    await hook.close();
  }
});

test.run();
