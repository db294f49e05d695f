// Identity and its errors (docs/api.md#identity) through the handler, with real keys over HTTP.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createAuthenticator } from '../lib/auth.ts';
import { app, readUntil } from './helpers/app.ts';
import { startJwks, type JwksServer } from './helpers/jwks.ts';
import { startServer } from './helpers/server.ts';

const PROTECTED: [string, string, unknown?][] = [
  ['GET', '/api/events'],
  ['GET', '/api/stats'],
  ['GET', '/api/developer/stream'],
  ['GET', '/api/developer/insights'],
  ['POST', '/api/developer/query', {}],
];

async function withProvider(body: (jwks: JwksServer, h: ReturnType<typeof app>) => Promise<void>, trustHeader = false) {
  const jwks = await startJwks();
  try {
    await body(jwks, app({ auth: createAuthenticator({ trustHeader, issuer: jwks.issuer }) }));
  } finally {
    await jwks.close();
  }
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

test('every protected endpoint is 401 {error:"Unauthorized"} with no resolvable user', () =>
  withProvider(async (_jwks, { send }) => {
    for (const [method, path, body] of PROTECTED) {
      const res = await send(method, path, { body });
      assert.is(res.status, 401, path);
      assert.equal(await res.json(), { error: 'Unauthorized', code: 'unauthorized' }, path);
    }
  }));

test('ingestion and the event stream are open', () =>
  withProvider(async (_jwks, { send }) => {
    assert.is((await send('POST', '/api/events', { body: { type: 'x' } })).status, 200);
    assert.is((await send('POST', '/api/beacon', { body: { type: 'x' } })).status, 200);
    const stream = await send('GET', '/api/events/stream');
    assert.is(stream.status, 200);
    await stream.body!.cancel();
  }));

test('a verified bearer token reads that user’s data on every protected endpoint', () =>
  withProvider(async (jwks, { send }) => {
    const token = await jwks.sign({ sub: 'user_a' });
    await send('POST', '/api/events', { body: { type: 'error', id: 'mine', message: 'boom' }, headers: bearer(token) });
    await send('POST', '/api/events', { body: { type: 'error', id: 'theirs', userId: 'user_b' } });
    for (const [method, path, body] of PROTECTED) {
      const res = await send(method, path, { body, headers: bearer(token) });
      assert.is(res.status, 200, path);
      if (path.endsWith('stream')) await res.body!.cancel();
      else assert.not.match(await res.text(), /theirs/, path);
    }
    const events = (await (await send('GET', '/api/events', { headers: bearer(token) })).json()).events;
    assert.equal(events.map((e: { id: string; user_id: string }) => [e.id, e.user_id]), [['mine', 'user_a']]);
  }));

test('with no provider the X-IdP-User-Id header is the user', async () => {
  const { send, as } = app();
  await send('POST', '/api/events', { body: { type: 'x', userId: 'dev' } });
  assert.is((await (await send('GET', '/api/events', { headers: as('dev') })).json()).events.length, 1);
});

test('a real provider and only the header → 401; SERVICE_TRUST_USER_HEADER=true accepts it', async () => {
  await withProvider(async (_jwks, { send, as }) => {
    const res = await send('GET', '/api/events', { headers: as('user_a') });
    assert.is(res.status, 401);
    assert.equal(await res.json(), { error: 'Unauthorized', code: 'unauthorized' });
  });
  await withProvider(async (_jwks, { send, as }) => {
    assert.is((await send('GET', '/api/events', { headers: as('user_a') })).status, 200);
  }, true);
});

test('a token wins over a header naming another user', () =>
  withProvider(async (jwks, { send, as }) => {
    await send('POST', '/api/events', { body: { type: 'x', id: 'b-event', userId: 'user_b' } });
    const res = await send('GET', '/api/events', { headers: { ...as('user_b'), ...bearer(await jwks.sign({ sub: 'user_a' })) } });
    assert.equal((await res.json()).events, []);
  }, true));

test('bad tokens are 401 with one body and no stack: expired, wrong issuer, tampered, garbage', () =>
  withProvider(async (jwks, { send }) => {
    const good = await jwks.sign({ sub: 'user_a' });
    const [h, p, s] = good.split('.');
    const forged = btoa(JSON.stringify({ sub: 'user_b', iss: jwks.issuer, exp: 9999999999 })).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
    const tokens = [
      await jwks.sign({ sub: 'user_a', exp: Math.floor(Date.now() / 1000) - 60 }),
      await jwks.sign({ sub: 'user_a', iss: 'https://evil.example' }),
      `${h}.${forged}.${s}`,
      `${h}.${p}.${s.slice(0, -4)}AAAA`,
      'garbage',
      '',
    ];
    for (const token of tokens) {
      const res = await send('GET', '/api/stats', { headers: { authorization: `Bearer ${token}` } });
      assert.is(res.status, 401, token);
      assert.equal(await res.json(), { error: 'Unauthorized', code: 'unauthorized' });
    }
  }));

test('a JWKS that cannot be fetched gives 503 on protected reads, never a pass', async () => {
  const jwks = await startJwks();
  const token = await jwks.sign({ sub: 'user_a' });
  const { send, store } = app({ auth: createAuthenticator({ trustHeader: false, issuer: jwks.issuer, timeoutMs: 500 }) });
  await jwks.close();
  const res = await send('GET', '/api/events', { headers: bearer(token) });
  assert.is(res.status, 503);
  assert.ok(res.headers.get('retry-after'));
  // Ingestion still works: the sender is simply unidentified.
  const ingest = await (await send('POST', '/api/events', { body: { type: 'x' }, headers: bearer(token) })).json();
  assert.equal(ingest, { accepted: 1, rejected: 0 });
  assert.is((await store.health()).eventCount, 1);
  assert.is((await store.stats('user_a', Date.now())).totalEvents, 0, 'stored unowned, not as the token\'s subject');
});

test('a forged token on ingestion never claims ownership', () =>
  withProvider(async (jwks, { send }) => {
    const other = await startJwks();
    try {
      const forged = await other.sign({ sub: 'victim', iss: jwks.issuer });
      const out = await (await send('POST', '/api/events', { body: { type: 'x', id: 'f1' }, headers: bearer(forged) })).json();
      assert.equal(out, { accepted: 1, rejected: 0 });
      const victim = bearer(await jwks.sign({ sub: 'victim' }));
      assert.equal((await (await send('GET', '/api/events', { headers: victim })).json()).events, [], 'the forged token claimed nothing');
      const userA = bearer(await jwks.sign({ sub: 'user_a' }));
      await send('POST', '/api/events', { body: { type: 'x', id: 'v1', userId: 'claimed' }, headers: userA });
      const read = (await (await send('GET', '/api/events', { headers: userA })).json()).events;
      assert.equal(read.map((e: { id: string; user_id: string }) => [e.id, e.user_id]), [['v1', 'user_a']], 'an authenticated user overrides the payload');
    } finally {
      await other.close();
    }
  }));

test('anonymous external apps are accepted and stored unowned', () =>
  withProvider(async (jwks, { send, store }) => {
    const res = await send('POST', '/api/events', { body: { events: [{ type: 'pageload' }] } });
    assert.is(res.status, 200);
    assert.equal(await res.json(), { accepted: 1, rejected: 0 });
    assert.is((await store.health()).eventCount, 1);
    const stats = await (await send('GET', '/api/stats', { headers: bearer(await jwks.sign({ sub: 'user_a' })) })).json();
    assert.is(stats.totalEvents, 0, 'unowned events appear for no user');
  }));

test('users sync needs the token of the same user', () =>
  withProvider(async (jwks, { send }) => {
    const body = { idpUserId: 'user_a', email: 'a@example.com', displayName: 'A' };
    assert.is((await send('POST', '/api/users/sync', { body, headers: bearer(await jwks.sign({ sub: 'user_b' })) })).status, 403);
    const ok = await send('POST', '/api/users/sync', { body, headers: bearer(await jwks.sign({ sub: 'user_a' })) });
    assert.is(ok.status, 200);
    assert.is((await ok.json()).idp_user_id, 'user_a');
  }));

test('streams of a signed-in user close when the token expires', () =>
  withProvider(async (jwks, { send }) => {
    const token = await jwks.sign({ sub: 'user_a', exp: Math.floor(Date.now() / 1000) + 1 });
    for (const path of ['/api/events/stream', '/api/developer/stream']) {
      const reader = (await send('GET', path, { headers: bearer(token) })).body!.getReader();
      assert.match(await readUntil(reader, 'event: expired', 4000), /token expired/, path);
    }
  }));

test('server.ts: IDP_JWT_ISSUER turns header trust off; tokens work', async () => {
  const jwks = await startJwks();
  const server = await startServer({ IDP_JWT_ISSUER: jwks.issuer });
  try {
    assert.match(server.output(), /identity: tokens from/);
    const header = await fetch(`${server.url}/api/events`, { headers: { 'x-idp-user-id': 'user_a' } });
    assert.is(header.status, 401);
    await header.body?.cancel();
    const ok = await fetch(`${server.url}/api/events`, { headers: bearer(await jwks.sign({ sub: 'user_a' })) });
    assert.is(ok.status, 200);
    assert.equal(await ok.json(), { events: [], nextCursor: null });
  } finally {
    await server.stop();
    await jwks.close();
  }
});

test.run();
