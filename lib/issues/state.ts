// The issue: one bug, its history and what people decided about it. Pure functions over plain JSON
// values, so every store can persist an issue as it is (one JSON document per issue).
import { HttpError } from '../http.ts';
import { fnv1a64 } from './hash.ts';
import { addActivity, type ClosedDays, copyActivity, emptyActivity, type IssueActivity, publicActivity } from './activity.ts';
import { addHashed, emptySessions, hashId, type SessionCount } from './sessions.ts';
import { addTags, copyTags, type EventTags, eventTags, eventUser, hasTag, type IssueTags, publicTags, type TaggedEvent } from './tags.ts';
import { isLaterVersion } from './version.ts';
import type { IssuePositions } from './positions.ts';

export type IssueStatus = 'unresolved' | 'resolved' | 'ignored';
/** For unresolved issues: `new` until seen on two UTC days, then `ongoing`; `regressed` after a resolve was broken. */
export type IssueSubstatus = 'new' | 'ongoing' | 'regressed';
export type Transition = 'new' | 'regression';

export interface Issue {
  /** Stable across processes: a hash of owner, project and fingerprint (issueId). */
  id: string;
  fingerprint: string;
  /** Owner (the events' `user_id`) and project (their `projectId`, set from a project key); both may be null. */
  owner: string | null;
  project: string | null;
  /** Title and culprit of the latest event, so an upload of source maps improves them. */
  title: string;
  culprit: string | null;
  /** The latest event's message, cut to MESSAGE_LENGTH, for search. Absent on issues of earlier versions until their next event. */
  message?: string | null;
  status: IssueStatus;
  /** Set only while unresolved. */
  substatus: IssueSubstatus | null;
  /** Times are server receive times, ISO 8601. */
  firstSeen: string;
  lastSeen: string;
  count: number;
  sessions: SessionCount;
  /** Distinct `userId`s of the events, counted like sessions. The three fields below are absent on issues of earlier versions until their next event, and count from it. */
  users?: SessionCount;
  /** Tag distributions (lib/issues/tags.ts). */
  tags?: IssueTags;
  /** Distinct sessions and users per day (lib/issues/activity.ts). */
  activity?: IssueActivity;
  versions: IssueVersions;
  /** Events per UTC day, `[YYYY-MM-DD, count]`, oldest first, the last DAILY_DAYS days that had any. */
  daily: [string, number][];
  lastEventId: string;
  /** The latest events, `[id, receive time]`, newest first, at most RECENT_EVENTS: what an issue page shows. */
  recentEvents: [string, string][];
  /** Where its events are in the event store, for walking them all (lib/issues/positions.ts); absent before grouping kept it. */
  positions?: IssuePositions;
  /** When the status last changed by hand, and who resolved it in which version. */
  statusChangedAt: string | null;
  resolvedAt: string | null;
  resolvedInVersion: string | null;
  /** The last regression, and how many there were. */
  regressedAt: string | null;
  regressions: number;
}

export interface IssueVersions {
  /** Versions of the first and the latest event that carried one. */
  first: string | null;
  last: string | null;
  /** Distinct versions in the order first seen, at most MAX_VERSIONS; `truncated` once more were seen. */
  seen: string[];
  truncated: boolean;
}

/** What the state machine needs from one grouped error event (see issueEventOf). */
export interface IssueEvent {
  id: string;
  fingerprint: string;
  title: string;
  culprit: string | null;
  owner: string | null;
  project: string | null;
  sessionId: string | null;
  version: string | null;
  /** The event's `userId` field, tags (lib/issues/tags.ts) and message; absent: none. */
  userId?: string | null;
  tags?: EventTags;
  message?: string | null;
}

/** A transition, and when and in which environment (null: none said) the event that caused it came. */
export interface Transitioned {
  transition: Transition;
  at: number;
  environment?: string | null;
}

export const DAILY_DAYS = 90;
export const MAX_VERSIONS = 50;
export const RECENT_EVENTS = 10;
export const MESSAGE_LENGTH = 500;

