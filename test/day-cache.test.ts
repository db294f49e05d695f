// The PostgreSQL store's per-instance cache (lib/store/postgres/day-cache.ts). Kept points answers:
// an answer asked again is not read again, a failed read is not kept, and one user's many ranges
// push out only that user's answers, never another's. Merged days: held (with their sessions and
// span sums) only while the folds they merge are, replaced when those change, per user and scope.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise } from '../lib/event.ts';
import { encodePart, FrozenHour } from '../lib/rollup/codec.ts';
import { HourRollup, rollupRow } from '../lib/rollup/hour.ts';
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

/** A frozen part of `hour` with pageloads of the sessions given. */
function partOf(hour: number, sessions: string[]): FrozenHour {
  const part = new HourRollup(hour);
  sessions.forEach((session, i) => {
    const at = hour * 3_600_000 + i;
    const e = normalise({ type: 'pageload', sessionId: session, route: `/r${i % 3}`, data: { duration: 100 + i } }, { now: at, owner: 'u', newId: () => `${hour}-${i}` });
    part.add(rollupRow(e, at));
  });
  return FrozenHour.decode(encodePart(part));
}

/** Caches a day's fold and builds its merged part, as a read by day does (stats/assemble.ts). */
function mergeDay(cache: DayPartCache, user: string, scope: string, day: number, fold: number, sessions: string[]): FrozenHour {
  cache.set(user, scope, day, fold, [partOf(day * 24, sessions)]);
  const folds = [...cache.daysOf(user, scope).get(day)?.folds.keys() ?? [fold]];
  return cache.mergedDay(user, scope, day, folds, () => partOf(day * 24, sessions));
}

test('a merged day of cached folds is held with its sessions, per user and scope, and replaced when its folds change', () => {
  const cache = new DayPartCache(1 << 20);
  const a = mergeDay(cache, 'u', '', 100, 1, ['s1', 's2']);
  const b = mergeDay(cache, 'u', '', 101, 1, ['s2', 's3']);
  const merged = cache.mergedOf('u', '')!;
  assert.ok(merged.crossDays.heldOf(a) && merged.crossDays.heldOf(b));
  assert.is(cache.mergedOf('u', 'p1'), undefined, 'another scope holds none');
  assert.is(cache.mergedOf('v', ''), undefined, 'another user holds none');
  // The same folds: the same part, not built again.
  assert.is(cache.mergedDay('u', '', 100, [1], () => assert.unreachable('built again') as never), a);
  // Span sums of the two days, then a late fold into day 100: a new part, and no span holds the old one.
  assert.ok(merged.spans.of([a, b]));
  assert.is(merged.spans.size, 1);
  cache.set('u', '', 100, 2, [partOf(100 * 24 + 5, ['s4'])]);
  const a2 = cache.mergedDay('u', '', 100, [1, 2], () => partOf(100 * 24, ['s1', 's2', 's4']));
  assert.is.not(a2, a);
  assert.is(merged.crossDays.heldOf(a), null);
  assert.ok(merged.crossDays.heldOf(a2));
  assert.is(merged.spans.size, 0, 'the span of the old part is dropped');
});

test('a merged day of folds not cached is not held', () => {
  const cache = new DayPartCache(1 << 20);
  const part = cache.mergedDay('u', '', 100, [1], () => partOf(100 * 24, ['s1']));
  assert.is(cache.mergedOf('u', ''), undefined);
  assert.ok(part.total > 0);
});

test('folds pushed out of the budget take their merged day with them, and its spans', () => {
  const one = partOf(0, ['s1', 's2', 's3']).encode().byteLength;
  // Room for about four days' folds.
  const cache = new DayPartCache(one * 4 + one / 2);
  const parts = [0, 1, 2].map((d) => mergeDay(cache, 'u', '', d, 1, ['s1', 's2', 's3']));
  const merged = cache.mergedOf('u', '')!;
  assert.ok(merged.spans.of(parts));
  for (let d = 3; d < 7; d++) mergeDay(cache, 'u', '', d, 1, ['s1', 's2', 's3']);
  assert.is(merged.crossDays.heldOf(parts[0]), null, 'the least recently used day is out');
  assert.is(merged.spans.size, 0);
  assert.ok(merged.spans.limit <= 4 * one, 'the spans\' bound follows the merged days held');
});

test.run();
