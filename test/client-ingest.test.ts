// What ingest does with the User-Agent (README "Bots" and "What is stored about clients"): browser, OS
// and device are stored on each event as `client`, never the header itself; bots are answered 202 and
// dropped, counted in /api/health, unless SERVICE_KEEP_BOTS is set. In process on the memory store,
// then server.ts on sqlite over real HTTP, the way a browser, a crawler or curl would call it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ClientInfo } from '../lib/client-info.ts';
import type { StoredEvent } from '../lib/event.ts';
import { app } from './helpers/app.ts';
import { startServer } from './helpers/server.ts';

interface Agent { name: string; ua: string; bot: boolean; expected: ClientInfo }
const { agents } = JSON.parse(readFileSync(new URL('../fixtures/user-agents.json', import.meta.url), 'utf8')) as { agents: Agent[] };
const agent = (prefix: string) => agents.find((a) => a.name.startsWith(prefix))!;
const CHROME = agent('Chrome 131 on Windows');
const IPHONE = agent('Safari 18 on iPhone');
const TABLET = agent('Chrome 131 on a Galaxy Tab');
const BOTS = [agent('Googlebot'), agent('curl'), agent('Headless Chrome')];

/** As stored: the client's country too, null for the local addresses of these requests (test/geo.test.ts). */
const stored = (c: ClientInfo) => ({ ...c, country: null });

const eventsOf = async (send: ReturnType<typeof app>['send'], user: string) =>
  ((await (await send('GET', '/api/events?limit=100', { headers: { 'x-idp-user-id': user } })).json()) as { events: StoredEvent[] }).events;

test('each event stores browser, OS and device of its request, never the user agent itself', async () => {
  const { send } = app();
  for (const a of [CHROME, IPHONE, TABLET]) {
    const r = await send('POST', '/api/events', { body: { events: [{ type: 'pageload', userId: 'u-client', route: a.name }, { type: 'click', userId: 'u-client', route: a.name }] }, headers: { 'user-agent': a.ua } });
    assert.is(r.status, 200);
  }
  const events = await eventsOf(send, 'u-client');
  assert.is(events.length, 6);
  for (const e of events) {
    const a = [CHROME, IPHONE, TABLET].find((x) => x.name === e.route)!;
    assert.equal(e.client, stored(a.expected), a.name);
    assert.not.ok(JSON.stringify(e).includes(a.ua), 'the raw header is not stored');
  }
  assert.equal(new Set(events.map((e) => e.client!.device)), new Set(['desktop', 'mobile', 'tablet']));
});

