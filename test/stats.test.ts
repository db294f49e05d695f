import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, dayIndex, MAX_SERIES_BUCKETS, percentile, rangeProblem, resolveRange } from '../lib/stats.ts';
import { routeKey } from '../lib/event-keys.ts';

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
let seq = 0;
const ev = (raw: RawEvent, at = NOW, owner = 'u1'): StoredEvent => normalise(raw, { now: at, owner, newId: () => `e${++seq}` });

test('percentile: nearest rank, edge cases', () => {
  assert.is(percentile([], 50), 0);
  assert.is(percentile([7], 50), 7);
  assert.is(percentile([7], 95), 7);
  assert.is(percentile([1, 2], 50), 1);
  assert.is(percentile([1, 2, 3, 4], 50), 2);
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.is(percentile(hundred, 50), 50);
  assert.is(percentile(hundred, 95), 95);
  assert.is(percentile(hundred, 100), 100);
  assert.is(percentile([5, 5, 5, 9], 50), 5, 'ties');
  assert.is(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95), 10);
});

test('routeKey: route, else URL path, else unknown', () => {
  assert.is(routeKey({ route: '/r', url: 'https://x/a', page_url: null }), '/r');
  assert.is(routeKey({ route: null, url: 'https://x/a/b?q=1#h', page_url: null }), '/a/b');
  assert.is(routeKey({ route: null, url: null, page_url: '/rel?x' }), '/rel');
  assert.is(routeKey({ route: null, url: null, page_url: null }), 'unknown');
});

test('dayIndex: today is 6, six days ago 0, outside is -1', () => {
  assert.is(dayIndex(NOW, NOW), 6);
  assert.is(dayIndex(NOW - 6 * 86_400_000, NOW), 0);
  assert.is(dayIndex(NOW - 7 * 86_400_000, NOW), -1);
  assert.is(dayIndex(NOW + 86_400_000, NOW), -1);
});

test('empty input gives zeroes with the full shape', () => {
  const s = computeStats([], NOW);
  assert.is(s.totalEvents, 0);
  assert.is(s.activeUsers, 0);
  assert.equal(s.latencyByRoute, {});
  assert.is(s.averageLatency, 0);
  assert.equal(s.analytics.feedbackBreakdown, { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0 });
  assert.is(s.analytics.feedbackAverage, 0);
  assert.equal(s.analytics.userSeries, { labels: ['1', '2', '3', '4', '5', '6', '7'], values: [0, 0, 0, 0, 0, 0, 0] });
});

test('activeUsers: distinct non-empty sessions received in the last 5 minutes', () => {
  const s = computeStats(
    [
      ev({ type: 'click', sessionId: 'a' }, NOW - 60_000),
      ev({ type: 'click', sessionId: 'a' }, NOW - 1000),
      ev({ type: 'click', sessionId: 'b' }, NOW - 300_000),
      ev({ type: 'click', sessionId: 'c' }, NOW - 300_001),
      ev({ type: 'click' }, NOW),
    ],
    NOW,
  );
  assert.is(s.activeUsers, 2);
});

test('errors: totals, by version with unknown, recent errors newest first and capped at 50', () => {
  const events = [
    ...Array.from({ length: 60 }, (_, i) => ev({ type: 'error', deployVersion: i % 2 ? '1.0' : '2.0', message: `m${i}` })),
    ev({ type: 'error', message: 'no version' }),
    ev({ type: 'click' }),
  ];
  const s = computeStats(events, NOW);
  assert.is(s.totalErrors, 61);
  assert.equal(s.errorsByVersion, { '1.0': 30, '2.0': 30, unknown: 1 });
  assert.is(s.recentErrors.length, 50);
  assert.is(s.recentErrors[0].message, 'no version');
  assert.is(s.recentErrors[1].message, 'm59');
  assert.is(s.recentActivity.length, 20);
  assert.is(s.recentActivity[0].type, 'click');
});

