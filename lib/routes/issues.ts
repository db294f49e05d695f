// GET /api/issues, GET /api/issues/:id, GET /api/issues/:id/events, PATCH /api/issues/:id (docs/api.md#issues).
import { parseJson, readBody } from '../body.ts';
import type { StoredEvent } from '../event.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { eventFrames } from '../issues/fingerprint.ts';
import { issueEventsBelow, newerPosition, positionOf } from '../issues/issue-events.ts';
import { symbolicate } from '../issues/sourcemap.ts';
import { byStatus, parseIssueQuery, selects, sortIssues } from '../issues/search.ts';
import { type Issue, parseStatusChange, publicIssue, RECENT_EVENTS, setStatus } from '../issues/state.ts';
import { decodeCursor, encodeCursor } from '../store/cursor.ts';
import { InvalidCursorError } from '../store/types.ts';
import type { Action } from '../teams/access.ts';
import { readScope, requireUser, type Context, type RouteRequest } from '../context.ts';

export async function listIssues(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const q = parseIssueQuery(new URL(request.url).searchParams);
  // A project the user has a role on: its issues, which are its events' owner's. Any other
  // `project` filters the user's own issues (and so answers as a project with no issues would).
  const shared = q.project !== undefined && /^\d{1,20}$/.test(q.project) ? await ctx.teams.roleOf(userId, q.project) : null;
  const owner = shared?.owner ?? userId;
  // Everything but the status: the counts per status are of this selection.
  const selected = (await ctx.monitor.issues.listIssues(owner, ctx.now())).filter((i) => selects(q, i));
  const counts = { unresolved: 0, resolved: 0, ignored: 0, new: 0, ongoing: 0, regressed: 0 };
  for (const i of selected) {
    counts[i.status]++;
    if (i.substatus) counts[i.substatus]++;
  }
  const issues = sortIssues(selected.filter((i) => byStatus(i, q.status)), q.sort);
  return json({ issues: issues.slice(0, q.limit).map(publicIssue), counts, total: issues.length });
}

/**
 * The issue asked for and whose it is: the user's own, or with `?project=<id>` one of a project the
 * user may do `action` on (its events' owner's, in that project); anything else 404.
 */
export async function ownIssue(request: RouteRequest, ctx: Context, action: Action): Promise<{ userId: string; owner: string; issue: Issue }> {
  const userId = await requireUser(ctx, request);
  const id = request.params.id;
  const params = new URL(request.url).searchParams;
  const { owner, projectId } = await readScope(ctx, userId, params, action);
  const found = /^[0-9a-f]{16}$/.test(id) ? await ctx.monitor.issues.getIssue(owner, id) : null;
  const issue = found && (projectId === undefined || found.project === projectId) ? found : null;
  if (!issue) throw new HttpError(404, 'not_found', `No issue ${id}`);
  return { userId, owner, issue };
}

/** A `before` query parameter as a position; 400 invalid_cursor for one no store wrote. */
export function beforeParam(params: URLSearchParams): number | undefined {
  const text = params.get('before');
  if (text === null) return undefined;
  try {
    return decodeCursor(text);
  } catch (e) {
    if (e instanceof InvalidCursorError) throw new HttpError(400, 'invalid_cursor', e.message);
    throw e;
  }
}

/**
 * The issue, one of its events with its frames symbolicated by the maps uploaded now, its recent
 * events and status history. The event shown: the latest; `?event=<id>`, one of the recent events
 * (another is a 404); or `?before=<cursor>`, the newest of all its stored events before that
 * position, with the cursors that show the older and the newer one (olderCursor, newerCursor).
 */
export async function getIssue(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { owner, issue } = await ownIssue(request, ctx, 'read');
  const params = new URL(request.url).searchParams;
  const wanted = params.get('event');
  if (wanted !== null && (wanted === '' || wanted.length > 128)) throw new HttpError(400, 'invalid_query', 'Query parameter "event" must be an event id of this issue');
  const before = beforeParam(params);
  if (wanted !== null && before !== undefined) throw new HttpError(400, 'invalid_query', 'Query parameters "event" and "before" cannot be used together');
  const events = await recentEvents(ctx, owner, issue);
  let shown: StoredEvent | null;
  let seq: number | null = null;
  if (before !== undefined) {
    const found = (await issueEventsBelow(ctx.store, ctx.records, owner, issue, before, 1)).events[0];
    if (!found) throw new HttpError(404, 'not_found', `No event of issue ${issue.id} is stored before that cursor`);
    [shown, seq] = [found.event, found.seq];
  } else {
    shown = wanted !== null
      ? events.find((e) => e.id === wanted) ?? null
      : events.find((e) => e.id === issue.lastEventId) ?? events[0] ?? null;
    if (wanted !== null && shown === null) throw new HttpError(404, 'not_found', `No event ${wanted} among the recent events of issue ${issue.id}`);
    if (shown) seq = await positionOf(ctx.store, ctx.records, owner, issue, shown.id, 2 * RECENT_EVENTS);
  }
  const reported = shown ? eventFrames(shown) : [];
  const frames = shown
    ? await symbolicate(reported, shown.deployVersion, ctx.monitor.sourceMaps.lookup(owner, shown.projectId ?? null), { cache: ctx.monitor.processor.cache })
    : [];
  // Events are newest first: the next (newer) one is before it in the list, the previous (older) after.
  const at = shown ? events.findIndex((e) => e.id === shown.id) : -1;
  const older = seq === null ? null : (await issueEventsBelow(ctx.store, ctx.records, owner, issue, seq, 1)).events[0] ?? null;
  const newer = seq === null ? null : await newerPosition(ctx.store, ctx.records, owner, issue, seq);
  const history = issue.project === null ? [] : (await ctx.teams.audit.list(issue.project, issue.id)).filter((e) => e.action === 'issue.status_changed');
  return json({
    issue: publicIssue(issue),
    latestEvent: shown,
    previousEventId: at >= 0 && at + 1 < events.length ? events[at + 1].id : null,
    nextEventId: at > 0 ? events[at - 1].id : null,
    // A cursor shows the newest event below it: the older one is below the shown one's position.
    olderCursor: older ? encodeCursor(seq!) : null,
    newerCursor: newer === null ? null : encodeCursor(newer + 1),
    frames,
    events,
    history,
  });
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
