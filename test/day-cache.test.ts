// The PostgreSQL store's per-instance cache of kept points answers (lib/store/postgres/day-cache.ts):
// an answer asked again is not read again, a failed read is not kept, and one user's many ranges
// push out only that user's answers, never another's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DayPartCache } from '../lib/store/postgres/day-cache.ts';

const counting = () => {
  let reads = 0;
  return { load: (value: string) => () => Promise.resolve((reads++, value)), get reads() { return reads; } };
};

test('the same question is answered from the cache; another key is read', async () => {
  const cache = new DayPartCache(1 << 20);
  const c = counting();
  assert.is(await cache.keptPoints('u', 'a', c.load('A')), 'A');
  assert.is(await cache.keptPoints('u', 'a', c.load('other')), 'A');
  assert.is(c.reads, 1);
  assert.is(await cache.keptPoints('u', 'b', c.load('B')), 'B');
  assert.is(await cache.keptPoints('v', 'a', c.load('VA')), 'VA', 'keys are per user');
  assert.is(c.reads, 3);
});

test('a failed read is not kept', async () => {
  const cache = new DayPartCache(1 << 20);
  await cache.keptPoints('u', 'a', () => Promise.reject(new Error('gone'))).then(() => assert.unreachable(), () => {});
  assert.is(await cache.keptPoints('u', 'a', () => Promise.resolve('again')), 'again');
});

test('one user asking many ranges keeps at most a few answers, and pushes out no one else\'s', async () => {
  const cache = new DayPartCache(1 << 20);
  const c = counting();
  await cache.keptPoints('quiet', 'q', c.load('Q'));
  for (let i = 0; i < 200; i++) await cache.keptPoints('busy', `range-${i}`, c.load(String(i)));
  const before = c.reads;
  assert.is(await cache.keptPoints('quiet', 'q', c.load('again')), 'Q', 'the quiet user\'s answer is still held');
  // The busy user's latest few are held, the early ones are not.
  assert.is(await cache.keptPoints('busy', 'range-199', c.load('x')), '199');
  assert.is(c.reads, before);
  assert.is(await cache.keptPoints('busy', 'range-0', c.load('read again')), 'read again');
  assert.is(c.reads, before + 1);
});

test('many users fill the cache up to its bound, least recently used out first', async () => {
  const cache = new DayPartCache(1 << 20);
  const c = counting();
  for (let i = 0; i < 100; i++) await cache.keptPoints(`user-${i}`, 'k', c.load(String(i)));
  const before = c.reads;
  assert.is(await cache.keptPoints('user-99', 'k', c.load('x')), '99');
  assert.is(c.reads, before, 'recent users are held');
  assert.is(await cache.keptPoints('user-0', 'k', c.load('read again')), 'read again');
  assert.is(c.reads, before + 1, 'the least recently used is out');
});

test.run();
