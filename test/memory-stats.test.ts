// The memory store's statistics come from rollups and a live window that eviction updates: after
// the buffer has dropped its oldest events, they still equal computeStats over the events it holds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { computeStats, rangeProblem, type StatsRange } from '../lib/stats.ts';

const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);
const MIN = 60_000;
const H = 3_600_000;
const NOW = Date.parse('2026-05-16T12:00:00.000Z');

const arrival = fc.record({
  owner: fc.constantFrom('a', 'a', 'b', null),
  type: fc.constantFrom('pageload', 'pageload', 'error', 'click', 'feedback'),
  sessionId: fc.option(fc.constantFrom('s1', 's2', 's3', 's4'), { nil: undefined }),
  route: fc.constantFrom('/', '/x'),
  duration: fc.oneof(fc.integer({ min: 0, max: 900 }), fc.integer({ min: 0, max: 3600 }).map((q) => q / 4)),
  rating: fc.integer({ min: 1, max: 5 }),
  // Mostly forward in time, now and then a step back (a clock adjusted under the server).
  step: fc.oneof(fc.integer({ min: 0, max: 2 * MIN }), fc.integer({ min: -10 * MIN, max: 0 })),
});
const ranges: (StatsRange | undefined)[] = [undefined, { from: NOW - 3 * H }, { from: NOW - 90 * MIN, to: NOW - 20 * MIN }, { from: NOW - 4 * MIN }];

test('after evictions, stats with and without a range equal computeStats over the held events', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(arrival, { minLength: 1, maxLength: 150 }), fc.integer({ min: 5, max: 60 }), async (arrivals, capacity) => {
      const store = createMemoryStore({ capacity });
      let at = NOW - 4 * H, n = 0;
      const all: StoredEvent[] = [];
      for (const a of arrivals) {
        at += a.step;
        const raw = { type: a.type, sessionId: a.sessionId, route: a.route, data: a.type === 'feedback' ? { rating: a.rating } : { duration: a.duration } };
        all.push(normalise(JSON.parse(JSON.stringify(raw)) as RawEvent, { now: at, owner: a.owner, newId: () => `m${++n}` }));
      }
      for (let i = 0; i < all.length; i += 7) await store.insert(all.slice(i, i + 7));
      const held = all.slice(-capacity);
      for (const user of ['a', 'b']) {
        const mine = held.filter((e) => e.user_id === user);
        for (const now of [at, at + MIN, NOW]) {
          for (const range of ranges.filter((r) => rangeProblem(r, now) === null)) {
            assert.equal(await store.stats(user, now, range), computeStats(mine, now, range), `${user} ${JSON.stringify(range)}`);
          }
        }
      }
    }),
    { numRuns: RUNS },
  );
});

test.run();