/** The issue id for an owner, project and fingerprint: 16 hex digits. */
export const issueId = (owner: string | null, project: string | null, fingerprint: string): string =>
  fnv1a64(`${owner ?? ''}\u0000${project ?? ''}\u0000${fingerprint}`);

/** A stored event (lib/event.ts) and its grouping (groupEvent) → what applyEvent takes. */
export function issueEventOf(
  event: TaggedEvent & { id: string; user_id: string | null; projectId?: string; sessionId: string | null; message?: string | null },
  grouping: { fingerprint: string; title: string; culprit: string | null },
): IssueEvent {
  return {
    userId: eventUser(event),
    tags: eventTags(event),
    message: typeof event.message === 'string' ? event.message.slice(0, MESSAGE_LENGTH) : null,
    id: event.id,
    fingerprint: grouping.fingerprint,
    title: grouping.title,
    culprit: grouping.culprit,
    owner: event.user_id,
    project: event.projectId ?? null,
    sessionId: event.sessionId,
    version: event.deployVersion,
  };
}

/**
 * One more event of an issue (null: the first one). `now` is the event's server receive time (ms),
 * so an event processed late is judged by when it arrived. Transitions:
 * - no issue yet → a new issue, `unresolved`/`new`, transition `new`;
 * - `new` → `ongoing` once the issue has been seen on a second UTC day;
 * - `resolved` → `unresolved`/`regressed`, transition `regression`, when the event arrived after the
 *   resolve, or, when resolved in version X, when it comes from a version later than X
 *   (isLaterVersion; an event without a version cannot show that and leaves the issue resolved);
 * - `ignored` stays ignored.
 * Counts, sessions, versions and the daily series grow in every status. Pure: returns a new issue.
 */
export function applyEvent(issue: Issue | null, event: IssueEvent, now: number): { issue: Issue; transition: Transition | null; firstIn: Transitioned[] } {
  const { issue: next, transitions, firstIn } = applyEvents(issue, [{ event, now }]);
  return { issue: next, transition: transitions[0]?.transition ?? null, firstIn };
}

/**
 * Several events of one issue, in order: the same as applying them one by one with applyEvent, but
 * on one working copy, so a burst of one bug costs one copy of the issue rather than one per event.
 * Returns the issue after the last event and each transition with the receive time (ms) and
 * environment of the event that caused it (at most one `new`, then at most one `regression` per
 * resolve); `firstIn` has a `new` for each event that was the issue's first in its environment (as
 * far as the environments counted in its tags tell), for alert rules that watch one environment.
 * `closed`: counters of the issue's closed days (activity.ts) that late events update, and that days
 * closing now are put in; the caller stores the changed ones. Pure but for `closed`.
 */
export function applyEvents(issue: Issue | null, events: readonly { event: IssueEvent; now: number }[], closed?: ClosedDays): { issue: Issue; transitions: Transitioned[]; firstIn: Transitioned[] } {
  if (events.length === 0) {
    if (issue === null) throw new TypeError('applyEvents needs an issue or an event');
    return { issue, transitions: [], firstIn: [] };
  }
  const transitions: Transitioned[] = [];
  const firstIn: Transitioned[] = [];
  const environmentOf = (e: IssueEvent) => e.tags?.environment ?? null;
  let i = 0;
  let next: Issue;
  if (issue === null) {
    const first = events[0].event;
    next = created(first, new Date(events[0].now).toISOString());
    transitions.push({ transition: 'new', at: events[0].now, environment: environmentOf(first) });
    if (environmentOf(first) !== null) firstIn.push({ transition: 'new', at: events[0].now, environment: environmentOf(first) });
    i = 1;
  } else {
    // The working copy: every nested value that the steps below change is copied once here.
    next = {
      ...issue,
      versions: { ...issue.versions, seen: [...issue.versions.seen] },
      daily: issue.daily.map(([d, n]): [string, number] => [d, n]),
      recentEvents: [...(issue.recentEvents ?? [])],
      tags: copyTags(issue.tags),
      activity: copyActivity(issue.activity),
    };
  }
  for (; i < events.length; i++) {
    const { event, now } = events[i];
    const environment = environmentOf(event);
    const fresh = environment !== null && !hasTag(next.tags, 'environment', environment) && !next.tags?.environment?.other;
    if (step(next, event, now, closed)) transitions.push({ transition: 'regression', at: now, environment });
    // Counted now (step added it); a value past the tag's bound is never known, so never announced.
    if (fresh && hasTag(next.tags, 'environment', environment)) firstIn.push({ transition: 'new', at: now, environment });
  }
  return { issue: next, transitions, firstIn };
}

