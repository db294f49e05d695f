// Served pages, the page scripts under /assets/ and the SDK under /sdk/ (README, "Pages").
import { CORS_HEADERS } from '../http.ts';
import { serveFile } from '../static.ts';
import type { Context } from '../context.ts';

/**
 * What every served page (HTML) adds (README "Security headers"): scripts only from this origin (the
 * pages have no inline script), no plugins, no framing by other sites (clickjacking), and no full
 * URL leaking to other sites in Referer. Other sources stay open: provider mode talks to the
 * identity provider's origin. nosniff is added for every answer by the handler.
 */
const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': "script-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
  'referrer-policy': 'strict-origin-when-cross-origin',
};

const SHARE_PAGE = /^\/share\/[\w-]{20,100}$/;

/** A GET or HEAD for `path` (below the base path) that no API route took; undefined when no file is there. */
export async function pages(ctx: Context, request: Request, path: string): Promise<Response | undefined> {
  const files = ctx.files;
  if (!files || path.startsWith('/api/')) return undefined;
  if (path === '' || path === '/') {
    return new Response(null, { status: 302, headers: { location: `${ctx.basePath}/landing/`, ...CORS_HEADERS } });
  }
  if (path.startsWith('/sdk/')) {
    return (await serveFile(path.slice(4), request, { files, root: ctx.sdkRoot, cacheControl: 'public, max-age=300' })) ?? undefined;
  }
  if (path.startsWith('/assets/')) {
    return (await serveFile(path.slice(7), request, { files, root: ctx.assetsRoot, cacheControl: 'no-cache' })) ?? undefined;
  }
  // The dashboard lives at /dashboard, without the trailing slash of the other pages; every share
  // link's read-only dashboard (/share/<token>) is one page, which reads the token from its path.
  const file = path === '/dashboard' ? '/dashboard/' : SHARE_PAGE.test(path) ? '/share/' : path;
  const page = await serveFile(file, request, { files, root: ctx.pagesRoot, cacheControl: 'no-cache', headTemplate: ctx.pagesRoot + 'head.html' });
  if (page?.headers.get('content-type')?.startsWith('text/html')) for (const [k, v] of Object.entries(PAGE_HEADERS)) page.headers.set(k, v);
  return page ?? undefined;
}
