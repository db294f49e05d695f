// A sealed segment's funnel index: what a funnel reads of its rows, and nothing else. Per owner and
// project, in seq order, each pageload or custom row that has a session as three numbers: its
// receive time, its session and its step key (the route key of a pageload, the name of a custom
// event), the last two as indexes into the segment's lists of distinct sessions and keys. A funnel
// then tests each distinct key against its steps once and walks typed arrays, instead of opening the
// segment's database (gunzip and sql.js) and parsing each row's metadata — which is where a funnel's
// time went (BENCHMARKS.md, Funnels: where the time went).
//
// It is derived from the segment alone and kept in a file beside it: a missing, torn or stale file
// (one whose bounds are not the segment's) is built again from the segment, so a kill -9 at any
// point loses nothing (worker/funnel-indexes.ts).
import { routeKey } from '../../event-keys.ts';
import { customEventName, type FunnelEventFields } from '../../funnels/steps.ts';
import type { SegmentDb } from './segment.ts';

export const funnelIndexFile = (dbPath: string, id: number) => `${dbPath}.seg-${id}.funnel`;

/** The rows of one owner and project (project '' for events sent without a project key). */
export interface FunnelGroup {
  user: string;
  project: string;
  /** Its rows are [start, start + count) of the index's arrays. */
  start: number;
  count: number;
}

export interface FunnelIndex {
  /** The segment's bounds when it was built: a file whose bounds differ is stale. */
  count: number;
  minSeq: number;
  maxSeq: number;
  /** Receive times are ms after this. */
  base: number;
  sessions: string[];
  /** 'p' + route key, 'c' + custom event name, or 'n' (a row that matches no step). */
  keys: string[];
  groups: FunnelGroup[];
  times: Uint32Array;
  sessionOf: Uint32Array;
  keyOf: Uint32Array;
}

/** The step fields of a key (what stepMatcher tests). */
export function fieldsOfKey(key: string): FunnelEventFields {
  if (key[0] === 'p') return { type: 'pageload', page: key.slice(1), name: null };
  if (key[0] === 'c') return { type: 'custom', page: null, name: key.slice(1) };
  return { type: 'none', page: null, name: null };
}

// The fields a step reads, as the funnel's SQL read picks them (worker/funnel.ts): the metadata
// holds route and url (no column does), and page_url only when it differs from its column.
const BUILD = `SELECT received_at, session_id, type, page_url, user_id,
  json_extract(metadata, '$.route', '$.url', '$.page_url', '$.name', '$.eventName', '$.data.name', '$.projectId')
  FROM events INDEXED BY events_user WHERE type IN ('pageload', 'custom') AND session_id IS NOT NULL ORDER BY user_id, seq`;

/** The step key of a row, as routeKey and customEventName read the event. */
export function stepKey(type: string, pageUrl: string | null, f: unknown[]): string {
  const [route, url, ownPageUrl, name, eventName, dataName] = f;
  if (type === 'pageload') {
    const page = routeKey({ route: route as string | null, url: url as string | null, page_url: (ownPageUrl ?? pageUrl) as string | null });
    return typeof page === 'string' ? 'p' + page : 'n';
  }
  const n = customEventName({ name, eventName, data: { name: dataName } });
  return n === null ? 'n' : 'c' + n;
}