test('the beacon stores it too; no user agent is all null; a client cannot send its own', async () => {
  const { send } = app();
  await send('POST', '/api/beacon', { raw: JSON.stringify({ events: [{ type: 'custom', userId: 'u-b', route: 'beacon' }] }), headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': IPHONE.ua } });
  await send('POST', '/api/events', { body: { type: 'custom', userId: 'u-b', route: 'none' } });
  await send('POST', '/api/events', { body: { type: 'custom', userId: 'u-b', route: 'forged', client: { browser: 'Forged', os: 'x', device: 'desktop' } }, headers: { 'user-agent': CHROME.ua } });
  const byRoute = new Map((await eventsOf(send, 'u-b')).map((e) => [e.route, e]));
  assert.equal(byRoute.get('beacon')!.client, stored(IPHONE.expected));
  assert.equal(byRoute.get('none')!.client, { browser: null, os: null, device: null, country: null });
  assert.equal(byRoute.get('forged')!.client, stored(CHROME.expected));
});

test('default: Googlebot, curl and headless Chrome get 202 like an accepted batch, store nothing, and are counted', async () => {
  const { send } = app();
  const before = ((await (await send('GET', '/api/health')).json()) as { botsDropped: number }).botsDropped;
  assert.is(before, 0);
  for (const a of BOTS) {
    for (const path of ['/api/events', '/api/beacon']) {
      const r = await send('POST', path, { body: { events: [{ type: 'pageload', userId: 'u-bot', route: a.name }] }, headers: { 'user-agent': a.ua } });
      assert.is(r.status, 202, `${a.name} ${path}`);
      assert.equal(await r.json(), { accepted: 0, rejected: 0, bot: true });
    }
  }
  assert.equal(await eventsOf(send, 'u-bot'), []);
  const health = (await (await send('GET', '/api/health')).json()) as { botsDropped: number };
  assert.is(health.botsDropped, BOTS.length * 2);
  // A person's request on the same handler is stored as ever.
  assert.is((await send('POST', '/api/events', { body: { type: 'pageload', userId: 'u-bot' }, headers: { 'user-agent': CHROME.ua } })).status, 200);
  assert.is((await eventsOf(send, 'u-bot')).length, 1);
});

test('a project key in the X-Watchtower-Key header lets a backend through the bot filter; the same key in the query string does not', async () => {
  const { send } = app();
  const owner = { 'x-idp-user-id': 'u-backend' };
  const project = (await (await send('POST', '/api/projects', { body: { name: 'backend' }, headers: owner })).json()) as { id: string; key: string };
  const curl = agent('curl');
  const viaHeader = await send('POST', '/api/events', { body: { type: 'custom', name: 'job-done' }, headers: { 'user-agent': curl.ua, 'x-watchtower-key': project.key } });
  assert.is(viaHeader.status, 200);
  // A crawler rendering a page with the browser SDK sends the key in the query string: still dropped.
  const viaQuery = await send('POST', `/api/events?key=${project.key}`, { body: { type: 'pageload' }, headers: { 'user-agent': agent('Googlebot').ua } });
  assert.is(viaQuery.status, 202);
  // The header is no way around the filter without a real key: the key is checked as on every keyed request.
  const forged = await send('POST', '/api/events', { body: { type: 'custom' }, headers: { 'user-agent': curl.ua, 'x-watchtower-key': 'f'.repeat(32) } });
  assert.is(forged.status, 401);
  assert.is(((await forged.json()) as { code: string }).code, 'invalid_key');
  const events = await eventsOf(send, 'u-backend');
  assert.equal(events.map((e) => [e.type, e.projectId, e.client!.device]), [['custom', project.id, 'bot']]);
  assert.is(((await (await send('GET', '/api/health')).json()) as { botsDropped: number }).botsDropped, 1);
});

test('keepBots: bots are stored, marked device "bot", and nothing is counted as dropped', async () => {
  const { send } = app({ keepBots: true });
  for (const a of BOTS) {
    assert.is((await send('POST', '/api/events', { body: { type: 'pageload', userId: 'u-keep', route: a.name }, headers: { 'user-agent': a.ua } })).status, 200);
  }
  const events = await eventsOf(send, 'u-keep');
  assert.equal(events.map((e) => e.client).sort((x, y) => String(x!.browser).localeCompare(String(y!.browser))), BOTS.map((a) => stored(a.expected)).sort((x, y) => String(x.browser).localeCompare(String(y.browser))));
  assert.ok(events.every((e) => e.client!.device === 'bot'));
  assert.is(((await (await send('GET', '/api/health')).json()) as { botsDropped: number }).botsDropped, 0);
});

test('Sentry endpoints are not filtered: server SDKs are not browsers', async () => {
  const { send } = app();
  const project = (await (await send('POST', '/api/projects', { body: { name: 'api' }, headers: { 'x-idp-user-id': 'u-sentry' } })).json()) as { id: string; key: string };
  const r = await send('POST', `/api/${project.id}/store/?sentry_key=${project.key}`, {
    raw: JSON.stringify({ event_id: 'c'.repeat(32), message: 'from a backend', level: 'error' }),
    headers: { 'content-type': 'application/json', 'user-agent': 'sentry.python/2.0.0' },
  });
  assert.is(r.status, 200);
  assert.is((await eventsOf(send, 'u-sentry')).length, 1);
  assert.is(((await (await send('GET', '/api/health')).json()) as { botsDropped: number }).botsDropped, 0);
});

test('server.ts on sqlite over HTTP: the default drops bots, a browser\'s event keeps client and referrer through a restart', async () => {
  const dir = mkdtempSync(tmpdir() + '/watchtower-ua-');
  // SERVICE_KEEP_BOTS='' : the default, whatever the test helper sets.
  const env = { SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: `${dir}/w.sqlite`, SERVICE_KEEP_BOTS: '' };
  let server = await startServer(env);
  try {
    const post = (ua: string | null, body: unknown) =>
      fetch(`${server.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...(ua ? { 'user-agent': ua } : {}) }, body: JSON.stringify(body) });
    // The runtime's own fetch (no user agent set: `node` or `Deno/…`) is a bot too.
    for (const ua of [...BOTS.map((a) => a.ua), null]) {
      const r = await post(ua, { events: [{ type: 'pageload', userId: 'u-http' }] });
      assert.is(r.status, 202, String(ua));
      assert.equal(await r.json(), { accepted: 0, rejected: 0, bot: true });
    }
    const ok = await post(CHROME.ua, { sentAt: new Date().toISOString(), events: [{ type: 'pageload', userId: 'u-http', referrer: 'https://www.google.com', data: { duration: 120 } }] });
    assert.is(ok.status, 200);
    const stored = ((await ok.json()) as { events: StoredEvent[] }).events[0];
    assert.equal(stored.client, { ...CHROME.expected, country: null });
    assert.is(stored.referrer, 'https://www.google.com');
    const health = (await (await fetch(`${server.url}/api/health`)).json()) as { botsDropped: number };
    assert.is(health.botsDropped, BOTS.length + 1);

    await server.stop();
    server = await startServer(env);
    const r = await fetch(`${server.url}/api/events`, { headers: { 'x-idp-user-id': 'u-http' } });
    const events = ((await r.json()) as { events: StoredEvent[] }).events;
    assert.is(events.length, 1, 'only the browser\'s event was stored');
    assert.equal(events[0], stored, 'read back after a restart as it was answered');
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
