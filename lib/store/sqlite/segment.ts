// The read side of one segment's database (sql.js), hot or sealed: pages of rows by seq, rows of a
// receive-time span as rollup rows, one event by id. The worker reads across segments by asking
// each in seq order, through SegmentReader (the hot segment's reader adds the rows still in the
// tail, hot-tail.ts); the hot segment adds inserts and retention on top.
import type { Database, Statement } from 'sql.js';
import type { StoredEvent } from '../../event.ts';
import { errorFilter, rowFilter } from './row-filter.ts';
import { ROW_COLUMNS, ROW_FORMAT, TRACK_COLUMNS, eventFromRow, rowFrom, type RowFormat, type RowValues, type TailRow, type TrackedRow } from './row.ts';
import type { RowsQuery } from './protocol.ts';

/**
 * A segment's tables. Databases made before the rollups also have route_key, duration, ttfb and
 * rating columns (statistics were SQL over them then); nothing reads or writes them any more, and
 * binding them cost every insert. Every index costs on each insert, so there are only two (see
 * docs/architecture.md, Indexes): by user (pages in seq order; a filter by type or version walks
 * the user's rows and checks the column, which a segment's bound on its events keeps short) and by
 * (user, received time), which the partial hours of every stats range read. The indexes by type and
 * version and the unique (user, id) index are dropped from databases that have them: start-up
 * keeps the snapshot's keys in a set to replay idempotently instead. A database without rows is
 * given the current row format (row.ts: RowFormat); one with rows and no record keeps format 1.
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL,
  type TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  source TEXT,
  session_id TEXT,
  page_url TEXT,
  message TEXT,
  severity TEXT,
  app_version TEXT,
  metadata TEXT NOT NULL,
  received_at TEXT NOT NULL,
  user_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_user ON events(user_id);
CREATE INDEX IF NOT EXISTS events_user_received ON events(user_id, received_at);
DROP INDEX IF EXISTS events_user_id;
DROP INDEX IF EXISTS events_user_type;
DROP INDEX IF EXISTS events_user_version;
CREATE TABLE IF NOT EXISTS users (
  idp_user_id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  display_name TEXT NOT NULL,
  last_seen_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (key, value) SELECT 'rowFormat', ${ROW_FORMAT} WHERE NOT EXISTS (SELECT 1 FROM events);
`;

/** The row format a segment's database records (format 1 where it records none, or has no meta table). */
function rowFormatOf(db: Database): RowFormat {
  const hasMeta = db.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").length > 0;
  const value = hasMeta ? db.exec("SELECT value FROM meta WHERE key = 'rowFormat'")[0]?.values[0][0] : undefined;
  return value === 2 ? 2 : 1;
}

/** Rows of one owner for SegmentDb.track. */
export interface TrackQuery {
  userId: string;
  /** Receive times [start, end); infinite bounds are none. */
  start: number;
  end: number;
  order: 'ASC' | 'DESC';
  /** The index walked (see track); 'received' unless said. */
  via?: 'received' | 'seq';
  /** Only rows of this type. */
  type?: string;
  /** Only rows of events ingested with this project's key. */
  projectId?: string;
  /** Only rows of events of this environment. */
  environment?: string;
}

/** The row filter of a TrackQuery. */
export const trackBounds = (q: TrackQuery) => ({ userId: q.userId, type: q.type, projectId: q.projectId, environment: q.environment, since: q.start, until: q.end });

export interface SeqRows {
  events: StoredEvent[];
  seqs: number[];
}

/** What reads ask of a segment, hot or sealed. */
export interface SegmentReader {
  /** Up to `limit` rows of the filter, by seq in the query's order. */
  rows(q: RowsQuery, limit: number): SeqRows;
  /** Error rows of identified owners with seq in (after, upTo], oldest first, at most `limit`. */
  errors(after: number, upTo: number, limit: number): SeqRows;
  /** The owner's rows received in [start, end), by seq; `each` sees every one and may stop (false). */
  track(q: TrackQuery, each: (r: TrackedRow) => boolean | void): void;
}

