// The issue state machine (lib/issues/state.ts), session counting (sessions.ts) and version order (version.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HttpError } from '../lib/http.ts';
import { normalise } from '../lib/event.ts';
import { groupEvent } from '../lib/issues/fingerprint.ts';
import { addSession, emptySessions, EXACT_SESSIONS } from '../lib/issues/sessions.ts';
import { applyEvent, applyEvents, DAILY_DAYS, type Issue, type IssueEvent, issueEventOf, issueId, MAX_VERSIONS, parseStatusChange, publicIssue, setStatus } from '../lib/issues/state.ts';
import { compareVersions, isLaterVersion } from '../lib/issues/version.ts';

const DAY = 86_400_000;
const T0 = Date.parse('2026-05-16T09:00:00.000Z');
let seq = 0;
const ev = (over: Partial<IssueEvent> = {}): IssueEvent => ({
  id: `e${++seq}`, fingerprint: 'f00dfeedf00dfeed', title: 'TypeError: x is undefined', culprit: 'applyCoupon (/assets/app.js)',
  owner: 'u1', project: 'shop', sessionId: `s${seq}`, version: '1.4.0', ...over,
});

/** Applies events in order, returning the issue and every transition. */
function run(events: [IssueEvent, number][], start: Issue | null = null) {
  let issue = start;
  const transitions: (string | null)[] = [];
  for (const [e, at] of events) {
    const r = applyEvent(issue, e, at);
    issue = r.issue;
    transitions.push(r.transition);
  }
  return { issue: issue!, transitions };
}

test('first event: a new unresolved issue with its identity and history started', () => {
  const { issue, transition } = applyEvent(null, ev({ sessionId: 'sA' }), T0);
  assert.is(transition, 'new');
  assert.is(issue.status, 'unresolved');
  assert.is(issue.substatus, 'new');
  assert.is(issue.id, issueId('u1', 'shop', 'f00dfeedf00dfeed'));
  assert.is.not(issue.id, issueId('u2', 'shop', 'f00dfeedf00dfeed'), 'the same bug of another owner is another issue');
  assert.is(issue.count, 1);
  assert.is(issue.firstSeen, '2026-05-16T09:00:00.000Z');
  assert.is(issue.lastSeen, issue.firstSeen);
  assert.is(issue.sessions.count, 1);
  assert.equal(issue.versions, { first: '1.4.0', last: '1.4.0', seen: ['1.4.0'], truncated: false });
  assert.equal(issue.daily, [['2026-05-16', 1]]);
});

test('new until seen on a second UTC day, then ongoing', () => {
  const sameDay = run([[ev(), T0], [ev(), T0 + 3 * 3_600_000], [ev(), Date.parse('2026-05-16T23:59:59.999Z')]]);
  assert.is(sameDay.issue.substatus, 'new', 'three events on one day');
  assert.equal(sameDay.transitions, ['new', null, null]);
  const nextDay = run([[ev(), Date.parse('2026-05-17T00:00:00.000Z')]], sameDay.issue);
  assert.is(nextDay.issue.substatus, 'ongoing');
  assert.equal(nextDay.transitions, [null]);
  assert.equal(nextDay.issue.daily, [['2026-05-16', 3], ['2026-05-17', 1]]);
  assert.is(nextDay.issue.count, 4);
});

test('resolve, then a later event: regressed, with a regression transition and the history kept', () => {
  const { issue: seen } = run([[ev(), T0], [ev(), T0 + DAY]]);
  const resolved = setStatus(seen, { status: 'resolved' }, T0 + 2 * DAY);
  assert.is(resolved.status, 'resolved');
  assert.is(resolved.substatus, null);
  assert.is(resolved.resolvedAt, new Date(T0 + 2 * DAY).toISOString());

  const back = applyEvent(resolved, ev(), T0 + 3 * DAY);
  assert.is(back.transition, 'regression');
  assert.is(back.issue.status, 'unresolved');
  assert.is(back.issue.substatus, 'regressed');
  assert.is(back.issue.regressions, 1);
  assert.is(back.issue.regressedAt, new Date(T0 + 3 * DAY).toISOString());
  assert.is(back.issue.count, 3, 'history kept');
  assert.is(back.issue.firstSeen, seen.firstSeen);
  assert.is(back.issue.id, seen.id);

  const again = applyEvent(back.issue, ev(), T0 + 3 * DAY + 1);
  assert.is(again.transition, null, 'one regression, not one per event');
  assert.is(again.issue.substatus, 'regressed');
});

test('an event received before the resolve, processed after it, leaves the issue resolved', () => {
  const { issue } = run([[ev(), T0]]);
  const resolved = setStatus(issue, { status: 'resolved' }, T0 + 60_000);
  const late = applyEvent(resolved, ev(), T0 + 30_000);
  assert.is(late.transition, null);
  assert.is(late.issue.status, 'resolved');
  assert.is(late.issue.count, 2);
  assert.is(late.issue.lastSeen, new Date(T0 + 30_000).toISOString());
  const older = applyEvent(late.issue, ev(), T0 - 60_000);
  assert.is(older.issue.lastSeen, late.issue.lastSeen, 'an older event processed later does not move lastSeen back');
  assert.is(older.issue.firstSeen, new Date(T0 - 60_000).toISOString());
});