test('latency by route: count, exact p50/p95, rounded avg, last 100 points oldest first', () => {
  const events = Array.from({ length: 120 }, (_, i) =>
    ev({ type: 'pageload', route: '/home', data: { duration: i + 1, ttfb: i % 3 ? 10 : undefined } }),
  );
  events.push(ev({ type: 'pageload', url: 'https://x.test/about?x=1', data: { duration: 10.4 } }));
  events.push(ev({ type: 'pageload', route: '/home', data: { duration: 'slow' } }), ev({ type: 'page_view', route: '/home', data: { duration: 5 } }));
  const s = computeStats(events, NOW);
  const home = s.latencyByRoute['/home'];
  assert.is(home.count, 120);
  assert.is(home.p50, 60);
  assert.is(home.p95, 114);
  assert.is(home.avg, 61);
  assert.is(home.points.length, 100);
  assert.is(home.points[0].duration, 21);
  assert.is(home.points[99].duration, 120);
  assert.is(home.points[97].ttfb, null, 'a missing ttfb is null');
  assert.is(home.points[99].ttfb, 10);
  // Percentiles are at 1 ms (rollups count whole ms); points keep the duration as sent.
  assert.equal(s.latencyByRoute['/about'], { count: 1, p50: 10, p95: 10, avg: 10, points: [{ duration: 10.4, ttfb: null, timestamp: events[120].timestamp }] });
  assert.is(s.averageLatency, Math.round((7260 + 10.4) / 121));
});

test('analytics: breakdown, feedback, custom, series by UTC day', () => {
  const day = 86_400_000;
  const events = [
    ev({ type: 'pageload', sessionId: 's1', data: { duration: 100 } }, NOW - 6 * day),
    ev({ type: 'performance', sessionId: 's1', data: { name: 'LCP', value: 1 } }, NOW - 6 * day),
    ev({ type: 'click', sessionId: 's2' }, NOW - day),
    ev({ type: 'interaction', sessionId: 's3' }, NOW - day),
    ev({ type: 'feedback', data: { rating: 5 } }),
    ev({ type: 'feedback', data: { rating: 4 } }),
    ev({ type: 'feedback', data: { rating: 4 } }),
    ev({ type: 'feedback', data: { rating: 9 } }),
    ev({ type: 'feedback', data: { rating: '3' } }),
    ev({ type: 'custom', data: { name: 'signup' } }),
    ev({ type: 'custom', data: { name: 'signup' } }, NOW - 8 * day),
  ];
  const s = computeStats(events, NOW);
  assert.equal(s.analytics.breakdownCounts, { performance: 2, errors: 0, feedback: 5, clicks: 2 });
  assert.equal(s.analytics.feedbackBreakdown, { 1: 0, 2: 0, 3: 0, 4: 2, 5: 1 });
  assert.is(s.analytics.feedbackTotal, 3);
  assert.is(s.analytics.feedbackAverage, 4.33);
  assert.is(s.analytics.customActivityTotal, 2);
  assert.equal(s.analytics.activitySeries.values, [2, 0, 0, 0, 0, 2, 6]);
  assert.equal(s.analytics.userSeries.values, [1, 0, 0, 0, 0, 2, 0]);
  assert.equal(s.eventsByType, { pageload: 1, performance: 1, click: 1, interaction: 1, feedback: 5, custom: 2 });
});

test('percentiles at 1 ms: the nearest-rank sample, rounded; -0 comes out as 0', () => {
  const s = computeStats([1.4, 2.5, 1.6, -0.4].map((d) => ev({ type: 'pageload', route: '/r', data: { duration: d } })), NOW);
  assert.is(s.latencyByRoute['/r'].p50, 1, 'rank 2 of [-0.4, 1.4, 1.6, 2.5] is 1.4');
  assert.is(s.latencyByRoute['/r'].p95, 3, 'rank 4 is 2.5, rounded half up');
  const neg = computeStats([ev({ type: 'pageload', route: '/n', data: { duration: -0.4 } })], NOW).latencyByRoute['/n'];
  assert.ok(Object.is(neg.p50, 0) && Object.is(neg.avg, 0));
});

test('averages do not depend on the order events come in (summed in whole µs)', () => {
  // As float ms, 0.1 + 0.1 + 4.3 is 4.5 but 4.3 + 0.1 + 0.1 is 4.499999999999999: 2 against 1.
  const forward = [0.1, 0.1, 4.3].map((d) => ev({ type: 'pageload', route: '/r', data: { duration: d } }));
  const a = computeStats(forward, NOW), b = computeStats([...forward].reverse(), NOW);
  assert.is(a.latencyByRoute['/r'].avg, 2);
  assert.is(b.latencyByRoute['/r'].avg, 2);
  assert.is(a.averageLatency, b.averageLatency);
});

