// Issue grouping reads errors from the store by position (lib/issues/feed.ts, processor.ts): one
// owner's flood only delays another's issue, the per-owner bound holds when an issue is made, and a
// crash between any two writes leaves every stored error counted exactly once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import type { FeedLimits } from '../lib/issues/feed.ts';
import { IssueProcessor } from '../lib/issues/processor.ts';
import { OVERFLOW_FINGERPRINT, RecordIssueStore } from '../lib/issues/records.ts';
import type { Issue } from '../lib/issues/state.ts';
import { openFileRecords } from '../lib/records/file.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import type { RecordStore } from '../lib/records/types.ts';
import { nodeFs } from '../lib/store/fs.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
let n = 0;
/** Letters only: grouping folds digits in messages, so "bug 1" and "bug 2" would be one issue. */
const word = (i: number) => i.toString(26).replace(/./g, (c) => String.fromCharCode(97 + parseInt(c, 26)));
const error = (owner: string, message: string, at = T0): StoredEvent =>
  normalise({ type: 'error', message, data: { stack: `Error: ${message}\n    at ${message.replace(/\W/g, '_')} (https://a.example/app.js:1:1)` } } as RawEvent, { now: at, owner, newId: () => `e${++n}` });
const SMALL: FeedLimits = { perOwner: 50, total: 400, readBatch: 100, perTurn: 10 };

/** Sum of counts and number of issues of an owner. */
async function tally(issues: RecordIssueStore, owner: string): Promise<{ issues: number; count: number }> {
  const all = await issues.listIssues(owner, T0);
  return { issues: all.length, count: all.reduce((s, i) => s + i.count, 0) };
}

test('a flood of one owner (distinct fingerprints, past its queue bound) delays another owner\'s new issue by one slice, and the bound holds at creation', async () => {
  const records = createMemoryRecords();
  const issues = new RecordIssueStore(records, { perOwner: 100 });
  const events = createMemoryStore({ capacity: 100_000 });
  const order: string[] = [];
  const processor = new IssueProcessor({ issues, records, source: events, limits: SMALL, onTransition: (c) => order.push(c.issue.owner!) });
  await processor.drain();
  const flood = Array.from({ length: 5_000 }, (_, i) => error('a', `bug ${word(i)}`));
  await events.insert(flood);
  await events.insert([error('b', 'the one bug of b')]);
  await processor.drain();
  const firstOfB = order.indexOf('b');
  assert.ok(firstOfB >= 0 && firstOfB < 2 * SMALL.perTurn, `b's issue was made after ${firstOfB} of a's`);
  assert.equal(await tally(issues, 'b'), { issues: 1, count: 1 });
  // 100 issues of their own, and the rest of a's errors in the overflow issue: none lost.
  const mine = await issues.listIssues('a', T0);
  assert.is(mine.length, 101);
  const overflow = mine.find((i) => i.fingerprint === OVERFLOW_FINGERPRINT)!;
  assert.is(overflow.count, 4_900);
  assert.match(overflow.title, /limit of 100 issues/);
  assert.is((await tally(issues, 'a')).count, 5_000);
  assert.is(await records.count('issue', 'a'), 101, 'the bound held when the issues were made');
  assert.is(processor.overflowed, 4_900);
});

test('an owner behind its queue bound is caught up from the store, in order, while others go on', async () => {
  const records = createMemoryRecords();
  const issues = new RecordIssueStore(records);
  const events = createMemoryStore({ capacity: 100_000 });
  const processor = new IssueProcessor({ issues, records, source: events, limits: SMALL });
  await processor.drain();
  // Interleaved: a's 3 bugs 600 times, with b and c now and then.
  const batch: StoredEvent[] = [];
  for (let i = 0; i < 1_800; i++) {
    batch.push(error('a', `bug ${word(i % 3)}`, T0 + i));
    if (i % 100 === 0) batch.push(error(i % 200 ? 'b' : 'c', 'other', T0 + i));
  }
  await events.insert(batch);
  await processor.drain();
  const counts = (await issues.listIssues('a', T0)).map((i) => i.count);
  assert.equal(counts, [600, 600, 600]);
  assert.equal([(await tally(issues, 'b')).count, (await tally(issues, 'c')).count], [9, 9]);
  // The latest event of each issue is the last one stored: a's were applied in order.
  const last = (await issues.listIssues('a', T0)).map((i) => i.lastSeen).sort();
  assert.equal(last, [T0 + 1797, T0 + 1798, T0 + 1799].map((t) => new Date(t).toISOString()));
  assert.equal(processor.waiting, { errors: 0, ownersBehind: 0, checkpoint: batch.length });
});

