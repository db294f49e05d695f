/**
 * The keys events are counted under, shared by ingest (event.ts), statistics (stats.ts) and the
 * breakdowns. A leaf module: it imports nothing, so those three need not import each other for it.
 */

/** Key used when an error carries no deployVersion, or a pageload neither route nor URL. */
export const UNKNOWN = 'unknown';

/** The fields of an event that locate its page. */
export interface PageFields {
  route: string | null;
  url: string | null;
  page_url: string | null;
}

/** Route key of a pageload: its route, else the path of its URL, else "unknown". */
export function routeKey(e: PageFields): string {
  if (e.route) return e.route;
  const url = e.url ?? e.page_url;
  if (!url) return UNKNOWN;
  try {
    return new URL(url, 'http://x').pathname;
  } catch {
    return UNKNOWN;
  }
}

/**
 * A referrer as stored: the origin of an http(s) URL, else nothing. The SDK sends origins only;
 * the server reduces whatever a client sends all the same, so a path or query never lands.
 */
export function referrerOrigin(value: unknown): string | null {
  if (typeof value !== 'string' || value === '' || value.length > 2048) return null;
  try {
    const u = new URL(value);
    return /^https?:$/.test(u.protocol) ? u.origin : null;
  } catch {
    return null;
  }
}
