// GET /api/events/stream (SPEC 4.5): open, but scoped to whoever the subscriber is (DESIGN.md).
import { CORS_HEADERS, HttpError } from '../http.ts';
import type { Context } from '../context.ts';

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // Reverse proxies (nginx) must not buffer a live stream.
  'x-accel-buffering': 'no',
  ...CORS_HEADERS,
};

export async function eventStream(ctx: Context, request: Request): Promise<Response> {
  // Identified subscribers get their own events; anyone else only unowned events.
  const { userId, expiresAt } = await ctx.auth.resolve(request);
  const body = ctx.hub.subscribe({ userId, closeAt: userId ? expiresAt : undefined });
  if (!body) throw new HttpError(503, 'too_many_streams', 'Too many open streams; try again later', { 'retry-after': '10' });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}
