// POST/GET /api/alerts, PATCH/DELETE /api/alerts/:id, POST /api/alerts/:id/test (docs/api.md#alerts).
// Rules on a shared project (members and up, `?project=<id>`) are kept under the project's events'
// owner, so they are evaluated against the project's events like the owner's own rules. A member
// changes the rules they made; an admin or the owner, any rule of the project.
import { parseJson, readBody } from '../body.ts';
import { isPlainObject } from '../event.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { atLeast } from '../teams/access.ts';
import { readScope, requireUser, type Context, type ReadScope, type RouteRequest } from '../context.ts';

const body = async (request: Request) => parseJson(await readBody(request, 16 * 1024));

/** Whose rules a request works on, and the one project it is held to (with `?project=<id>`). */
async function scope(request: Request, ctx: Context): Promise<ReadScope> {
  const userId = await requireUser(ctx, request);
  return readScope(ctx, userId, new URL(request.url).searchParams, 'alerts');
}

/**
 * The rule's id, when the scope may change it: any of the owner's own rules; on a project, one of
 * the project's rules, made by the asker unless they are an admin or the owner (else 403).
 */
async function ruleIn(ctx: Context, where: ReadScope, id: string): Promise<string> {
  if (where.projectId !== undefined) {
    const rule = (await ctx.monitor.alerts.list(where.owner)).find((r) => r.id === id && r.project === where.projectId);
    if (!rule) throw new HttpError(404, 'not_found', `No alert rule ${id}`);
    const access = where.access!;
    const madeBy = rule.createdBy ?? where.owner;
    if (!atLeast(access.role, 'admin') && madeBy !== access.userId) throw new HttpError(403, 'forbidden', 'A member changes only the alert rules they made; admins change any');
  }
  return id;
}

export async function listAlerts(request: Request, ctx: Context): Promise<JsonReply> {
  const where = await scope(request, ctx);
  const rules = await ctx.monitor.alerts.list(where.owner);
  return json({ alerts: rules.filter((r) => where.projectId === undefined || r.project === where.projectId), email: { enabled: ctx.monitor.alerts.emailEnabled } });
}

export async function createAlert(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const input = await body(request);
  // A rule on a project shared with the user is the project's; on anything else, the user's own
  // (where a project that is not theirs is refused as ever).
  const project = isPlainObject(input) && typeof input.project === 'string' && /^\d{1,20}$/.test(input.project) ? input.project : null;
  const shared = project === null ? null : await ctx.teams.roleOf(userId, project);
  const owner = shared ? (await ctx.teams.access(userId, project!, 'alerts')).owner : userId;
  return json({ alert: await ctx.monitor.alerts.create(owner, input, userId) }, 201);
}

export async function updateAlert(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const where = await scope(request, ctx);
  const id = await ruleIn(ctx, where, request.params.id);
  const input = await body(request);
  if (where.projectId !== undefined && isPlainObject(input) && input.project !== undefined && input.project !== where.projectId) {
    throw new HttpError(400, 'invalid_body', `Invalid alert rule: "project" must stay ${where.projectId}`);
  }
  return json({ alert: await ctx.monitor.alerts.update(where.owner, id, input) });
}

export async function deleteAlert(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const where = await scope(request, ctx);
  const id = await ruleIn(ctx, where, request.params.id);
  await ctx.monitor.alerts.remove(where.owner, id);
  return json({ deleted: id });
}

export async function testAlert(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const where = await scope(request, ctx);
  const id = await ruleIn(ctx, where, request.params.id);
  return json(await ctx.monitor.alerts.test(where.owner, id), 202);
}
