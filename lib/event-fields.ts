// Fields normalise() derives at ingest from what a client sends (docs/api.md#event-fields): the
// environment, the campaign (UTM) parameters of the page URL, and a custom event's name. Pure and
// bounded: whatever a client sends, each is a short string or absent.
import { flatCopy } from './flat-string.ts';

/** Longest environment kept; a longer one is dropped rather than cut (two would merge). */
export const MAX_ENVIRONMENT = 64;
/** Longest UTM value kept; longer values are cut to it. */
export const MAX_UTM = 100;
/** Longest custom event name kept; longer names are cut to it. */
export const MAX_EVENT_NAME = 100;

/** The campaign parameters read from a page URL, each lower-cased and present only when non-empty. */
export interface Utm { source?: string; medium?: string; campaign?: string; term?: string; content?: string }
export const UTM_FIELDS = ['source', 'medium', 'campaign', 'term', 'content'] as const;

// Control characters (and line or paragraph separators) make no environment name.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/**
 * An environment as stored: trimmed, its case kept (as Sentry keeps it: `Production` and
 * `production` are two environments), at most MAX_ENVIRONMENT characters; null when absent,
 * empty, too long or holding control characters.
 */
export function environmentOf(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const s = value.trim();
  return s !== '' && s.length <= MAX_ENVIRONMENT && !CONTROL.test(s) ? s : null;
}

/**
 * The UTM parameters of a page URL's query: `utm_source` → `source`, and so on, decoded (`+` is a
 * space), trimmed, lower-cased and cut to MAX_UTM characters. The first of repeated parameters
 * wins; empty values count as absent; null when none is left. The fragment is not read. The
 * object is frozen and shared by every event of the same query.
 */
export function utmOf(url: string | null): Utm | null {
  // Most URLs have none: the search for the prefix spares them a parse.
  if (url === null || !url.includes('utm_')) return null;
  const q = url.indexOf('?');
  if (q < 0) return null;
  const hash = url.indexOf('#', q);
  const end = hash < 0 ? url.length : hash;
  // Reading a query costs a few µs, for every event of a page that has one: the queries read
  // lately are remembered (a campaign's link is the same for all its visitors, and a batch's
  // events mostly share their page's URL).
  const query = url.slice(q + 1, end);
  if (query.length > MAX_REMEMBERED_QUERY) return utmOfQuery(query);
  let utm = READ.get(query);
  if (utm === undefined) {
    if (READ.size >= MAX_REMEMBERED) READ.clear();
    utm = utmOfQuery(query);
    // A copy: the slice holds the whole URL, which may be long.
    READ.set(flatCopy(query), utm);
  }
  return utm;
}

const READ = new Map<string, Utm | null>();
export const MAX_REMEMBERED = 1000;
/** How many queries utmOf remembers now (at most MAX_REMEMBERED). */
export const rememberedQueries = (): number => READ.size;
const MAX_REMEMBERED_QUERY = 300;

/** The UTM parameters of a query (without its `?`), read as URLSearchParams reads it. */
export function utmOfQuery(query: string): Utm | null {
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(query);
  } catch {
    return null;
  }
  let out: Utm | null = null;
  for (const field of UTM_FIELDS) {
    const value = params.get(`utm_${field}`)?.trim().toLowerCase().slice(0, MAX_UTM).trim();
    // V8 gives decoded query values back as two-byte strings even when every character fits one
    // byte (`été`), and one two-byte string in an event makes the whole journal text of its batch
    // two-byte: twice the bytes to join and post to the worker. Run once per query read.
    if (value) (out ??= {})[field] = NON_ASCII.test(value) ? flatCopy(value) : value;
  }
  // Shared by every event of the query (utmOf): frozen, so that no caller can change another's.
  return out && Object.freeze(out);
}

/**
 * Whether a stored event's campaign (`utm`) holds a character outside ASCII. A campaign read from
 * a percent-encoded query is often the only such text of its event, and one such character makes
 * the whole text of its batch (the ingest answer, the sqlite journal) take the slow path of every
 * UTF-8 encode after it; those texts write such an event with asciiJson.
 */
export function wideCampaign(utm: unknown): boolean {
  if (typeof utm !== 'object' || utm === null || Array.isArray(utm)) return false;
  for (const field in utm) {
    const v = (utm as Record<string, unknown>)[field];
    if (typeof v === 'string' && NON_ASCII.test(v)) return true;
  }
  return false;
}

const NON_ASCII = /[^\x00-\x7f]/;
const NON_ASCII_ALL = /[\u0080-\uffff]/g;
const escapeChar = (c: string) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');

/** JSON text with every character outside ASCII written as a `\u` escape: the same value, in ASCII. */
export const asciiJson = (text: string): string => text.replace(NON_ASCII_ALL, escapeChar);

/**
 * The name of a `custom` event: its `name`, else `eventName`, else `data.name`, the first that is
 * a non-blank string, trimmed and cut to MAX_EVENT_NAME characters; null when none is.
 */
export function customEventName(name: unknown, eventName: unknown, data: Record<string, unknown>): string | null {
  for (const v of [name, eventName, data.name]) {
    if (typeof v !== 'string') continue;
    const s = v.trim();
    // A cut name is a copy: a slice would hold the whole string it was cut from (rollups and
    // property names hold the name).
    if (s !== '') return s.length > MAX_EVENT_NAME ? flatCopy(s.slice(0, MAX_EVENT_NAME)) : s;
  }
  return null;
}

/**
 * The `utm_*` parameters of a URL's query as they were written (`?utm_source=x&utm_medium=y`), or
 * '' when it has none: what a URL keeps of its query when the rest is stripped, so that its
 * campaign can still be read at ingest.
 */
export function campaignQuery(url: string): string {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('utm_', q)) return '';
  const hash = url.indexOf('#', q);
  const kept = url.slice(q + 1, hash < 0 ? undefined : hash).split('&').filter((p) => p.startsWith('utm_'));
  return kept.length ? '?' + kept.join('&') : '';
}
