// What every route receives: the dependencies of one handler instance.
import type { Authenticator } from './auth.ts';
import type { Hub } from './hub.ts';
import type { Store } from './store/types.ts';
import type { RateLimiter } from './ratelimit.ts';
import { HttpError, unauthorized } from './http.ts';

export interface Context {
  store: Store;
  auth: Authenticator;
  hub: Hub;
  now: () => number;
  log: (msg: string) => void;
  defaultOwner: string | null;
  /** Absolute directory paths (with trailing slash) of the served pages and the built SDK. */
  pagesRoot: string;
  sdkRoot: string;
  /** Built page scripts and the generated client configuration. */
  assetsRoot: string;
  limiter: RateLimiter;
  /** Take the client address from X-Forwarded-For (only behind a proxy you run). */
  trustProxy: boolean;
}

/** What a server passes beside the Request (Deno.serve's ServeHandlerInfo shape). */
export interface ServeInfo {
  remoteAddr?: { hostname?: string };
  /** The server writes rawResponses itself, so lightweight Responses may be returned as they are. */
  rawResponses?: boolean;
}

export function clientAddress(ctx: Context, request: Request, info?: ServeInfo): string {
  if (ctx.trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for');
    if (forwarded) return forwarded.split(',')[0].trim();
  }
  return info?.remoteAddr?.hostname ?? 'unknown';
}

/** The signed-in user of a protected request (SPEC 5 rule 2), or a 401 / 503. */
export async function requireUser(ctx: Context, request: Request): Promise<string> {
  return (await requireIdentity(ctx, request)).userId;
}

export async function requireIdentity(ctx: Context, request: Request): Promise<{ userId: string; expiresAt?: number }> {
  const identity = await ctx.auth.resolve(request);
  if (identity.userId) return { userId: identity.userId, expiresAt: identity.expiresAt };
  if (identity.failure === 'unavailable') {
    throw new HttpError(503, 'idp_unavailable', 'Identity provider keys are unavailable; try again shortly', { 'retry-after': '5' });
  }
  throw unauthorized();
}
