// The Sentry endpoints wired to projects (docs/sentry.md): keys, origins, limits and storage through
// the handler, then the real @sentry/node SDK, unmodified, reporting to the real server (server.ts).
import { spawn } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Project } from '../lib/projects.ts';
import { app } from './helpers/app.ts';
import { ROOT, startServer, type RunningServer } from './helpers/server.ts';

declare const Deno: unknown;
type Json = Record<string, any>;
const ALICE = { 'x-idp-user-id': 'alice' };
const EVENT_ID = '9ec79c33ec9942ab8353589fcb2e04dc';

const envelope = (items: [Json, Json | string][], header: Json = { event_id: EVENT_ID, sent_at: new Date().toISOString() }) =>
  [JSON.stringify(header), ...items.flatMap(([h, p]) => [JSON.stringify(h), typeof p === 'string' ? p : JSON.stringify(p)])].join('\n') + '\n';
const errorItem = (id = EVENT_ID): [Json, Json] => [
  { type: 'event' },
  { event_id: id, level: 'warning', release: 'shop@1.0.0', exception: { values: [{ type: 'TypeError', value: 'x is undefined', stacktrace: { frames: [{ filename: 'app.js', function: 'main', lineno: 3, colno: 7, in_app: true }] } }] } },
];

async function setup(extra: Json = {}) {
  const h = app();
  const res = await h.send('POST', '/api/projects', { body: { name: 'Shop', ...extra }, headers: ALICE });
  const project = (await res.json()) as Project;
  const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) => h.send('POST', path, { raw: body, headers });
  const events = async () => ((await (await h.send('GET', '/api/events', { headers: ALICE })).json()) as { events: Json[] }).events;
  return { ...h, project, post, events };
}

test('an envelope with the key in the query string: 200 { id }, stored for the project\'s owner with projectId; a retry is stored once', async () => {
  const { project, post, events } = await setup();
  const url = `/api/${project.id}/envelope/?sentry_key=${project.key}&sentry_version=7`;
  const body = envelope([errorItem(), [{ type: 'session' }, { sid: 's' }], [{ type: 'client_report' }, { discarded_events: [] }]]);
  for (let i = 0; i < 2; i++) {
    const res = await post(url, body, { 'content-type': 'text/plain;charset=UTF-8' });
    assert.is(res.status, 200);
    assert.equal(await res.json(), { id: EVENT_ID });
    assert.is(res.headers.get('retry-after'), null, 'never Retry-After on an accepted envelope');
    assert.is(res.headers.get('x-content-type-options'), 'nosniff');
  }
  const stored = await events();
  assert.is(stored.length, 1);
  const e = stored[0];
  assert.equal([e.id, e.type, e.user_id, e.projectId, e.message, e.severity, e.deployVersion, e.source], [EVENT_ID, 'error', 'alice', project.id, 'TypeError: x is undefined', 'warning', 'shop@1.0.0', 'app.js']);
});

test('a Sentry error becomes an issue of its project, grouped with its retries and repeats', async () => {
  const { project, post, send } = await setup();
  const url = `/api/${project.id}/envelope/?sentry_key=${project.key}`;
  for (const id of [EVENT_ID, EVENT_ID, 'c'.repeat(32)]) assert.is((await post(url, envelope([errorItem(id)]))).status, 200);
  let issues: Json[] = [];
  for (let i = 0; i < 100 && !(issues.length && issues[0].count === 2); i++) {
    await new Promise((r) => setTimeout(r, 50));
    issues = ((await (await send('GET', `/api/issues?project=${project.id}`, { headers: ALICE })).json()) as { issues: Json[] }).issues;
  }
  assert.is(issues.length, 1);
  assert.equal([issues[0].count, issues[0].title], [2, 'TypeError: x is undefined']);
});

test('X-Sentry-Auth, gzip, a /store/ body, and an envelope of sessions alone', async () => {
  const { project, post, events } = await setup();
  const auth = { 'x-sentry-auth': `Sentry sentry_version=7, sentry_client=sentry.python/2.0.0, sentry_key=${project.key}` };
  const gz = await post(`/api/${project.id}/envelope/`, gzipSync(envelope([errorItem('a'.repeat(32))])), { ...auth, 'content-encoding': 'gzip', 'content-type': 'application/x-sentry-envelope' });
  assert.is(gz.status, 200);
  const store = await post(`/api/${project.id}/store/`, JSON.stringify({ event_id: 'b'.repeat(32), message: 'hello', level: 'info' }), { ...auth, 'content-type': 'application/json' });
  assert.equal([store.status, await store.json()], [200, { id: 'b'.repeat(32) }]);
  const sessions = await post(`/api/${project.id}/envelope/?sentry_key=${project.key}`, envelope([[{ type: 'session' }, { sid: 'x' }]], {}));
  assert.equal([sessions.status, await sessions.json()], [200, {}]);
  assert.equal((await events()).map((e) => [e.id, e.message, e.projectId]).sort(), [['a'.repeat(32), 'TypeError: x is undefined', project.id], ['b'.repeat(32), 'hello', project.id]]);
});

