// /api/projects: the projects a signed-in user made or that are shared with them, each with their
// role (docs/api.md#projects, #teams). A project they have no role on answers 404, exactly as one
// that does not exist. The project's records stay under its creator, whose events they are.
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
  return json({ projects: (await ctx.teams.projectsOf(userId)).map((a) => ({ ...a.project, role: a.role })) });
}

export async function createProject(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  return json({ ...(await ctx.projects.create(userId, await input(request))), role: 'owner' }, 201);
}

export async function getProject(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'read');
  return json({ ...access.project, role: access.role });
}

export async function updateProject(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  const project = await ctx.projects.update(access.owner, access.project.id, await input(request));
  await ctx.teams.audit.add(project.id, userId, 'project.updated');
  return json({ ...project, role: access.role });
}

export async function rotateProjectKey(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  const project = await ctx.projects.rotateKey(access.owner, access.project.id);
  await ctx.teams.audit.add(project.id, userId, 'key.rotated');
  return json({ ...project, role: access.role });
}

export async function deleteProject(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const { owner, project } = await ctx.teams.access(userId, request.params.id, 'own');
  await ctx.projects.remove(owner, project.id);
  // Its source maps go too: no route reaches them once the project is gone, and a project made
  // afterwards starts with an empty quota, so kept they would be space no quota bounds.
  await ctx.monitor.sourceMaps.removeProject(owner, project.id);
  await ctx.teams.forget(project.id);
  return json({ id: project.id, deleted: true });
}
