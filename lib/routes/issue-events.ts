// GET /api/issues/:id/events (docs/api.md#issues): every stored event of an issue, newest first,
// a page at a time, continued with `before` like GET /api/events. Read like the issue itself.
import { HttpError, json, type JsonReply } from '../http.ts';
import { issueEventsBelow } from '../issues/issue-events.ts';
import { encodeCursor } from '../store/cursor.ts';
import type { Context, RouteRequest } from '../context.ts';
import { beforeParam, ownIssue } from './issues.ts';

/** Events per page unless `limit` says otherwise, and the most a page holds (each is one store read). */
export const ISSUE_EVENTS_LIMIT = 20;
export const ISSUE_EVENTS_MAX = 100;

export async function listIssueEvents(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { owner, issue } = await ownIssue(request, ctx, 'read');
  const params = new URL(request.url).searchParams;
  const text = params.get('limit');
  const limit = text === null ? ISSUE_EVENTS_LIMIT : Number(text);
  if (!/^\d{1,3}$/.test(text ?? '1') || limit < 1 || limit > ISSUE_EVENTS_MAX) {
    throw new HttpError(400, 'invalid_query', `Query parameter "limit" must be an integer from 1 to ${ISSUE_EVENTS_MAX}`);
  }
  const { events, more } = await issueEventsBelow(ctx.store, ctx.records, owner, issue, beforeParam(params), limit);
  return json({ events: events.map((p) => p.event), nextCursor: more ? encodeCursor(events[events.length - 1].seq) : null });
}
