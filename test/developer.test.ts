// The developer endpoints (docs/api.md#developer-stream, #developer-insights, #developer-query).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fingerprint, normaliseMessage, topFrame } from '../lib/insights.ts';
import { app, dataFrames, readUntil } from './helpers/app.ts';
import { MAX_QUERIES_PER_USER } from '../lib/inflight.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';

const stackA = 'TypeError: x is undefined\n    at render (https://shop.test/app.js:10:5)\n    at main (https://shop.test/app.js:50:1)';
const stackB = 'TypeError: x is undefined\n    at checkout (https://shop.test/cart.js:3:9)';

test('every developer endpoint is 401 without a user', async () => {
  const { send } = app();
  assert.is((await send('GET', '/api/developer/stream')).status, 401);
  assert.is((await send('GET', '/api/developer/insights')).status, 401);
  assert.is((await send('POST', '/api/developer/query', { body: {} })).status, 401);
});

test('fingerprint: same message and top frame group; numbers in messages do not split groups', () => {
  assert.is(topFrame(stackA), 'render (https://shop.test/app.js:10:5)');
  assert.is(topFrame('boom@https://x/app.js:1:2\nother@x:1:1'), 'boom@https://x/app.js:1:2');
  assert.is(topFrame(undefined), null);
  assert.is(normaliseMessage('Order 1234 failed for 3f2b0c1e-8d7a-4c55-9a1b-0e2f3d4c5b6a'), 'Order <n> failed for <id>');
  assert.is(fingerprint('Order 12 failed', 'f'), fingerprint('Order 99 failed', 'f'));
  assert.is.not(fingerprint('x', 'render'), fingerprint('x', 'checkout'));
});

test('insights: error groups, errors per version against the previous, slowest routes, vitals', async () => {
  const { send, as } = app();
  const events = [
    { type: 'pageload', deployVersion: '1.0', route: '/fast', data: { duration: 100 } },
    { type: 'error', deployVersion: '1.0', message: 'x is undefined', data: { stack: stackA } },
    { type: 'click', deployVersion: '1.0' },
    { type: 'click', deployVersion: '1.0' },
    { type: 'pageload', deployVersion: '1.1', route: '/slow', data: { duration: 3000 } },
    { type: 'error', deployVersion: '1.1', message: 'x is undefined', data: { stack: stackA } },
    { type: 'error', deployVersion: '1.1', message: 'x is undefined', data: { stack: stackA } },
    { type: 'error', deployVersion: '1.1', message: 'x is undefined', data: { stack: stackB } },
    { type: 'performance', deployVersion: '1.1', data: { name: 'LCP', value: 2000 } },
    { type: 'performance', deployVersion: '1.1', data: { name: 'LCP', value: 5000 } },
    { type: 'performance', deployVersion: '1.1', data: { name: 'CLS', value: 0.2 } },
  ].map((e) => ({ ...e, userId: 'dev' }));
  await send('POST', '/api/events', { body: { events } });
  await send('POST', '/api/events', { body: { type: 'error', message: 'not mine', userId: 'other' } });
  const res = await send('GET', '/api/developer/insights', { headers: as('dev') });
  assert.is(res.status, 200);
  const ins = await res.json();
  assert.is(ins.window, 11);
  assert.is(ins.errorGroups.length, 2);
  const [top, second] = ins.errorGroups;
  assert.is(top.count, 3);
  assert.equal(top.versions, ['1.0', '1.1']);
  assert.is(top.topFrame, 'render (https://shop.test/app.js:10:5)');
  assert.is(second.count, 1);
  assert.ok(top.firstSeen <= top.lastSeen);
  assert.not.ok(JSON.stringify(ins).includes('not mine'));
  assert.equal(ins.errorsByVersion, [
    { version: '1.0', events: 4, errors: 1, errorRate: 0.25, previous: null, errorRateChange: null },
    { version: '1.1', events: 7, errors: 3, errorRate: 0.4286, previous: '1.0', errorRateChange: 0.1786 },
  ]);
  assert.equal(ins.slowestRoutes.map((r: { route: string }) => r.route), ['/slow', '/fast']);
  assert.equal(ins.webVitals.LCP, { count: 2, p75: 5000, good: 1, needsImprovement: 0, poor: 1 });
  assert.equal(ins.webVitals.CLS, { count: 1, p75: 0.2, good: 0, needsImprovement: 1, poor: 0 });
});

test('insights: web vitals are null when there are none', async () => {
  const { send, as } = app();
  await send('POST', '/api/events', { body: { type: 'click', userId: 'dev' } });
  const ins = await (await send('GET', '/api/developer/insights', { headers: as('dev') })).json();
  assert.is(ins.webVitals, null);
  assert.equal(ins.errorGroups, []);
});