test('bad keys are 401, a foreign origin 403, and nothing is stored', async () => {
  const { project, post, send, store } = await setup({ allowedOrigins: ['https://shop.example'] });
  const other = (await (await send('POST', '/api/projects', { body: { name: 'Blog' }, headers: ALICE })).json()) as Project;
  const body = envelope([errorItem()]);
  const cases: [string, Record<string, string>, number, string][] = [
    [`/api/${project.id}/envelope/`, {}, 401, 'missing_sentry_key'],
    [`/api/${project.id}/envelope/?sentry_key=${'0'.repeat(32)}`, {}, 401, 'invalid_key'],
    [`/api/${project.id}/envelope/?sentry_key=${other.key}`, {}, 401, 'invalid_key'],
    [`/api/999999999999/envelope/?sentry_key=${project.key}`, {}, 401, 'invalid_key'],
    [`/api/${project.id}/envelope/?sentry_key=${project.key}`, { origin: 'https://evil.example' }, 403, 'origin_not_allowed'],
    [`/api/${project.id}/store/?sentry_key=bad-key!`, {}, 401, 'invalid_sentry_auth'],
    [`/api/shop/envelope/?sentry_key=${project.key}`, {}, 404, 'not_found'],
  ];
  for (const [path, headers, status, code] of cases) {
    const res = await post(path, body, headers);
    assert.is(res.status, status, path);
    assert.is((await res.json()).code, code, path);
  }
  assert.is((await post(`/api/${project.id}/envelope/?sentry_key=${project.key}`, 'not an envelope')).status, 400);
  assert.is((await store.health()).eventCount, 0);
  assert.is((await post(`/api/${project.id}/envelope/?sentry_key=${project.key}`, body, { origin: 'https://shop.example' })).status, 200);
});

test('past the project\'s limit: 429 with Retry-After and X-Sentry-Rate-Limits, both exposed to browsers', async () => {
  const { project, post } = await setup({ rateLimitPerMinute: 1 });
  const url = `/api/${project.id}/envelope/?sentry_key=${project.key}`;
  assert.is((await post(url, envelope([errorItem('c'.repeat(32))]))).status, 200);
  const res = await post(url, envelope([errorItem('d'.repeat(32))]));
  assert.is(res.status, 429);
  assert.is(res.headers.get('retry-after'), '60');
  assert.is(res.headers.get('x-sentry-rate-limits'), '60::project');
  assert.match(res.headers.get('access-control-expose-headers') ?? '', /Retry-After.*X-Sentry-Rate-Limits/);
  assert.is((await post(url, envelope([[{ type: 'session' }, {}]], {}))).status, 200, 'items that store nothing are not limited');
});

/** Runs the @sentry/node app (test/helpers/sentry-node-app.ts) against a DSN; resolves with the ids it printed. */
function runNodeApp(dsn: string): Promise<{ flushed: boolean; ids: Record<string, string> }> {
  const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
  const child = spawn(node, ['--import', 'tsx', 'test/helpers/sentry-node-app.ts'], { cwd: ROOT, env: { ...process.env, SENTRY_DSN: dsn }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`the Sentry app exited ${code}:\n${out}\n${err}`));
      else resolve(JSON.parse(line));
    }),
  );
}

test('the real @sentry/node SDK with a project\'s DSN: exception, message, feedback and a gzipped report land on the owner\'s dashboard', async () => {
  let server: RunningServer | undefined;
  try {
    server = await startServer();
    const headers = { 'content-type': 'application/json', 'x-idp-user-id': 'node-owner' };
    const project = (await (await fetch(server.url + '/api/projects', { method: 'POST', headers, body: JSON.stringify({ name: 'API' }) })).json()) as Project;
    const { flushed, ids } = await runNodeApp(`http://${project.key}@127.0.0.1:${server.port}/${project.id}`);
    assert.ok(flushed, 'the SDK flushed');
    const read = await fetch(`${server.url}/api/events?project=${project.id}`, { headers });
    const events = ((await read.json()) as { events: Json[] }).events;
    const byId = (id: string) => {
      const found = events.find((e) => e.id === id);
      if (!found) throw new Error(`no event ${id}: ${JSON.stringify(events.map((e) => e.id))}`);
      return found;
    };
    const exception = byId(ids.exception);
    assert.equal([exception.type, exception.message, exception.severity, exception.deployVersion, exception.environment, exception.user_id, exception.projectId],
      ['error', 'TypeError: card declined for 42', 'error', 'shop@2.4.1', 'staging', 'node-owner', project.id]);
    assert.is(exception.data.frames[0].function, 'chargeCard');
    assert.ok(exception.source.endsWith('sentry-node-app.ts'));
    assert.equal(exception.data.tags, { team: 'checkout' });
    assert.is(exception.data.user.id, 'customer-7');
    const message = byId(ids.message);
    assert.equal([message.type, message.message, message.severity], ['error', 'inventory running low', 'warning']);
    const feedback = byId(ids.feedback);
    assert.equal([feedback.type, feedback.message, feedback.data.name, feedback.data.email], ['feedback', 'Checkout feels slow', 'Ada', 'ada@example.com']);
    assert.is(byId(ids.large).data.extra.dump.length, 40_000, 'the gzipped report');
    assert.is(events.length, 4, 'sessions are not stored');
  } finally {
    await server?.stop();
  }
});

test.run();
