// Event ⇄ row. The row's columns already hold most of a stored event, so `metadata` keeps only
// what the columns cannot give back (appName, url, route, data, custom fields, and any field whose
// value differs from its column): the full JSON of every event doubled the database, which sql.js
// holds in memory and copies on every snapshot.
import type { StoredEvent } from '../../event.ts';
import { withinDepth } from '../../shape.ts';

/** Column values of one row without metadata, in the order of ROW_COLUMNS. */
export type ColValues = [id: string, type: string, timestamp: string, received_at: string, user_id: string,
  session_id: string | null, app_version: string | null, page_url: string | null, source: string | null,
  message: string | null, severity: string | null];
export type RowValues = [...ColValues, metadata: string];

export const ROW_COLUMNS = 'id, type, timestamp, received_at, user_id, session_id, app_version, page_url, source, message, severity, metadata';

// Key order of normalise(): events read back serialise like the ones that were sent.
const ORDER = [
  'id', 'type', 'timestamp', 'receivedAt', 'received_at', 'user_id', 'sessionId', 'session_id', 'deployVersion',
  'app_version', 'appName', 'url', 'page_url', 'route', 'source', 'message', 'severity', 'data',
];

function core(v: ColValues | RowValues): Record<string, unknown> {
  return {
    id: v[0],
    type: v[1],
    timestamp: v[2],
    receivedAt: v[3],
    received_at: v[3],
    user_id: v[4] === '' ? null : v[4],
    sessionId: v[5],
    session_id: v[5],
    deployVersion: v[6],
    app_version: v[6],
    page_url: v[7],
    source: v[8],
    message: v[9],
    severity: v[10],
  };
}

/** The metadata JSON for an event whose columns are `cols` (metadata excluded). */
export function metadataOf(e: StoredEvent, cols: ColValues): string {
  const fromColumns = core(cols);
  const meta: Record<string, unknown> = {};
  for (const key of Object.keys(e)) {
    if (Object.hasOwn(fromColumns, key) && fromColumns[key] === e[key]) continue;
    meta[key] = e[key];
  }
  return JSON.stringify(meta);
}

/**
 * The event of a row. A row written before ingest bounded the shape of events may nest deeper than
 * MAX_DEPTH: it is read cut at that depth (lib/shape.ts), so that no read fails on it (the worker's
 * answers are structured clones, which refuse a few thousand levels).
 */
export function eventFromRow(v: RowValues): StoredEvent {
  const fromColumns = core(v);
  const meta = JSON.parse(v[11]) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of ORDER) {
    if (Object.hasOwn(meta, key)) out[key] = meta[key];
    else if (Object.hasOwn(fromColumns, key)) out[key] = fromColumns[key];
  }
  for (const key of Object.keys(meta)) if (!Object.hasOwn(out, key)) out[key] = meta[key];
  return withinDepth(out as StoredEvent);
}

// The owner column holds '' for "no owner" (NOT NULL, read back as null): the owner key of the
// main thread's dedupe and of the worker's start-up, where anonymous events are deduped too.
export const ownerKey = (userId: string | null) => userId ?? '';
