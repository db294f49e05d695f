// The API of docs/api.md through the fetch handler, with web Requests.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync } from 'node:zlib';
import { app, BASE, runtimeFiles } from './helpers/app.ts';
import { tempSqliteStore } from './helpers/stores.ts';
import { createHandler } from '../lib/handler.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { sameOriginPath } from '../lib/static.ts';

test('POST /api/events with one event', async () => {
  const { send, as } = app();
  const res = await send('POST', '/api/events', { body: { type: 'click', userId: 'u1', data: { target: '#b' } } });
  assert.is(res.status, 200);
  assert.is(res.headers.get('access-control-allow-origin'), '*');
  // The base behaviour (memory store) answers with the counts only.
  assert.equal(await res.json(), { accepted: 1, rejected: 0 });
  const [e] = (await (await send('GET', '/api/events', { headers: as('u1') })).json()).events;
  assert.is(e.type, 'click');
  assert.is(e.user_id, 'u1');
  assert.ok(e.receivedAt);
});

test('a batch counts accepted and rejected', async () => {
  const { send } = app();
  const res = await send('POST', '/api/events', { body: { events: [{ type: 'a' }, { nope: true }, { type: 'b' }, 'x'] } });
  assert.equal(await res.json(), { accepted: 2, rejected: 2 });
});

