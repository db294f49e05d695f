// createHandler: the one fetch handler, `(Request) => Promise<Response>`.
import { createAuthenticator, type Authenticator } from './auth.ts';
import type { Context, Route, RouteRequest, ServeInfo } from './context.ts';
import { createRateLimiter, type RateLimitOptions } from './ratelimit.ts';
import { createHub, type Hub } from './hub.ts';
import { InFlight } from './inflight.ts';
import { CORS_HEADERS, HttpError, JsonReply, NOSNIFF, toErrorResponse, toResponse } from './http.ts';
import { modulePath, type FileAccess } from './static.ts';
import { pages } from './routes/pages.ts';
import { apiRouter } from './routes/table.ts';
import { createProjects } from './projects.ts';
import type { Store } from './store/types.ts';
import { createMemoryRecords } from './records/memory.ts';
import { createMonitor, type Monitor, type MonitorOptions } from './monitor.ts';
import type { RecordStore } from './records/types.ts';
import { createTeams } from './teams/teams.ts';
import { createInvitations } from './teams/invitations.ts';
import { createShares, SHARE_RATE_LIMIT } from './teams/shares.ts';
import { createGoals } from './goals/goals.ts';

export interface HandlerDeps {
  store: Store;
  /**
   * Where projects, issues, alert rules and source maps are kept (lib/records/types.ts): the store's
   * companion (openSqliteRecords, openPostgresRecords). Default: in memory, lost on restart.
   */
  records?: RecordStore;
  /** Issues, source maps and alerts: SMTP and link settings, retention, timings (lib/monitor.ts). */
  monitoring?: MonitorOptions;
  /** Who is asking; defaults to trusting the X-IdP-User-Id header (development, README "Identity"). */
  auth?: Authenticator;
  hub?: Hub;
  /** Owner of events sent by nobody identified (DEFAULT_INGEST_OWNER_USER_ID). */
  defaultOwner?: string | null;
  now?: () => number;
  log?: (msg: string) => void;
  /** Where the handler is mounted, e.g. '/telemetry': every route, page and the SDK live below it. Default: the root. */
  basePath?: string;
  /**
   * Answer null, instead of a 404, for a request that no route, page or file owns, so the app the
   * handler is embedded in can answer it. The handler's type then says `Promise<Response | null>`.
   */
  fallthrough?: boolean;
  /** How pages and SDK files are read (nodeFiles, denoFiles or bunFiles from the adapters); without it none are served. */
  files?: FileAccess;
  /** Directory of the served pages; defaults to this package's pages/. */
  pagesRoot?: string;
  /** Directory of the built SDK; defaults to this package's dist/sdk/. */
  sdkRoot?: string;
  /** Directory of the built page scripts; defaults to this package's dist/assets/. */
  assetsRoot?: string;
  /** Ingestion rate limit per client address (default 1000 requests/s, burst 2000; rate 0 = off). */
  rateLimit?: RateLimitOptions;
  /** Take the client address from X-Forwarded-For. */
  trustProxy?: boolean;
  /**
   * Store events sent with a bot's User-Agent (crawlers, HTTP libraries, headless browsers) on
   * /api/events and /api/beacon; by default they are dropped (SERVICE_KEEP_BOTS, README "Bots").
   */
  keepBots?: boolean;
  /**
   * Look up the country of each ingest request's client address (README "Countries"); default on.
   * SERVICE_GEO=off turns it off.
   */
  geo?: boolean;
  /** Developer queries and insights one user may have running at once (default 2). */
  queriesPerUser?: number;
}

/** The fetch handler; `R` is `Response | null` when it was created with `fallthrough: true`. */
export type FetchHandler<R extends Response | null = Response> = ((request: Request, info?: ServeInfo) => Promise<R>) & {
  hub: Hub;
  /** Issue processing and alerting running beside the routes. */
  monitor: Monitor;
  /** Stops issue processing and alert evaluation, after processing what was queued and finishing deliveries under way. */
  close(): Promise<void>;
};

const PREFLIGHT_HEADERS = {
  ...CORS_HEADERS,
  ...NOSNIFF,
  'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Content-Encoding, Authorization, X-IdP-User-Id, Last-Event-ID, X-Watchtower-Key, X-Sentry-Auth',
  'access-control-max-age': '86400',
};

const dir = (relative: string) => modulePath(relative, import.meta.url);

