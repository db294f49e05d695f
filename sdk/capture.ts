// Automatic capture in the browser: pageload, errors, clicks, and the page-exit beacon.
import type { Trail } from './breadcrumbs.ts';
import type { Client } from './client.ts';
import { errorData, errorLimiter, pageloadData, referrerOrigin } from './payload.ts';
import { clickText, CONTROL, selector, type ElementLike } from './selector.ts';
import type { Settings } from './types.ts';

export function capture(client: Client, o: Settings, crumbs: Trail): void {
  const safe = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => {
    try {
      fn(...args);
    } catch {
      // The SDK must never break the page it watches.
    }
  };
  const allow = errorLimiter();
  const error = (data: Record<string, unknown>) => {
    if (allow(`${data.message}@${data.source}:${data.line}`)) client.record('error', withCrumbs(data, crumbs), { message: data.message as string });
  };

  if (o.errors) {
    addEventListener('error', safe((ev: Event) => {
      // Failed <img>/<script> loads also fire `error` on window (capture), but are not ErrorEvents.
      if (!(ev instanceof ErrorEvent)) return;
      const data = errorData(ev.error ?? ev.message, 'onerror');
      data.message = ev.message || data.message;
      if (ev.filename) Object.assign(data, { source: ev.filename, line: ev.lineno, col: ev.colno });
      error(data);
    }));
    addEventListener('unhandledrejection', safe((ev: PromiseRejectionEvent) => error(errorData(ev.reason, 'onunhandledrejection'))));
  }

  if (o.clicks) {
    // Capture phase: a handler calling stopPropagation() must not hide the click.
    document.addEventListener('click', safe((ev: MouseEvent) => {
      let el = ev.target as (Node & ElementLike) | null;
      if (el && el.nodeType != 1) el = el.parentElement as (Node & ElementLike) | null;
      if (!el || el.closest?.('[data-watchtower-ignore]')) return;
      el = (el.closest?.(CONTROL) as (Node & ElementLike) | null) ?? el;
      const data = { target: selector(el), text: clickText(el) };
      client.record('click', data);
      crumbs.add('click', data.target + (data.text ? ` "${data.text}"` : ''), 'info', data);
    }), true);
  }

  if (o.pageload) {
    const report = safe(() => {
      const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
      if (nav) client.record('pageload', pageloadData(nav), { referrer: referrerOrigin(document.referrer, location.href) });
    });
    // loadEventEnd is only set once the load handlers have returned: wait one task past `load`.
    if (document.readyState == 'complete') setTimeout(report);
    else addEventListener('load', () => setTimeout(report));
  }

  // pagehide covers navigation and closing; hidden covers mobile tab switches that end in a kill.
  addEventListener('pagehide', safe(client.leave));
  document.addEventListener('visibilitychange', safe(() => document.visibilityState == 'hidden' && client.leave()));
  addEventListener('online', safe(client.resume));
}

/** An error's data with the breadcrumbs so far, if any. */
export function withCrumbs(data: Record<string, unknown>, crumbs: Trail): Record<string, unknown> {
  const list = crumbs.list();
  return list.length ? { ...data, breadcrumbs: list } : data;
}
