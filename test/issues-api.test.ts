// The issue API (docs/api.md#issues) through the fetch handler: errors ingested over HTTP become
// issues in the record store, per user, with filters, status changes, regressions and retention.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { app } from './helpers/app.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { normalise } from '../lib/event.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const DAY = 86_400_000;

function setup(options: { retentionDays?: number } = {}) {
  const clock = { now: T0 };
  const records = createMemoryRecords();
  const store = createMemoryStore();
  const a = app({ store, records, now: () => clock.now, monitoring: { retentionDays: options.retentionDays } });
  const error = async (user: string, fields: Record<string, unknown>) => {
    const res = await a.send('POST', '/api/events', { headers: a.as(user), body: { type: 'error', ...fields } });
    assert.is(res.status, 200);
    await a.handler.monitor.flush();
  };
  const issues = async (user: string, query = '') => {
    const res = await a.send('GET', `/api/issues${query}`, { headers: a.as(user) });
    assert.is(res.status, 200, await res.clone().text());
    return res.json();
  };
  return { ...a, clock, records, error, issues };
}

const stack = (fn: string) => `TypeError: boom\n    at ${fn} (https://shop.example.com/assets/app-3f9a1c2b.js:1:100)\n    at main (https://shop.example.com/assets/app-3f9a1c2b.js:1:200)`;

test('errors become issues: one per bug, however its numbers vary; scoped to their owner', async () => {
  const s = setup();
  await s.error('u1', { message: 'Order 12 failed for user 3f2a9c1e-0b6d-4e7a-9a39-2d5e8c7b1a90', sessionId: 's1', deployVersion: '1.0.0' });
  s.clock.now += 1000;
  await s.error('u1', { message: 'Order 99 failed for user 7d1e4b2c-9f3a-4c8d-8e21-5b6a7c8d9e0f', sessionId: 's2', deployVersion: '1.0.1' });
  await s.error('u1', { message: 'x', data: { stack: stack('applyCoupon') } });
  await s.error('u1', { message: 'x', data: { stack: stack('checkout') } });
  await s.error('u2', { message: 'Order 5 failed for user 3f2a9c1e-0b6d-4e7a-9a39-2d5e8c7b1a90' });

  const mine = await s.issues('u1');
  assert.is(mine.issues.length, 3, 'two top frames, two issues; one message with varying ids, one issue');
  const order = mine.issues.find((i: { title: string }) => i.title.startsWith('Order'));
  assert.equal([order.count, order.sessions, order.versions.first, order.versions.last, order.status, order.substatus], [2, { count: 2, exact: true }, '1.0.0', '1.0.1', 'unresolved', 'new']);
  assert.equal(order.daily, [['2026-05-16', 2]]);
  assert.is(mine.counts.unresolved, 3);
  assert.is((await s.issues('u2')).issues.length, 1);

  const other = await s.send('GET', `/api/issues/${order.id}`, { headers: s.as('u2') });
  assert.is(other.status, 404, "another user's issue is not found");
  assert.is((await s.send('GET', '/api/issues', {})).status, 401);
  const patched = await s.send('PATCH', `/api/issues/${order.id}`, { headers: s.as('u2'), body: { status: 'resolved' } });
  assert.is(patched.status, 404);
});

test('GET /api/issues/:id: the latest event with its frames, the recent events, the versions', async () => {
  const s = setup();
  await s.error('u1', { message: 'first', deployVersion: '2.0.0', data: { stack: stack('applyCoupon') } });
  s.clock.now += 1000;
  await s.error('u1', { message: '<img src=x onerror=alert(1)>', deployVersion: '2.1.0', data: { stack: stack('applyCoupon') } });
  const [issue] = (await s.issues('u1')).issues;
  const res = await s.send('GET', `/api/issues/${issue.id}`, { headers: s.as('u1') });
  assert.is(res.status, 200);
  const body = await res.json();
  assert.is(body.issue.id, issue.id);
  assert.is(body.latestEvent.message, '<img src=x onerror=alert(1)>', 'event text is data, returned as sent');
  assert.equal(body.events.map((e: { message: string }) => e.message), ['<img src=x onerror=alert(1)>', 'first']);
  assert.equal(body.frames.map((f: { function: string; line: number; minified: unknown }) => [f.function, f.line, f.minified]), [['applyCoupon', 1, null], ['main', 1, null]]);
  assert.equal(body.issue.versions.seen, ['2.0.0', '2.1.0']);
  assert.is((await s.send('GET', '/api/issues/not-an-id', { headers: s.as('u1') })).status, 404);
});

