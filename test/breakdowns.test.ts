// The breakdowns and web-vitals summary of computeStats (docs/api.md#breakdowns), hand-checked:
// the reference every store is compared with.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BREAKDOWN_LIMIT, vitalRating } from '../lib/breakdowns.ts';
import { referrerOrigin } from '../lib/event-keys.ts';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats } from '../lib/stats.ts';

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const RANGE = { from: NOW - 3_600_000 };
let seq = 0;
const ev = (raw: RawEvent, client?: StoredEvent['client'], at = NOW - 1000): StoredEvent => {
  const e = normalise(raw, { now: at, owner: 'u', newId: () => `b${++seq}` });
  if (client) e.client = client;
  return e;
};
const chrome = { browser: 'Chrome', browserVersion: '131', os: 'Windows', device: 'desktop' } as const;
const safari = { browser: 'Safari', os: 'iOS', device: 'mobile' } as const;

test('without a range the answer has no breakdowns or vitals (the shape stays as it was)', () => {
  const s = computeStats([ev({ type: 'pageload', data: { duration: 5 } })], NOW);
  assert.not.ok('breakdowns' in s);
  assert.not.ok('vitals' in s);
});

test('breakdowns: pages and referrers from pageloads, clients and versions from every event, sessions distinct', () => {
  const events = [
    ev({ type: 'pageload', route: '/a', sessionId: 's1', deployVersion: '2.0', referrer: 'https://search.example/q?x=1', data: { duration: 100 } }, chrome),
    ev({ type: 'pageload', route: '/a', sessionId: 's1', deployVersion: '2.0', data: { duration: 300.4 } }, chrome),
    ev({ type: 'pageload', route: '/a', sessionId: 's2', data: { duration: 200 } }, safari),
    ev({ type: 'pageload', url: 'https://x.example/b?q=1', sessionId: 's2', referrer: 'https://search.example' }, safari),
    ev({ type: 'click', route: '/c', sessionId: 's3', deployVersion: '1.0', referrer: 'https://other.example' }),
    ev({ type: 'error', sessionId: 's1', deployVersion: '2.0' }, { browser: null, os: null, device: null }),
    ev({ type: 'pageload', route: '/old', data: { duration: 1 } }, chrome, NOW - 2 * 3_600_000),
  ];
  const b = computeStats(events, NOW, RANGE).breakdowns!;
  assert.equal(b.pages, [
    { name: '/a', events: 3, sessions: 2, p75: 300 },
    { name: '/b', events: 1, sessions: 1, p75: null },
  ]);
  assert.equal(b.referrers, [
    { name: 'direct', events: 2, sessions: 2 },
    { name: 'https://search.example', events: 2, sessions: 2 },
  ], 'equal events: by name; the path and query were dropped at ingest');
  assert.equal(b.browsers, [
    { name: 'Chrome', events: 2, sessions: 1 },
    { name: 'Safari', events: 2, sessions: 1 },
    { name: 'unknown', events: 2, sessions: 2 },
  ]);
  assert.equal(b.os.map((r) => r.name), ['Windows', 'iOS', 'unknown']);
  assert.equal(b.devices, [
    { name: 'desktop', events: 2, sessions: 1 },
    { name: 'mobile', events: 2, sessions: 1 },
    { name: 'unknown', events: 2, sessions: 2 },
  ]);
  assert.equal(b.versions, [
    { name: '2.0', events: 3, sessions: 1 },
    { name: 'unknown', events: 2, sessions: 1 },
    { name: '1.0', events: 1, sessions: 1 },
  ]);
});

test('breakdowns are capped at BREAKDOWN_LIMIT rows, most events first, then by name', () => {
  const events: StoredEvent[] = [];
  for (let i = 0; i < BREAKDOWN_LIMIT + 20; i++) {
    for (let k = 0; k <= (i % 3); k++) events.push(ev({ type: 'pageload', route: `/p${String(i).padStart(3, '0')}` }));
  }
  const pages = computeStats(events, NOW, RANGE).breakdowns!.pages;
  assert.is(pages.length, BREAKDOWN_LIMIT);
  assert.equal(pages.slice(0, 2).map((p) => [p.name, p.events]), [['/p002', 3], ['/p005', 3]]);
  assert.ok(pages.every((p, i) => i === 0 || pages[i - 1].events > p.events || (pages[i - 1].events === p.events && pages[i - 1].name < p.name)));
});

