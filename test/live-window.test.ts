// The live window: active sessions, recent errors, activity and points kept on insert, exact or
// silent (null), and the same after a round trip through JSON.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { LiveWindow, RecentsBuilder, recentsOf, type Recents } from '../lib/live-window.ts';
import { resolveRange } from '../lib/stats.ts';

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const MIN = 60_000;
let n = 0;
const ev = (raw: Partial<RawEvent>, at: number): StoredEvent =>
  normalise({ type: 'click', ...raw } as RawEvent, { now: at, owner: 'u', newId: () => `w${++n}` });
const fill = (events: StoredEvent[]) => {
  const w = new LiveWindow();
  events.forEach((e) => w.add(e));
  return w;
};
const plain = (r: Recents | null) => r && { ...r, points: Object.fromEntries(r.points) };

test('active users: sessions seen in the 5 minutes before now, pruned as they go quiet', () => {
  const events = [
    ev({ sessionId: 'old' }, NOW - 10 * MIN),
    ev({ sessionId: 'edge' }, NOW - 5 * MIN),
    ev({ sessionId: 'a' }, NOW - 4 * MIN),
    ev({ sessionId: 'b' }, NOW - MIN),
    ev({ sessionId: 'a' }, NOW),
    ev({}, NOW),
  ];
  const w = fill(events);
  assert.is(w.recents(NOW, null)!.activeUsers, 3, 'edge (exactly 5 minutes), a, b');
  assert.is(w.recents(NOW + 1, null)!.activeUsers, 2);
  assert.is(w.recents(NOW + 5 * MIN, null)!.activeUsers, 1);
  assert.is(w.recents(NOW + 6 * MIN, null)!.activeUsers, 0);
  assert.equal(w.toJSON().sessions.map(([s]) => s), ['edge', 'b', 'a'], '"old" was pruned; seen again moves to the end');
  const range = resolveRange({ from: NOW - 2 * MIN, to: NOW + 1 }, NOW);
  assert.is(w.recents(NOW, range)!.activeUsers, 2, 'only sessions seen inside the range');
});

test('recent errors, activity and points: the latest, newest first (points oldest first), capped', () => {
  const events = Array.from({ length: 130 }, (_, i) =>
    ev(i % 2 ? { type: 'error', message: `m${i}` } : { type: 'pageload', route: '/r', data: { duration: i, ttfb: 1 } }, NOW - (130 - i) * 1000));
  const r = fill(events).recents(NOW, null)!;
  assert.equal(plain(r), plain(recentsOf(events, NOW, null)));
  assert.is(r.errors.length, 50);
  assert.is(r.errors[0].message, 'm129');
  assert.is(r.activity.length, 20);
  assert.is(r.points.get('/r')!.length, 65);
  assert.equal(r.points.get('/r')![0], { duration: 0, ttfb: 1, timestamp: events[0].timestamp });
});

test('with a range ending after the newest event, the window filters by from; otherwise it says null', () => {
  const events = Array.from({ length: 80 }, (_, i) => ev({ type: 'error', sessionId: `s${i % 3}` }, NOW - (80 - i) * MIN));
  const w = fill(events);
  for (const from of [NOW - 100 * MIN, NOW - 60 * MIN, NOW - 30 * MIN, NOW - 10 * MIN, NOW]) {
    const range = resolveRange({ from, to: NOW + 1 }, NOW);
    assert.equal(plain(w.recents(NOW, range)), plain(recentsOf(events, NOW, range)), `from ${(from - NOW) / MIN} min`);
  }
  assert.is(w.recents(NOW, resolveRange({ from: NOW - 60 * MIN, to: NOW - MIN }, NOW)), null, 'to at the newest event');
  assert.is(w.recents(NOW - 2 * MIN, null), null, 'now before the newest event');
});

test('events out of receive order: exact where it can be, null where an item let go may count', () => {
  // 50 errors at increasing times, then 60 late ones dated earlier: the first 50 are pushed out.
  const events = [
    ...Array.from({ length: 50 }, (_, i) => ev({ type: 'error', sessionId: 'x' }, NOW - 100 * MIN + i * MIN)),
    ...Array.from({ length: 60 }, (_, i) => ev({ type: 'error', sessionId: 'y' }, NOW - 200 * MIN + i * MIN)),
  ];
  const w = fill(events);
  assert.equal(plain(w.recents(NOW, null)), plain(recentsOf(events, NOW, null)));
  assert.is(w.recents(NOW, resolveRange({ from: NOW - 60 * MIN }, NOW)), null, 'pushed-out errors are in range');
  // The latest error pushed out was received at -51 min: a range from then on may need it.
  assert.is(w.recents(NOW, resolveRange({ from: NOW - 51 * MIN }, NOW)), null, 'the error at -51 min is in range');
  const after = resolveRange({ from: NOW - 51 * MIN + 1 }, NOW);
  assert.equal(plain(w.recents(NOW, after)), plain(recentsOf(events, NOW, after)), 'nothing pushed out is that recent');
});

test('remove (oldest first) takes events back; a session goes with its latest event', () => {
  const events = [
    ev({ type: 'error', sessionId: 'a' }, NOW - 3 * MIN),
    ev({ type: 'pageload', route: '/r', sessionId: 'b', data: { duration: 5 } }, NOW - 2 * MIN),
    ev({ sessionId: 'a' }, NOW - MIN),
    ev({ sessionId: 'c' }, NOW),
  ];
  const w = fill(events);
  for (let k = 1; k <= events.length; k++) {
    w.remove(events[k - 1]);
    assert.equal(plain(w.recents(NOW, null)), plain(recentsOf(events.slice(k), NOW, null)), `after removing ${k}`);
  }
});

