// Funnels (docs/api.md#funnels): a query over a project's events, and the project's saved funnels.
// Reading either takes any role on the project; saving and deleting, member and up
// (lib/teams/access.ts).
import { parseJson, readBody } from '../body.ts';
import { funnelAnswer } from '../funnels/answer.ts';
import { parseFunnelQuery } from '../funnels/query.ts';
import { savedFunnels } from '../funnels/saved.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

const BODY_LIMIT = 16 * 1024;
/** Reading time one funnel query may take (docs/api.md#funnels). */
export const FUNNEL_BUDGET_MS = 5_000;

export async function queryFunnel(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const { project, query } = parseFunnelQuery(parseJson(await readBody(request, BODY_LIMIT)), ctx.now());
  const access = await ctx.teams.access(userId, project, 'read');
  // A funnel reads a range of events: at most a few at once per user, as developer queries, and
  // each within a time budget (FunnelQuery.budgetMs).
  const counts = await ctx.queries.run(userId, () => ctx.store.funnel({ ...query, userId: access.owner, budgetMs: FUNNEL_BUDGET_MS })).catch((err: unknown) => {
    if (err instanceof Error && err.name === 'FunnelTooLargeError') {
      throw new HttpError(422, 'funnel_too_large', `This funnel reads more events than one request may (${FUNNEL_BUDGET_MS / 1000} s of reading); narrow its range`);
    }
    throw err;
  });
  return json(funnelAnswer(query.steps, counts));
}

const saved = (ctx: Context) => savedFunnels(ctx.records, ctx.teams, ctx.now);

export async function listFunnels(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'read');
  return json({ funnels: await saved(ctx).list(access.project.id) });
}

export async function createFunnel(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'analyse');
  const body = parseJson(await readBody(request, BODY_LIMIT));
  return json({ funnel: await saved(ctx).create(access, body) }, 201);
}

export async function deleteFunnel(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'analyse');
  return json({ funnel: await saved(ctx).remove(access, request.params.funnelId) });
}
