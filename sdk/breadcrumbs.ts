// Breadcrumbs: what the user and the page did just before an error — clicks (added by capture.ts),
// navigations, failed requests and console errors and warnings — kept in memory, the last few, and
// attached to each error event as `data.breadcrumbs` (docs/api.md#breadcrumbs).
import { stripQuery } from './payload.ts';

export interface Crumb {
  at: string;
  category: string;
  message: string;
  level?: string;
  data?: Record<string, unknown>;
}

export interface Trail {
  add(category: string, message: string, level?: string, data?: Record<string, unknown>): void;
  list(): Crumb[];
}

/** The last `max` crumbs (none when max < 1), each message clipped to 200 characters. */
export function trail(max: number, now = () => Date.now()): Trail {
  const crumbs: Crumb[] = [];
  return {
    add(category, message, level, data) {
      if (max < 1) return;
      crumbs.push({ at: new Date(now()).toISOString(), category, message: String(message).slice(0, 200), level, data });
      if (crumbs.length > max) crumbs.shift();
    },
    list: () => crumbs.slice(),
  };
}

/**
 * Watches the page: history and hash navigations, fetches and XHRs that fail or answer ≥ 400 (not
 * the SDK's own batches, sent to `endpoint`/api/events), and console.error / console.warn. URLs lose their query and
 * fragment, which often carry tokens.
 */
export function watch(t: Trail, endpoint: string): void {
  const w = window as any;
  let last = stripQuery(location.href);
  const moved = () => {
    const to = stripQuery(location.href);
    if (to != last) t.add('navigation', to, 'info', { from: last, to });
    last = to;
  };
  for (const name of ['pushState', 'replaceState']) {
    const orig = history[name as 'pushState'];
    history[name as 'pushState'] = function (this: History, ...args: Parameters<History['pushState']>) {
      const r = orig.apply(this, args);
      moved();
      return r;
    };
  }
  addEventListener('popstate', moved);
  addEventListener('hashchange', moved);

  const failed = (method: string, url: string, status: number) => {
    if (url.startsWith(endpoint + '/api/events')) return;
    t.add('http', `${method} ${url} ${status || 'failed'}`, 'error', { method, url, status });
  };
  const f = w.fetch;
  if (f) {
    w.fetch = function (input: any, init?: any) {
      const method = String(init?.method || input?.method || 'GET').toUpperCase();
      const url = stripQuery(String(input?.url ?? input));
      return f.apply(this, arguments).then(
        (r: Response) => (r.status >= 400 && failed(method, url, r.status), r),
        (e: unknown) => {
          failed(method, url, 0);
          throw e;
        },
      );
    };
  }
  const X = w.XMLHttpRequest?.prototype;
  if (X) {
    const open = X.open, send = X.send;
    X.open = function (method: string, url: string) {
      this.__wt = [String(method).toUpperCase(), stripQuery(String(url))];
      return open.apply(this, arguments);
    };
    X.send = function () {
      const m = this.__wt;
      if (m) this.addEventListener('loadend', () => (this.status == 0 || this.status >= 400) && failed(m[0], m[1], this.status));
      return send.apply(this, arguments);
    };
  }
  for (const level of ['error', 'warn']) {
    const orig = (console as any)[level];
    (console as any)[level] = function (...args: unknown[]) {
      t.add('console', args.map((a) => (a instanceof Error ? a.message : typeof a == 'string' ? a : safeJson(a))).join(' '), level == 'warn' ? 'warning' : 'error');
      return orig.apply(this, args);
    };
  }
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