test('remove after events out of order: a session whose latest time may be gone is not guessed', () => {
  const first = ev({ sessionId: 's' }, NOW);
  const second = ev({ sessionId: 's' }, NOW - 10 * MIN);
  const w = fill([first, second]);
  assert.is(w.recents(NOW, null)!.activeUsers, 1);
  w.remove(first);
  assert.is(w.recents(NOW, null), null, 'the session\'s remaining event is 10 minutes old; the window no longer knows');
  assert.equal(recentsOf([second], NOW, null).activeUsers, 0);
  w.add(ev({ sessionId: 's' }, NOW));
  assert.is(w.recents(NOW, null)!.activeUsers, 1, 'seen again, it is known again');
});

test('dropBefore forgets what retention dropped', () => {
  const events = [ev({ type: 'error', sessionId: 'a' }, NOW - 100 * MIN), ev({ type: 'pageload', route: '/', data: { duration: 1 } }, NOW - 90 * MIN), ev({ sessionId: 'b' }, NOW)];
  const w = fill(events);
  w.dropBefore(NOW - 95 * MIN);
  assert.equal(plain(w.recents(NOW, null)), plain(recentsOf(events.slice(1), NOW, null)));
  w.dropBefore(NOW);
  assert.equal(plain(w.recents(NOW, null)), plain(recentsOf(events.slice(2), NOW, null)));
});

test('toJSON → JSON text → fromJSON answers the same and keeps updating', () => {
  const events = Array.from({ length: 90 }, (_, i) =>
    ev({ type: ['error', 'pageload', 'click'][i % 3], route: `/r${i % 4}`, sessionId: `s${i % 7}`, data: { duration: i / 4 } }, NOW - (90 - i) * 5000));
  const w = fill(events);
  const back = LiveWindow.fromJSON(JSON.parse(JSON.stringify(w)));
  const range = resolveRange({ from: NOW - 3 * MIN }, NOW + 1);
  assert.equal(plain(back.recents(NOW, null)), plain(w.recents(NOW, null)));
  assert.equal(plain(back.recents(NOW + 1, range)), plain(w.recents(NOW + 1, range)));
  const more = ev({ type: 'error', sessionId: 'new' }, NOW);
  back.add(more);
  assert.equal(plain(back.recents(NOW, null)), plain(recentsOf([...events, more], NOW, null)));
  assert.equal(plain(LiveWindow.fromJSON(JSON.parse(JSON.stringify(new LiveWindow()))).recents(NOW, null)), plain(recentsOf([], NOW, null)));
});


test('RecentsBuilder with the range counts: complete once every list holds what the range has, equal to recentsOf', () => {
  // Newest last; a rare route with fewer pageloads than a list holds, a busy one with more.
  const events = Array.from({ length: 900 }, (_, i) => {
    const raw: Partial<RawEvent> = i % 3 === 0 ? { type: 'error', message: `m${i}` }
      : i % 3 === 1 ? { type: 'pageload', route: i % 29 === 1 ? '/rare' : '/busy', data: { duration: i, ttfb: 2 } }
      : { type: 'click' };
    return ev(raw, NOW - (900 - i) * 1000);
  });
  const counts = { events: 900, errors: 300, pageloads: new Map([['/rare', events.filter((e) => e.route === '/rare').length], ['/busy', 0]]) };
  counts.pageloads.set('/busy', 300 - counts.pageloads.get('/rare')!);
  const want = recentsOf(events, NOW, null);
  const route = (e: StoredEvent) => (e.type === 'pageload' ? e.route! : null);
  const duration = (e: StoredEvent) => (e.type === 'pageload' ? (e.data.duration as number) : null);

  // One walk through every event, newest first.
  const all = new RecentsBuilder(counts);
  let read = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    read++;
    if (!all.add(events[i], route(events[i]), duration(events[i]))) break;
  }
  assert.equal(plain(all.recents(want.activeUsers)), plain(want));
  const rareFirst = events.findIndex((e) => e.route === '/rare');
  assert.is(read, events.length - rareFirst, 'it stops at the oldest pageload of the rare route, not before, not after');

  // A walk per list, as a store that selects errors and pageloads reads them.
  const each = new RecentsBuilder(counts);
  for (let i = events.length - 1; i >= 0 && each.takeActivity(events[i]); i--);
  const errors = events.filter((e) => e.type === 'error').reverse();
  let errorsRead = 0;
  while (errorsRead < errors.length && each.takeError(errors[errorsRead++]));
  assert.is(errorsRead, 50, 'the error walk stops at its 50th');
  let pageloads = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i].type !== 'pageload') continue;
    pageloads++;
    if (!each.takePoint(events[i], route(events[i])!, duration(events[i])!)) break;
  }
  assert.ok(each.activityDone && each.errorsDone && each.pointsDone);
  assert.equal(plain(each.recents(want.activeUsers)), plain(want));
  assert.is(pageloads, events.filter((e, i) => i >= rareFirst && e.type === 'pageload').length);

  // Without counts it never calls itself complete: the caller reads everything.
  const blind = new RecentsBuilder();
  assert.ok(events.every((e) => blind.add(e, route(e), duration(e))));
});

test.run();
