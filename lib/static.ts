// Served files: pages/ and the built SDK. This module never touches a file system: the runtime
// adapter passes its own file access (nodeFiles, denoFiles, bunFiles), so the core runs anywhere.
import { HttpError, CORS_HEADERS } from './http.ts';
import { renderHead } from './page-head.ts';

/** What is at a path, as the file access reports it. */
export interface FileStat {
  isFile: boolean;
  isDirectory: boolean;
  size: number;
  mtimeMs: number;
}

/** How served files are read. Paths are absolute, with `/` separators. */
export interface FileAccess {
  /** What is at a path; null when there is nothing (or it cannot be read). */
  stat(path: string): Promise<FileStat | null>;
  /** A file's contents, as a Response body. */
  readFile(path: string): Promise<BodyInit>;
}

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
 * The file path of a directory given relative to a module's `import.meta.url`, without node:url.
 * Only file: URLs name files; on Windows the path starts with the drive letter, not a slash.
 */
export function modulePath(relative: string, base: string): string {
  const path = decodeURIComponent(new URL(relative, base).pathname);
  return /^\/[A-Za-z]:\//.test(path) ? path.slice(1) : path;
}

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
  /** How files are read. */
  files: FileAccess;
  /** Directory served (absolute path, with a trailing slash). */
  root: string;
  cacheControl: string;
  /** A template the <head> of every HTML file is made from (lib/page-head.ts); absent: served as stored. */
  headTemplate?: string;
}

/** Serves a file below root; directories serve their index.html. Null when there is none. */
export async function serveFile(urlPath: string, request: Request, options: StaticOptions): Promise<Response | null> {
  const rel = safeRelativePath(urlPath);
  if (rel === null) throw new HttpError(400, 'bad_path', 'Invalid path');
  const { files } = options;
  let path = options.root + rel;
  let info = await files.stat(path);
  if (info?.isDirectory) {
    if (!urlPath.endsWith('/')) {
      // The request's own path, so the redirect is right wherever the handler is mounted, with runs
      // of slashes and backslashes (browsers read `\` as `/`) made one `/`: a Location starting
      // `//` or `/\` is another host to a browser (`GET //issues` would send it to http://issues/).
      const location = sameOriginPath(new URL(request.url).pathname) + '/';
      return new Response(null, { status: 301, headers: { location, ...CORS_HEADERS } });
    }
    path += (rel ? '/' : '') + 'index.html';
    info = await files.stat(path);
  }
  if (!info?.isFile) return null;
  const type = TYPES[path.slice(path.lastIndexOf('.') + 1).toLowerCase()] ?? 'application/octet-stream';
  // A page made with the template changes when either file does: both are in its tag.
  const template = options.headTemplate !== undefined && type.startsWith('text/html') ? await files.stat(options.headTemplate) : null;
  const etag = `W/"${version(info)}${template?.isFile ? '-' + version(template) : ''}"`;
  const headers: Record<string, string> = {
    'content-type': type,
    'cache-control': options.cacheControl,
    'x-content-type-options': 'nosniff',
    etag,
    ...CORS_HEADERS,
  };
  if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers });
  if (request.method === 'HEAD') return new Response(null, { status: 200, headers });
  if (!template?.isFile) return new Response(await files.readFile(path), { status: 200, headers });
  const [page, head] = await Promise.all([text(files, path), text(files, options.headTemplate!)]);
  return new Response(renderHead(head, page), { status: 200, headers });
}

const version = (info: FileStat) => `${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}`;
const text = async (files: FileAccess, path: string) => new Response(await files.readFile(path)).text();

/** A path with every run of `/` and `\` made one `/`: never `//host` or `/\host`, always this origin's. */
export function sameOriginPath(path: string): string {
  const collapsed = path.replace(/[/\\]+/g, '/');
  return collapsed.startsWith('/') ? collapsed : '/' + collapsed;
}
