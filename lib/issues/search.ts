// GET /api/issues query parameters, and the selection and order they ask for. Pure: the route reads
// the owner's issues and hands them here (docs/api.md#issues).
import { HttpError } from '../http.ts';
import { parseIsoTime } from '../schema.ts';
import type { Issue } from './state.ts';
import { hasTag } from './tags.ts';

const STATUSES = ['unresolved', 'resolved', 'ignored', 'new', 'ongoing', 'regressed'] as const;
/** Sort keys; `count` is `events` by its earlier name. */
const SORTS = ['last', 'first', 'events', 'count', 'sessions', 'users'] as const;
const PARAMS = ['status', 'version', 'release', 'environment', 'browser', 'query', 'project', 'from', 'to', 'sort', 'limit'];
export const ISSUES_LIMIT = 100;
export const MAX_ISSUES_LIMIT = 1000;
/** Longest search text: longer says nothing more and costs a scan of every issue's text. */
export const MAX_SEARCH = 200;

export interface IssueQuery {
  status?: (typeof STATUSES)[number];
  version?: string;
  release?: string;
  environment?: string;
  browser?: string;
  /** Lower-cased search text. */
  query?: string;
  project?: string;
  from?: number;
  to?: number;
  sort: 'last' | 'first' | 'events' | 'sessions' | 'users';
  limit: number;
}

export function parseIssueQuery(params: URLSearchParams): IssueQuery {
  const bad = (name: string, why: string) => new HttpError(400, 'invalid_query', `Query parameter "${name}" ${why}`);
  for (const key of params.keys()) {
    if (!PARAMS.includes(key)) throw bad(key, `is not known (${PARAMS.join(', ')})`);
  }
  const q: IssueQuery = { sort: 'last', limit: ISSUES_LIMIT };
  const status = params.get('status');
  if (status !== null && status !== '') {
    if (!(STATUSES as readonly string[]).includes(status)) throw bad('status', `must be one of ${STATUSES.join(', ')}`);
    q.status = status as IssueQuery['status'];
  }
  const sort = params.get('sort');
  if (sort !== null && sort !== '') {
    if (!(SORTS as readonly string[]).includes(sort)) throw bad('sort', 'must be last, first, events, sessions or users');
    q.sort = sort === 'count' ? 'events' : (sort as IssueQuery['sort']);
  }
  for (const name of ['version', 'release', 'environment', 'browser', 'project'] as const) {
    const v = params.get(name);
    if (v !== null && v !== '') {
      if (v.length > 200) throw bad(name, 'is too long');
      q[name] = v;
    }
  }
  const text = params.get('query');
  if (text !== null && text.trim() !== '') {
    if (text.length > MAX_SEARCH) throw bad('query', `must be at most ${MAX_SEARCH} characters`);
    q.query = text.trim().toLowerCase();
  }
  for (const name of ['from', 'to'] as const) {
    const v = params.get(name);
    if (v === null || v === '') continue;
    const t = parseIsoTime(v);
    if (t === null) throw bad(name, 'must be an ISO 8601 date or date-time (2026-05-16 or 2026-05-16T12:00:00Z)');
    q[name] = t;
  }
  const limit = params.get('limit');
  if (limit !== null && limit !== '') {
    if (!/^\d{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_ISSUES_LIMIT) throw bad('limit', `must be an integer from 1 to ${MAX_ISSUES_LIMIT}`);
    q.limit = Number(limit);
  }
  return q;
}

const contains = (text: string | null | undefined, needle: string) => typeof text === 'string' && text.toLowerCase().includes(needle);

/**
 * Whether an issue is selected by everything but the status (the counts per status are of this
 * selection). A release matches the versions the issue keeps (versions.seen) or its release tag;
 * an environment or browser, the values its tags count (tags.ts: the TAG_VALUES each keeps).
 */
export function selects(q: IssueQuery, i: Issue): boolean {
  const from = q.from === undefined ? null : new Date(q.from).toISOString();
  const to = q.to === undefined ? null : new Date(q.to).toISOString();
  return (q.project === undefined || i.project === q.project) &&
    (q.version === undefined || i.versions.seen.includes(q.version)) &&
    (q.release === undefined || i.versions.seen.includes(q.release) || hasTag(i.tags, 'release', q.release)) &&
    (q.environment === undefined || hasTag(i.tags, 'environment', q.environment)) &&
    (q.browser === undefined || hasTag(i.tags, 'browser', q.browser)) &&
    (q.query === undefined || contains(i.title, q.query) || contains(i.culprit, q.query) || contains(i.message, q.query)) &&
    (from === null || i.lastSeen >= from) &&
    (to === null || i.firstSeen < to);
}

export const byStatus = (issue: Issue, status: IssueQuery['status']) =>
  status === undefined || issue.status === status || issue.substatus === status;

const newer = (a: string, b: string) => (a < b ? 1 : a > b ? -1 : 0);

/** Sorts (in place) by the query's key, most first; ties by last seen, newest first. */
export function sortIssues(issues: Issue[], sort: IssueQuery['sort']): Issue[] {
  const key: Record<IssueQuery['sort'], ((i: Issue) => number) | null> = {
    last: null,
    first: null,
    events: (i) => i.count,
    sessions: (i) => i.sessions.count,
    users: (i) => i.users?.count ?? 0,
  };
  const by = key[sort];
  if (sort === 'first') return issues.sort((a, b) => newer(a.firstSeen, b.firstSeen) || newer(a.lastSeen, b.lastSeen));
  if (by === null) return issues.sort((a, b) => newer(a.lastSeen, b.lastSeen));
  return issues.sort((a, b) => by(b) - by(a) || newer(a.lastSeen, b.lastSeen));
}