test('persisted stores answer with the stored events; /api/beacon with the counts only', async () => {
  const store = await tempSqliteStore();
  try {
    const { send, as } = app({ store });
    const res = await send('POST', '/api/events', { body: { events: [{ type: 'click', userId: 'u1', id: 'e1' }, {}, { type: 'pageload', userId: 'u1', id: 'e2', extra: [1] }] } });
    assert.is(res.status, 200);
    assert.is(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const out = await res.json();
    assert.equal([out.accepted, out.rejected, out.events.map((e: { id: string }) => e.id)], [2, 1, ['e1', 'e2']]);
    // The answer is the stored shape, exactly what the owner reads back.
    assert.equal((await (await send('GET', '/api/events', { headers: as('u1') })).json()).events, [...out.events].reverse());
    const beacon = await send('POST', '/api/beacon', { body: { events: [{ type: 'click', userId: 'u1', id: 'e3' }, 7] } });
    assert.equal(await beacon.json(), { accepted: 1, rejected: 1 });
    assert.is((await (await send('GET', '/api/events?limit=1', { headers: as('u1') })).json()).events[0].id, 'e3');
    const none = await send('POST', '/api/events', { body: { events: [{}] } });
    assert.equal(await none.json(), { accepted: 0, rejected: 1, events: [] });
  } finally {
    await store.close();
  }
});

test('a batch of only invalid events is still 200 with accepted 0', async () => {
  const { send } = app();
  const res = await send('POST', '/api/events', { body: { events: [{}, { type: '' }, null] } });
  assert.is(res.status, 200);
  assert.equal(await res.json(), { accepted: 0, rejected: 3 });
});

test('invalid JSON is 400 {error: "Invalid JSON"}', async () => {
  const { send } = app();
  for (const raw of ['{bad', '', 'undefined']) {
    const res = await send('POST', '/api/events', { raw, headers: { 'content-type': 'application/json' } });
    assert.is(res.status, 400);
    assert.is((await res.json()).error, 'Invalid JSON');
  }
});

test('a body that is not an event or a batch is a 400 with a JSON error', async () => {
  const { send } = app();
  for (const body of [[{ type: 'x' }], 42, 'text', null, { events: {} }]) {
    const res = await send('POST', '/api/events', { body });
    assert.is(res.status, 400, JSON.stringify(body));
    assert.type((await res.json()).error, 'string');
  }
});

test('more than 500 events, or a body over 1 MiB, is a 413', async () => {
  const { send } = app();
  const many = await send('POST', '/api/events', { body: { events: Array.from({ length: 501 }, () => ({ type: 'x' })) } });
  assert.is(many.status, 413);
  const big = await send('POST', '/api/events', { raw: JSON.stringify({ type: 'x', data: { b: 'x'.repeat(1024 * 1024) } }), headers: { 'content-type': 'application/json' } });
  assert.is(big.status, 413);
  assert.match((await big.json()).error, /exceeds/);
});

test('POST /api/beacon accepts text/plain bodies as sendBeacon sends them', async () => {
  const { send, as } = app();
  const res = await send('POST', '/api/beacon', { raw: JSON.stringify({ events: [{ type: 'pageload', userId: 'u1' }] }), headers: { 'content-type': 'text/plain;charset=UTF-8' } });
  assert.is(res.status, 200);
  assert.is((await res.json()).accepted, 1);
  const list = await (await send('GET', '/api/events', { headers: as('u1') })).json();
  assert.is(list.events.length, 1);
});

test('gzip bodies are accepted; invalid gzip is 400; other encodings 415', async () => {
  const { send } = app();
  const zipped = gzipSync(JSON.stringify({ events: [{ type: 'a' }, { type: 'b' }] }));
  const ok = await send('POST', '/api/events', { raw: zipped, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  assert.is(ok.status, 200);
  assert.is((await ok.json()).accepted, 2);
  const bad = await send('POST', '/api/events', { raw: 'not gzip at all', headers: { 'content-encoding': 'gzip' } });
  assert.is(bad.status, 400);
  const br = await send('POST', '/api/events', { raw: 'x', headers: { 'content-encoding': 'br' } });
  assert.is(br.status, 415);
});

test('a gzip bomb is refused with 413 after decompression passes 1 MiB', async () => {
  const { send } = app();
  const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024, 32));
  assert.ok(bomb.byteLength < 1024 * 1024);
  const res = await send('POST', '/api/events', { raw: bomb, headers: { 'content-encoding': 'gzip' } });
  assert.is(res.status, 413);
});

test('unsupported content types are 415', async () => {
  const { send } = app();
  const res = await send('POST', '/api/events', { raw: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.is(res.status, 415);
});

test('GET /api/events needs a user (401 {error:"Unauthorized"})', async () => {
  const { send } = app();
  const res = await send('GET', '/api/events');
  assert.is(res.status, 401);
  assert.equal(await res.json(), { error: 'Unauthorized', code: 'unauthorized' });
  assert.is(res.headers.get('access-control-allow-origin'), '*');
});

test('GET /api/events filters by type and version, limit, most recent first, scoped to the user', async () => {
  const { send, as } = app();
  const events = [];
  for (let i = 0; i < 150; i++) events.push({ type: i % 2 ? 'error' : 'click', deployVersion: i % 3 ? '1.0' : '2.0', id: `e${i}`, userId: 'u1' });
  events.push({ type: 'click', userId: 'u2', id: 'other' }, { type: 'click', id: 'anon' });
  await send('POST', '/api/events', { body: { events } });
  const all = (await (await send('GET', '/api/events', { headers: as('u1') })).json()).events;
  assert.is(all.length, 100, 'default limit 100');
  assert.is(all[0].id, 'e149', 'most recent first');
  assert.ok(all.every((e: { user_id: string }) => e.user_id === 'u1'));
  const errors = (await (await send('GET', '/api/events?type=error&version=2.0&limit=5', { headers: as('u1') })).json()).events;
  assert.equal(errors.map((e: { id: string }) => e.id), ['e147', 'e141', 'e135', 'e129', 'e123']);
  const other = (await (await send('GET', '/api/events', { headers: as('u2') })).json()).events;
  assert.equal(other.map((e: { id: string }) => e.id), ['other']);
  const bad = await send('GET', '/api/events?limit=zero', { headers: as('u1') });
  assert.is(bad.status, 400);
});

test('events read back carry both camelCase and column-aligned fields', async () => {
  const { send, as } = app();
  await send('POST', '/api/events', {
    body: { type: 'error', session_id: 's', app_version: '3.1', page_url: 'https://x/p', data: { message: 'm', source: 'a.js', line: 1 }, userId: 'u1', appName: 'shop', plan: 'pro' },
  });
  const [e] = (await (await send('GET', '/api/events', { headers: as('u1') })).json()).events;
  assert.equal(
    [e.sessionId, e.session_id, e.deployVersion, e.app_version, e.url, e.page_url, e.severity, e.message, e.source, e.appName, e.plan, e.user_id],
    ['s', 's', '3.1', '3.1', 'https://x/p', 'https://x/p', 'critical', 'm', 'a.js', 'shop', 'pro', 'u1'],
  );
  assert.ok(Date.parse(e.receivedAt) > 0);
});

test('idempotent by id: a retried event is stored once but counted as accepted', async () => {
  const { send, as } = app();
  const body = { events: [{ type: 'click', id: 'same', userId: 'u1' }] };
  await send('POST', '/api/events', { body });
  const again = await (await send('POST', '/api/events', { body })).json();
  assert.is(again.accepted, 1);
  const list = (await (await send('GET', '/api/events', { headers: as('u1') })).json()).events;
  assert.is(list.length, 1);
});

test('DEFAULT_INGEST_OWNER_USER_ID owns events sent by nobody identified', async () => {
  const { send, as } = app({ defaultOwner: 'owner' });
  await send('POST', '/api/events', { body: { type: 'click', userId: 'claimed' } });
  await send('POST', '/api/events', { body: { type: 'click' }, headers: as('signed-in') });
  assert.is((await (await send('GET', '/api/events', { headers: as('owner') })).json()).events.length, 1);
  assert.is((await (await send('GET', '/api/events', { headers: as('signed-in') })).json()).events.length, 1);
  assert.is((await (await send('GET', '/api/events', { headers: as('claimed') })).json()).events.length, 0);
});

test('anonymous events appear for no user', async () => {
  const { send, as } = app();
  await send('POST', '/api/events', { body: { type: 'click' } });
  for (const user of ['null', 'anonymous', 'undefined']) {
    assert.is((await (await send('GET', '/api/events', { headers: as(user) })).json()).events.length, 0, user);
  }
});

test('GET /api/stats needs a user and is computed over their events only', async () => {
  const { send, as } = app();
  assert.is((await send('GET', '/api/stats')).status, 401);
  await send('POST', '/api/events', {
    body: {
      events: [
        { type: 'error', deployVersion: '1.0', userId: 'u1', sessionId: 's1' },
        { type: 'pageload', route: '/', data: { duration: 120, ttfb: 20 }, userId: 'u1', sessionId: 's1' },
        { type: 'error', deployVersion: '9.9', userId: 'u2' },
      ],
    },
  });
  const s = await (await send('GET', '/api/stats', { headers: as('u1') })).json();
  assert.is(s.totalEvents, 2);
  assert.is(s.totalErrors, 1);
  assert.is(s.activeUsers, 1);
  assert.equal(s.errorsByVersion, { '1.0': 1 });
  assert.is(s.latencyByRoute['/'].p95, 120);
  assert.is(s.recentErrors.length, 1);
  for (const key of ['eventsByType', 'averageLatency', 'recentActivity', 'analytics']) assert.ok(key in s, key);
});

test('GET /api/health: status, storage, count, known types, time', async () => {
  const { send } = app();
  await send('POST', '/api/events', { body: { events: [{ type: 'a' }, { type: 'b' }] } });
  const h = await (await send('GET', '/api/health')).json();
  assert.is(h.status, 'ok');
  assert.is(h.storage, 'memory');
  assert.is(h.eventCount, 2);
  assert.ok(h.knownEventTypes.includes('pageload'));
  assert.is(h.knownEventTypes.length, 10);
  assert.ok(Date.parse(h.timestamp) > 0);
});

test('POST /api/users/sync upserts the signed-in user only', async () => {
  const { send, as, store } = app();
  const body = { idpUserId: 'u1', email: 'a@example.com', displayName: 'Ada' };
  assert.is((await send('POST', '/api/users/sync', { body })).status, 401);
  assert.is((await send('POST', '/api/users/sync', { body, headers: as('u2') })).status, 403);
  const res = await send('POST', '/api/users/sync', { body, headers: as('u1') });
  assert.is(res.status, 200);
  const user = await res.json();
  assert.is(user.idp_user_id, 'u1');
  assert.is(user.email, 'a@example.com');
  assert.is(user.display_name, 'Ada');
  assert.ok(Date.parse(user.last_seen_at) > 0);
  assert.equal(await store.getUser('u1'), user);
  assert.is((await send('POST', '/api/users/sync', { body: { email: 'x' }, headers: as('u1') })).status, 400);
});

test('CORS: preflight 204 and the header on every response, errors included', async () => {
  const { send } = app();
  const pre = await send('OPTIONS', '/api/events', { headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
  assert.is(pre.status, 204);
  assert.is(pre.headers.get('access-control-allow-origin'), '*');
  assert.match(pre.headers.get('access-control-allow-headers') ?? '', /X-IdP-User-Id/);
  assert.match(pre.headers.get('access-control-allow-methods') ?? '', /POST/);
  for (const [method, path] of [['GET', '/nope'], ['GET', '/api/stats'], ['DELETE', '/api/events']]) {
    const res = await send(method, path);
    assert.is(res.headers.get('access-control-allow-origin'), '*', `${method} ${path}`);
  }
});

test('unknown paths are 404 JSON; wrong methods 405 with Allow', async () => {
  const { send } = app();
  const missing = await send('GET', '/api/nothing');
  assert.is(missing.status, 404);
  assert.match((await missing.json()).error, /Not found/);
  const wrong = await send('PUT', '/api/events');
  assert.is(wrong.status, 405);
  assert.match(wrong.headers.get('allow') ?? '', /GET/);
  assert.match(wrong.headers.get('allow') ?? '', /POST/);
});

test('routing: query strings, trailing slashes and dot segments reach the same route; HEAD on an API path is 405', async () => {
  const { send } = app();
  const as = { headers: { 'x-idp-user-id': 'u1' } };
  await send('POST', '/api/events?source=test', { body: { type: 'click', id: 'r1' }, ...as });
  for (const path of ['/api/events?limit=5', '/api/events/', '/api/events//', '/api/x/../events', '/api/%65vents']) {
    const res = await send('GET', path, as);
    assert.is(res.status, path === '/api/%65vents' ? 404 : 200, path);
    if (res.status === 200) assert.equal((await res.json()).events.map((e: { id: string }) => e.id), ['r1'], path);
  }
  const head = await send('HEAD', '/api/stats', as);
  assert.is(head.status, 405);
  assert.is(head.headers.get('allow'), 'GET, OPTIONS');
  assert.is((await send('GET', '/api/eventsx', as)).status, 404);
  assert.is((await send('GET', '/api', as)).status, 404);
});

test('a thrown bug is a 500 JSON body, logged, never a crash', async () => {
  const logged: string[] = [];
  const { send } = app({
    log: (m) => logged.push(m),
    store: {
      insert: async () => {
        throw new Error('disk on fire');
      },
    } as never,
  });
  const res = await send('POST', '/api/events', { body: { type: 'x' } });
  assert.is(res.status, 500);
  const body = await res.json();
  assert.is(body.error, 'Internal Server Error');
  assert.not.match(JSON.stringify(body), /disk on fire/);
  assert.match(logged.join('\n'), /disk on fire/);
});

test('a store that lost its database answers 503 with Retry-After, not 500', async () => {
  const { StoreUnavailableError } = await import('../lib/store/types.ts');
  const { send, as } = app({
    store: { list: async () => { throw new StoreUnavailableError('database connection lost'); } } as never,
  });
  const res = await send('GET', '/api/events', { headers: as('u1') });
  assert.is(res.status, 503);
  assert.ok(res.headers.get('retry-after'));
  assert.is((await res.json()).code, 'storage_unavailable');
});

test('pages: / redirects to /landing/; /dashboard serves; traversal refused', async () => {
  const { send } = app();
  const root = await send('GET', '/');
  assert.is(root.status, 302);
  assert.is(root.headers.get('location'), '/landing/');
  const landing = await send('GET', '/landing/');
  assert.is(landing.status, 200);
  assert.match(landing.headers.get('content-type') ?? '', /text\/html/);
  const redirect = await send('GET', '/landing');
  assert.is(redirect.status, 301);
  assert.is(redirect.headers.get('location'), '/landing/');
  for (const path of ['/landing/..%2f..%2fpackage.json', '/landing/%2e%2e/%2e%2e/package.json', '/sdk/..%5c..%5cpackage.json', '/landing/%00']) {
    const res = await send('GET', path);
    assert.ok(res.status === 400 || res.status === 404, `${path} → ${res.status}`);
    assert.not.match(await res.text(), /"dependencies"/);
  }
  const etag = landing.headers.get('etag') ?? '';
  assert.is((await send('GET', '/landing/', { headers: { 'if-none-match': etag } })).status, 304);
});

test('pages: a directory redirect collapses repeated slashes and backslashes, so it never names another host', async () => {
  const { handler } = app();
  const get = (url: string) => handler(new Request(url));
  for (const [path, location] of [['//issues', '/issues/'], ['/\\issues', '/issues/'], ['///login', '/login/'], ['//\\//alerts', '/alerts/'], ['/landing', '/landing/']]) {
    const res = await get(BASE + path);
    assert.is(res.status, 301, path);
    assert.is(res.headers.get('location'), location, path);
  }
  const mounted = app({ basePath: '/telemetry' }).handler;
  const res = await mounted(new Request(`${BASE}/telemetry//issues`));
  assert.equal([res.status, res.headers.get('location')], [301, '/telemetry/issues/']);
  assert.is(sameOriginPath('a//b\\\\c'), '/a/b/c');
});

test('basePath: every route, page and the root redirect live below it; other paths are 404', async () => {
  const { handler } = app({ basePath: '/telemetry/' });
  const send = (method: string, path: string) => handler(new Request(BASE + path, { method }));
  assert.is((await send('GET', '/telemetry/api/health')).status, 200);
  assert.is((await send('GET', '/telemetry/api/x/../health')).status, 200);
  const root = await send('GET', '/telemetry');
  assert.is(root.status, 302);
  assert.is(root.headers.get('location'), '/telemetry/landing/');
  assert.is((await send('GET', '/telemetry/landing/')).status, 200);
  assert.is((await send('GET', '/telemetry/landing')).headers.get('location'), '/telemetry/landing/');
  assert.is((await send('PUT', '/telemetry/api/events')).status, 405);
  assert.is((await send('OPTIONS', '/telemetry/api/events')).status, 204);
  for (const path of ['/api/health', '/landing/', '/telemetryx/api/health', '/telemetry/api/nothing']) {
    const res = await send('GET', path);
    assert.is(res.status, 404, path);
    assert.is((await res.json()).code, 'not_found', path);
  }
  for (const basePath of ['telemetry', '/a/:id', '/a*', '/a b']) assert.throws(() => app({ basePath }), /basePath/, basePath);
});

test('fallthrough: what the handler does not own resolves to null, what it owns is answered', async () => {
  const handler = createHandler({ store: createMemoryStore(), files: runtimeFiles, basePath: '/telemetry', fallthrough: true, log: () => {} });
  const send = (method: string, path: string) => handler(new Request(BASE + path, { method, headers: { 'x-idp-user-id': 'u1' } }));
  for (const [method, path] of [['GET', '/'], ['GET', '/api/health'], ['POST', '/telemetry/api/nothing'], ['GET', '/telemetry/nope.html'], ['OPTIONS', '/other'], ['DELETE', '/telemetryx']]) {
    assert.is(await send(method, path), null, `${method} ${path}`);
  }
  assert.is((await send('GET', '/telemetry/api/events'))?.status, 200);
  assert.is((await send('PUT', '/telemetry/api/events'))?.status, 405, 'a known path with a wrong method is still answered');
  assert.is((await send('GET', '/telemetry/api/stats'))?.status, 200);
  assert.is((await send('GET', '/telemetry/'))?.status, 302);
});

test('without file access the handler serves the API only', async () => {
  const { send } = app({ files: undefined });
  assert.is((await send('GET', '/api/health')).status, 200);
  for (const path of ['/', '/landing/', '/sdk/watchtower.js']) assert.is((await send('GET', path)).status, 404, path);
});

test('the handler works with any Request, including one with a full URL base', async () => {
  const { handler } = app();
  const res = await handler(new Request(`${BASE}/api/health`));
  assert.is(res.status, 200);
});

test.run();
