// Served pages (SPEC 1) and the SDK under /sdk/.
import { CORS_HEADERS } from '../http.ts';
import { serveFile } from '../static.ts';
import type { Context } from '../context.ts';

export async function pages(ctx: Context, request: Request): Promise<Response | undefined> {
  const path = new URL(request.url).pathname;
  if (path === '/') return new Response(null, { status: 302, headers: { location: '/landing/', ...CORS_HEADERS } });
  if (path.startsWith('/sdk/')) {
    return (await serveFile(path.slice(4), request, { root: ctx.sdkRoot, cacheControl: 'public, max-age=300' })) ?? undefined;
  }
  if (path.startsWith('/assets/')) {
    return (await serveFile(path.slice(7), request, { root: ctx.assetsRoot, cacheControl: 'no-cache' })) ?? undefined;
  }
  // The dashboard lives at /dashboard (SPEC 1), without the trailing slash of the other pages.
  const file = path === '/dashboard' ? '/dashboard/' : path;
  return (await serveFile(file, request, { root: ctx.pagesRoot, cacheControl: 'no-cache' })) ?? undefined;
}