/**
 * Records over real files that "crash" (throw, and write nothing more) at the put numbered `crashAt`:
 * what a kill -9 between two writes leaves on disk.
 */
async function crashingRecords(dir: string, crashAt: number): Promise<{ records: RecordStore; crashed: () => boolean }> {
  const inner = await openFileRecords({ dir, fs: nodeFs });
  let puts = 0;
  let dead = false;
  const records: RecordStore = {
    ...inner,
    put(r) {
      if (dead || ++puts === crashAt) {
        dead = true;
        return Promise.reject(new Error('killed'));
      }
      return inner.put(r);
    },
  };
  return { records, crashed: () => dead };
}

test('a crash between any two record writes: after restart every stored error is counted once, in exactly one issue', async () => {
  const events = createMemoryStore({ capacity: 100_000 });
  const batch: StoredEvent[] = [];
  for (let i = 0; i < 3_000; i++) batch.push(error(i % 7 === 0 ? 'b' : 'a', `bug ${word(i % 3)}`, T0 + i));
  const expected = { a: batch.filter((e) => e.user_id === 'a').length, b: batch.filter((e) => e.user_id === 'b').length };
  for (const crashAt of [2, 3, 5, 9]) {
    const dir = mkdtempSync(join(tmpdir(), 'watchtower-issues-crash-'));
    try {
      const fresh = createMemoryStore({ capacity: 100_000 });
      const first = await crashingRecords(dir, crashAt);
      const before = new IssueProcessor({ issues: new RecordIssueStore(first.records), records: first.records, source: fresh, limits: SMALL });
      await before.drain();
      await fresh.insert(batch);
      await before.drain();
      assert.ok(first.crashed(), `the crash at put ${crashAt} happened`);
      await first.records.close();
      // Restart: the records as the disk holds them, the same events.
      const records = await openFileRecords({ dir, fs: nodeFs });
      const issues = new RecordIssueStore(records);
      const after = new IssueProcessor({ issues, records, source: fresh, limits: SMALL });
      await after.drain();
      assert.equal([(await tally(issues, 'a')).count, (await tally(issues, 'b')).count], [expected.a, expected.b], `crash at put ${crashAt}`);
      assert.equal((await issues.listIssues('a', T0)).length, 3);
      await records.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  assert.ok(events);
});

test('grouping starts at a store\'s newest event when it has no progress (events grouped by an earlier version), and restarts there if the store was replaced', async () => {
  const records = createMemoryRecords();
  const events = createMemoryStore();
  await events.insert([error('a', 'old'), error('a', 'old')]);
  const logs: string[] = [];
  const issues = new RecordIssueStore(records);
  const processor = new IssueProcessor({ issues, records, source: events, onError: (e) => logs.push(String(e)) });
  await processor.drain();
  await events.insert([error('a', 'new')]);
  await processor.drain();
  assert.equal((await issues.listIssues('a', T0)).map((i: Issue) => [i.title, i.count]), [['Error: new', 1]]);

  // The same records over an empty event store (its positions start again at 1).
  const replaced: Store = createMemoryStore();
  const again = new IssueProcessor({ issues, records, source: replaced, onError: (e) => logs.push(String(e)) });
  await again.drain();
  assert.match(logs.join('\n'), /past the store's newest event/);
  await replaced.insert([error('a', 'new')]);
  await again.drain();
  assert.equal((await issues.listIssues('a', T0)).map((i: Issue) => [i.title, i.count]), [['Error: new', 2]]);
});

test('a malformed event is counted as failed and passed over; its owner\'s later errors are grouped', async () => {
  const records = createMemoryRecords();
  const issues = new RecordIssueStore(records);
  const events = createMemoryStore();
  const processor = new IssueProcessor({ issues, records, source: events, sourceMaps: () => { throw new Error('maps unreadable'); } });
  await processor.drain();
  await events.insert([{ ...error('a', 'with a release'), deployVersion: '1.0.0' }, error('a', 'no release')]);
  await processor.drain();
  assert.is(processor.failed, 1);
  assert.equal((await issues.listIssues('a', T0)).map((i) => i.title), ['Error: no release']);
});

test.run();