function created(event: IssueEvent, at: string): Issue {
  const tags: IssueTags = {};
  if (event.tags) addTags(tags, event.tags);
  const activity = emptyActivity();
  const session = event.sessionId ? hashId(event.sessionId) : null;
  const user = event.userId ? hashId(event.userId) : null;
  addActivity(activity, at.slice(0, 10), session, user, DAILY_DAYS);
  return {
    id: issueId(event.owner, event.project, event.fingerprint),
    fingerprint: event.fingerprint,
    owner: event.owner,
    project: event.project,
    title: event.title,
    culprit: event.culprit,
    message: event.message ?? null,
    status: 'unresolved',
    substatus: 'new',
    firstSeen: at,
    lastSeen: at,
    count: 1,
    sessions: session ? addHashed(emptySessions(), session) : emptySessions(),
    users: user ? addHashed(emptySessions(), user) : emptySessions(),
    tags,
    activity,
    versions: event.version ? { first: event.version, last: event.version, seen: [event.version], truncated: false } : { first: null, last: null, seen: [], truncated: false },
    daily: [[at.slice(0, 10), 1]],
    lastEventId: event.id,
    recentEvents: [[event.id, at]],
    statusChangedAt: null,
    resolvedAt: null,
    resolvedInVersion: null,
    regressedAt: null,
    regressions: 0,
  };
}

/** One event on the working copy (mutated); true when it regressed the issue. */
function step(next: Issue, event: IssueEvent, now: number, closed?: ClosedDays): boolean {
  const at = new Date(now).toISOString();
  const latest = at >= next.lastSeen;
  if (latest) {
    next.title = event.title;
    next.culprit = event.culprit ?? next.culprit;
    next.message = event.message ?? null;
    next.lastSeen = at;
    next.lastEventId = event.id;
  }
  if (at < next.firstSeen) next.firstSeen = at;
  next.count++;
  const session = event.sessionId ? hashId(event.sessionId) : null;
  const user = event.userId ? hashId(event.userId) : null;
  if (session) next.sessions = addHashed(next.sessions, session);
  next.users ??= emptySessions();
  if (user) next.users = addHashed(next.users, user);
  if (event.tags) addTags((next.tags ??= {}), event.tags);
  addActivity((next.activity ??= emptyActivity()), at.slice(0, 10), session, user, DAILY_DAYS, closed);
  if (event.version) addVersion(next.versions, event.version, latest);
  addDay(next.daily, at.slice(0, 10));
  addRecent(next.recentEvents, event.id, at);

  if (next.status === 'resolved' && regresses(next, event, now)) {
    next.status = 'unresolved';
    next.substatus = 'regressed';
    next.regressedAt = at;
    next.regressions++;
    next.resolvedAt = null;
    next.resolvedInVersion = null;
    return true;
  }
  if (next.status === 'unresolved' && next.substatus === 'new' && seenOnTwoDays(next)) next.substatus = 'ongoing';
  return false;
}

function regresses(issue: Issue, event: IssueEvent, now: number): boolean {
  if (issue.resolvedInVersion !== null) return event.version !== null && isLaterVersion(event.version, issue.resolvedInVersion);
  return issue.resolvedAt === null || now > Date.parse(issue.resolvedAt);
}

const seenOnTwoDays = (i: Issue) => i.firstSeen.slice(0, 10) !== i.lastSeen.slice(0, 10);

