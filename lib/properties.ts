// Custom event properties (docs/api.md#properties): which (key, value) pairs of a `custom` event's
// `data` count, how the rollups name them, and how an answer is built from counted names. Pure
// definitions shared by the reference (computeStats) and the rollups, as lib/breakdowns.ts is.
// Properties are read from the stored event's `data` when it is rolled up, not extracted into a
// field at ingest: the stored events stay the one source, and rollups rebuilt from them after a
// crash (or over segments sealed before properties were kept) count the same pairs.
import { topRows, type BreakdownRow } from './breakdowns.ts';
import { flatCopy } from './flat-string.ts';

/** Properties counted per event: the first ones of `data`, in the order sent. */
export const MAX_PROPERTIES = 10;
/** Longest property key counted; a longer key is skipped (cutting it could merge two keys). */
export const MAX_PROPERTY_KEY = 40;
/** Longest property value kept; longer strings are cut to it. */
export const MAX_PROPERTY_VALUE = 100;

/** What GET /api/stats asks of properties: a key's values and/or the keys, optionally of one event. */
export interface PropertyQuery {
  key?: string;
  /** Only events of this custom event name (as the `customEvents` breakdown names them). */
  event?: string;
  /** List the keys seen (`propertyKeys`). */
  keys?: boolean;
}

// Control characters (and line or paragraph separators) make no key; the rollup name's separator
// is one of them, so a key never holds it.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const SEP = '\u001f';

/** Whether a key is counted: 1–MAX_PROPERTY_KEY characters, no control characters. */
export const isPropertyKey = (key: string): boolean => key.length > 0 && key.length <= MAX_PROPERTY_KEY && !CONTROL.test(key);

/**
 * A property value as counted: a string trimmed and cut to MAX_PROPERTY_VALUE (empty: not
 * counted), a finite number or a boolean in its string form (`String`); null for anything else
 * (objects, arrays, null: `data` is never walked into). NUL becomes U+FFFD, as PostgreSQL's text
 * columns keep it, so that every store counts the same value.
 */
export function propertyValue(v: unknown): string | null {
  let s: string;
  if (typeof v === 'string') {
    s = v.trim();
    // A cut value is a copy: a slice would hold the whole string it was cut from for as long as
    // a rollup or the names below hold the value.
    if (s.length > MAX_PROPERTY_VALUE) s = flatCopy(s.slice(0, MAX_PROPERTY_VALUE).trim());
  }
  else if (typeof v === 'number') s = Number.isFinite(v) ? String(v) : '';
  else if (typeof v === 'boolean') s = v ? 'true' : 'false';
  else return null;
  return s === '' ? null : s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s;
}

/**
 * The rollup name of one property of an event named `event`: key, then the event name's length
 * and the name, then the value. Names of one key sort together; the length makes the split
 * unambiguous whatever the event name holds.
 */
export function propertyName(key: string, event: string, value: string): string {
  const ev = event.includes('\u0000') ? event.replaceAll('\u0000', '\uFFFD') : event;
  return key + SEP + ev.length + SEP + ev + value;
}

/** The parts of a propertyName. */
export function parseProperty(name: string): { key: string; event: string; value: string } {
  const a = name.indexOf(SEP), b = name.indexOf(SEP, a + 1);
  const n = Number(name.slice(a + 1, b));
  return { key: name.slice(0, a), event: name.slice(b + 1, b + 1 + n), value: name.slice(b + 1 + n) };
}

/**
 * The rollup names of a custom event's properties (`event`: its name in the customEvents
 * breakdown): its first MAX_PROPERTIES top-level `data` keys, in their order, that are counted
 * keys with counted values. Other events have none.
 */
