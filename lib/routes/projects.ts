// /api/projects: a signed-in user's projects (docs/api.md#projects). Another user's project answers
// 404, exactly as one that does not exist.
import { parseJson, readBody } from '../body.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { isPlainObject } from '../event.ts';
import type { ProjectInput } from '../projects.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

async function input(request: Request): Promise<ProjectInput> {
  const body = parseJson(await readBody(request, 16 * 1024));
  if (!isPlainObject(body)) throw new HttpError(400, 'invalid_body', 'Body must be a JSON object');
  return body;
}

export async function listProjects(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json({ projects: await ctx.projects.list(userId) });
}

export async function createProject(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json(await ctx.projects.create(userId, await input(request)), 201);
}

export async function getProject(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json(await ctx.projects.get(userId, request.params.id));
}

export async function updateProject(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json(await ctx.projects.update(userId, request.params.id, await input(request)));
}

export async function rotateProjectKey(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json(await ctx.projects.rotateKey(userId, request.params.id));
}

export async function deleteProject(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  await ctx.projects.remove(userId, request.params.id);
  // Its source maps go too: no route reaches them once the project is gone, and a project made
  // afterwards starts with an empty quota, so kept they would be space no quota bounds.
  await ctx.monitor.sourceMaps.removeProject(userId, request.params.id);
  return json({ id: request.params.id, deleted: true });
}