/** The index of a segment's database (one pass over its pageload and custom rows). */
export function buildFunnelIndex(db: SegmentDb, bounds: { count: number; minSeq: number; maxSeq: number }): FunnelIndex {
  const rows: { user: string; project: string; t: number; session: number; key: number }[] = [];
  const sessions = new Map<string, number>(), keys = new Map<string, number>();
  const idOf = (m: Map<string, number>, v: string) => {
    let id = m.get(v);
    if (id === undefined) m.set(v, (id = m.size));
    return id;
  };
  let base = Infinity;
  const s = db.statement(BUILD);
  try {
    while (s.step()) {
      const [received, session, type, pageUrl, user, fields] = s.get() as [string, string, string, string | null, string, string];
      const f = JSON.parse(fields) as unknown[];
      const t = Date.parse(received);
      if (t < base) base = t;
      rows.push({ user, project: typeof f[6] === 'string' ? f[6] : '', t, session: idOf(sessions, session), key: idOf(keys, stepKey(type, pageUrl, f)) });
    }
  } finally {
    s.reset();
  }
  if (!Number.isFinite(base)) base = 0;
  // Grouped by owner then project; a stable sort keeps seq order within each group.
  rows.sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : a.project < b.project ? -1 : a.project > b.project ? 1 : 0));
  const n = rows.length;
  const index: FunnelIndex = {
    ...bounds, base, sessions: [...sessions.keys()], keys: [...keys.keys()], groups: [],
    times: new Uint32Array(n), sessionOf: new Uint32Array(n), keyOf: new Uint32Array(n),
  };
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    const g = index.groups[index.groups.length - 1];
    if (!g || g.user !== r.user || g.project !== r.project) index.groups.push({ user: r.user, project: r.project, start: i, count: 1 });
    else g.count++;
    // A segment spans at most a day or so: the offsets fit 32 bits (checked, since a wrong time would be a wrong answer).
    const dt = r.t - base;
    if (!(dt >= 0 && dt < 2 ** 32)) throw new Error(`a row's receive time is ${dt} ms after the segment's first`);
    index.times[i] = dt;
    index.sessionOf[i] = r.session;
    index.keyOf[i] = r.key;
  }
  return index;
}

const MAGIC = 'watchtower-funnel-index-1\n';

/** The file's bytes: magic, header length (u32), JSON header, padding to 4, the three arrays. */
export function encodeFunnelIndex(x: FunnelIndex): Uint8Array {
  const header = new TextEncoder().encode(JSON.stringify({
    count: x.count, minSeq: x.minSeq, maxSeq: x.maxSeq, base: x.base, rows: x.times.length, sessions: x.sessions, keys: x.keys, groups: x.groups,
  }));
  const magic = new TextEncoder().encode(MAGIC);
  const head = magic.length + 4 + header.length;
  const at = Math.ceil(head / 4) * 4;
  const n = x.times.length;
  const out = new Uint8Array(at + n * 12);
  out.set(magic, 0);
  new DataView(out.buffer).setUint32(magic.length, header.length, true);
  out.set(header, magic.length + 4);
  const arrays = new Uint32Array(out.buffer, at, n * 3);
  arrays.set(x.times, 0);
  arrays.set(x.sessionOf, n);
  arrays.set(x.keyOf, 2 * n);
  return out;
}

/** The index of a file's bytes; null when they are not a whole index (torn, or another format). */
export function decodeFunnelIndex(bytes: Uint8Array): FunnelIndex | null {
  try {
    const magic = new TextEncoder().encode(MAGIC);
    if (bytes.length < magic.length + 4 || new TextDecoder().decode(bytes.subarray(0, magic.length)) !== MAGIC) return null;
    const len = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(magic.length, true);
    const h = JSON.parse(new TextDecoder().decode(bytes.subarray(magic.length + 4, magic.length + 4 + len))) as Omit<FunnelIndex, 'times' | 'sessionOf' | 'keyOf'> & { rows: number };
    const at = Math.ceil((magic.length + 4 + len) / 4) * 4;
    const n = h.rows;
    if (!Number.isInteger(n) || bytes.length !== at + n * 12) return null;
    // Copied out: the file's buffer need not be aligned, and the index outlives it.
    const arrays = new Uint32Array(n * 3);
    new Uint8Array(arrays.buffer).set(bytes.subarray(at));
    for (const g of h.groups) if (!(g.start >= 0 && g.count >= 0 && g.start + g.count <= n)) return null;
    for (let i = 0; i < n; i++) if (arrays[n + i] >= h.sessions.length || arrays[2 * n + i] >= h.keys.length) return null;
    return {
      count: h.count, minSeq: h.minSeq, maxSeq: h.maxSeq, base: h.base, sessions: h.sessions, keys: h.keys, groups: h.groups,
      times: arrays.subarray(0, n), sessionOf: arrays.subarray(n, 2 * n), keyOf: arrays.subarray(2 * n),
    };
  } catch {
    return null;
  }
}

/** Bytes an index holds in memory, roughly (the cache's budget counts these). */
export const funnelIndexBytes = (x: FunnelIndex): number =>
  x.times.length * 12 + x.sessions.reduce((n, s) => n + 40 + s.length * 2, 0) + x.keys.reduce((n, s) => n + 40 + s.length * 2, 0);
