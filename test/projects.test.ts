// Projects (README "Projects", docs/api.md#projects) through the handler: CRUD and isolation, keyed
// ingestion in all three places, origins, per-project limits, rotation, deletion, the ownership
// order with and without an identity provider, the project filter of reads, durability.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createAuthenticator } from '../lib/auth.ts';
import { openSqliteRecords } from '../lib/records/file.ts';
import type { Project } from '../lib/projects.ts';
import { app } from './helpers/app.ts';
import { startJwks } from './helpers/jwks.ts';

type Json = Record<string, any>;
const body = async (res: Response): Promise<Json> => (await res.json()) as Json;
const ALICE = { 'x-idp-user-id': 'alice' };
const BOB = { 'x-idp-user-id': 'bob' };

async function newProject(send: ReturnType<typeof app>['send'], headers = ALICE, extra: Json = {}): Promise<Project> {
  const res = await send('POST', '/api/projects', { body: { name: 'Shop', ...extra }, headers });
  assert.is(res.status, 201, JSON.stringify(await res.clone().json()));
  return (await res.json()) as Project;
}

const eventsOf = async (send: ReturnType<typeof app>['send'], headers: Record<string, string>, query = '') =>
  (await body(await send('GET', `/api/events${query}`, { headers }))).events as Json[];

test('the list is in creation order, also for projects made in the same millisecond', async () => {
  const { send } = app({ now: () => Date.parse('2026-03-01T12:00:00Z') });
  const names = ['one', 'two', 'three', 'four', 'five', 'six'];
  for (const name of names) await newProject(send, ALICE, { name });
  const listed = (await body(await send('GET', '/api/projects', { headers: ALICE }))).projects as Project[];
  assert.equal(listed.map((x) => x.name), names);
  assert.is(listed[0].createdAt, '2026-03-01T12:00:00.000Z', 'the first keeps the clock\'s time');
  assert.is(listed[5].createdAt, '2026-03-01T12:00:00.005Z');
});

test('create, list, read, rename, delete: a user sees only their own projects; another user\'s id is a 404', async () => {
  const { send } = app();
  const p = await newProject(send, ALICE, { allowedOrigins: ['https://shop.example', 'http://localhost:8080/'] });
  assert.match(p.id, /^[1-9]\d{11}$/, 'a numeric id (Sentry DSNs need one)');
  assert.match(p.key, /^[0-9a-f]{32}$/, '128 random bits, URL-safe');
  assert.equal(p.allowedOrigins, ['https://shop.example', 'http://localhost:8080']);
  assert.is(p.rateLimitPerMinute, 6000);
  assert.ok(Date.parse(p.createdAt));
  const q = await newProject(send, ALICE, { name: 'Blog' });
  assert.is.not(q.key, p.key);

  assert.equal((await body(await send('GET', '/api/projects', { headers: ALICE }))).projects.map((x: Project) => x.name), ['Shop', 'Blog']);
  assert.equal(await body(await send('GET', '/api/projects', { headers: BOB })), { projects: [] });
  assert.equal(await body(await send('GET', `/api/projects/${p.id}`, { headers: ALICE })), p);
  for (const [method, path, payload] of [
    ['GET', `/api/projects/${p.id}`],
    ['PATCH', `/api/projects/${p.id}`, { name: 'mine now' }],
    ['POST', `/api/projects/${p.id}/rotate-key`],
    ['DELETE', `/api/projects/${p.id}`],
    ['GET', '/api/projects/999999999999'],
    ['GET', '/api/projects/not-a-number'],
  ] as const) {
    const res = await send(method, path, { headers: BOB, body: payload });
    assert.is(res.status, 404, `${method} ${path}`);
    assert.is((await body(res)).code, 'project_not_found');
  }

  const renamed = await body(await send('PATCH', `/api/projects/${p.id}`, { headers: ALICE, body: { name: ' Shop EU ', allowedOrigins: [], rateLimitPerMinute: 60 } }));
  assert.equal({ ...renamed, createdAt: p.createdAt }, { ...p, name: 'Shop EU', allowedOrigins: [], rateLimitPerMinute: 60 });
  assert.equal(await body(await send('DELETE', `/api/projects/${q.id}`, { headers: ALICE })), { id: q.id, deleted: true });
  assert.equal((await body(await send('GET', '/api/projects', { headers: ALICE }))).projects.map((x: Project) => x.id), [p.id]);
  assert.is((await send('GET', '/api/projects')).status, 401, 'signed-in users only');
});

