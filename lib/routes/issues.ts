// GET /api/issues, GET /api/issues/:id, PATCH /api/issues/:id (docs/api.md#issues).
import { parseJson, readBody } from '../body.ts';
import type { StoredEvent } from '../event.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { eventFrames } from '../issues/fingerprint.ts';
import { symbolicate } from '../issues/sourcemap.ts';
import { type Issue, parseStatusChange, publicIssue, setStatus } from '../issues/state.ts';
import { parseIsoTime } from '../schema.ts';
import type { Action } from '../teams/access.ts';
import { readScope, requireUser, type Context, type RouteRequest } from '../context.ts';

const STATUSES = ['unresolved', 'resolved', 'ignored', 'new', 'ongoing', 'regressed'] as const;
const SORTS = ['last', 'count', 'first'] as const;
export const ISSUES_LIMIT = 100;
export const MAX_ISSUES_LIMIT = 1000;

interface IssueQuery {
  status?: (typeof STATUSES)[number];
  version?: string;
  project?: string;
  from?: number;
  to?: number;
  sort: (typeof SORTS)[number];
  limit: number;
}

function parseIssueQuery(params: URLSearchParams): IssueQuery {
  const bad = (name: string, why: string) => new HttpError(400, 'invalid_query', `Query parameter "${name}" ${why}`);
  for (const key of params.keys()) {
    if (!['status', 'version', 'project', 'from', 'to', 'sort', 'limit'].includes(key)) throw bad(key, 'is not known (status, version, project, from, to, sort, limit)');
  }
  const q: IssueQuery = { sort: 'last', limit: ISSUES_LIMIT };
  const status = params.get('status');
  if (status !== null && status !== '') {
    if (!(STATUSES as readonly string[]).includes(status)) throw bad('status', `must be one of ${STATUSES.join(', ')}`);
    q.status = status as IssueQuery['status'];
  }
  const sort = params.get('sort');
  if (sort !== null && sort !== '') {
    if (!(SORTS as readonly string[]).includes(sort)) throw bad('sort', 'must be last, count or first');
    q.sort = sort as IssueQuery['sort'];
  }
  for (const name of ['version', 'project'] as const) {
    const v = params.get(name);
    if (v !== null && v !== '') {
      if (v.length > 200) throw bad(name, 'is too long');
      q[name] = v;
    }
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

const byStatus = (issue: Issue, status: IssueQuery['status']) =>
  status === undefined || issue.status === status || issue.substatus === status;

export async function listIssues(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const q = parseIssueQuery(new URL(request.url).searchParams);
  // A project the user has a role on: its issues, which are its events' owner's. Any other
  // `project` filters the user's own issues (and so answers as a project with no issues would).
  const shared = q.project !== undefined && /^\d{1,20}$/.test(q.project) ? await ctx.teams.roleOf(userId, q.project) : null;
  const owner = shared?.owner ?? userId;
  const from = q.from === undefined ? null : new Date(q.from).toISOString();
  const to = q.to === undefined ? null : new Date(q.to).toISOString();
  // Everything but the status: the counts per status are of this selection.
  const selected = (await ctx.monitor.issues.listIssues(owner, ctx.now())).filter((i) =>
    (q.project === undefined || i.project === q.project) &&
    (q.version === undefined || i.versions.seen.includes(q.version)) &&
    (from === null || i.lastSeen >= from) &&
    (to === null || i.firstSeen < to));
  const counts = { unresolved: 0, resolved: 0, ignored: 0, new: 0, ongoing: 0, regressed: 0 };
  for (const i of selected) {
    counts[i.status]++;
    if (i.substatus) counts[i.substatus]++;
  }
  const issues = selected.filter((i) => byStatus(i, q.status));
  if (q.sort === 'count') issues.sort((a, b) => b.count - a.count || (a.lastSeen < b.lastSeen ? 1 : -1));
  if (q.sort === 'first') issues.sort((a, b) => (a.firstSeen < b.firstSeen ? 1 : a.firstSeen > b.firstSeen ? -1 : 0));
  return json({ issues: issues.slice(0, q.limit).map(publicIssue), counts, total: issues.length });
}

/**
 * The issue asked for and whose it is: the user's own, or with `?project=<id>` one of a project the
 * user may do `action` on (its events' owner's, in that project); anything else 404.
 */
async function ownIssue(request: RouteRequest, ctx: Context, action: Action): Promise<{ userId: string; owner: string; issue: Issue }> {
  const userId = await requireUser(ctx, request);
  const id = request.params.id;
  const params = new URL(request.url).searchParams;
  const { owner, projectId } = await readScope(ctx, userId, params, action);
  const found = /^[0-9a-f]{16}$/.test(id) ? await ctx.monitor.issues.getIssue(owner, id) : null;
  const issue = found && (projectId === undefined || found.project === projectId) ? found : null;
  if (!issue) throw new HttpError(404, 'not_found', `No issue ${id}`);
  return { userId, owner, issue };
}

/** The issue, its latest event with its frames symbolicated by the maps uploaded now, its recent events and status history. */
export async function getIssue(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { owner, issue } = await ownIssue(request, ctx, 'read');
  const events = await recentEvents(ctx, owner, issue);
  const latest = events.find((e) => e.id === issue.lastEventId) ?? events[0] ?? null;
  const reported = latest ? eventFrames(latest) : [];
  const frames = latest
    ? await symbolicate(reported, latest.deployVersion, ctx.monitor.sourceMaps.lookup(owner, latest.projectId ?? null), { cache: ctx.monitor.processor.cache })
    : [];
  const history = issue.project === null ? [] : (await ctx.teams.audit.list(issue.project, issue.id)).filter((e) => e.action === 'issue.status_changed');
  return json({ issue: publicIssue(issue), latestEvent: latest, frames, events, history });
}

export async function patchIssue(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { userId, owner, issue: found } = await ownIssue(request, ctx, 'triage');
  const change = parseStatusChange(parseJson(await readBody(request, 16 * 1024)));
  // Between two processed events, from a fresh read: an event arriving meanwhile is not lost.
  const [before, updated] = await ctx.monitor.processor.exclusive(async () => {
    const current = (await ctx.monitor.issues.getIssue(owner, found.id)) ?? found;
    const next = setStatus(current, change, ctx.now());
    await ctx.monitor.issues.putIssue(next);
    return [current, next] as const;
  });
  if (updated.project !== null && before.status !== updated.status) {
    await ctx.teams.audit.add(updated.project, userId, 'issue.status_changed', { target: updated.id, from: before.status, to: updated.status });
  }
  return json({ issue: publicIssue(updated) });
}

/** The issue's recent events still in the event store, newest first (each found by its receive time). */
async function recentEvents(ctx: Context, userId: string, issue: Issue): Promise<StoredEvent[]> {
  const wanted = issue.recentEvents ?? [[issue.lastEventId, issue.lastSeen]];
  const times = [...new Set(wanted.map(([, at]) => at))];
  const pages = await Promise.all(times.map((at) => {
    const t = Date.parse(at);
    return ctx.store.list({ userId, type: 'error', since: t, until: t + 1, limit: 1000 });
  }));
  const byId = new Map<string, StoredEvent>();
  for (const page of pages) for (const e of page.events) byId.set(e.id, e);
  return wanted.map(([id]) => byId.get(id)).filter((e): e is StoredEvent => e !== undefined);
}
