// createHandler: the one fetch handler, `(Request) => Promise<Response>`.
import { fileURLToPath } from 'node:url';
import { createAuthenticator, type Authenticator } from './auth.ts';
import type { Context, ServeInfo } from './context.ts';
import { createRateLimiter, type RateLimitOptions } from './ratelimit.ts';
import { createHub, type Hub } from './hub.ts';
import { CORS_HEADERS, HttpError, json, toErrorResponse, toWebResponse } from './http.ts';
import { beacon, exportEvents, ingest, listEvents } from './routes/events.ts';
import { pages } from './routes/pages.ts';
import { health, stats, syncUser } from './routes/read.ts';
import { eventStream } from './routes/stream.ts';
import { developerStream, insights, query } from './routes/developer.ts';
import type { Store } from './store/types.ts';

export interface HandlerDeps {
  store: Store;
  /** Defaults to header-trust resolution (SPEC 5 rule 7, no provider configured). */
  auth?: Authenticator;
  hub?: Hub;
  /** SPEC 4.1 owner of events sent by nobody identified (DEFAULT_INGEST_OWNER_USER_ID). */
  defaultOwner?: string | null;
  now?: () => number;
  log?: (msg: string) => void;
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
}

export type FetchHandler = ((request: Request, info?: ServeInfo) => Promise<Response>) & { hub: Hub };

const PREFLIGHT_HEADERS = {
  ...CORS_HEADERS,
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Content-Encoding, Authorization, X-IdP-User-Id, Last-Event-ID',
  'access-control-max-age': '86400',
};

const dir = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

export function createHandler(deps: HandlerDeps): FetchHandler {
  const ctx: Context = {
    store: deps.store,
    auth: deps.auth ?? createAuthenticator({ trustHeader: true }),
    hub: deps.hub ?? createHub(),
    now: deps.now ?? Date.now,
    log: deps.log ?? ((msg) => console.error(msg)),
    defaultOwner: deps.defaultOwner ?? null,
    pagesRoot: withSlash(deps.pagesRoot ?? dir('../pages/')),
    sdkRoot: withSlash(deps.sdkRoot ?? dir('../dist/sdk/')),
    assetsRoot: withSlash(deps.assetsRoot ?? dir('../dist/assets/')),
    limiter: createRateLimiter(deps.rateLimit ?? { rate: 1000, burst: 2000 }),
    trustProxy: deps.trustProxy ?? false,
  };

  deps.store.watch?.((events) => ctx.hub.publish(events));

  // Ten fixed paths: a map from path to method to route. (A pattern router built a URL and ran a
  // regex scan per request, ~7% of a small ingest request.)
  type Route = (ctx: Context, request: Request, info?: ServeInfo) => Promise<Response>;
  const routes = new Map<string, Record<string, Route>>();
  const route = (method: 'GET' | 'POST', path: string, fn: Route) => routes.set(path, { ...routes.get(path), [method]: fn });
  route('POST', '/api/events', ingest);
  route('GET', '/api/events', listEvents);
  route('POST', '/api/beacon', beacon);
  route('GET', '/api/events/stream', eventStream);
  route('GET', '/api/events/export', exportEvents);
  route('GET', '/api/stats', stats);
  route('GET', '/api/health', health);
  route('POST', '/api/users/sync', syncUser);
  route('GET', '/api/developer/stream', developerStream);
  route('GET', '/api/developer/insights', insights);
  route('POST', '/api/developer/query', query);

  const handle = async (request: Request, info?: ServeInfo): Promise<Response> => {
    try {
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });
      let path = rawPath(request.url);
      let methods = routes.get(path);
      if (!methods) {
        // Not a plain match: the parsed path (dot segments, escapes), trailing slashes ignored.
        path = new URL(request.url).pathname;
        methods = routes.get(path.length > 1 ? path.replace(/\/+$/, '') : path);
      }
      if (methods) {
        const fn = methods[request.method];
        if (fn) return await fn(ctx, request, info);
        const allow = `${Object.keys(methods).join(', ')}, OPTIONS`;
        throw new HttpError(405, 'method_not_allowed', `Method ${request.method} not allowed on ${path}`, { allow });
      }
      if (!path.startsWith('/api/') && (request.method === 'GET' || request.method === 'HEAD')) {
        const page = await pages(ctx, request);
        if (page) return page;
      }
      return json({ error: `Not found: ${path}`, code: 'not_found' }, 404);
    } catch (err) {
      return toErrorResponse(err, ctx.log);
    }
  };
  const handler = async (request: Request, info?: ServeInfo): Promise<Response> => {
    const response = await handle(request, info);
    return info?.rawResponses ? response : toWebResponse(response);
  };
  return Object.assign(handler, { hub: ctx.hub });
}

const withSlash = (p: string) => (p.endsWith('/') ? p : p + '/');

/** The path of an absolute URL as sent, without query or fragment; no URL object is built. */
function rawPath(url: string): string {
  const start = url.indexOf('/', url.indexOf('://') + 3);
  if (start === -1) return '/';
  let end = url.indexOf('?', start);
  if (end === -1) end = url.length;
  const hash = url.indexOf('#', start);
  return url.slice(start, hash !== -1 && hash < end ? hash : end);
}