const INSERT = `INSERT INTO events (seq, id, type, timestamp, source, session_id, page_url, message, severity, app_version,
  metadata, received_at, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export class SegmentDb implements SegmentReader {
  private stmts = new Map<string, Statement>();
  /** How this segment's rows keep campaigns; its rows still in the tail are in it too. */
  readonly format: RowFormat;

  constructor(readonly db: Database) {
    this.format = rowFormatOf(db);
  }

  /** Writes rows (hot-tail.ts) in one transaction. */
  insert(rows: readonly TailRow[]): void {
    const insert = this.statement(INSERT);
    this.db.exec('BEGIN');
    try {
      for (const { seq, cols: c, metadata } of rows) insert.run([seq, c[0], c[1], c[2], c[8], c[5], c[7], c[9], c[10], c[6], metadata, c[3], c[4]]);
      this.db.exec('COMMIT');
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  /** A statement prepared once per database and kept (freed by close or export). */
  statement(text: string): Statement {
    let s = this.stmts.get(text);
    if (!s) this.stmts.set(text, (s = this.db.prepare(text)));
    return s;
  }

  /** One number from a query (null when no row or NULL). */
  scalar(text: string, params: (string | number)[] = []): number | null {
    const s = this.statement(text);
    s.bind(params);
    try {
      return s.step() ? (s.get()[0] as number | null) : null;
    } finally {
      s.reset();
    }
  }

  /**
   * Up to `limit` rows of the filter, by seq in the query's order. Walks the user's index and checks
   * type, version and received_at on each row.
   */
  rows(q: RowsQuery, limit: number): SeqRows {
    const { where, params } = rowFilter(q);
    // INDEXED BY: sql.js's planner otherwise may pick the (user_id, id) index and sort the user's rows.
    return this.seqRows(`SELECT seq, ${ROW_COLUMNS} FROM events INDEXED BY events_user WHERE ${where} ` +
      `ORDER BY seq ${q.order === 'newest' ? 'DESC' : 'ASC'} LIMIT ?`, [...params, limit]);
  }

  /**
   * Error rows of identified owners with seq in (after, upTo], oldest first, at most `limit`: issue
   * processing's feed across owners. Walks the seq key, so it costs the rows it passes.
   */
  errors(after: number, upTo: number, limit: number): SeqRows {
    const { where, params } = errorFilter(after, Math.min(upTo, Number.MAX_SAFE_INTEGER));
    return this.seqRows(`SELECT seq, ${ROW_COLUMNS} FROM events WHERE ${where} ORDER BY seq LIMIT ?`, [...params, limit]);
  }

  /** The events and seqs a `SELECT seq, ROW_COLUMNS` statement answers. */
  private seqRows(sql: string, params: (string | number)[]): SeqRows {
    const s = this.statement(sql);
    const out: SeqRows = { events: [], seqs: [] };
    s.bind(params);
    try {
      while (s.step()) {
        const v = s.get();
        out.seqs.push(v[0] as number);
        out.events.push(eventFromRow(v.slice(1) as RowValues, this.format));
      }
    } finally {
      s.reset();
    }
    return out;
  }

  /**
   * The owner's rows received in [start, end), by seq; `each` sees every one and may stop (false).
   * `via`: the index walked. 'received' finds a narrow span's rows (and sorts them by seq); 'seq'
   * walks the owner's rows in seq order, checking their receive time, which lets a newest-first
   * reader that stops early read only the rows it takes.
   */
  track(q: TrackQuery, each: (r: TrackedRow) => boolean | void): void {
    const { where, params } = rowFilter(trackBounds(q));
    const index = q.via === 'seq' ? 'events_user' : 'events_user_received';
    const s = this.statement(`SELECT ${TRACK_COLUMNS} FROM events INDEXED BY ${index} WHERE ${where} ORDER BY seq ${q.order}`);
    s.bind(params);
    try {
      while (s.step()) if (each(rowFrom(s.get(), this.format)) === false) break;
    } finally {
      s.reset();
    }
  }

  /** Rows of events ingested with a project key (`all`: every row), seq in [fromSeq, endSeq), by seq. */
  projectRows(fromSeq: number, endSeq: number, each: (r: TrackedRow) => void, all = false): void {
    const s = this.statement(all ? `SELECT ${TRACK_COLUMNS} FROM events WHERE seq >= ? AND seq < ? ORDER BY seq`
      : `SELECT ${TRACK_COLUMNS} FROM events WHERE seq >= ? AND seq < ? AND json_extract(metadata, '$.projectId') IS NOT NULL ORDER BY seq`);
    s.bind([fromSeq, endSeq]);
    try {
      while (s.step()) each(rowFrom(s.get(), this.format));
    } finally {
      s.reset();
    }
  }

  /** A copy of the database file (stock sql.js only: it frees every statement, so they are forgotten). */
  export(): Uint8Array {
    this.stmts.clear();
    return this.db.export();
  }

  close(): void {
    for (const s of this.stmts.values()) s.free();
    this.stmts.clear();
    this.db.close();
  }
}
