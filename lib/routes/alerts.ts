// POST/GET /api/alerts, PATCH/DELETE /api/alerts/:id, POST /api/alerts/:id/test (docs/api.md#alerts).
import { parseJson, readBody } from '../body.ts';
import { json, type JsonReply } from '../http.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

const body = async (request: Request) => parseJson(await readBody(request, 16 * 1024));

export async function listAlerts(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json({ alerts: await ctx.monitor.alerts.list(userId), email: { enabled: ctx.monitor.alerts.emailEnabled } });
}

export async function createAlert(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json({ alert: await ctx.monitor.alerts.create(userId, await body(request)) }, 201);
}

export async function updateAlert(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json({ alert: await ctx.monitor.alerts.update(userId, request.params.id, await body(request)) });
}

export async function deleteAlert(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  await ctx.monitor.alerts.remove(userId, request.params.id);
  return json({ deleted: request.params.id });
}

export async function testAlert(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json(await ctx.monitor.alerts.test(userId, request.params.id), 202);
}