test('resolved in version X: events in X or earlier stay resolved, a later version regresses', () => {
  const { issue } = run([[ev({ version: '1.4.0' }), T0]]);
  const resolved = setStatus(issue, { status: 'resolved', resolvedInVersion: '1.4.1' }, T0 + DAY);
  assert.is(resolved.resolvedInVersion, '1.4.1');
  for (const version of ['1.4.1', '1.4.0', '1.4.1-rc.2', null]) {
    const r = applyEvent(resolved, ev({ version }), T0 + 2 * DAY);
    assert.is(r.transition, null, `version ${version}`);
    assert.is(r.issue.status, 'resolved', `version ${version}`);
  }
  const later = applyEvent(resolved, ev({ version: '1.10.0' }), T0 + 2 * DAY);
  assert.is(later.transition, 'regression', '1.10.0 is later than 1.4.1 (not by string order)');
  assert.is(later.issue.substatus, 'regressed');
  assert.is(later.issue.resolvedInVersion, null);
});

test('ignored issues stay quiet: events are counted, nothing transitions', () => {
  const { issue } = run([[ev(), T0]]);
  const ignored = setStatus(issue, { status: 'ignored' }, T0 + 1000);
  const after = run([[ev({ version: '9.0.0' }), T0 + DAY], [ev(), T0 + 2 * DAY]], ignored);
  assert.equal(after.transitions, [null, null]);
  assert.is(after.issue.status, 'ignored');
  assert.is(after.issue.substatus, null);
  assert.is(after.issue.count, 3);
  const reopened = setStatus(after.issue, { status: 'unresolved' }, T0 + 3 * DAY);
  assert.is(reopened.status, 'unresolved');
  assert.is(reopened.substatus, 'ongoing', 'seen on several days');
});

test('sessions: exact while small, never counted twice, then a bounded estimate', () => {
  const { issue } = run([[ev({ sessionId: 'a' }), T0], [ev({ sessionId: 'b' }), T0], [ev({ sessionId: 'a' }), T0], [ev({ sessionId: null }), T0]]);
  assert.is(issue.count, 4);
  assert.is(issue.sessions.count, 2);
  assert.ok(issue.sessions.exact);

  let s = emptySessions();
  for (let i = 0; i < EXACT_SESSIONS; i++) s = addSession(s, `session-${i}`);
  assert.is(s.count, EXACT_SESSIONS);
  assert.ok(s.exact);
  for (let i = 0; i < 20_000; i++) s = addSession(s, `session-${i % 5000}`);
  assert.not.ok(s.exact);
  assert.is(s.ids, null);
  assert.ok(Math.abs(s.count - 5000) / 5000 < 0.15, `estimate ${s.count} for 5000 sessions`);
  assert.ok(JSON.stringify(s).length < 1500, 'bounded size');
});

test('versions: first, last and a bounded set in the order first seen', () => {
  let issue = applyEvent(null, ev({ version: null }), T0).issue;
  assert.equal(issue.versions, { first: null, last: null, seen: [], truncated: false });
  for (let i = 0; i < MAX_VERSIONS + 5; i++) issue = applyEvent(issue, ev({ version: `2.0.${i}` }), T0 + i).issue;
  issue = applyEvent(issue, ev({ version: '2.0.3' }), T0 + 1000).issue;
  assert.is(issue.versions.first, '2.0.0');
  assert.is(issue.versions.last, '2.0.3');
  assert.is(issue.versions.seen.length, MAX_VERSIONS);
  assert.ok(issue.versions.truncated);
});

test('the daily series keeps the last days only, oldest first', () => {
  let issue: Issue | null = null;
  for (let d = 0; d < DAILY_DAYS + 10; d++) issue = applyEvent(issue, ev(), T0 + d * DAY).issue;
  assert.is(issue!.daily.length, DAILY_DAYS);
  assert.is(issue!.daily[0][0], new Date(T0 + 10 * DAY).toISOString().slice(0, 10));
  assert.is(issue!.daily.at(-1)![0], new Date(T0 + (DAILY_DAYS + 9) * DAY).toISOString().slice(0, 10));
});

test('an issue is plain JSON: a stored copy goes on exactly like the original', () => {
  const { issue } = run([[ev(), T0], [ev({ version: '1.5.0' }), T0 + DAY]]);
  const stored = JSON.parse(JSON.stringify(issue)) as Issue;
  assert.equal(stored, issue);
  const e = ev({ sessionId: 'z' });
  assert.equal(applyEvent(stored, e, T0 + 2 * DAY), applyEvent(issue, e, T0 + 2 * DAY));
});

