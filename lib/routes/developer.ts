// Developer endpoints (README, "API"): signed-in only, scoped to the user like every other read.
import { parseJson, readBody } from '../body.ts';
import { json, type JsonReply } from '../http.ts';
import { computeInsights } from '../insights.ts';
import { evaluateQuery, parseDeveloperQuery, SCAN_LIMIT } from '../query.ts';
import { requireIdentity, requireUser, type Context } from '../context.ts';
import { sseResponse, streamParty } from './stream.ts';

/** Insights cover this many of the user's most recent events (route latencies cover all of them). */
export const INSIGHTS_WINDOW = 10_000;

export async function developerStream(request: Request, ctx: Context): Promise<Response> {
  const { userId, expiresAt } = await requireIdentity(ctx, request);
  const last = request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('lastEventId');
  const lastEventId = last !== null && /^\d{1,20}$/.test(last) ? Number(last) : undefined;
  return sseResponse(ctx, { userId, ids: true, lastEventId, closeAt: expiresAt, party: streamParty(userId, '') });
}

export async function insights(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return ctx.queries.run(userId, async () => {
    const [recent, stats] = await Promise.all([
      ctx.store.list({ userId, limit: INSIGHTS_WINDOW }),
      ctx.store.stats(userId, ctx.now()),
    ]);
    return json(computeInsights(recent.events, stats));
  });
}

export async function query(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  // At most a few at once per user: each holds up to SCAN_LIMIT events while it runs.
  return ctx.queries.run(userId, () => runQuery(request, ctx, userId));
}

async function runQuery(request: Request, ctx: Context, userId: string): Promise<JsonReply> {
  const q = parseDeveloperQuery(parseJson(await readBody(request, 64 * 1024)));
  // The store applies type, version and the time window, so the scan cap counts only events that
  // can match (a month back is reachable however much came since). The filter's `until` includes
  // its instant; the store's excludes it. evaluateQuery applies the rest, and these again.
  const { type, version, since, until } = q.filter;
  const page = await ctx.store.list({
    userId, type, version, limit: SCAN_LIMIT,
    since: since === undefined ? undefined : Date.parse(since),
    until: until === undefined ? undefined : Date.parse(until) + 1,
  });
  return json({ rows: evaluateQuery(page.events, q), scanned: page.events.length, truncated: page.nextCursor !== null });
}
