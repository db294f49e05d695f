// Event ⇄ row. The row's columns already hold most of a stored event, so `metadata` keeps only
// what the columns cannot give back (appName, url, route, data, custom fields, and any field whose
// value differs from its column): the full JSON of every event doubled the database, which sql.js
// holds in memory and copies on every snapshot. A page load's campaign is given back by its URL
// too: how a segment's rows keep it is the segment's row format (RowFormat).
import type { StoredEvent } from '../../event.ts';
import { utmOf } from '../../event-fields.ts';
import { rollupRow, type RollupRow } from '../../rollup/hour.ts';
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

/**
 * How a segment's rows keep an event's campaign (`utm`), recorded in the segment's `meta` table
 * (segment.ts). 1: in metadata, as any other field. 2: metadata's `utm` is `true` where the
 * campaign is the one the event's URL gives (every campaign this version reads at ingest), else
 * `[value]`; the key keeps its place, so the event reads back in its key order. Format 2 spares each
 * page load of a campaign ~60 characters that sqlite's ingest serialised, bound and held (BENCHMARKS.md,
 * ingest cost of campaigns). A segment written before format 2 has no record and keeps format 1:
 * its page loads stored without a campaign must not gain one from their URLs.
 */
export type RowFormat = 1 | 2;
/** The format of the rows of every segment made from now on. */
export const ROW_FORMAT: RowFormat = 2;

/** The URL a stored event's campaign is read from, as normalise reads it. */
const campaignUrl = (e: Record<string, unknown>) => {
  const url = e.url ?? e.page_url;
  return typeof url === 'string' ? url : null;
};

/** Whether `utm` is, key for key and in order, the campaign `derived` from the event's URL. */
function isDerived(utm: unknown, derived: Record<string, string> | null): boolean {
  if (derived === null || typeof utm !== 'object' || utm === null || Array.isArray(utm)) return false;
  const keys = Object.keys(utm);
  const want = Object.keys(derived);
  if (keys.length !== want.length) return false;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] !== want[i] || (utm as Record<string, unknown>)[keys[i]] !== derived[keys[i]]) return false;
  }
  return true;
}

/** The metadata JSON, in `format`, for an event whose columns are `cols` (metadata excluded). */
export function metadataOf(e: StoredEvent, cols: ColValues, format: RowFormat): string {
  const fromColumns = core(cols);
  const meta: Record<string, unknown> = {};
  for (const key of Object.keys(e)) {
    if (Object.hasOwn(fromColumns, key) && fromColumns[key] === e[key]) continue;
    meta[key] = e[key];
  }
  if (format === 2 && Object.hasOwn(meta, 'utm')) {
    meta.utm = isDerived(meta.utm, utmOf(campaignUrl(e)) as Record<string, string> | null) ? true : [meta.utm];
  }
  return JSON.stringify(meta);
}

/**
 * The event of a row. A row written before ingest bounded the shape of events may nest deeper than
 * MAX_DEPTH: it is read cut at that depth (lib/shape.ts), so that no read fails on it (the worker's
 * answers are structured clones, which refuse a few thousand levels).
 */
export function eventFromRow(v: RowValues, format: RowFormat): StoredEvent {
  const fromColumns = core(v);
  const meta = JSON.parse(v[11]) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of ORDER) {
    if (Object.hasOwn(meta, key)) out[key] = meta[key];
    else if (Object.hasOwn(fromColumns, key)) out[key] = fromColumns[key];
  }
  for (const key of Object.keys(meta)) if (!Object.hasOwn(out, key)) out[key] = meta[key];
  if (format === 2 && Object.hasOwn(out, 'utm')) out.utm = out.utm === true ? utmOf(campaignUrl(out)) : Array.isArray(out.utm) ? out.utm[0] : out.utm;
  return withinDepth(out as StoredEvent);
}

// The owner column holds '' for "no owner" (NOT NULL, read back as null): the owner key of the
// main thread's dedupe and of the worker's start-up, where anonymous events are deduped too.
export const ownerKey = (userId: string | null) => userId ?? '';

/**
 * The columns rollups and live windows are kept from (rowFrom reads them): the whole event, since
 * breakdowns and vitals read its client, referrer and data.
 */
export const TRACK_COLUMNS = `seq, ${ROW_COLUMNS}`;

export interface TrackedRow { seq: number; owner: string; row: RollupRow; e: StoredEvent }

/** A row of TRACK_COLUMNS, of a segment in `format`, as rollups and live windows take it. */
export function rowFrom(v: unknown[], format: RowFormat): TrackedRow {
  const e = eventFromRow(v.slice(1) as RowValues, format);
  return { seq: v[0] as number, owner: ownerKey(e.user_id), row: rollupRow(e), e };
}

/**
 * A row as it is written: column values and metadata, not the event. Rows wait in the hot tail for
 * milliseconds to seconds, long enough to leave V8's young generation; holding the parsed events
 * (three times the bytes, and object graphs to trace) grew the worker's heap by ~50 MiB at 4M events.
 */
export interface TailRow {
  /** The segment whose database the row goes to. */
  segment: number;
  seq: number;
  /** Column values (ColValues order) and metadata, as SegmentDb writes and reads them. */
  cols: ColValues;
  metadata: string;
  projectId: string | undefined;
}

/**
 * The row of a stored event, to be written to segment `segment` (whose rows are in `format`) with
 * `seq`, and its rollup row.
 */
export function tailRow(e: StoredEvent, segment: number, format: RowFormat, seq: number): { tail: TailRow; row: RollupRow } {
  const receivedMs = Date.parse(e.receivedAt);
  const received = Number.isFinite(receivedMs) ? new Date(receivedMs).toISOString() : String(e.receivedAt);
  const cols: ColValues = [
    e.id, e.type, e.timestamp, received, ownerKey(e.user_id), e.sessionId || null, e.deployVersion ?? null,
    e.page_url ?? null, e.source ?? null, e.message ?? null, e.severity ?? null,
  ];
  return { tail: { segment, seq, cols, metadata: metadataOf(e, cols, format), projectId: e.projectId }, row: rollupRow(e, receivedMs) };
}

/** A TailRow of a segment in `format`, read back as its database reads its rows. */
export const eventOfTail = (r: TailRow, format: RowFormat): StoredEvent => eventFromRow([...r.cols, r.metadata], format);

/** A TailRow of a segment in `format`, read back as SegmentDb.track reads a row (rowFrom). */
export const trackedOfTail = (r: TailRow, format: RowFormat): TrackedRow => rowFrom([r.seq, ...r.cols, r.metadata], format);