test('publicIssue: the session count without the internal sketch', () => {
  const { issue } = run([[ev({ sessionId: 'a' }), T0], [ev({ sessionId: 'b' }), T0]]);
  const shown = publicIssue(issue);
  assert.equal(shown.sessions, { count: 2, exact: true });
  assert.is(shown.count, 2);
  assert.ok(issue.sessions.sketch.length > 0, 'the issue itself keeps it');
});

test('issueEventOf: a stored event and its grouping feed the state machine', () => {
  const stored = { ...normalise({ type: 'error', message: 'Uncaught TypeError: x is undefined', sessionId: 's9', deployVersion: '3.1.0', userId: 'ada', environment: 'production', route: '/cart' }, { now: T0, owner: 'u7', newId: () => 'evt-1' }), projectId: '42', client: { browser: 'Firefox', os: 'Linux', device: 'desktop' } };
  const grouping = groupEvent(stored);
  const e = issueEventOf(stored, grouping);
  assert.equal(e, {
    userId: 'ada', tags: { browser: 'Firefox', os: 'Linux', device: 'desktop', release: '3.1.0', environment: 'production', page: '/cart' },
    message: 'Uncaught TypeError: x is undefined',
    id: 'evt-1', fingerprint: grouping.fingerprint, title: 'TypeError: x is undefined', culprit: null, owner: 'u7', project: '42', sessionId: 's9', version: '3.1.0',
  });
});

test('parseStatusChange: the three statuses, a version only with resolved, anything else a 400', () => {
  assert.equal(parseStatusChange({ status: 'resolved', resolvedInVersion: ' 1.4.1 ' }), { status: 'resolved', resolvedInVersion: '1.4.1' });
  assert.equal(parseStatusChange({ status: 'ignored' }), { status: 'ignored' });
  for (const bad of [null, [], {}, { status: 'done' }, { status: 'ignored', resolvedInVersion: '1' }, { status: 'resolved', resolvedInVersion: '' }, { status: 'resolved', extra: 1 }]) {
    try {
      parseStatusChange(bad);
      assert.unreachable(JSON.stringify(bad));
    } catch (e) {
      assert.instance(e, HttpError, JSON.stringify(bad));
      assert.is((e as HttpError).status, 400);
      assert.is((e as HttpError).code, 'invalid_body');
    }
  }
});

test('compareVersions: semver precedence, numeric fallback, and unorderable versions', () => {
  assert.is(compareVersions('1.10.0', '1.9.9'), 1);
  assert.is(compareVersions('v2.0.0', '2.0.0'), 0);
  assert.is(compareVersions('1.4', '1.4.0'), 0);
  assert.is(compareVersions('2.0.0-rc.1', '2.0.0'), -1);
  assert.is(compareVersions('2.0.0-rc.10', '2.0.0-rc.2'), 1);
  assert.is(compareVersions('2.0.0-alpha', '2.0.0-1'), 1, 'alphanumeric identifiers rank above numeric ones');
  assert.is(compareVersions('1.0.0+build.5', '1.0.0+build.6'), 0, 'build metadata is ignored');
  assert.is(compareVersions('build-123', 'build-99'), 1);
  assert.is(compareVersions('2026.06.01', '2026.05.30'), 1);
  assert.is(compareVersions('3f9a1c2', 'a1b2c3d'), null);
  assert.ok(isLaterVersion('a1b2c3d', '3f9a1c2'), 'unorderable: later');
  assert.not.ok(isLaterVersion('1.4.0', '1.4.0'));
});

test('applyEvents: the same issue and transitions as applyEvent one event at a time, and the input left as it was', () => {
  const T = Date.parse('2026-05-16T12:00:00.000Z');
  const events: { event: IssueEvent; now: number }[] = [];
  for (let i = 0; i < 40; i++) events.push({ event: ev({ version: `1.${i % 7}.0`, sessionId: `s${i % 5}` }), now: T + i * 3_600_000 - (i % 3 === 0 ? 7_200_000 : 0) });
  let folded: Issue | null = null;
  const one: string[] = [];
  for (const { event, now } of events) {
    const r = applyEvent(folded, event, now);
    folded = r.issue;
    if (r.transition) one.push(r.transition);
  }
  const batch = applyEvents(null, events);
  assert.equal(batch.issue, folded);
  assert.equal(batch.transitions.map((t) => t.transition), one);

  // On a resolved issue: one regression, at the event that caused it; the stored issue is untouched.
  const resolved = setStatus(folded!, { status: 'resolved' }, T + 100 * 3_600_000);
  const frozen = JSON.stringify(resolved);
  const later = [0, 1, 2].map((i) => ({ event: ev(), now: T + (101 + i) * 3_600_000 }));
  const r = applyEvents(resolved, later);
  assert.equal(r.transitions, [{ transition: 'regression', at: later[0].now, environment: null }]);
  assert.equal([r.issue.status, r.issue.substatus, r.issue.count], ['unresolved', 'regressed', 43]);
  assert.is(JSON.stringify(resolved), frozen);
});

test.run();