test('bad project input is a 400 naming the field', async () => {
  const { send } = app();
  for (const bad of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 3 }, { name: 'a', allowedOrigins: 'https://x' },
    { name: 'a', allowedOrigins: ['https://x/path'] }, { name: 'a', allowedOrigins: ['ftp://x'] }, { name: 'a', allowedOrigins: ['*'] },
    { name: 'a', rateLimitPerMinute: 0 }, { name: 'a', rateLimitPerMinute: 1.5 }]) {
    const res = await send('POST', '/api/projects', { headers: ALICE, body: bad });
    assert.is(res.status, 400, JSON.stringify(bad));
    const { code, error } = await body(res);
    assert.is(code, 'invalid_body');
    assert.match(error, /"(name|allowedOrigins|rateLimitPerMinute)"/);
  }
  const res = await send('POST', '/api/projects', { headers: ALICE, raw: 'nope', body: undefined });
  assert.is(res.status, 400);
});

test('keyed ingestion: header, query or batch body; owned by the project\'s owner and carrying projectId on every read', async () => {
  const { send } = app();
  const p = await newProject(send);
  const other = await newProject(send, ALICE, { name: 'Other' });
  const sent = [
    await send('POST', '/api/events', { body: { type: 'a', id: 'h', userId: 'mallory' }, headers: { 'x-watchtower-key': p.key } }),
    await send('POST', `/api/events?key=${p.key}`, { body: { events: [{ type: 'a', id: 'q' }] } }),
    await send('POST', '/api/beacon', { body: { key: p.key, events: [{ type: 'a', id: 'b' }] } }),
    await send('POST', `/api/beacon?key=${other.key}`, { raw: JSON.stringify({ events: [{ type: 'a', id: 'o' }] }), headers: { 'content-type': 'text/plain;charset=UTF-8' } }),
    await send('POST', '/api/events', { body: { type: 'a', id: 'none', userId: 'alice' } }),
  ];
  for (const res of sent) assert.is(res.status, 200);
  const all = await eventsOf(send, ALICE);
  assert.equal(all.map((e) => [e.id, e.user_id, e.projectId]).sort(), [
    ['b', 'alice', p.id], ['h', 'alice', p.id], ['none', 'alice', undefined], ['o', 'alice', other.id], ['q', 'alice', p.id],
  ]);
  assert.is(all.find((e) => e.id === 'h')!.userId, 'mallory', 'the event\'s own userId stays a field');
  assert.equal((await eventsOf(send, ALICE, `?project=${p.id}`)).map((e) => e.id).sort(), ['b', 'h', 'q']);
  assert.equal(await eventsOf(send, { 'x-idp-user-id': 'mallory' }), [], 'naming a user in the event claims nothing when a key says otherwise');
  const stats = await body(await send('GET', `/api/stats?project=${other.id}`, { headers: ALICE }));
  assert.is(stats.totalEvents, 1);
  const exported = await (await send('GET', `/api/events/export?project=${p.id}`, { headers: ALICE })).text();
  assert.equal(exported.trim().split('\n').map((l) => JSON.parse(l).id).sort(), ['b', 'h', 'q']);
  for (const path of [`/api/events?project=${p.id}`, `/api/stats?project=${p.id}`, `/api/events/export?project=${p.id}`]) {
    assert.is((await send('GET', path, { headers: BOB })).status, 404, `${path}: another user's project`);
  }
  assert.is((await send('GET', '/api/events?project=abc', { headers: ALICE })).status, 400);
});

