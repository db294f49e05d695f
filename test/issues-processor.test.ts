// The path from stored events to issues and alerts (lib/issues/processor.ts): a real error of an
// esbuild bundle, stored as ingestion stores it, becomes an issue grouped by its original frames
// (through the uploaded map), and a new_issue rule's webhook receiver on 127.0.0.1 hears of it once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { normalise, type RawEvent } from '../lib/event.ts';
import { AlertEngine } from '../lib/alerts/engine.ts';
import { dashboardLinks } from '../lib/alerts/message.ts';
import { RecentMetrics } from '../lib/alerts/recent.ts';
import { COOLDOWN_MS } from '../lib/alerts/rules.ts';
import { RecordIssueStore } from '../lib/issues/records.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import type { RecordStore } from '../lib/records/types.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { StoredEvent } from '../lib/event.ts';
import { IssueProcessor, processError } from '../lib/issues/processor.ts';
import { sourceMapNames } from '../lib/issues/sourcemap.ts';
import { parseStack } from '../lib/issues/stack.ts';
import { type Bundle, buildApp } from './helpers/bundle.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
let app: Bundle;
let stack = '';
let n = 0;
/** Issues in a memory record store. */
const newIssues = () => new RecordIssueStore(createMemoryRecords());
/** A processor over a memory event store: `store(events)` stores them as ingestion does (and pushes them). */
async function setup(options: Partial<ConstructorParameters<typeof IssueProcessor>[0]> = {}) {
  const records: RecordStore = createMemoryRecords();
  const issues = new RecordIssueStore(records);
  const events = createMemoryStore({ capacity: 100_000 });
  const processor = new IssueProcessor({ issues, records, source: events, ...options });
  const store = async (batch: StoredEvent[]) => processor.push(await events.insert(batch));
  // Grouping starts where the store stands when it first looks (here: empty).
  await processor.drain();
  return { records, issues, events, processor, store };
}
/** A stored event; `projectId` is the server's to set (from a project key), so it is added after normalise. */
const stored = ({ projectId, ...raw }: RawEvent & { projectId?: string }, at = T0, owner = 'u1') =>
  ({ ...normalise(raw, { now: at, owner, newId: () => `ev${++n}` }), ...(projectId ? { projectId } : {}) });

test.before(async () => {
  app = await buildApp('external');
  try {
    (await import(pathToFileURL(`${app.dir}/${app.script}`).href)).onBuyClick();
  } catch (e) {
    stack = (e as Error).stack ?? '';
  }
});
test.after(() => app?.remove());

/** Maps uploaded by u1 for release 1.0.0, under the ~/path name. */
function uploadedMaps() {
  const name = sourceMapNames(parseStack(stack)[0].file!)[1];
  return (owner: string | null) => (release: string, n: string) => (owner === 'u1' && release === '1.0.0' && n === name ? app.map : null);
}

test('processError: grouped by the original frames when the release has a map, by the minified ones otherwise', async () => {
  const issues = newIssues();
  const withMap = await processError(stored({ type: 'error', message: 'Uncaught TypeError: coupon FREESHIP is not valid', deployVersion: '1.0.0', projectId: '7', data: { stack } }), { issues, sourceMaps: uploadedMaps() });
  assert.is(withMap.transition, 'new');
  assert.ok(withMap.issue.culprit!.startsWith('applyCoupon ('), withMap.issue.culprit!);
  assert.is(withMap.grouping.components[1], 'frame:applyCoupon@cart.ts');
  assert.equal(await issues.getIssue('u1', withMap.issue.id), withMap.issue, 'stored');

  const noMap = await processError(stored({ type: 'error', message: 'x', deployVersion: '0.9.0', projectId: '7', data: { stack } }), { issues, sourceMaps: uploadedMaps() });
  assert.is.not(noMap.issue.id, withMap.issue.id, 'minified frames group apart from the symbolicated ones');
  assert.is(noMap.frames[0].minified, null);
});

