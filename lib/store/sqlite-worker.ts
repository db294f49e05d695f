// The worker thread that owns the sqlite store's database (sql.js). sqlite.ts starts it; see there
// for the design. This side holds everything that touches the database: schema, inserts, the per-user
// rollups and live windows, reads, retention, health figures, start-up (snapshot load, journal replay) and
// snapshots (the database file → temp file → fsync → rename → fsync dir → delete covered journal
// segments). Its file operations go through a StoreFs (fs.ts), as the main thread's do.
//
// Why a thread: writing a snapshot holds the database for seconds at 1M events (its file changes
// with the next write, and sql.js cannot read a database out incrementally). Here it holds only
// this thread; the main thread keeps journaling and acknowledging. Messages are handled strictly in
// arrival order, each only once the previous one's database work is done (a snapshot's: once its
// file is written), which is what makes snapshots and read-your-writes correct.
import { basename, dirname, join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import type { Database, Statement } from 'sql.js';
import type { StoredEvent } from '../event.ts';
import { LiveWindow, type LiveWindowState, type Recents } from '../live-window.ts';
import { assembleStats, planStats } from '../rollup/assemble.ts';
import { HourRollup, type RollupRow } from '../rollup/hour.ts';
import { UserRollups } from '../rollup/user.ts';
import {
  ACTIVE_WINDOW_MS, LATENCY_POINTS, RECENT_ACTIVITY, RECENT_ERRORS, feedbackRating, pageloadDuration, routeKey,
  type LatencyPoint, type ResolvedRange, type Stats, type StatsRange,
} from '../stats.ts';
import { isoBounds } from './filter.ts';
import { loadStoreFs, removeGradually, renameDurably, writeNewFile, type StoreFs, type StoreFsModule } from './fs.ts';
import { listSegments, readSegments, removeSegmentsUpTo, type JournalEntry } from './journal.ts';
import { databaseFile, loadSqlJs, readDatabaseFile } from './sqljs.ts';
import { ROW_COLUMNS, eventFromRow, metadataOf, ownerKey, type ColValues, type RowValues } from './sqlite-row.ts';
import type { AppUser, EventFilter } from './types.ts';

// ---- the protocol (main thread ⇄ worker) ----

export interface InitArgs {
  path: string;
  retentionDays: number;
  maxEvents: number;
  now: number;
  /** The main thread has a beforeSnapshotRename hook: ask it before each rename. */
  askBeforeRename: boolean;
  /** Where the file operations come from; node:fs when absent. */
  fs?: StoreFsModule;
}

export interface InitResult {
  /** Owner → that owner's event ids joined by '\n': the main thread's dedupe set. */
  keys: Record<string, string>;
  /** The last journal segment found (0 when none): the writer continues after it. */
  lastSegment: number;
  /** Whether start-up changed the database (replay, retention, torn lines): compact now. */
  compact: boolean;
}

export interface HealthFigures {
  eventCount: number;
  usersWithEvents: number;
  databaseBytes: number;
  snapshotBytes: number;
  /** heldMs: how long the snapshot held the database (reads waited); totalMs: until the file was in place. */
  lastSnapshot: { at: string; events: number; bytes: number; heldMs: number; totalMs: number } | null;
  prunedEvents: number;
  startup: { replayedEntries: number; replayMs: number; tornLinesSkipped: number };
}

/** A page of `list` or a batch of `export`, by sequence number (the main thread owns the cursor). */
export interface RowsQuery extends EventFilter {
  /** Only rows with seq below this (a page of list, newest first). */
  beforeSeq?: number;
  /** Only rows with seq above this (a batch of export, oldest first). */
  afterSeq?: number;
  /** Only rows with seq at most this (the end an export fixed when it began). */
  maxSeq?: number;
  order: 'newest' | 'oldest';
  limit: number;
}

export interface RowsResult {
  events: StoredEvent[];
  /** Seq of the last event returned (null when none). */
  lastSeq: number | null;
  /** Whether another row matches past the last one returned. */
  more: boolean;
  /** The highest seq stored when the rows were read. */
  maxSeq: number;
}

export type Request =
  | { op: 'init'; args: InitArgs }
  /** Journal lines (entries the main thread decided are new), applied in order. */
  | { op: 'apply'; lines: string; now: number }
  | { op: 'rows'; query: RowsQuery }
  | { op: 'stats'; userId: string; now: number; range?: StatsRange }
  | { op: 'getUser'; idpUserId: string }
  | { op: 'health' }
  | { op: 'prune'; now: number }
  /** Export now; the database holds exactly the journal segments up to `covered`. */
  | { op: 'snapshot'; covered: number; reason: string; now: number }
  | { op: 'close' };

export type ToWorker = { id: number; req: Request } | { renameAnswer: number; error: string | null };

export type FromWorker =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { name: string; message: string; path?: string } }
  | { log: string }
  /** Rows retention removed, as owner, id, owner, id, …: the main thread forgets their keys. */
  | { pruned: string[] }
  | { beforeRename: number; tmp: string };

