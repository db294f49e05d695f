// GET /api/events/stream: open, but scoped to whoever the subscriber is (README, "API").
import { CORS_HEADERS, HttpError } from '../http.ts';
import { clientAddress, readScope, requireIdentity, type Context, type ServeInfo } from '../context.ts';
import type { Subscription } from '../hub.ts';

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // Reverse proxies (nginx) must not buffer a live stream.
  'x-accel-buffering': 'no',
  ...CORS_HEADERS,
};

/**
 * An SSE response for a new hub subscriber; 429 when its party (the user, or the address of a
 * client nobody identified) already has the most streams one may hold, 503 past the process's cap.
 */
export function sseResponse(ctx: Context, subscription: Subscription & { party: string }): Response {
  const body = ctx.hub.subscribe(subscription);
  if (!body) {
    if (ctx.hub.openFor(subscription.party) >= ctx.hub.maxPerParty) {
      const who = subscription.party.startsWith('user:') ? 'This user' : 'This client address';
      throw new HttpError(429, 'too_many_user_streams', `${who} already has ${ctx.hub.maxPerParty} open live streams; close one first`, { 'retry-after': '10' });
    }
    throw new HttpError(503, 'too_many_streams', 'Too many open streams; try again later', { 'retry-after': '10' });
  }
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

/** Who a stream counts against: its user, or, for nobody identified, the client's address. */
export const streamParty = (userId: string | null, address: string) => (userId !== null ? `user:${userId}` : `address:${address}`);

/**
 * How often an open stream of a shared project checks that its subscriber still has access: a
 * removal, on this instance or another sharing the database, closes the stream within this time.
 */
export const ACCESS_RECHECK_MS = 500;

/** What a stream of a project subscribes with: its events only, closed once the user loses access. */
export function projectStream(ctx: Context, userId: string, projectId: string): { projectId: string; signal: AbortSignal; onClose: () => void } {
  const revoked = new AbortController();
  let checking = false;
  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    try {
      if (!(await ctx.teams.roleOf(userId, projectId))) revoked.abort();
    } catch (err) {
      // An unreadable store says nothing either way: the next check asks again.
      ctx.log(`stream access check failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      checking = false;
    }
  }, ACCESS_RECHECK_MS);
  (timer as { unref?: () => void }).unref?.();
  return { projectId, signal: revoked.signal, onClose: () => clearInterval(timer) };
}

export async function eventStream(request: Request, ctx: Context, info?: ServeInfo): Promise<Response> {
  if (new URL(request.url).searchParams.has('project')) {
    const { userId, expiresAt } = await requireIdentity(ctx, request);
    const { owner, projectId } = await readScope(ctx, userId, new URL(request.url).searchParams);
    return sseResponse(ctx, { userId: owner, closeAt: expiresAt, party: streamParty(userId, ''), ...projectStream(ctx, userId, projectId!) });
  }
  // Identified subscribers get their own events; anyone else only unowned events.
  const { userId, expiresAt } = await ctx.auth.resolve(request);
  return sseResponse(ctx, { userId, closeAt: userId ? expiresAt : undefined, party: streamParty(userId, clientAddress(ctx, request, info)) });
}