test('vitals: p75 nearest rank at 1 ms (CLS at 0.001), rated at the thresholds, per metric and per page', () => {
  const vital = (name: string, value: unknown, route = '/a') => ev({ type: 'performance', route, data: { name, value } });
  const events = [
    vital('LCP', 2500), vital('LCP', 2500.4), vital('LCP', 2500.6), vital('LCP', 4000), vital('LCP', 4001, '/b'),
    vital('CLS', 0.1), vital('CLS', 0.1004), vital('CLS', 0.1006), vital('cls', 0.26),
    vital('INP', 'slow'), vital('FID', 30), ev({ type: 'custom', data: { name: 'LCP', value: 1 } }),
  ];
  const v = computeStats(events, NOW, RANGE).vitals!;
  assert.equal(v.metrics.LCP, { count: 5, p75: 4000, good: 2, needsImprovement: 2, poor: 1 }, '2500.4 is 2500 ms: good; 2500.6 is 2501');
  assert.equal(v.metrics.CLS, { count: 4, p75: 0.101, good: 2, needsImprovement: 1, poor: 1 });
  assert.equal(v.metrics.INP, { count: 0, p75: null, good: 0, needsImprovement: 0, poor: 0 });
  assert.equal(Object.keys(v.metrics), ['LCP', 'INP', 'CLS', 'FCP', 'TTFB']);
  assert.equal(v.pages.map((p) => [p.name, p.events, Object.keys(p.metrics)]), [['/a', 8, ['LCP', 'CLS']], ['/b', 1, ['LCP']]]);
  assert.equal(v.pages[1].metrics.LCP, { count: 1, p75: 4001, good: 0, needsImprovement: 0, poor: 1 });
  assert.is(vitalRating(2, 250), 1, 'CLS 0.25 needs improvement');
  assert.is(vitalRating(2, 251), 2);
});

test('referrers are reduced to their origin at ingest; anything but http(s) is dropped', () => {
  assert.is(ev({ type: 'pageload', referrer: 'https://news.example:8443/a/b?token=x#y' }).referrer, 'https://news.example:8443');
  assert.is(ev({ type: 'pageload', referrer: 'HTTP://Search.Example/q' }).referrer, 'http://search.example');
  for (const bad of ['android-app://com.x', 'javascript:alert(1)', 'not a url', '', 42, null]) {
    assert.not.ok('referrer' in ev({ type: 'pageload', referrer: bad }), String(bad));
  }
  assert.is(referrerOrigin('https://a.example/' + 'x'.repeat(5000)), null, 'absurdly long: dropped');
});

test('breakdowns: environments and countries of every event, campaigns of pageloads, custom events by name', () => {
  const de = { ...chrome, country: 'DE' }, us = { ...safari, country: 'US' };
  const events = [
    ev({ type: 'pageload', sessionId: 's1', environment: 'production', url: 'https://x.example/?utm_source=News&utm_medium=email&utm_campaign=Spring' }, de),
    ev({ type: 'pageload', sessionId: 's2', environment: 'production', url: 'https://x.example/?utm_source=news' }, us),
    ev({ type: 'pageload', sessionId: 's2', environment: 'Staging', url: 'https://x.example/p' }, us),
    // Not a pageload: its campaign is stored but counts in no UTM list.
    ev({ type: 'click', sessionId: 's3', url: 'https://x.example/?utm_source=ads' }, { ...chrome, country: null }),
    ev({ type: 'custom', sessionId: 's1', name: 'signup', environment: 'production' }, de),
    ev({ type: 'custom', sessionId: 's3', eventName: 'signup' }),
    ev({ type: 'custom', sessionId: 's3', data: { plan: 'pro' } }),
  ];
  const b = computeStats(events, NOW, RANGE).breakdowns!;
  assert.equal(b.environments, [
    { name: 'production', events: 3, sessions: 2 }, { name: 'unknown', events: 3, sessions: 1 }, { name: 'Staging', events: 1, sessions: 1 },
  ]);
  assert.equal(b.utmSources, [{ name: 'news', events: 2, sessions: 2 }]);
  assert.equal(b.utmMediums, [{ name: 'email', events: 1, sessions: 1 }]);
  assert.equal(b.utmCampaigns, [{ name: 'spring', events: 1, sessions: 1 }]);
  assert.equal(b.countries, [
    { name: 'unknown', events: 3, sessions: 1 }, { name: 'DE', events: 2, sessions: 1 }, { name: 'US', events: 2, sessions: 1 },
  ]);
  assert.equal(b.customEvents, [{ name: 'signup', events: 2, sessions: 2 }, { name: 'unknown', events: 1, sessions: 1 }]);
});

test.run();