// ---- the database ----

const DAY_MS = 86_400_000;
const PRUNE_BATCH = 2000;
/** Snapshot bytes written between two syncs of the temp file (see writeNewFile). */
const SYNC_EVERY = 2 << 20;

const SCHEMA = `
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
  user_id TEXT NOT NULL,
  route_key TEXT,
  duration REAL,
  ttfb REAL,
  rating INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS events_user_id ON events(user_id, id);
CREATE INDEX IF NOT EXISTS events_user ON events(user_id);
CREATE INDEX IF NOT EXISTS events_user_type ON events(user_id, type);
CREATE INDEX IF NOT EXISTS events_user_version ON events(user_id, app_version);
CREATE INDEX IF NOT EXISTS events_user_received ON events(user_id, received_at);
CREATE INDEX IF NOT EXISTS events_user_session ON events(user_id, session_id);
CREATE TABLE IF NOT EXISTS users (
  idp_user_id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  display_name TEXT NOT NULL,
  last_seen_at TEXT NOT NULL
);
`;


class CorruptFile extends Error {
  override name = 'CorruptDatabaseError';
}

const port = parentPort!;
const post = (m: FromWorker) => port.postMessage(m);
const log = (msg: string) => post({ log: msg });

/** The open database and everything derived from it. One per worker. */
class Engine {
  private insertStmt: Statement;
  private upsertUserStmt: Statement;
  private getUserStmt: Statement;
  private listStmts: Record<'all' | 'type' | 'version' | 'both', Statement>;
  /** Statements of `rows`, by the shape of the query (which filters it has). */
  private rowsStmts = new Map<string, Statement>();
  private activeStmt: Statement;
  private oldestStmt: Statement;
  private deleteUpToStmt: Statement;
  /** Per owner: the rollups and the live window that statistics are assembled from. */
  private scopes = new Map<string, Scope>();
  /**
   * Whether the rollups (and the main thread's keys) follow the rows. Not during start-up's replay
   * and retention: one scan afterwards derives both from what is left (`derive`).
   */
  private derived = false;
  private eventCount = 0;
  private maxSeq = 0;
  private prunedTotal = 0;
  private unloggedAge = 0;
  private unloggedCount = 0;
  private lastPruneLog = -Infinity;
  private snapshotBytes = 0;
  private lastSnapshot: HealthFigures['lastSnapshot'] = null;
  startup = { replayedEntries: 0, replayMs: 0, tornLinesSkipped: 0 };
  private renameAnswers = new Map<number, (error: string | null) => void>();
  private renameTokens = 0;