function addVersion(v: IssueVersions, version: string, latest: boolean): void {
  if (latest) v.last = version;
  if (v.seen.includes(version)) return;
  if (v.seen.length >= MAX_VERSIONS) {
    v.truncated = true;
    return;
  }
  v.first ??= version;
  v.seen.push(version);
}

/** Adds one event to its day, keeping the series sorted and at most DAILY_DAYS long. */
function addDay(daily: [string, number][], day: string): void {
  const last = daily.length - 1;
  if (last >= 0 && daily[last][0] === day) {
    daily[last][1]++;
    return;
  }
  const known = daily.find(([d]) => d === day);
  if (known) known[1]++;
  else {
    daily.push([day, 1]);
    daily.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    if (daily.length > DAILY_DAYS) daily.splice(0, daily.length - DAILY_DAYS);
  }
}

/** Keeps the RECENT_EVENTS latest events, newest first. */
function addRecent(recent: [string, string][], id: string, at: string): void {
  if (recent.length === 0 || at >= recent[0][1]) recent.unshift([id, at]);
  else {
    recent.push([id, at]);
    recent.sort((a, b) => (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0));
  }
  if (recent.length > RECENT_EVENTS) recent.length = RECENT_EVENTS;
}

/**
 * An issue as the API shows it: the sketches and hashes are internal, only the counts are shown;
 * tags by count, distinct sessions and users per day, the first and last release.
 */
export function publicIssue(issue: Issue) {
  const { sessions, users, tags, activity, positions: _positions, ...rest } = issue;
  const daily = publicActivity(activity);
  return {
    ...rest,
    message: issue.message ?? null,
    sessions: { count: sessions.count, exact: sessions.exact },
    users: { count: users?.count ?? 0, exact: users?.exact ?? true },
    dailySessions: daily.sessions,
    dailyUsers: daily.users,
    firstRelease: issue.versions.first,
    lastRelease: issue.versions.last,
    tags: publicTags(tags),
  };
}

export type StatusChange =
  | { status: 'resolved'; resolvedInVersion?: string | null }
  | { status: 'unresolved' }
  | { status: 'ignored' };

/**
 * Sets the status by hand at `now` (ms). Resolving records when (and optionally in which version);
 * reopening makes the issue `ongoing` when it was seen on two days, else `new`. Pure.
 */
export function setStatus(issue: Issue, change: StatusChange, now: number): Issue {
  const at = new Date(now).toISOString();
  const base = { ...issue, statusChangedAt: at, resolvedAt: null, resolvedInVersion: null };
  switch (change.status) {
    case 'resolved':
      return { ...base, status: 'resolved', substatus: null, resolvedAt: at, resolvedInVersion: change.resolvedInVersion ?? null };
    case 'ignored':
      return { ...base, status: 'ignored', substatus: null };
    case 'unresolved':
      return { ...base, status: 'unresolved', substatus: seenOnTwoDays(issue) ? 'ongoing' : 'new' };
  }
}

/** Reads a status change from a request body (PATCH /api/issues/:id); `400 invalid_body` naming the problem otherwise. */
export function parseStatusChange(body: unknown): StatusChange {
  const invalid = (why: string) => new HttpError(400, 'invalid_body', `Invalid status change: ${why}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('the body must be an object');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (key !== 'status' && key !== 'resolvedInVersion') throw invalid(`unknown field "${key}"`);
  }
  if (b.status !== 'resolved' && b.status !== 'unresolved' && b.status !== 'ignored') {
    throw invalid('"status" must be "unresolved", "resolved" or "ignored"');
  }
  const v = b.resolvedInVersion;
  if (v === undefined || v === null) return { status: b.status };
  if (b.status !== 'resolved') throw invalid('"resolvedInVersion" applies only to status "resolved"');
  if (typeof v !== 'string' || v.trim() === '' || v.length > 64) throw invalid('"resolvedInVersion" must be a version of 1–64 characters');
  return { status: 'resolved', resolvedInVersion: v.trim() };
}
