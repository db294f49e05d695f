// /api/projects/:id/members and /api/projects/:id/audit (docs/api.md#teams). Who may do what is
// decided by lib/teams/access.ts; these routes only ask it.
import { parseJson, readBody } from '../body.ts';
import { isPlainObject } from '../event.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { isRole } from '../teams/access.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

/** The member named in the path; a malformed escape is a 400, not a failure of the service. */
function target(request: RouteRequest): string {
  try {
    return decodeURIComponent(request.params.userId);
  } catch {
    throw new HttpError(400, 'invalid_path', 'The member id in the path is not a valid URL escape');
  }
}

export async function listMembers(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'read');
  const members = await ctx.teams.members(access.project.id);
  // Names and addresses as the users' own sign-ins last synced them (POST /api/users/sync).
  const users = await Promise.all(members.map((m) => ctx.store.getUser(m.userId).catch(() => null)));
  return json({
    role: access.role,
    members: members.map((m, i) => ({
      userId: m.userId,
      ...(users[i]?.email ? { email: users[i]!.email } : {}),
      ...(users[i]?.display_name ? { displayName: users[i]!.display_name } : {}),
      role: m.role,
      addedAt: m.addedAt,
    })),
  });
}

export async function updateMember(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  const body = parseJson(await readBody(request, 4 * 1024));
  const role = isPlainObject(body) ? body.role : undefined;
  if (!isRole(role)) throw new HttpError(400, 'invalid_body', 'Body must be { "role": "owner" | "admin" | "member" | "viewer" }');
  return json({ member: await ctx.teams.setRole(access, target(request), role) });
}

export async function removeMember(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  // Any member may leave; removing someone else takes an admin (checked by teams.remove).
  const access = await ctx.teams.access(userId, request.params.id, 'read');
  const who = target(request);
  await ctx.teams.remove(access, who);
  return json({ removed: who });
}

export async function projectAudit(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  return json({ entries: await ctx.teams.audit.list(access.project.id) });
}
