// The bounds of the open days' kept points (lib/store/postgres/stats/open-points.ts): at most
// POINTS_PER_USER points per owner, the budget in all, one owner's days pushing out its own
// least recently used before anyone else's; a route's points never go back to a lower horizon;
// requests that start while a probe of the horizon runs share it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OpenPointsCache, POINT_BYTES, POINTS_PER_USER } from '../lib/store/postgres/stats/open-points.ts';
import { LATENCY_POINTS } from '../lib/stats.ts';

const points = (h: number, n = LATENCY_POINTS) =>
  ({ h, points: Array.from({ length: n }, (_, i) => ({ seq: String(h - i), duration: i, ttfb: null, ts: '', at: 0 })) });
const fill = (cache: OpenPointsCache, user: string, day: number, routes = 40) => {
  for (let r = 0; r < routes; r++) cache.set(user, '', day, `/r${r}`, points(1000));
};

test('one owner keeps at most POINTS_PER_USER points, its least recently used days out first', () => {
  const cache = new OpenPointsCache(1 << 30, () => Promise.resolve(0));
  fill(cache, 'other', 1);
  for (let day = 1; day <= 5; day++) fill(cache, 'u', day);
  const { points: held } = cache.figures();
  assert.ok(held - 40 * LATENCY_POINTS <= POINTS_PER_USER, `${held} points held`);
  assert.ok(cache.get('u', '', 5), 'the day written last is kept');
  assert.not.ok(cache.get('u', '', 1), 'the oldest day is dropped');
  assert.ok(cache.get('other', '', 1), 'another owner\'s day stays');
});

test('all owners together stay within the byte budget', () => {
  const budget = 3 * 40 * LATENCY_POINTS * POINT_BYTES;
  const cache = new OpenPointsCache(budget, () => Promise.resolve(0));
  for (let u = 0; u < 10; u++) fill(cache, `u${u}`, 1);
  assert.ok(cache.figures().bytes <= budget, `${cache.figures().bytes} bytes held`);
  assert.ok(cache.get('u9', '', 1), 'the latest owner\'s day is kept');
  assert.not.ok(cache.get('u0', '', 1), 'the first owner\'s day is dropped');
});

test('a route never goes back to a lower horizon; drop forgets the day', () => {
  const cache = new OpenPointsCache(1 << 30, () => Promise.resolve(0));
  cache.set('u', '', 1, '/', points(50));
  cache.set('u', '', 1, '/', points(40));
  assert.is(cache.get('u', '', 1)!.get('/')!.h, 50);
  cache.drop('u', '', 1);
  assert.is(cache.get('u', '', 1), undefined);
  assert.is(cache.figures().points, 0);
});

test('requests that start while a probe runs share it', async () => {
  let probes = 0;
  const cache = new OpenPointsCache(1 << 20, () => new Promise((resolve) => setTimeout(() => resolve(++probes), 10)));
  const [a, b] = await Promise.all([cache.horizon(), cache.horizon()]);
  assert.is(a, 1);
  assert.is(b, 1);
  assert.is(await cache.horizon(), 2, 'a request after it probes again');
});

test.run();