  constructor(private db: Database, private args: InitArgs, private fs: StoreFs) {
    // Our journal is the durability; SQLite's own rollback journal can stay in memory.
    db.exec('PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=MEMORY;');
    try {
      db.exec(SCHEMA);
    } catch (err) {
      throw new CorruptFile(String(err instanceof Error ? err.message : err));
    }
    this.insertStmt = db.prepare(
      `INSERT OR IGNORE INTO events (seq, id, type, timestamp, source, session_id, page_url, message, severity, app_version,
         metadata, received_at, user_id, route_key, duration, ttfb, rating)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.upsertUserStmt = db.prepare(
      `INSERT INTO users (idp_user_id, email, display_name, last_seen_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(idp_user_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`,
    );
    this.getUserStmt = db.prepare('SELECT idp_user_id, email, display_name, last_seen_at FROM users WHERE idp_user_id = ?');
    // INDEXED BY: sql.js's planner otherwise may pick the (user_id, id) index and sort the user's rows.
    this.listStmts = {
      all: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user WHERE user_id = ? ORDER BY seq DESC LIMIT ?`),
      type: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_type WHERE user_id = ? AND type = ? ORDER BY seq DESC LIMIT ?`),
      version: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_version WHERE user_id = ? AND app_version = ? ORDER BY seq DESC LIMIT ?`),
      both: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_type WHERE user_id = ? AND type = ? AND app_version = ? ORDER BY seq DESC LIMIT ?`),
    };
    this.activeStmt = db.prepare(
      `SELECT COUNT(DISTINCT session_id) FROM events INDEXED BY events_user_received
       WHERE user_id = ? AND received_at >= ? AND received_at <= ? AND session_id IS NOT NULL`,
    );
    this.oldestStmt = db.prepare(`SELECT ${TRACK_COLUMNS} FROM events ORDER BY seq LIMIT ?`);
    this.deleteUpToStmt = db.prepare('DELETE FROM events WHERE seq <= ?');
    const s = db.prepare('SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM events');
    s.step();
    [this.maxSeq, this.eventCount] = s.get() as number[];
    s.free();
  }

  /** Counts a stored event in its owner's rollups and live window (unowned events count for no one). */
  private track(owner: string, row: RollupRow, e: WindowEvent) {
    if (owner === '') return;
    let scope = this.scopes.get(owner);
    if (!scope) this.scopes.set(owner, (scope = { rollups: new UserRollups(), window: new LiveWindow() }));
    scope.rollups.add(row);
    scope.window.add(e as unknown as StoredEvent, row.receivedMs, row.route);
  }

  /** Takes back an event retention removed: always the oldest stored, as LiveWindow.remove needs. */
  private untrack(owner: string, row: RollupRow, e: WindowEvent) {
    const scope = this.scopes.get(owner);
    if (!scope) return;
    scope.rollups.remove(row);
    scope.window.remove(e as unknown as StoredEvent, row.receivedMs, row.route);
    if (scope.rollups.empty) this.scopes.delete(owner);
  }

  /** Inserts events (in one transaction). Returns how many were new. */
  applyEvents(events: StoredEvent[]): number {
    const { db, insertStmt } = this;
    let added = 0;
    db.exec('BEGIN');
    try {
      for (let i = 0; i < events.length; i++) {
        const e = events[i];
        const owner = ownerKey(e.user_id);
        const receivedMs = Date.parse(e.receivedAt);
        const receivedAt = Number.isFinite(receivedMs) ? new Date(receivedMs).toISOString() : String(e.receivedAt);
        const duration = pageloadDuration(e);
        const route = duration === null ? null : routeKey(e);
        const ttfb = typeof e.data?.ttfb === 'number' && Number.isFinite(e.data.ttfb) ? e.data.ttfb : null;
        const rating = feedbackRating(e);
        const session = e.sessionId || null;
        const seq = this.maxSeq + 1;
        const version = e.deployVersion ?? null;
        const cols: ColValues = [e.id, e.type, e.timestamp, receivedAt, owner, session, version, e.page_url ?? null, e.source ?? null, e.message ?? null, e.severity ?? null];
        insertStmt.run([
          seq, e.id, e.type, e.timestamp, cols[8], session, cols[7], cols[9], cols[10], version,
          metadataOf(e, cols), receivedAt, owner, route, duration, duration === null ? null : ttfb, rating,
        ]);
        // Replay meets events the snapshot already holds; live inserts were deduped by the main thread.
        if (db.getRowsModified() !== 1) continue;
        this.maxSeq = seq;
        this.eventCount++;
        added++;
        if (this.derived) this.track(owner, { receivedMs, type: e.type, version, session, route, duration, rating }, e);
      }
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
    return added;
  }

  applyUser(u: AppUser) {
    this.upsertUserStmt.run([u.idp_user_id, u.email, u.display_name, u.last_seen_at]);
  }

  /** Journal entries in journal order: runs of events in one transaction, users as they come. */
  applyEntries(entries: JournalEntry[]): number {
    let added = 0;
    for (let i = 0; i < entries.length; ) {
      const events: StoredEvent[] = [];
      for (; i < entries.length && events.length < 5000; i++) {
        const entry = entries[i];
        if ('u' in entry) {
          if (events.length) break;
          this.applyUser(entry.u);
          continue;
        }
        events.push(entry.e as unknown as StoredEvent);
      }
      if (events.length) added += this.applyEvents(events);
    }
    return added;
  }

  /**
   * After start-up's replay and retention: the rollups and live windows, rebuilt from the rows (by
   * column, no JSON parsing; the few events the windows keep are read whole afterwards), and every
   * stored (owner, id) grouped by owner for the main thread's dedupe set, in one scan.
   */
  derive(): Record<string, string> {
    this.scopes.clear();
    const ids = new Map<string, string[]>();
    const all = this.db.prepare(`SELECT ${TRACK_COLUMNS} FROM events ORDER BY seq`);
    try {
      while (all.step()) {
        const v = all.get();
        const { owner, row, e } = rowFrom(v);
        this.track(owner, row, e);
        let list = ids.get(owner);
        if (!list) ids.set(owner, (list = []));
        list.push(e.id);
      }
    } finally {
      all.free();
    }
    // The windows hold column-only events: swap in the whole events they will answer with.
    const byId = this.db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_id WHERE user_id = ? AND id = ?`);
    try {
      for (const [owner, scope] of this.scopes) {
        const state: LiveWindowState = scope.window.toJSON();
        for (const list of [state.errors.items, state.activity.items]) {
          for (const held of list) {
            byId.bind([owner, held[2]]);
            if (byId.step()) held[0] = eventFromRow(byId.get() as RowValues);
            byId.reset();
          }
        }
        scope.window = LiveWindow.fromJSON(state);
      }
    } finally {
      byId.free();
    }
    this.derived = true;
    const keys: Record<string, string> = {};
    for (const [owner, list] of ids) keys[owner] = list.join('\n');
    return keys;
  }

