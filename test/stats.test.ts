import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, dayIndex, percentile, routeKey } from '../lib/stats.ts';

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
  assert.equal(s.latencyByRoute['/about'], { count: 1, p50: 10.4, p95: 10.4, avg: 10, points: [{ duration: 10.4, ttfb: null, timestamp: events[120].timestamp }] });
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

test.run();