test('resolveRange: defaults, interval by length, bucket limit, and what it refuses', () => {
  const H = 3_600_000, D = 86_400_000;
  assert.is(resolveRange(undefined, NOW), null);
  assert.is(resolveRange({}, NOW), null);
  assert.equal(resolveRange({ from: NOW - 48 * H }, NOW), { from: NOW - 48 * H, to: NOW, interval: 'hour', bucketMs: H, firstBucket: NOW / H - 48, buckets: 48 });
  assert.is(resolveRange({ from: NOW - 48 * H - 1 }, NOW)!.interval, 'day');
  assert.is(resolveRange({ from: NOW - 48 * H - 1 }, NOW)!.buckets, 3, 'the first and last days are partial');
  assert.is(resolveRange({ from: NOW - 30 * D, interval: 'hour' }, NOW)!.buckets, 720);
  assert.is(resolveRange({ from: NOW - 1, to: NOW + 1 }, NOW)!.buckets, 2, 'one ms either side of an hour');
  assert.is(resolveRange({ from: NOW, to: NOW + H }, NOW)!.buckets, 1, 'to is exclusive');
  assert.is(rangeProblem({ from: NOW - MAX_SERIES_BUCKETS * H, interval: 'hour' }, NOW), null);
  assert.match(rangeProblem({ from: NOW - MAX_SERIES_BUCKETS * H - 1, interval: 'hour' }, NOW)!, /at most 2400/);
  assert.match(rangeProblem({ to: NOW }, NOW)!, /needs from/);
  assert.match(rangeProblem({ interval: 'day' }, NOW)!, /needs from/);
  assert.match(rangeProblem({ from: NOW }, NOW)!, /before to/);
  assert.match(rangeProblem({ from: NOW + 1 }, NOW)!, /before to/);
  assert.match(rangeProblem({ from: Number.NaN }, NOW)!, /not a time/);
  assert.match(rangeProblem({ from: 0, to: 9e15 }, NOW)!, /not a time/);
  assert.match(rangeProblem({ from: 0, interval: 'week' as 'day' }, NOW)!, /hour or day/);
});

test('a range: every field covers [from, to), series in UTC buckets labelled by their start', () => {
  const H = 3_600_000;
  const from = NOW - 2 * H - 30 * 60_000; // 09:30, so the first hour is partial
  const events = [
    ev({ type: 'error', sessionId: 'early', deployVersion: '1' }, from - 1),
    ev({ type: 'pageload', route: '/', sessionId: 'a', data: { duration: 100 } }, from),
    ev({ type: 'click', sessionId: 'b' }, NOW - H - 1),
    ev({ type: 'error', sessionId: 'b', deployVersion: '2' }, NOW - H),
    ev({ type: 'pageload', route: '/', sessionId: 'c', data: { duration: 300 } }, NOW - 60_000),
    ev({ type: 'feedback', sessionId: 'c', data: { rating: 4 } }, NOW),
  ];
  const s = computeStats(events, NOW, { from, to: NOW });
  assert.is(s.totalEvents, 4, 'from inclusive, to exclusive');
  assert.equal(s.errorsByVersion, { 2: 1 });
  assert.equal(s.eventsByType, { pageload: 2, click: 1, error: 1 });
  assert.is(s.activeUsers, 1, 'the session of the last 5 minutes inside the range');
  assert.equal(s.latencyByRoute['/'].points.map((p) => p.duration), [100, 300]);
  assert.equal(s.recentActivity.map((e) => e.type), ['pageload', 'error', 'click', 'pageload']);
  assert.equal(s.recentErrors.length, 1);
  assert.is(s.analytics.feedbackTotal, 0);
  assert.equal(s.analytics.activitySeries, { labels: ['2026-05-16T09:00:00.000Z', '2026-05-16T10:00:00.000Z', '2026-05-16T11:00:00.000Z'], values: [1, 1, 2] });
  assert.equal(s.analytics.userSeries.values, [1, 1, 2]);
  const daily = computeStats(events, NOW, { from, interval: 'day' });
  assert.equal(daily.analytics.userSeries, { labels: ['2026-05-16T00:00:00.000Z'], values: [3] });
  assert.is(daily.totalEvents, 4, 'to defaults to now, exclusive: an event received at now is not in');
  assert.is(computeStats(events, NOW, { from, to: NOW + 1 }).totalEvents, 5);
});

test.run();