test('unknown, malformed, conflicting and rotated keys are 401 invalid_key; nothing is stored', async () => {
  const { send, store } = app();
  const p = await newProject(send);
  const tries = [
    send('POST', '/api/events', { body: { type: 'a' }, headers: { 'x-watchtower-key': '0'.repeat(32) } }),
    send('POST', '/api/events?key=has%20space', { body: { type: 'a' } }),
    send('POST', '/api/events', { body: { key: 42, events: [{ type: 'a' }] } }),
    send('POST', `/api/events?key=${p.key}`, { body: { type: 'a' }, headers: { 'x-watchtower-key': '1'.repeat(32) } }),
  ];
  for (const res of await Promise.all(tries)) {
    assert.is(res.status, 401);
    assert.is((await body(res)).code, 'invalid_key');
  }
  const rotated = await body(await send('POST', `/api/projects/${p.id}/rotate-key`, { headers: ALICE }));
  assert.is(rotated.id, p.id);
  assert.is.not(rotated.key, p.key);
  assert.is((await send('POST', `/api/events?key=${p.key}`, { body: { type: 'a' } })).status, 401, 'the old key stops at once');
  assert.is((await send('POST', `/api/events?key=${rotated.key}`, { body: { type: 'a', id: 'new' } })).status, 200);
  assert.is((await store.health()).eventCount, 1);
});

test('allowedOrigins: another Origin is 403; a listed one, or none (a server), passes', async () => {
  const { send } = app();
  const p = await newProject(send, ALICE, { allowedOrigins: ['https://shop.example'] });
  const post = (headers: Record<string, string>) => send('POST', `/api/events?key=${p.key}`, { body: { type: 'a' }, headers });
  const denied = await post({ origin: 'https://evil.example' });
  assert.is(denied.status, 403);
  assert.is((await body(denied)).code, 'origin_not_allowed');
  assert.is((await post({ origin: 'https://shop.example.evil.example' })).status, 403);
  assert.is((await post({ origin: 'https://shop.example' })).status, 200);
  assert.is((await post({})).status, 200);
  const open = await newProject(send);
  assert.is((await send('POST', `/api/events?key=${open.key}`, { body: { type: 'a' }, headers: { origin: 'https://anywhere.example' } })).status, 200);
});

test('per-project rate limit: events per minute, 429 with Retry-After past it, per project, refilled over time', async () => {
  let now = Date.parse('2026-05-16T12:00:00Z');
  const { send } = app({ now: () => now });
  const p = await newProject(send, ALICE, { rateLimitPerMinute: 5 });
  const q = await newProject(send, ALICE, { rateLimitPerMinute: 5 });
  const batch = (key: string, n: number) => send('POST', `/api/events?key=${key}`, { body: { events: Array.from({ length: n }, () => ({ type: 'a' })) } });
  assert.is((await batch(p.key, 3)).status, 200);
  const limited = await batch(p.key, 3);
  assert.is(limited.status, 429);
  assert.is((await body(limited)).code, 'rate_limited');
  assert.is(limited.headers.get('retry-after'), '12', '1 missing event at 5 a minute');
  assert.match(limited.headers.get('access-control-expose-headers') ?? '', /Retry-After/);
  assert.is((await batch(q.key, 5)).status, 200, 'each project has its own budget');
  now += 12_000;
  assert.is((await batch(p.key, 3)).status, 200, 'refilled');
  assert.is((await batch(p.key, 1)).status, 429);
  // Raising the limit applies at once.
  await send('PATCH', `/api/projects/${p.id}`, { headers: ALICE, body: { rateLimitPerMinute: 1000 } });
  assert.is((await batch(p.key, 100)).status, 200);
});

test('deleting a project stops its key; its events stay on the owner\'s dashboard', async () => {
  const { send } = app();
  const p = await newProject(send);
  await send('POST', `/api/events?key=${p.key}`, { body: { type: 'a', id: 'kept' } });
  assert.is((await send('DELETE', `/api/projects/${p.id}`, { headers: ALICE })).status, 200);
  assert.is((await send('POST', `/api/events?key=${p.key}`, { body: { type: 'a' } })).status, 401);
  assert.equal((await eventsOf(send, ALICE)).map((e) => [e.id, e.projectId]), [['kept', p.id]]);
  assert.is((await send('GET', `/api/events?project=${p.id}`, { headers: ALICE })).status, 404);
});