test('PATCH: resolve → a later event regresses it; resolved in a version; ignore keeps it quiet; reopen', async () => {
  const s = setup();
  const patch = async (id: string, body: unknown) => {
    const res = await s.send('PATCH', `/api/issues/${id}`, { headers: s.as('u1'), body });
    return { status: res.status, body: await res.json() };
  };
  await s.error('u1', { message: 'checkout broke', deployVersion: '1.4.0' });
  const [issue] = (await s.issues('u1')).issues;

  s.clock.now += 1000;
  const resolved = await patch(issue.id, { status: 'resolved' });
  assert.equal([resolved.status, resolved.body.issue.status, resolved.body.issue.resolvedAt], [200, 'resolved', new Date(s.clock.now).toISOString()]);
  assert.equal((await s.issues('u1', '?status=resolved')).issues.length, 1);
  s.clock.now += 1000;
  await s.error('u1', { message: 'checkout broke', deployVersion: '1.4.0' });
  let [now] = (await s.issues('u1')).issues;
  assert.equal([now.status, now.substatus, now.regressions, now.count], ['unresolved', 'regressed', 1, 2]);
  assert.is((await s.issues('u1', '?status=regressed')).issues.length, 1);

  await patch(issue.id, { status: 'resolved', resolvedInVersion: '1.5.0' });
  s.clock.now += 1000;
  await s.error('u1', { message: 'checkout broke', deployVersion: '1.5.0' });
  [now] = (await s.issues('u1')).issues;
  assert.equal([now.status, now.resolvedInVersion], ['resolved', '1.5.0'], 'an event of the fixed version itself stays resolved');
  await s.error('u1', { message: 'checkout broke', deployVersion: '1.5.1' });
  [now] = (await s.issues('u1')).issues;
  assert.equal([now.status, now.substatus], ['unresolved', 'regressed']);

  await patch(issue.id, { status: 'ignored' });
  s.clock.now += DAY;
  await s.error('u1', { message: 'checkout broke', deployVersion: '1.6.0' });
  [now] = (await s.issues('u1')).issues;
  assert.equal([now.status, now.count], ['ignored', 5]);
  const reopened = await patch(issue.id, { status: 'unresolved' });
  assert.equal([reopened.body.issue.status, reopened.body.issue.substatus], ['unresolved', 'ongoing'], 'seen on two days');

  const bad = await patch(issue.id, { status: 'fixed' });
  assert.equal([bad.status, bad.body.code], [400, 'invalid_body']);
  assert.is((await patch(issue.id, { status: 'ignored', resolvedInVersion: '2' })).status, 400);
  const notJson = await s.send('PATCH', `/api/issues/${issue.id}`, { headers: { ...s.as('u1'), 'content-type': 'application/json' }, raw: '{' });
  assert.is(notJson.status, 400);
});

test('GET /api/issues: status, version, project, time and sort filters; bad parameters are 400', async () => {
  const s = setup();
  // Events of a project (their projectId is set by the server from a project key) go in through the store.
  const stored = await s.store.insert([{ ...normalise({ type: 'error', message: 'in the shop' }, { now: T0 - 1000, owner: 'u1' }), projectId: '7' }]);
  s.handler.monitor.push(stored);
  await s.error('u1', { message: 'common bug', deployVersion: '3.0.0' });
  await s.error('u1', { message: 'common bug', deployVersion: '3.0.0' });
  s.clock.now += DAY;
  await s.error('u1', { message: 'rare bug', deployVersion: '3.1.0' });

  const titles = async (q: string) => (await s.issues('u1', q)).issues.map((i: { title: string }) => i.title);
  assert.equal(await titles(''), ['rare bug', 'common bug', 'in the shop']);
  assert.equal(await titles('?sort=count'), ['common bug', 'rare bug', 'in the shop']);
  assert.equal(await titles('?sort=first&limit=1'), ['rare bug']);
  assert.equal(await titles('?version=3.0.0'), ['common bug']);
  assert.equal(await titles('?project=7'), ['in the shop']);
  assert.equal(await titles('?from=2026-05-17'), ['rare bug']);
  assert.equal(await titles('?to=2026-05-17'), ['common bug', 'in the shop']);
  assert.equal(await titles('?status=new'), ['rare bug', 'common bug', 'in the shop']);
  assert.equal(await titles('?status=ignored'), []);
  for (const q of ['?status=fixed', '?sort=random', '?from=yesterday', '?limit=0', '?owner=u2']) {
    const res = await s.send('GET', `/api/issues${q}`, { headers: s.as('u1') });
    assert.is(res.status, 400, q);
    assert.is((await res.json()).code, 'invalid_query');
  }
});

test('issues live in the record store: a new handler on the same records has them; retention drops stale ones', async () => {
  const s = setup({ retentionDays: 30 });
  await s.error('u1', { message: 'old bug' });
  s.clock.now += 20 * DAY;
  await s.error('u1', { message: 'recent bug' });
  await s.handler.close();

  const again = app({ store: s.store, records: s.records, now: () => s.clock.now, monitoring: { retentionDays: 30 } });
  const list = async () => (await (await again.send('GET', '/api/issues', { headers: again.as('u1') })).json()).issues.map((i: { title: string }) => i.title);
  assert.equal(await list(), ['recent bug', 'old bug']);
  s.clock.now += 15 * DAY;
  assert.equal(await list(), ['recent bug'], 'the old bug has had no event for 35 days');
  assert.equal((await s.records.list('issue', 'u1')).length, 1, 'and is gone from the record store');
  await again.handler.close();
});

test('GET /api/health: issue processing figures and the e-mail channel, disabled without SMTP_URL', async () => {
  const s = setup();
  await s.handler.monitor.flush();
  const health = await (await s.send('GET', '/api/health')).json();
  assert.equal(health.issues, { waiting: 0, ownersBehind: 0, checkpoint: 0, failed: 0, overLimit: 0, metricsDropped: 0 });
  assert.match(health.alerts.email, /^disabled/);
});

test.run();