export function propertiesOf(type: string, event: string | null, data: unknown): string[] | null {
  if (type !== 'custom' || event === null || typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  let out: string[] | null = null;
  let names: Map<string, Map<string, string>> | undefined;
  // Stops at the MAX_PROPERTIES-th: ingest bounds `data` to MAX_KEYS keys (lib/shape.ts) anyway.
  for (const key in data) {
    if (!KNOWN_KEYS.has(key)) {
      if (!isPropertyKey(key)) continue;
      if (KNOWN_KEYS.size < KNOWN_KEYS_CAP) KNOWN_KEYS.add(key);
    }
    const value = propertyValue((data as Record<string, unknown>)[key]);
    if (value === null) continue;
    if (out === null) {
      out = [];
      names = NAMES.get(event);
      if (names === undefined) NAMES.set(event, (names = new Map()));
    }
    out.push(nameOf(names!, event, key, value));
    if (out.length === MAX_PROPERTIES) break;
  }
  return out;
}

/**
 * Property names made lately, by event name, key and value. A rollup's maps are keyed by these
 * names: a name made afresh for every event is a concatenation that each lookup must flatten,
 * hash and compare by content, several times the cost of looking up a name made once (its hash
 * is kept, and it is its map key by identity). Bounded: past PROPERTY_NAMES_CAP names (~3 MB at
 * the longest values) it is emptied and fills again, so values of high cardinality cost what
 * they did without it.
 */
const NAMES = new Map<string, Map<string, Map<string, string>>>();
export const PROPERTY_NAMES_CAP = 10_000;
let namesHeld = 0;

function nameOf(names: Map<string, Map<string, string>>, event: string, key: string, value: string): string {
  let byValue = names.get(key);
  if (byValue === undefined) names.set(key, (byValue = new Map()));
  let name = byValue.get(value);
  if (name === undefined) {
    if (++namesHeld > PROPERTY_NAMES_CAP) {
      NAMES.clear();
      namesHeld = 1;
      NAMES.set(event, names);
      names.clear();
      names.set(key, byValue);
      byValue.clear();
    }
    name = propertyName(key, event, value);
    byValue.set(value, name);
  }
  return name;
}

/** How many property names are held (at most PROPERTY_NAMES_CAP). */
export const propertyNamesHeld = (): number => namesHeld;

/**
 * Keys already found counted, so that the next event's are not checked again (ingest runs this
 * per custom event). Capped: past the cap keys are simply checked each time.
 */
const KNOWN_KEYS = new Set<string>();
const KNOWN_KEYS_CAP = 10_000;

/**
 * What every name the answer to `q` reads starts with: one key's (of one event's) names sort
 * together, so a reader skips the rest; '' when the keys are listed.
 */
export function propertyPrefix(q: PropertyQuery): string {
  if (q.keys || q.key === undefined) return '';
  if (q.event === undefined) return q.key + SEP;
  return propertyName(q.key, q.event, '');
}

/** The fields of a stats answer that PropertyQuery adds. */
export interface PropertyAnswer {
  properties?: Record<string, BreakdownRow[]>;
  propertyKeys?: BreakdownRow[];
}

/**
 * The answer to `q` from counted names: `names` gives each property name's events and its
 * sessions (any set kind), `unionSize` the distinct sessions of several. Values of a key over
 * several events add their events and unite their sessions. Rows as breakdown rows are (topRows).
 */
export function propertyAnswer<S>(q: PropertyQuery, names: Iterable<[string, { events: number; sessions: S }]>, unionSize: (sets: S[]) => number): PropertyAnswer {
  const values = new Map<string, { events: number; sessions: S[] }>();
  const keys = new Map<string, { events: number; sessions: S[] }>();
  const bump = (m: Map<string, { events: number; sessions: S[] }>, name: string, events: number, sessions: S) => {
    let row = m.get(name);
    if (!row) m.set(name, (row = { events: 0, sessions: [] }));
    row.events += events;
    row.sessions.push(sessions);
  };
  const event = q.event?.replaceAll('\u0000', '\uFFFD');
  for (const [name, row] of names) {
    const p = parseProperty(name);
    if (event !== undefined && p.event !== event) continue;
    if (q.keys) bump(keys, p.key, row.events, row.sessions);
    if (q.key !== undefined && p.key === q.key) bump(values, p.value, row.events, row.sessions);
  }
  const rows = (m: Map<string, { events: number; sessions: S[] }>) =>
    topRows([...m].map(([name, row]) => ({ name, events: row.events, sessions: unionSize(row.sessions) })));
  const out: PropertyAnswer = {};
  if (q.key !== undefined) out.properties = { [q.key]: rows(values) };
  if (q.keys) out.propertyKeys = rows(keys);
  return out;
}
