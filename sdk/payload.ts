// Pure shaping of event data (docs/api.md#event-fields) within the server's envelope limits (lib/schema.ts).
import type { Data } from './types.ts';

/**
 * Drops the query string and fragment: they often carry tokens, e-mail addresses or search terms.
 * A page URL (`utm` set) keeps its `utm_*` parameters, as written: the campaign the server reads.
 */
export const stripQuery = (url: string, utm?: 1): string => {
  const kept = utm ? (/\?([^#]*)/.exec(url)?.[1] ?? '').split('&').filter((p) => p.startsWith('utm_')) : [];
  return url.replace(/[?#].*/s, '') + (kept.length ? '?' + kept.join('&') : '');
};

/**
 * The referrer as the referring site's origin (scheme, host, port): its path and query can hold
 * search terms, ids or tokens. Nothing when there is no referrer, when it is not http(s)
 * (`android-app:`, `about:`), or when it is this site: the same host, a leading `www.` ignored, so
 * moving between pages, ports or http/https of one site is not a referral. Other subdomains
 * (`blog.example.com` → `example.com`) are other sites: telling apart registrable domains needs
 * the public suffix list, too big for the SDK.
 */
export function referrerOrigin(referrer: string, page: string): string | undefined {
  try {
    const from = new URL(referrer);
    const site = (u: URL) => u.hostname.replace(/^www\./, '');
    if (/^https?:$/.test(from.protocol) && site(from) != site(new URL(page))) return from.origin;
  } catch {
    // No referrer (''), or not a URL.
  }
}

export const clip = (value: unknown, max: number): string | undefined =>
  value == null || value === '' ? undefined : String(value).slice(0, max);

interface NavigationTiming {
  startTime: number;
  responseStart: number;
  domContentLoadedEventEnd: number;
  loadEventEnd: number;
  duration: number;
  transferSize?: number;
  type?: string;
}

/** A pageload's `data` from a Navigation Timing Level 2 entry (times relative to navigation start). */
export function pageloadData(nav: NavigationTiming): Data {
  const ms = (t: number) => Math.max(0, Math.round(t - nav.startTime));
  return {
    duration: ms(nav.loadEventEnd || nav.startTime + nav.duration),
    ttfb: ms(nav.responseStart),
    domContentLoaded: ms(nav.domContentLoadedEventEnd),
    loadComplete: ms(nav.loadEventEnd),
    transferSize: nav.transferSize ?? 0,
    navigationType: nav.type,
  };
}

/** Location of the first frame of a V8 (`at f (url:1:2)`) or Firefox/Safari (`f@url:1:2`) stack. */
export function topFrame(stack: string | undefined): { source?: string; line?: number; col?: number } {
  const m = /(?:\bat |@)\(?(.+?):(\d+):(\d+)\)?\s*$/m.exec(stack ?? '');
  return m ? { source: m[1].replace(/^.*?\(/, ''), line: +m[2], col: +m[3] } : {};
}

/** An error's `data` from anything thrown or rejected. */
export function errorData(reason: unknown, mechanism: string): Data {
  const err = reason as { message?: unknown; stack?: unknown; name?: unknown } | null;
  const isError = !!err && typeof err == 'object' && 'message' in err;
  let message: unknown = isError ? err.message : reason;
  if (!isError && typeof reason == 'object' && reason !== null) {
    try {
      message = JSON.stringify(reason);
    } catch {
      // Circular: String() below still says something.
    }
  }
  const stack = isError && typeof err.stack == 'string' ? err.stack : undefined;
  return {
    message: clip(message, 2000) ?? 'Unknown error',
    ...topFrame(stack),
    stack: clip(stack, 8000),
    name: isError ? clip(err.name, 100) : undefined,
    mechanism,
  };
}

/**
 * Lets the first `perKey` reports of one error through, and `total` in all: an error thrown in an
 * animation frame would otherwise flood the queue and push every other event out.
 */
export function errorLimiter(perKey = 10, total = 100): (key: string) => boolean {
  const seen = new Map<string, number>();
  let all = 0;
  return (key) => {
    const n = seen.get(key) ?? 0;
    if (n >= perKey || all >= total) return false;
    seen.set(key, n + 1);
    all++;
    return true;
  };
}
