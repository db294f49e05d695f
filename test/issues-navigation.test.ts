// Older/newer navigation on the issue page walks every stored event of the issue, not only the 10
// its record lists: on memory, sqlite and PostgreSQL, following `olderCursor` from the latest event
// and paging GET /api/issues/:id/events both give exactly the issue's events, newest first, past
// the positions kept in the issue record (a chunk holds 256); `newerCursor` walks back. Other
// issues' errors lie in between, and another user sees none of it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHandler } from '../lib/handler.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';
import { runtimeFiles } from './helpers/app.ts';
import { REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';
import { storeFactories } from './helpers/stores.ts';

const BUGS = ['TypeError: cart is undefined', 'RangeError: quantity out of range'];
const OWNER = { 'x-idp-user-id': 'owner-1' };
const SENT = 700;

/** Event k: bug 0 unless k is a multiple of 3 (so ~467 of bug 0 with bug 1 between them). */
const bugOf = (k: number) => (k % 3 === 0 ? 1 : 0);

const factories: (readonly [string, () => Promise<Store>])[] = [['memory', async () => createMemoryStore({ capacity: 100_000 })], ...(await storeFactories())];
const reason = await unavailableReason();
if (REQUIRE_POSTGRES && reason !== null) test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(reason));

for (const [name, open] of factories) {
  test(`${name}: older/newer navigation and the issue's events walk all ${SENT * 2 / 3 | 0}+ events of an issue, newest first`, async () => {
    const store = await open();
    const records = createMemoryRecords();
    const handler = createHandler({ store, records, log: () => {}, files: runtimeFiles, monitoring: { processEveryMs: 20 } });
    const call = async (path: string, headers: Record<string, string> = OWNER) => {
      const res = (await handler(new Request(`http://watchtower.test${path}`, { headers })))!;
      return { status: res.status, body: await res.json() };
    };
    try {
      for (let from = 0; from < SENT; from += 100) {
        const events = Array.from({ length: 100 }, (_, i) => {
          const k = from + i, message = BUGS[bugOf(k)];
          return { id: `e-${k}`, type: 'error', message, data: { stack: `${message}\n    at step${bugOf(k)} (https://shop.example/app.js:1:1)` } };
        });
        const res = (await handler(new Request('http://watchtower.test/api/events', { method: 'POST', headers: { 'content-type': 'application/json', ...OWNER }, body: JSON.stringify({ events }) })))!;
        assert.is(res.status, 200);
      }
      let issues: { id: string; title: string; count: number }[] = [];
      // Grouping runs in the background: on a loaded machine PostgreSQL's took over 10 s.
      for (const deadline = Date.now() + 90_000; Date.now() < deadline && issues.reduce((s, i) => s + i.count, 0) < SENT;) {
        await new Promise((r) => setTimeout(r, 25));
        issues = (await call('/api/issues')).body.issues;
      }
      const issue = issues.find((i) => i.title === BUGS[0])!;
      const want = Array.from({ length: SENT }, (_, k) => k).filter((k) => bugOf(k) === 0).reverse().map((k) => `e-${k}`);
      assert.is(issue.count, want.length);

      // The detail's olderCursor, from the latest event to the oldest.
      let page = (await call(`/api/issues/${issue.id}`)).body;
      const walked = [page.latestEvent.id];
      assert.is(page.newerCursor, null);
      const cursors = [null];
      while (page.olderCursor) {
        cursors.push(page.olderCursor);
        page = (await call(`/api/issues/${issue.id}?before=${page.olderCursor}`)).body;
        walked.push(page.latestEvent.id);
      }
      assert.equal(walked, want);
      // newerCursor walks back: from the oldest, each step shows the next newer event.
      for (let i = want.length - 1; i > want.length - 30; i--) {
        assert.is(page.latestEvent.id, want[i]);
        page = (await call(`/api/issues/${issue.id}?before=${page.newerCursor}`)).body;
      }

      // The list, a page at a time.
      const listed: string[] = [];
      let before: string | null = null;
      do {
        const r: { status: number; body: { events: { id: string }[]; nextCursor: string | null } } = await call(`/api/issues/${issue.id}/events?limit=37${before ? `&before=${before}` : ''}`);
        assert.is(r.status, 200);
        listed.push(...r.body.events.map((e) => e.id));
        before = r.body.nextCursor;
      } while (before);
      assert.equal(listed, want);

      // One of the recent events, asked by id: its cursors lead to its neighbours.
      const third = (await call(`/api/issues/${issue.id}?event=${want[2]}`)).body;
      assert.is(third.latestEvent.id, want[2]);
      assert.is((await call(`/api/issues/${issue.id}?before=${third.olderCursor}`)).body.latestEvent.id, want[3], 'older than the third newest');
      assert.is((await call(`/api/issues/${issue.id}?before=${third.newerCursor}`)).body.latestEvent.id, want[1], 'newer than the third newest');

      assert.is((await call(`/api/issues/${issue.id}/events`, { 'x-idp-user-id': 'someone-else' })).status, 404);
      const bad = await call(`/api/issues/${issue.id}?before=nope`);
      assert.equal([bad.status, bad.body.code], [400, 'invalid_cursor']);
      assert.is((await call(`/api/issues/${issue.id}/events?limit=0`)).status, 400);
    } finally {
      await handler.close();
      await store.close();
      await records.close();
    }
  });
}

test.run();
