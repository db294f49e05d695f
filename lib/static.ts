// Served files: pages/ and the built SDK. The only file reads of the handler live here.
import { readFile, stat } from 'node:fs/promises';
import { HttpError, CORS_HEADERS } from './http.ts';

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'application/javascript; charset=utf-8',
  mjs: 'application/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json; charset=utf-8',
  map: 'application/json; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  ico: 'image/x-icon',
  txt: 'text/plain; charset=utf-8',
  woff2: 'font/woff2',
};

/**
 * Safe relative path of a URL path below a mount, or null. Segments are decoded one by one, so an
 * encoded `..` (%2e%2e) or an encoded separator (%2f, %5c) can never climb out of the root.
 */
export function safeRelativePath(urlPath: string): string | null {
  const out: string[] = [];
  for (const raw of urlPath.split('/')) {
    if (raw === '') continue;
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (seg === '.' || seg === '..' || /[\\/\0]/.test(seg) || seg.startsWith('.')) return null;
    out.push(seg);
  }
  return out.join('/');
}

export interface StaticOptions {
  /** Directory served (absolute path, with a trailing slash). */
  root: string;
  cacheControl: string;
}

/** Serves a file below root; directories serve their index.html. Null when there is none. */
export async function serveFile(urlPath: string, request: Request, options: StaticOptions): Promise<Response | null> {
  const rel = safeRelativePath(urlPath);
  if (rel === null) throw new HttpError(400, 'bad_path', 'Invalid path');
  let path = options.root + rel;
  let info = await stat(path).catch(() => null);
  if (info?.isDirectory()) {
    if (!urlPath.endsWith('/')) {
      return new Response(null, { status: 301, headers: { location: urlPath + '/', ...CORS_HEADERS } });
    }
    path += (rel ? '/' : '') + 'index.html';
    info = await stat(path).catch(() => null);
  }
  if (!info?.isFile()) return null;
  const etag = `W/"${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}"`;
  const headers: Record<string, string> = {
    'content-type': TYPES[path.slice(path.lastIndexOf('.') + 1).toLowerCase()] ?? 'application/octet-stream',
    'cache-control': options.cacheControl,
    'x-content-type-options': 'nosniff',
    etag,
    ...CORS_HEADERS,
  };
  if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers });
  const body = request.method === 'HEAD' ? null : await readFile(path);
  return new Response(body, { status: 200, headers });
}