test('IssueProcessor: events queue without waiting; draining updates issues, metrics and alerts once per new issue', async () => {
  const received: string[] = [];
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const metrics = new RecentMetrics();
    const engine = new AlertEngine({
      rules: () => [{ id: 'r1', userId: 'u1', project: null, kind: 'new_issue', threshold: null, route: null, cooldownMs: COOLDOWN_MS, webhook: { url, secret: 'processor-test-secret' }, email: [], enabled: true, createdAt: '' }],
      links: dashboardLinks('http://watchtower.test'),
      now: () => T0,
      // The receiver listens on 127.0.0.1, an internal destination this test allows.
      destinations: { allowPrivate: true, resolveHost: null },
    });
    const { issues, processor, store } = await setup({ sourceMaps: uploadedMaps(), onTransition: (c) => engine.push(c), onEvent: (e) => metrics.record(e) });

    await store([
      stored({ type: 'error', message: 'Order 12 failed', projectId: '7' }),
      stored({ type: 'error', message: 'Order 99 failed', projectId: '7' }, T0 + 1000),
      stored({ type: 'pageload', route: '/checkout', projectId: '7', data: { duration: 1200 } }),
      stored({ type: 'click', projectId: '7' }),
    ]);
    await processor.drain();
    assert.equal(processor.waiting, { errors: 0, ownersBehind: 0, checkpoint: 4 }, 'read up to the newest event');
    assert.is(processor.failed, 0);

    const [issue] = await issues.listIssues('u1', T0);
    assert.equal([issue.count, issue.title, issue.substatus], [2, 'Order 99 failed', 'new']);
    assert.equal(metrics.errorCounts('u1', '7', T0 + 1000), { last5Minutes: 2, previousHour: 0 });
    assert.equal(metrics.routeDurations('u1', null, T0), { '/checkout': [1200] });

    await engine.tick();
    await engine.idle();
    assert.is(received.length, 1, 'one alert for one new issue');
    assert.is(JSON.parse(received[0]).alerts[0].issue.id, issue.id);
  } finally {
    hook.closeAllConnections();
    await new Promise((resolve) => hook.close(resolve));
  }
});

test('IssueProcessor: a failing record store loses nothing: the slice is grouped again, once, when it answers', async () => {
  const records = createMemoryRecords();
  const issues = new RecordIssueStore(records);
  let fail = true;
  const flaky = {
    perOwner: issues.perOwner,
    getIssue: (owner: string | null, id: string) => (fail ? Promise.reject(new Error('store unavailable')) : issues.getIssue(owner, id)),
    commit: issues.commit.bind(issues),
    hasRoom: issues.hasRoom.bind(issues),
  };
  const errors: unknown[] = [];
  const events = createMemoryStore();
  const processor = new IssueProcessor({ issues: flaky, records, source: events, onError: (e) => errors.push(e) });
  await processor.drain();
  await events.insert([stored({ type: 'error', message: 'a' }), stored({ type: 'error', message: 'b' }), stored({ type: 'error', message: 'a' })]);
  await processor.drain();
  assert.match(String(errors[0]), /store unavailable/);
  assert.equal(await issues.listIssues('u1', T0), []);
  fail = false;
  await events.insert([stored({ type: 'error', message: 'd' })]);
  await processor.drain();
  await processor.drain();
  assert.equal((await issues.listIssues('u1', T0)).map((i) => [i.title, i.count]).sort(), [['a', 2], ['b', 1], ['d', 1]]);
  assert.is(processor.failed, 0, 'nothing was given up');
});

test('IssueProcessor: one slice groups a burst once, and tells apart errors whose stacks differ', async () => {
  const { issues, processor, store } = await setup();
  const at = (fn: string) => `TypeError: boom\n    at ${fn} (https://shop.example.com/app.js:1:10)`;
  await store([
    stored({ type: 'error', message: 'TypeError: boom', data: { stack: at('applyCoupon') } }),
    stored({ type: 'error', message: 'TypeError: boom', data: { stack: at('applyCoupon') } }, T0 + 1),
    stored({ type: 'error', message: 'TypeError: boom', data: { stack: at('checkout') } }, T0 + 2),
    stored({ type: 'error', message: 'TypeError: boom', data: { stack: at('applyCoupon') } }, T0 + 3, 'u2'),
    stored({ type: 'error', message: 'TypeError: boom', data: { stack: at('applyCoupon'), fingerprint: ['mine'] } }, T0 + 4),
  ]);
  await processor.drain();
  const mine = await issues.listIssues('u1', T0);
  assert.equal(mine.map((i) => [i.culprit, i.count]).sort(), [['applyCoupon (/app.js)', 1], ['applyCoupon (/app.js)', 2], ['checkout (/app.js)', 1]]);
  assert.is((await issues.listIssues('u2', T0)).length, 1);
});

test('RecordIssueStore: bounded per owner, least recently seen deleted first; unowned events have no issues', async () => {
  const records = createMemoryRecords();
  const issues = new RecordIssueStore(records, { perOwner: 2 });
  const processed = [];
  for (const [i, message] of ['first bug', 'second bug', 'third bug'].entries()) {
    processed.push(await processError(stored({ type: 'error', message }, T0 + i * 1000), { issues }));
  }
  assert.equal((await issues.listIssues('u1', T0)).map((i) => i.title), ['third bug', 'second bug']);
  assert.is(await issues.getIssue('u1', processed[0].issue.id), null, 'deleted, not only hidden');
  assert.equal(await issues.listIssues('u2', T0), []);
  const unowned = await processError({ ...stored({ type: 'error', message: 'nobody' }), user_id: null }, { issues });
  assert.is(await issues.getIssue(null, unowned.issue.id), null);
});

test.run();
