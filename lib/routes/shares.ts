// Share links (docs/api.md#share-links): admins make, list and revoke them; the link's holder reads
// the project's statistics, signed out, and nothing else.
import { parseJson, readBody } from '../body.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { parseStatsQuery } from '../schema.ts';
import type { Stats } from '../stats.ts';
import { shareNotFound } from '../teams/shares.ts';
import { TOKEN_PATTERN } from '../teams/tokens.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';
import { withGoals } from './read.ts';

/** The read-only dashboard page of a link. */
export const shareUrl = (request: Request, ctx: Context, token: string) => `${new URL(request.url).origin}${ctx.basePath}/share/${token}`;

export async function createShare(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  const bytes = await readBody(request, 4 * 1024);
  const { share, token } = await ctx.shares.create(access, bytes.byteLength ? parseJson(bytes) : null);
  return json({ id: share.id, token, url: shareUrl(request, ctx, token), expiresAt: share.expiresAt }, 201);
}

export async function listShares(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  return json({ shares: await ctx.shares.list(access.project.id) });
}

export async function revokeShare(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  return json({ share: await ctx.shares.revoke(access, request.params.shareId) });
}

/**
 * What a share link shows: the statistics without the raw events they carry (recent errors and
 * activity hold messages, stacks and user ids: personal data the link's holder is not meant to see).
 */
export type SharedStats = Omit<Stats, 'recentErrors' | 'recentActivity'>;

export function sharedStats({ recentErrors: _errors, recentActivity: _activity, ...rest }: Stats): SharedStats {
  return rest;
}

export async function sharedStatsRoute(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const token = request.params.token;
  if (!TOKEN_PATTERN.test(token)) throw shareNotFound();
  // Counted per token before it is looked up: guessing tokens costs the guesser, not the store.
  const wait = ctx.shareLimiter.take(token, ctx.now());
  if (wait) throw new HttpError(429, 'rate_limited', 'Too many requests with this share link; retry later', { 'retry-after': String(wait) });
  const { project, owner } = await ctx.shares.open(token);
  const now = ctx.now();
  const range = parseStatsQuery(new URL(request.url).searchParams, now);
  const stats = await ctx.store.stats(owner, now, await withGoals(ctx, range, project.id), project.id);
  return json({ project: { id: project.id, name: project.name }, stats: sharedStats(stats) });
}
