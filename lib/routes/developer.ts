// Developer endpoints (README, "API"): signed-in only, scoped to the user like every other read.
import { parseJson, readBody } from '../body.ts';
import { json, type JsonReply } from '../http.ts';
import { computeInsights } from '../insights.ts';
import { evaluateQuery, parseDeveloperQuery, SCAN_LIMIT } from '../query.ts';
import { readScope, requireIdentity, requireUser, type Context } from '../context.ts';
import { projectStream, sseResponse, streamParty } from './stream.ts';

/** Insights cover this many of the user's most recent events (route latencies cover all of them). */
export const INSIGHTS_WINDOW = 10_000;

export async function developerStream(request: Request, ctx: Context): Promise<Response> {
  const { userId, expiresAt } = await requireIdentity(ctx, request);
  const last = request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('lastEventId');
  const lastEventId = last !== null && /^\d{1,20}$/.test(last) ? Number(last) : undefined;
  const { owner, projectId } = await readScope(ctx, userId, new URL(request.url).searchParams);
  const shared = projectId === undefined ? {} : projectStream(ctx, userId, projectId);
  return sseResponse(ctx, { userId: owner, ids: true, lastEventId, closeAt: expiresAt, party: streamParty(userId, ''), ...shared });
}

export async function insights(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const { owner, projectId } = await readScope(ctx, userId, new URL(request.url).searchParams);
  return ctx.queries.run(userId, async () => {
    const [recent, stats] = await Promise.all([
      ctx.store.list({ userId: owner, limit: INSIGHTS_WINDOW, ...(projectId ? { projectId } : {}) }),
      ctx.store.stats(owner, ctx.now(), undefined, projectId),
    ]);
    return json(computeInsights(recent.events, stats));
  });
}

export async function query(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const { owner, projectId } = await readScope(ctx, userId, new URL(request.url).searchParams);
  // At most a few at once per user: each holds up to SCAN_LIMIT events while it runs.
  return ctx.queries.run(userId, () => runQuery(request, ctx, owner, projectId));
}

async function runQuery(request: Request, ctx: Context, userId: string, projectId: string | undefined): Promise<JsonReply> {
  const q = parseDeveloperQuery(parseJson(await readBody(request, 64 * 1024)));
  // The store applies type, version and the time window, so the scan cap counts only events that
  // can match (a month back is reachable however much came since). The filter's `until` includes
  // its instant; the store's excludes it. evaluateQuery applies the rest, and these again.
  const { type, version, since, until } = q.filter;
  const page = await ctx.store.list({
    userId, type, version, limit: SCAN_LIMIT, ...(projectId ? { projectId } : {}),
    since: since === undefined ? undefined : Date.parse(since),
    until: until === undefined ? undefined : Date.parse(until) + 1,
  });
  return json({ rows: evaluateQuery(page.events, q), scanned: page.events.length, truncated: page.nextCursor !== null });
}