  /** Deletes up to PRUNE_BATCH of the oldest rows matching `old`; returns how many. */
  private pruneBatch(limit: number, old: (receivedAt: string) => boolean): number {
    const { oldestStmt } = this;
    const rows: ReturnType<typeof rowFrom>[] = [];
    oldestStmt.bind([Math.min(limit, PRUNE_BATCH)]);
    try {
      while (oldestStmt.step()) {
        const v = oldestStmt.get();
        if (!old(v[4] as string)) break;
        rows.push(rowFrom(v));
      }
    } finally {
      oldestStmt.reset();
    }
    if (!rows.length) return 0;
    this.db.exec('BEGIN');
    try {
      this.deleteUpToStmt.run([rows[rows.length - 1].seq]);
      this.db.exec('COMMIT');
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
    if (this.derived) {
      const keys: string[] = [];
      for (const { owner, row, e } of rows) {
        this.untrack(owner, row, e);
        keys.push(owner, e.id);
      }
      // The main thread's dedupe set must forget them, or a re-sent pruned event would be ignored.
      post({ pruned: keys });
    }
    this.eventCount -= rows.length;
    this.prunedTotal += rows.length;
    return rows.length;
  }

  /** Retention by age and count, oldest first, a bounded batch at a time. */
  prune(now: number, maxRows = Infinity): { byAge: number; byCount: number } {
    const { retentionDays, maxEvents } = this.args;
    let byAge = 0, byCount = 0;
    if (retentionDays > 0) {
      const cutoff = new Date(now - retentionDays * DAY_MS).toISOString();
      while (byAge < maxRows) {
        const n = this.pruneBatch(maxRows - byAge, (r) => r < cutoff);
        byAge += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    while (this.eventCount > maxEvents && byCount < maxRows) {
      const n = this.pruneBatch(Math.min(this.eventCount - maxEvents, maxRows - byCount), () => true);
      if (!n) break;
      byCount += n;
    }
    this.unloggedAge += byAge;
    this.unloggedCount += byCount;
    // At the count limit every write prunes a little: one line a minute, not one per batch.
    if ((this.unloggedAge || this.unloggedCount) && (now - this.lastPruneLog >= 60_000 || maxRows === Infinity)) {
      this.lastPruneLog = now;
      if (this.unloggedAge) log(`retention: pruned ${this.unloggedAge} events received more than ${retentionDays} days ago`);
      if (this.unloggedCount) log(`retention: pruned ${this.unloggedCount} oldest events beyond SERVICE_MAX_EVENTS=${maxEvents}`);
      this.unloggedAge = this.unloggedCount = 0;
    }
    return { byAge, byCount };
  }

  /** Applies journal lines the main thread acknowledged, then keeps the count limit. */
  applyLines(lines: string, now: number) {
    const entries: JournalEntry[] = [];
    for (const line of lines.split('\n')) if (line) entries.push(JSON.parse(line) as JournalEntry);
    this.applyEntries(entries);
    if (this.eventCount > this.args.maxEvents) this.prune(now, PRUNE_BATCH * 5);
  }

  /** The user's latest events (of a type): the recent lists of the statistics. */
  list(q: Pick<EventFilter, 'userId' | 'type' | 'version'> & { limit: number }): StoredEvent[] {
    const limit = Math.max(0, Math.floor(q.limit));
    // '' is the anonymous owner key: unowned events appear for no user.
    if (limit === 0 || q.userId === '') return [];
    const s = this.listStmts;
    let stmt: Statement, params: (string | number)[];
    if (q.type !== undefined && q.version !== undefined) [stmt, params] = [s.both, [q.userId, q.type, q.version, limit]];
    else if (q.type !== undefined) [stmt, params] = [s.type, [q.userId, q.type, limit]];
    else if (q.version !== undefined) [stmt, params] = [s.version, [q.userId, q.version, limit]];
    else [stmt, params] = [s.all, [q.userId, limit]];
    const out: StoredEvent[] = [];
    stmt.bind(params);
    try {
      while (stmt.step()) out.push(eventFromRow(stmt.get() as RowValues));
    } finally {
      stmt.reset();
    }
    return out;
  }

  /**
   * A page of list or a batch of export: the user's rows of the filter, by seq in either direction,
   * one more than `limit` read to tell whether more follow. Walks the user's index in seq order
   * (by type or version when given) and checks received_at on each row: a narrow time range far
   * back reads every newer row of the user first. Fine for this store, whose successor keeps events
   * in time segments.
   */
  rows(q: RowsQuery): RowsResult {
    const limit = Math.max(0, Math.floor(q.limit));
    // '' is the anonymous owner key: unowned events appear for no user.
    if (limit === 0 || q.userId === '') return { events: [], lastSeq: null, more: false, maxSeq: this.maxSeq };
    const { since, until } = isoBounds(q);
    const where = ['user_id = ?'];
    const params: (string | number)[] = [q.userId];
    const add = (cond: string, value: string | number | undefined) => {
      if (value === undefined) return;
      where.push(cond);
      params.push(value);
    };
    add('type = ?', q.type);
    add('app_version = ?', q.version);
    add('received_at >= ?', since);
    add('received_at < ?', until);
    add('seq < ?', q.beforeSeq);
    add('seq > ?', q.afterSeq);
    add('seq <= ?', q.maxSeq);
    params.push(limit + 1);
    const index = q.type !== undefined ? 'events_user_type' : q.version !== undefined ? 'events_user_version' : 'events_user';
    // INDEXED BY, as in listStmts: the planner may otherwise sort the user's rows.
    const text = `SELECT seq, ${ROW_COLUMNS} FROM events INDEXED BY ${index} WHERE ${where.join(' AND ')} ` +
      `ORDER BY seq ${q.order === 'newest' ? 'DESC' : 'ASC'} LIMIT ?`;
    let stmt = this.rowsStmts.get(text);
    if (!stmt) this.rowsStmts.set(text, (stmt = this.db.prepare(text)));
    const events: StoredEvent[] = [];
    let lastSeq: number | null = null, more = false;
    stmt.bind(params);
    try {
      while (stmt.step()) {
        if (events.length === limit) {
          more = true;
          break;
        }
        const v = stmt.get();
        lastSeq = v[0] as number;
        events.push(eventFromRow(v.slice(1) as RowValues));
      }
    } finally {
      stmt.reset();
    }
    return { events, lastSeq, more, maxSeq: this.maxSeq };
  }

  /**
   * Statistics, assembled like every store's (lib/rollup/assemble.ts): whole hours from the owner's
   * rollups, the partial hours at a range's edges from its rows, recents from the live window (or,
   * when it cannot answer exactly, from the range's rows).
   */
  stats(userId: string, now: number, range?: StatsRange): Stats {
    const scope = userId === '' ? undefined : this.scopes.get(userId);
    const plan = planStats(now, range, scope?.window.newest);
    if (!scope) return assembleStats({ plan, rollups: new UserRollups(), edges: [], recents: { activeUsers: 0, errors: [], activity: [], points: new Map() } });
    const edges = plan.rawSpans.flatMap(([start, end]) => HourRollup.fromRows(this.trackRows(userId, start, end, 'ASC', (r) => void r)));
    const recents = scope.window.recents(now, plan.range) ?? this.recentsFromRows(userId, now, plan.range);
    return assembleStats({ plan, rollups: scope.rollups, edges, recents });
  }

  /** The owner's rows received in [start, end) in seq order, as rollup rows; `each` sees every one. */
  private trackRows(userId: string, start: number, end: number, order: 'ASC' | 'DESC', each: (r: ReturnType<typeof rowFrom>) => boolean | void): RollupRow[] {
    const where = ['user_id = ?'];
    const params: string[] = [userId];
    if (Number.isFinite(start)) where.push('received_at >= ?'), params.push(new Date(start).toISOString());
    if (Number.isFinite(end)) where.push('received_at < ?'), params.push(new Date(end).toISOString());
    const text = `SELECT ${TRACK_COLUMNS} FROM events INDEXED BY events_user_received WHERE ${where.join(' AND ')} ORDER BY seq ${order}`;
    let stmt = this.rowsStmts.get(text);
    if (!stmt) this.rowsStmts.set(text, (stmt = this.db.prepare(text)));
    const out: RollupRow[] = [];
    stmt.bind(params);
    try {
      while (stmt.step()) {
        const r = rowFrom(stmt.get());
        out.push(r.row);
        if (each(r) === false) break;
      }
    } finally {
      stmt.reset();
    }
    return out;
  }

  /**
   * Recents as recentsOf computes them, from the range's rows newest first by column; only the
   * events the answer lists are read whole.
   */
  private recentsFromRows(userId: string, now: number, range: ResolvedRange | null): Recents {
    const active = new Set<string>();
    const errorIds: string[] = [], activityIds: string[] = [];
    const points = new Map<string, LatencyPoint[]>();
    this.trackRows(userId, range ? range.from : -Infinity, range ? range.to : Infinity, 'DESC', ({ row, e }) => {
      const t = row.receivedMs;
      if (e.sessionId && t <= now && now - t <= ACTIVE_WINDOW_MS) active.add(e.sessionId);
      if (activityIds.length < RECENT_ACTIVITY) activityIds.push(e.id);
      if (e.type === 'error' && errorIds.length < RECENT_ERRORS) errorIds.push(e.id);
      if (row.route === null) return;
      let list = points.get(row.route);
      if (!list) points.set(row.route, (list = []));
      if (list.length < LATENCY_POINTS) list.push({ duration: e.data.duration as number, ttfb: e.data.ttfb as number | null, timestamp: e.timestamp });
    });
    for (const list of points.values()) list.reverse();
    const whole = (ids: string[]) => ids.map((id) => this.eventById(userId, id)!);
    return { activeUsers: active.size, errors: whole(errorIds), activity: whole(activityIds), points };
  }

  private eventById(userId: string, id: string): StoredEvent | null {
    const text = `SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_id WHERE user_id = ? AND id = ?`;
    let stmt = this.rowsStmts.get(text);
    if (!stmt) this.rowsStmts.set(text, (stmt = this.db.prepare(text)));
    stmt.bind([userId, id]);
    try {
      return stmt.step() ? eventFromRow(stmt.get() as RowValues) : null;
    } finally {
      stmt.reset();
    }
  }

  getUser(id: string): AppUser | null {
    const s = this.getUserStmt;
    s.bind([id]);
    try {
      if (!s.step()) return null;
      const [idp_user_id, email, display_name, last_seen_at] = s.get() as string[];
      return { idp_user_id, email, display_name, last_seen_at };
    } finally {
      s.reset();
    }
  }

  health(): HealthFigures {
    const pages = this.db.exec('PRAGMA page_count; PRAGMA page_size');
    return {
      eventCount: this.eventCount,
      usersWithEvents: this.scopes.size,
      databaseBytes: (pages[0].values[0][0] as number) * (pages[1].values[0][0] as number),
      snapshotBytes: this.snapshotBytes,
      lastSnapshot: this.lastSnapshot,
      prunedEvents: this.prunedTotal,
      startup: this.startup,
    };
  }

  /** The size of the snapshot the database was loaded from (0: none). */
  set loadedBytes(bytes: number) {
    this.snapshotBytes = bytes;
  }

  /**
   * Writes the database to a temp file, syncs it and renames it into place, then drops the journal
   * segments it covers. The file sql.js holds is written as it is, and no other message is handled
   * until it is (`written`: reads wait meanwhile; acknowledgements never do): no copy of the
   * database is made, where `db.export()` made one (~570 MB and ~3 s at 1M events, on top of the
   * database itself). Only a stock sql.js, whose file is out of reach, still exports (and writes
   * the copy the same way).
   */
  snapshot(covered: number, reason: string, now: number): { written: Promise<void>; done: Promise<void> } {
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const done = this.writeSnapshot(covered, reason, now, wrote).finally(wrote);
    return { written, done };
  }

  private async writeSnapshot(covered: number, reason: string, now: number, wrote: () => void): Promise<void> {
    const { fs } = this;
    const path = this.args.path;
    const dir = dirname(path);
    const t0 = performance.now();
    const events = this.eventCount;
    const tmp = join(dir, `${basename(path)}.tmp-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const live = databaseFile(this.db);
    try {
      const bytes = live ?? this.db.export();
      const size = bytes.length;
      await writeNewFile(fs, tmp, bytes, SYNC_EVERY);
      wrote(); // the database may change again
      const heldMs = performance.now() - t0;
      if (this.args.askBeforeRename) await this.askBeforeRename(tmp);
      // The replaced snapshot keeps a second name through the rename, so the rename does not free
      // its blocks all at once (see removeGradually); a crash leaves that name for start-up to remove.
      const old = join(dir, `${basename(path)}.old-${Date.now()}`);
      const kept = await fs.link(path, old).then(() => true, () => false);
      // Durable before any segment it covers is deleted.
      await renameDurably(fs, tmp, path);
      if (kept) await removeGradually(fs, old);
      await removeSegmentsUpTo(fs, path, covered);
      const totalMs = performance.now() - t0;
      this.snapshotBytes = size;
      this.lastSnapshot = { at: new Date(now).toISOString(), events, bytes: size, heldMs: Math.round(heldMs), totalMs: Math.round(totalMs) };
      log(`snapshot (${reason}): ${events} events, ${(size / 1048576).toFixed(1)} MiB, database held ${Math.round(heldMs)} ms` +
        `${live ? '' : ' (exported: a copy)'}, ${Math.round(totalMs)} ms in all`);
    } catch (err) {
      await fs.remove(tmp).catch(() => {});
      log(`snapshot (${reason}) failed; the journal is kept: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
  }

  /** The test seam beforeSnapshotRename runs on the main thread: ask it and wait for its answer. */
  private askBeforeRename(tmp: string): Promise<void> {
    const token = ++this.renameTokens;
    return new Promise((resolve, reject) => {
      this.renameAnswers.set(token, (error) => (error === null ? resolve() : reject(new Error(error))));
      post({ beforeRename: token, tmp });
    });
  }

  renameAnswer(token: number, error: string | null) {
    const answer = this.renameAnswers.get(token);
    this.renameAnswers.delete(token);
    answer?.(error);
  }

  close() {
    for (const s of [this.insertStmt, this.upsertUserStmt, this.getUserStmt, this.activeStmt, this.oldestStmt, this.deleteUpToStmt, ...Object.values(this.listStmts), ...this.rowsStmts.values()]) s.free();
    this.db.close();
  }
}

interface Scope { rollups: UserRollups; window: LiveWindow }

/** What a LiveWindow reads of an event, which the columns give without parsing its metadata. */
interface WindowEvent {
  id: string;
  type: string;
  sessionId: string | null;
  timestamp: string;
  data: Record<string, unknown>;
}

/** The columns rollups and live windows are kept from (rowFrom reads them). */
const TRACK_COLUMNS = 'seq, user_id, type, app_version, received_at, session_id, route_key, duration, ttfb, timestamp, rating, id';

function rowFrom(v: unknown[]): { seq: number; owner: string; row: RollupRow; e: WindowEvent } {
  const route = v[6] as string | null;
  const duration = v[7] as number | null;
  const row: RollupRow = {
    receivedMs: Date.parse(v[4] as string),
    type: v[2] as string,
    version: v[3] as string | null,
    session: v[5] as string | null,
    route: duration === null ? null : route,
    duration,
    rating: v[10] as number | null,
  };
  const e: WindowEvent = { id: v[11] as string, type: row.type, sessionId: row.session, timestamp: v[9] as string, data: { duration, ttfb: v[8] as number | null } };
  return { seq: v[0] as number, owner: v[1] as string, row, e };
}

/** Start-up: snapshot → journal replay → retention → aggregates and keys. */
async function start(args: InitArgs): Promise<{ engine: Engine; result: InitResult }> {
  const { path } = args;
  const fs = await loadStoreFs(args.fs);
  const dir = dirname(path);
  const tmpPrefix = basename(path) + '.tmp-';
  // A snapshot interrupted before its rename leaves a temp file; the database file is intact. (The
  // main thread holds the database's lock: no other process is writing one.)
  for (const name of await fs.list(dir)) {
    if (name.startsWith(tmpPrefix)) {
      await fs.remove(join(dir, name));
      log(`removed an unfinished snapshot ${name} (the previous snapshot and the journal are intact)`);
    } else if (name.startsWith(basename(path) + '.old-')) {
      // A second name of a snapshot being replaced (see snapshot()); the live file is `path`. Only
      // the name goes: until the rename is durable it may name the live file's blocks.
      await fs.remove(join(dir, name));
      log(`removed ${name}, a replaced snapshot a crash left behind`);
    }
  }
  const { SQL, fileGrowth } = await loadSqlJs();
  if (fileGrowth === 'stock') log('sql.js differs from the pinned version: its in-memory file grows by copying (slower inserts, longer stalls)');
  let existing = await readDatabaseFile(path, fs);
  let db: Database;
  try {
    db = existing && existing.length ? new SQL.Database(existing) : new SQL.Database();
    db.exec('SELECT count(*) FROM sqlite_master');
  } catch (err) {
    throw new CorruptFile(String(err instanceof Error ? err.message : err));
  }
  const engine = new Engine(db, args, fs);
  engine.loadedBytes = existing?.length ?? 0;
  existing = null;

  const segments = await listSegments(fs, path);
  const replayStart = performance.now();
  const journal = await readSegments(fs, segments);
  const replayed = engine.applyEntries(journal.entries);
  const replayMs = performance.now() - replayStart;
  for (const t of journal.skipped) {
    log(`journal: skipped an unreadable ${t.last ? 'last ' : ''}line ${t.line} (${t.bytes} bytes) of ${t.path}` +
      (t.last ? ' (torn by a crash; it was never acknowledged)' : ''));
  }
  if (segments.length) {
    log(`journal: replayed ${journal.entries.length} entries from ${segments.length} segment(s) (${replayed} events new) in ${Math.round(replayMs)} ms`);
  }
  engine.startup = { replayedEntries: journal.entries.length, replayMs: Math.round(replayMs), tornLinesSkipped: journal.skipped.length };
  const pruned = engine.prune(args.now);
  const changed = journal.entries.length > 0 || pruned.byAge > 0 || pruned.byCount > 0 || journal.skipped.length > 0;
  const lastSegment = segments.length ? segments[segments.length - 1].seq : 0;
  // Segments that held nothing new can go now; anything else is compacted by a snapshot.
  if (segments.length && !changed) await removeSegmentsUpTo(fs, path, lastSegment);
  return { engine, result: { keys: engine.derive(), lastSegment, compact: changed } };
}

// ---- the message loop ----

let engine: Engine | null = null;

/** A message's answer, and until when the next message must wait (the database work it holds). */
interface Handled {
  answer: unknown;
  holds?: Promise<unknown>;
}

function handle(req: Request): Handled {
  if (req.op === 'init') {
    const started = start(req.args).then((s) => {
      engine = s.engine;
      return s.result;
    });
    return { answer: started, holds: started };
  }
  if (!engine) throw new Error('the database is not open');
  switch (req.op) {
    case 'apply':
      return { answer: engine.applyLines(req.lines, req.now) };
    case 'rows':
      return { answer: engine.rows(req.query) };
    case 'stats':
      return { answer: engine.stats(req.userId, req.now, req.range) };
    case 'getUser':
      return { answer: engine.getUser(req.idpUserId) };
    case 'health':
      return { answer: engine.health() };
    case 'prune':
      engine.prune(req.now, PRUNE_BATCH * 10);
      return { answer: undefined };
    case 'snapshot': {
      const { written, done } = engine.snapshot(req.covered, req.reason, req.now);
      return { answer: done, holds: written };
    }
    case 'close':
      engine.close();
      engine = null;
      return { answer: undefined };
  }
}

/** Settles once the previous message's database work is done: each message waits for it. */
let ready: Promise<unknown> = Promise.resolve();

port.on('message', (msg: ToWorker) => {
  if ('renameAnswer' in msg) return engine?.renameAnswer(msg.renameAnswer, msg.error);
  const { id, req } = msg;
  const handled = ready.then(() => handle(req));
  ready = handled.then((h) => h.holds?.catch(() => {}), () => {});
  handled.then((h) => h.answer).then(
    (value) => post({ id, ok: true, value }),
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      post({ id, ok: false, error: { name: e.name, message: e.message, path: e instanceof CorruptFile ? (req as { args: InitArgs }).args.path : undefined } });
    },
  );
});
