// What every route receives: the dependencies of one handler instance.
import type { Authenticator } from './auth.ts';
import type { StoredEvent } from './event.ts';
import type { Hub } from './hub.ts';
import type { InFlight } from './inflight.ts';
import type { Monitor } from './monitor.ts';
import type { RecordStore } from './records/types.ts';
import type { Projects } from './projects.ts';
import type { Store } from './store/types.ts';
import type { RateLimiter } from './ratelimit.ts';
import type { FileAccess } from './static.ts';
import { HttpError, unauthorized, type JsonReply } from './http.ts';
import type { Action } from './teams/access.ts';
import type { Invitations } from './teams/invitations.ts';
import type { Shares } from './teams/shares.ts';
import type { Goals } from './goals/goals.ts';
import type { ProjectAccess, Teams } from './teams/teams.ts';

export interface Context {
  store: Store;
  records: RecordStore;
  /** Issues, source maps and alerts (lib/monitor.ts). */
  monitor: Monitor;
  /** The users' projects, kept in `records` (README "Projects"). */
  projects: Projects;
  /** Members and roles of projects, and who may do what (lib/teams/). */
  teams: Teams;
  invitations: Invitations;
  shares: Shares;
  /** A project's goals (lib/goals/). */
  goals: Goals;
  /** Requests per share link (GET /api/shared/:token/stats). */
  shareLimiter: RateLimiter;
  auth: Authenticator;
  /** Header-trust development mode: an event's own userId may name its owner (docs/api.md#ownership). */
  trustEventUserId: boolean;
  hub: Hub;
  now: () => number;
  log: (msg: string) => void;
  defaultOwner: string | null;
  /** Where the handler is mounted: '' or a path like '/telemetry' (no trailing slash). */
  basePath: string;
  /** How served files are read; null serves no pages or SDK files. */
  files: FileAccess | null;
  /** Absolute directory paths (with trailing slash) of the served pages and the built SDK. */
  pagesRoot: string;
  sdkRoot: string;
  /** Built page scripts and the generated client configuration. */
  assetsRoot: string;
  limiter: RateLimiter;
  /** Developer queries and insights under way, per user (lib/inflight.ts). */
  queries: InFlight;
  /** Take the client address from X-Forwarded-For (only behind a proxy you run). */
  trustProxy: boolean;
  /** Store events whose User-Agent is a bot's (README "Bots"); by default they are dropped. */
  keepBots: boolean;
  /** Look up the country of ingest requests' client addresses (lib/geo.ts). */
  geo: boolean;
  /** Ingest requests from bots answered without storing anything, since this process started. */
  botsDropped: number;
}

/** What a server passes beside the Request (Deno.serve's ServeHandlerInfo shape, plus `respond`). */
export interface ServeInfo {
  /** The client's address, for per-client rate limiting. */
  remoteAddr?: { hostname?: string };
  /**
   * Makes the Response of a JSON answer; default `new Response(body, { status, headers })`. A server
   * that writes answers itself may return a cheaper Response it recognises (the node adapter does).
   */
  respond?: (reply: JsonReply) => Response;
}

/** The Request a route receives: itty-router adds the path parameters of the matched pattern. */
export type RouteRequest = Request & { params: Record<string, string> };

/** A route: its answer is a Response, or a JSON answer the handler makes a Response of. */
export type Route = (request: RouteRequest, ctx: Context, info?: ServeInfo) => Promise<Response | JsonReply>;

export function clientAddress(ctx: Context, request: Request, info?: ServeInfo): string {
  if (ctx.trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for');
    if (forwarded) {
      const comma = forwarded.indexOf(',');
      return (comma < 0 ? forwarded : forwarded.slice(0, comma)).trim();
    }
  }
  return info?.remoteAddr?.hostname ?? 'unknown';
}

/** The signed-in user of a protected request, or a 401 / 503 (README, "Identity"). */
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

/** Whose events a read covers: `owner`'s, only `projectId`'s when set. */
export interface ReadScope {
  owner: string;
  projectId?: string;
  /** The project and the asker's role, for a read with `project`. */
  access?: ProjectAccess;
}

/**
 * The `project` query parameter of a read (`GET /api/events`, `/api/stats`, the export, streams,
 * developer reads): absent, the user's own events; a project the user may do `action` on, that
 * project's events (which stay its owner's); anything else 404 project_not_found, as for a project
 * that does not exist.
 */
export async function readScope(ctx: Context, userId: string, params: URLSearchParams, action: Action = 'read'): Promise<ReadScope> {
  const id = params.get('project');
  if (id === null || id === '') return { owner: userId };
  if (!/^\d{1,20}$/.test(id)) throw new HttpError(400, 'invalid_query', 'Query parameter "project" must be a project id (digits)');
  const access = await ctx.teams.access(userId, id, action);
  return { owner: access.owner, projectId: id, access };
}

/**
 * Events this instance just stored, from any ingest route: live streams and issue processing hear
 * of them here, in one place. (Events other instances stored reach live streams through
 * store.watch only: their own instance processes them.)
 */
export function announceStored(ctx: Context, stored: StoredEvent[]): void {
  ctx.hub.publish(stored);
  ctx.monitor.push(stored);
}
