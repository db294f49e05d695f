// Sentry breadcrumbs → the breadcrumbs our own SDK attaches to errors (sdk/breadcrumbs.ts), so
// the issue page shows one timeline whichever SDK sent the error: `{ at, category, message,
// level?, data? }`, categories click, navigation, http and console (others keep Sentry's).
import { isPlainObject } from '../event.ts';
import { isoTimestamp, pageUrl } from './fields.ts';

type Obj = Record<string, unknown>;
export interface Breadcrumb { at: string; category: string; message: string; level?: string; data?: Obj }

/** Breadcrumbs kept per event, the newest: as many as our SDK keeps by default. */
export const MAX_BREADCRUMBS = 30;

const CATEGORIES: Record<string, string> = { 'ui.click': 'click', navigation: 'navigation', fetch: 'http', xhr: 'http', console: 'console' };
const str = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v !== '' ? v.slice(0, max) : undefined);

/** `breadcrumbs` as `{ values: [...] }` or a bare array → at most MAX_BREADCRUMBS, oldest first. */
export function breadcrumbs(value: unknown): Breadcrumb[] | undefined {
  const list = Array.isArray(value) ? value : isPlainObject(value) && Array.isArray(value.values) ? value.values : [];
  const out: Breadcrumb[] = [];
  for (const b of list.slice(-MAX_BREADCRUMBS)) {
    if (!isPlainObject(b)) continue;
    const crumb = breadcrumb(b);
    if (crumb) out.push(crumb);
  }
  return out.length ? out : undefined;
}

function breadcrumb(b: Obj): Breadcrumb | undefined {
  const at = isoTimestamp(b.timestamp);
  const sentryCategory = str(b.category, 64) ?? str(b.type, 64) ?? 'default';
  const category = Object.hasOwn(CATEGORIES, sentryCategory) ? CATEGORIES[sentryCategory] : sentryCategory;
  const data = isPlainObject(b.data) ? b.data : {};
  const level = str(b.level, 16);
  let message = str(b.message, 200);
  let kept: Obj | undefined;
  if (category === 'navigation') {
    const from = pageUrl(data.from), to = pageUrl(data.to);
    kept = { from, to };
    message ??= to;
  } else if (category === 'http') {
    const method = str(data.method, 16) ?? 'GET', url = pageUrl(data.url);
    const status = typeof data.status_code === 'number' ? data.status_code : undefined;
    kept = { method, url, status };
    message ??= `${method} ${url ?? ''} ${status ?? 'failed'}`;
  }
  if (!at || !message) return undefined;
  const crumb: Breadcrumb = { at, category, message: message.slice(0, 200) };
  if (level) crumb.level = level;
  if (kept) crumb.data = Object.fromEntries(Object.entries(kept).filter(([, v]) => v !== undefined));
  return crumb;
}