test('query: filter, group and metrics, scoped to the user', async () => {
  const { send, as } = app();
  const events = [
    ...[100, 200, 300, 400].map((d) => ({ type: 'pageload', route: '/a', sessionId: 's1', deployVersion: '2', data: { duration: d } })),
    { type: 'pageload', route: '/b', sessionId: 's2', deployVersion: '2', data: { duration: 50 } },
    { type: 'click', route: '/a', sessionId: 's3', deployVersion: '1' },
  ].map((e) => ({ ...e, userId: 'dev' }));
  await send('POST', '/api/events', { body: { events } });
  await send('POST', '/api/events', { body: { type: 'pageload', route: '/a', userId: 'other', data: { duration: 9999 } } });
  const q = { filter: { type: 'pageload' }, groupBy: ['route'], metrics: ['count', 'sessions', 'p50Duration', 'p95Duration', 'avgDuration'] };
  const res = await send('POST', '/api/developer/query', { body: q, headers: as('dev') });
  assert.is(res.status, 200);
  const out = await res.json();
  assert.equal(out.rows, [
    { route: '/a', count: 4, sessions: 1, p50Duration: 200, p95Duration: 400, avgDuration: 250 },
    { route: '/b', count: 1, sessions: 1, p50Duration: 50, p95Duration: 50, avgDuration: 50 },
  ]);
  assert.is(out.scanned, 5);
  assert.is(out.truncated, false);
  const byVersion = await (await send('POST', '/api/developer/query', { body: { groupBy: ['version', 'type'], filter: { route: '/a' } }, headers: as('dev') })).json();
  assert.equal(byVersion.rows, [{ version: '2', type: 'pageload', count: 4 }, { version: '1', type: 'click', count: 1 }]);
  const none = await (await send('POST', '/api/developer/query', { body: { filter: { since: '2999-01-01T00:00:00Z' } }, headers: as('dev') })).json();
  assert.equal(none.rows, []);
  const limited = await (await send('POST', '/api/developer/query', { body: { groupBy: ['sessionId'], limit: 1 }, headers: as('dev') })).json();
  assert.equal(limited.rows, [{ sessionId: 's1', count: 4 }]);
});

test('query: unknown fields, SQL fragments and oversized limits are 400 with a message', async () => {
  const { send, as } = app();
  const bad = [
    { sql: 'SELECT * FROM events' },
    { filter: { type: "x'; DROP TABLE events; --" } },
    { filter: { userId: 'someone-else' } },
    { filter: { route: "/a' OR 1=1" } },
    { groupBy: ['user_id'] },
    { groupBy: ['type; DELETE FROM events'] },
    { metrics: ['sum(duration)'] },
    { metrics: [] },
    { limit: 1_000_000 },
    { limit: 0 },
    { limit: '10' },
    { filter: { since: 'last tuesday' } },
    [],
    'SELECT 1',
  ];
  for (const body of bad) {
    const res = await send('POST', '/api/developer/query', { body, headers: as('dev') });
    assert.is(res.status, 400, JSON.stringify(body));
    assert.match((await res.json()).error, /Invalid query/, JSON.stringify(body));
  }
});

test('queries and insights: at most 2 running at once per user, then 429 too_many_queries', async () => {
  assert.is(MAX_QUERIES_PER_USER, 2);
  // A store whose reads wait until released, so that queries stay under way.
  const memory = createMemoryStore();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const store: Store = { ...memory, list: async (q) => (await gate, memory.list(q)), stats: async (u, n) => (await gate, memory.stats(u, n)) } as Store;
  const { send, as } = app({ store });
  const query = (user: string) => send('POST', '/api/developer/query', { headers: as(user), body: { groupBy: ['type'] } });
  const running = [query('u1'), send('GET', '/api/developer/insights', { headers: as('u1') })];
  await new Promise((r) => setTimeout(r, 20));
  // Answered at once, not held back behind the gate.
  const atOnce = (p: Promise<Response>) => Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), 1000))]);
  for (const refused of [await atOnce(query('u1')), await atOnce(send('GET', '/api/developer/insights', { headers: as('u1') }))]) {
    assert.ok(refused, 'a third query or insights of u1 is answered at once');
    assert.is(refused.status, 429);
    assert.is(refused.headers.get('retry-after'), '1');
    assert.is((await refused.json()).code, 'too_many_queries');
  }
  const other = query('u2');
  release();
  assert.equal((await Promise.all([...running, other])).map((r) => r.status), [200, 200, 200], "another user's query is not held back");
  assert.is((await query('u1')).status, 200, 'finished queries free their place');
  const bad = await send('POST', '/api/developer/query', { headers: as('u1'), body: { nope: 1 } });
  assert.is(bad.status, 400);
  assert.is((await query('u1')).status, 200, 'a refused query frees its place too');
  assert.is((await query('u1')).status, 200);
});

test('developer stream: numbered messages, own events only, Last-Event-ID replay', async () => {
  const { send, as } = app();
  const first = (await send('GET', '/api/developer/stream', { headers: as('dev') })).body!.getReader();
  await readUntil(first, ': connected');
  await send('POST', '/api/events', { body: { type: 'x', id: 'one', userId: 'dev' } });
  await send('POST', '/api/events', { body: { type: 'x', id: 'theirs', userId: 'other' } });
  await send('POST', '/api/events', { body: { type: 'x', id: 'two', userId: 'dev' } });
  const text = await readUntil(first, '"two"');
  assert.not.match(text, /theirs/);
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  assert.is(ids.length, 2);
  assert.ok(ids[1] > ids[0]);
  await first.cancel();

  await send('POST', '/api/events', { body: { type: 'x', id: 'three', userId: 'dev' } });
  const resumed = (await send('GET', '/api/developer/stream', { headers: { ...as('dev'), 'last-event-id': String(ids[0]) } })).body!.getReader();
  const replay = await readUntil(resumed, '"three"');
  const replayed = dataFrames(replay).flat().map((e) => (e as { id: string }).id);
  assert.equal(replayed, ['two', 'three'], 'everything after the last seen id, nothing before');
  await resumed.cancel();
});

test.run();
