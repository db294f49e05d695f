// The sqlite store's dedupe (lib/store/dedupe.ts): exact ids of the hot segment and of segments
// being sealed, claims of inserts in flight, and the sorted hashes of sealed segments within the
// window behind a bitmap; a key of any of them is always found, expiry and retention let keys go.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Dedupe, keyHash, type SegmentFilter } from '../lib/store/sqlite/dedupe.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const filterOf = (segment: number, keys: [string, string][], maxReceived = NOW): SegmentFilter =>
  ({ segment, maxReceived, hashes: Float64Array.from(keys.map(([o, id]) => keyHash(o, id))).sort() });
const keys = (segment: number, n: number): [string, string][] =>
  Array.from({ length: n }, (_, i) => [`owner-${i % 3}`, `seg${segment}-${i}-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b`]);

test('hot, claimed and sealing ids are exact; a sealed segment\'s keys are found through its filter', async () => {
  const d = new Dedupe(7 * DAY);
  d.add('u', 'a');
  d.claim('u', 'b');
  assert.ok(d.has('u', 'a') && d.has('u', 'b'));
  assert.not.ok(d.has('w', 'a'), 'per owner');
  const token = d.rotate();
  d.add('u', 'c');
  assert.ok(d.has('u', 'a') && d.has('u', 'c'), 'the sealing generation and the new hot one');
  const hashes = await d.filterOf(token);
  assert.equal([...hashes], [keyHash('u', 'a')]);
  d.sealed(token, { segment: 1, maxReceived: NOW, hashes }, NOW);
  assert.ok(d.has('u', 'a'), 'from the filter now');
  d.forget('u', 'c');
  assert.not.ok(d.has('u', 'c'), 'retention forgot it');
});

test('many filters: every key is found, keys never added are not, as the bitmap grows and is rebuilt on expiry', () => {
  const d = new Dedupe(7 * DAY);
  const sets = Array.from({ length: 40 }, (_, s) => keys(s, 2000 + s * 50));
  // Added one by one, the bitmap grows past its first sizes; the oldest leave the window.
  const received = (s: number) => NOW - ((40 - s) * DAY) / 5;
  sets.forEach((k, s) => d.addFilter(filterOf(s, k, received(s)), NOW));
  for (const [s, k] of sets.entries()) {
    const inWindow = received(s) >= NOW - 7 * DAY;
    for (const [o, id] of k) assert.is(d.has(o, id), inWindow, `segment ${s}: ${o} ${id}`);
  }
  let found = 0;
  for (let i = 0; i < 100_000; i++) if (d.has('owner-1', `never-${i}`)) found++;
  assert.is(found, 0, 'a new key is taken for a duplicate only when its 53-bit hash collides');
  const before = d.filterBytes;
  // 3 days on: the filters received more than 7 days before leave; a dropped one goes too.
  d.expire(NOW + 3 * DAY, [39]);
  for (const [s, k] of sets.entries()) {
    const kept = s !== 39 && received(s) >= NOW + 3 * DAY - 7 * DAY;
    assert.is(d.has(k[7][0], k[7][1]), kept, `segment ${s}`);
    if (kept) for (const [o, id] of k) assert.ok(d.has(o, id));
  }
  assert.ok(d.filterBytes < before, 'fewer bytes held');
});

test.run();