test('ownership order with a provider: token, then key, then default owner; an event\'s userId never', async () => {
  const jwks = await startJwks();
  try {
    const auth = createAuthenticator({ trustHeader: false, issuer: jwks.issuer });
    const bearer = async (sub: string) => ({ authorization: `Bearer ${await jwks.sign({ sub })}` });
    for (const defaultOwner of [null, 'house']) {
      const { send, store } = app({ auth, defaultOwner });
      const alice = await bearer('alice');
      const p = (await body(await send('POST', '/api/projects', { body: { name: 'Shop' }, headers: alice }))) as Project;
      // Forged: another user's id in the event, from any Origin, the service's own included.
      for (const origin of [undefined, 'http://watchtower.test', 'https://evil.example']) {
        await send('POST', '/api/events', { body: { type: 'forged', userId: 'alice' }, headers: origin ? { origin } : {} });
      }
      await send('POST', `/api/events?key=${p.key}`, { body: { type: 'keyed', userId: 'bob' } });
      // A signed-in user's own events stay theirs, and never join another user's project.
      await send('POST', `/api/events?key=${p.key}`, { body: { type: 'bobs' }, headers: await bearer('bob') });
      const mine = await eventsOf(send, alice);
      assert.equal(mine.map((e) => [e.type, e.projectId]), [['keyed', p.id]], `alice (default owner ${defaultOwner})`);
      const bobs = await eventsOf(send, await bearer('bob'));
      assert.equal(bobs.map((e) => [e.type, e.projectId]), [['bobs', undefined]]);
      const house = (await store.list({ userId: 'house', limit: 10 })).events;
      assert.equal(house.map((e) => e.type), defaultOwner ? ['forged', 'forged', 'forged'] : []);
      assert.is((await store.health()).eventCount, 5, 'the forged events are stored, owned by nobody or the default owner');
    }
  } finally {
    await jwks.close();
  }
});

test('development mode (header trust): the event\'s own userId still names its owner, after key and default owner', async () => {
  const { send } = app();
  await send('POST', '/api/events', { body: { type: 'dev', userId: 'carol' } });
  assert.equal((await eventsOf(send, { 'x-idp-user-id': 'carol' })).map((e) => e.type), ['dev']);
});

test('projects and their keys survive a restart on the durable record store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-projects-'));
  try {
    const path = join(dir, 'watchtower.sqlite');
    let records = await openSqliteRecords({ path });
    const first = app({ records });
    const p = await newProject(first.send);
    await records.close();
    records = await openSqliteRecords({ path });
    const second = app({ records });
    assert.equal((await body(await second.send('GET', '/api/projects', { headers: ALICE }))).projects, [p]);
    assert.is((await second.send('POST', `/api/events?key=${p.key}`, { body: { type: 'a' } })).status, 200);
    await records.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('X-Content-Type-Options: nosniff on JSON answers, errors, preflights, exports, streams and pages; CSP on pages', async () => {
  const { send } = app();
  const answers = [
    await send('GET', '/api/health'),
    await send('GET', '/api/stats'),
    await send('POST', '/api/events', { raw: '{', headers: { 'content-type': 'application/json' } }),
    await send('OPTIONS', '/api/events'),
    await send('GET', '/api/events/export', { headers: ALICE }),
    await send('GET', '/api/nothing-here'),
    await send('GET', '/landing/'),
    await send('GET', '/'),
  ];
  for (const res of answers) {
    assert.is(res.headers.get('x-content-type-options'), 'nosniff', `${res.status} ${res.headers.get('content-type')}`);
    await res.body?.cancel();
  }
  const stream = await send('GET', '/api/events/stream', { headers: ALICE });
  assert.is(stream.headers.get('x-content-type-options'), 'nosniff');
  await stream.body!.cancel();
  const preflight = await send('OPTIONS', '/api/events');
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-Watchtower-Key/);
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-Sentry-Auth/);
  const page = await send('GET', '/landing/');
  const csp = page.headers.get('content-security-policy') ?? '';
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.ok(page.headers.get('referrer-policy'));
  await page.body?.cancel();
});

test.run();
