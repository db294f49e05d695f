// Invitations (docs/api.md#invitations): admins make, list and revoke them; anyone holding a token
// may see what it offers; a signed-in user accepts it once.
import { parseJson, readBody } from '../body.ts';
import { json, type JsonReply } from '../http.ts';
import type { Invitation } from '../teams/invitations.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

/** Where the accept page is: the token rides in the fragment, which browsers never send to a server. */
export const inviteUrl = (request: Request, ctx: Context, token: string) => `${new URL(request.url).origin}${ctx.basePath}/invite/#${token}`;

const shown = (i: Invitation, now: number) => ({
  ...i,
  status: i.usedAt ? 'used' : i.revokedAt ? 'revoked' : Date.parse(i.expiresAt) <= now ? 'expired' : 'open',
});

export async function createInvitation(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  const { invitation, token } = await ctx.invitations.create(access, parseJson(await readBody(request, 4 * 1024)));
  const url = inviteUrl(request, ctx, token);
  // Sent off the request path: the answer carries the link whatever the mail server does.
  if (invitation.email && ctx.monitor.mailer) {
    ctx.monitor.mailer.send({
      to: [invitation.email],
      subject: `You are invited to ${access.project.name} on Watchtower`,
      text: `You have been invited to the project "${access.project.name}" as ${invitation.role}.\n\nAccept the invitation (until ${invitation.expiresAt}):\n${url}\n`,
    }).catch((e: Error) => ctx.log(`invitation e-mail to ${invitation.email} failed: ${e.message}`));
  }
  return json({ id: invitation.id, token, url, role: invitation.role, email: invitation.email, expiresAt: invitation.expiresAt }, 201);
}

export async function listInvitations(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  const now = ctx.now();
  return json({ invitations: (await ctx.invitations.list(access.project.id)).map((i) => shown(i, now)) });
}

export async function revokeInvitation(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  return json({ invitation: shown(await ctx.invitations.revoke(access, request.params.invitationId), ctx.now()) });
}

export async function showInvitation(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { invitation, project } = await ctx.invitations.open(request.params.token);
  return json({ project: { id: project.id, name: project.name }, role: invitation.role, expiresAt: invitation.expiresAt });
}

export async function acceptInvitation(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const { member, project } = await ctx.invitations.accept(request.params.token, userId);
  return json({ project: { id: project.id, name: project.name }, role: member.role });
}
