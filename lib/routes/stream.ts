// GET /api/events/stream: open, but scoped to whoever the subscriber is (README, "API").
import { CORS_HEADERS, HttpError } from '../http.ts';
import type { Context } from '../context.ts';
import type { Subscription } from '../hub.ts';

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // Reverse proxies (nginx) must not buffer a live stream.
  'x-accel-buffering': 'no',
  ...CORS_HEADERS,
};

/** An SSE response for a new hub subscriber, or 503 past the cap on open streams. */
export function sseResponse(ctx: Context, subscription: Subscription): Response {
  const body = ctx.hub.subscribe(subscription);
  if (!body) throw new HttpError(503, 'too_many_streams', 'Too many open streams; try again later', { 'retry-after': '10' });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

export async function eventStream(request: Request, ctx: Context): Promise<Response> {
  // Identified subscribers get their own events; anyone else only unowned events.
  const { userId, expiresAt } = await ctx.auth.resolve(request);
  return sseResponse(ctx, { userId, closeAt: userId ? expiresAt : undefined });
}