export function createHandler(deps: HandlerDeps & { fallthrough: true }): FetchHandler<Response | null>;
export function createHandler(deps: HandlerDeps & { fallthrough?: false }): FetchHandler;
export function createHandler(deps: HandlerDeps): FetchHandler<Response | null>;
export function createHandler(deps: HandlerDeps): FetchHandler<Response | null> {
  const base = (deps.basePath ?? '').replace(/\/+$/, '');
  // Plain segments only: itty-router reads `:` and `*` in a path as patterns.
  if (!/^(\/[\w.~-]+)*$/.test(base)) throw new TypeError(`basePath must be a path like /telemetry, not ${JSON.stringify(deps.basePath)}`);
  const records = deps.records ?? createMemoryRecords();
  const auth = deps.auth ?? createAuthenticator({ trustHeader: true });
  const now = deps.now ?? Date.now;
  const log = deps.log ?? ((msg: string) => console.error(msg));
  const projects = createProjects(records, now);
  const teams = createTeams(records, now);
  const ctx: Context = {
    store: deps.store,
    records,
    monitor: createMonitor(deps.store, records, { now, log }, deps.monitoring),
    projects,
    teams,
    invitations: createInvitations(records, teams, now),
    shares: createShares(records, teams, now),
    goals: createGoals(records, teams, now),
    shareLimiter: createRateLimiter(SHARE_RATE_LIMIT),
    auth,
    trustEventUserId: auth.trustsHeader === true,
    hub: deps.hub ?? createHub(),
    now,
    log,
    defaultOwner: deps.defaultOwner ?? null,
    basePath: base,
    files: deps.files ?? null,
    pagesRoot: withSlash(deps.pagesRoot ?? dir('../pages/')),
    sdkRoot: withSlash(deps.sdkRoot ?? dir('../dist/sdk/')),
    assetsRoot: withSlash(deps.assetsRoot ?? dir('../dist/assets/')),
    limiter: createRateLimiter(deps.rateLimit ?? { rate: 1000, burst: 2000 }),
    queries: new InFlight(deps.queriesPerUser),
    trustProxy: deps.trustProxy ?? false,
    keepBots: deps.keepBots ?? false,
    geo: deps.geo ?? true,
    botsDropped: 0,
  };

  // Events other instances stored reach live streams; their issues are the other instance's to process.
  deps.store.watch?.((events) => ctx.hub.publish(events));
  ctx.monitor.start();

  const router = apiRouter(base);

  /**
   * The route for a request, with its path parameters set on the request, as itty-router's own
   * fetch finds it, but on the path pathOf gives: router.fetch builds a URL object and a query
   * record for every request, which measured ~1 µs a request on Deno (~5% of a small ingest).
   * Each route has one handler.
   */
  function match(request: Request, path: string): Route | undefined {
    for (const [method, pattern, handlers] of router.routes) {
      if (method !== request.method && method !== 'ALL') continue;
      const found = pattern.exec(path);
      if (found === null) continue;
      (request as RouteRequest).params = found.groups ?? NO_PARAMS;
      return handlers[0] as Route;
    }
    return undefined;
  }

  /** What answers a request no route took: a preflight, a 405, a page or file, else a 404 (or null). */
  async function unmatched(request: Request, path: string): Promise<Response | JsonReply | null> {
    const methods = new Set(router.routes.filter(([, pattern]) => pattern.test(path)).map(([method]) => method));
    if (methods.size) {
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });
      const allow = `${[...methods].join(', ')}, OPTIONS`;
      throw new HttpError(405, 'method_not_allowed', `Method ${request.method} not allowed on ${path}`, { allow });
    }
    const inside = path === base || path.startsWith(base + '/');
    if (inside && (request.method === 'GET' || request.method === 'HEAD')) {
      const page = await pages(ctx, request, path.slice(base.length));
      if (page) return page;
    }
    if (deps.fallthrough) return null;
    throw new HttpError(404, 'not_found', `Not found: ${path}`);
  }

  const handler = async (request: Request, info?: ServeInfo): Promise<Response | null> => {
    const respond = info?.respond ?? toResponse;
    try {
      const path = pathOf(request.url);
      const route = match(request, path);
      const answer = route ? await route(request as RouteRequest, ctx, info) : await unmatched(request, path);
      if (answer instanceof JsonReply) return respond(answer);
      // Streams, files and redirects: the one place their Responses get nosniff (JSON answers carry it already).
      if (answer && !answer.headers.has('x-content-type-options')) answer.headers.set('x-content-type-options', 'nosniff');
      return answer;
    } catch (err) {
      return toErrorResponse(err, ctx.log, respond);
    }
  };
  return Object.assign(handler, { hub: ctx.hub, monitor: ctx.monitor, close: () => ctx.monitor.close() });
}

const withSlash = (p: string) => (p.endsWith('/') ? p : p + '/');
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

// Characters a URL parser leaves as they are in a path, and dot segments, which it resolves.
const PLAIN_PATH = /^[\w!$&'()*+,.:;=@~/-]*$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/**
 * The path of a request URL: as sent when parsing could not change it (the common case, and no URL
 * object is built), else the parsed one (dot segments resolved, escapes and odd characters encoded).
 */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('://') + 3);
  if (start === -1) return '/';
  let end = url.indexOf('?', start);
  if (end === -1) end = url.length;
  const hash = url.indexOf('#', start);
  const path = url.slice(start, hash !== -1 && hash < end ? hash : end);
  return PLAIN_PATH.test(path) && !DOT_SEGMENT.test(path) ? path : new URL(url).pathname;
}
