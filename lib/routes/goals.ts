// A project's goals (docs/api.md#goals): any member reads them; members and up keep them.
import { parseJson, readBody } from '../body.ts';
import { json, type JsonReply } from '../http.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

export async function listGoals(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'read');
  return json({ goals: await ctx.goals.list(access.project.id) });
}

export async function createGoal(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'analyse');
  const bytes = await readBody(request, 4 * 1024);
  return json({ goal: await ctx.goals.create(access, parseJson(bytes)) }, 201);
}

export async function deleteGoal(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'analyse');
  return json({ goal: await ctx.goals.remove(access, request.params.goalId), deleted: true });
}
