// The persisted variant's store: SQLite (sql.js, in memory) + an fsynced journal + snapshots.
//
// Why this shape:
// - sql.js keeps the whole database in memory; nothing reaches disk unless we write it. An event is
//   acknowledged only after its journal line is fsynced (group commit: the requests that arrive
//   while one fsync runs share the next one). A snapshot alone lost acknowledged events on kill -9.
// - A snapshot is `db.export()` (outside any transaction) → temp file → fsync → rename → fsync of
//   the directory → delete the journal segments it covers. export() blocks the thread in proportion
//   to the database size, so snapshots are rare: after a quiet period, when the journal passes a
//   size threshold, and at shutdown. The file write itself runs in the background while new
//   journal lines go to a fresh segment.
// - Start-up loads the snapshot and replays every remaining segment idempotently by (user_id, id);
//   unparseable lines (a torn tail) are skipped and reported.
// - /api/stats reads aggregates kept per user on insert and prune (sqlite-aggregates.ts) plus three
//   indexed queries, instead of scanning the user's events.
import { createRequire } from 'node:module';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Database, SqlJsStatic, Statement } from 'sql.js';
import type { StoredEvent } from '../event.ts';
import {
  ACTIVE_WINDOW_MS, RECENT_ACTIVITY, RECENT_ERRORS, SERIES_DAYS, breakdownCounts, feedbackRating, pageloadDuration,
  round2, routeKey, seriesLabels, type LatencySummary, type Stats,
} from '../stats.ts';
import { JournalWriter, listSegments, readSegments, removeSegmentsUpTo, segmentPath } from './journal.ts';
import { UserAgg, type AggRow } from './sqlite-aggregates.ts';
import { ROW_COLUMNS, eventFromRow, metadataOf, type ColValues, type RowValues } from './sqlite-row.ts';
import { StoreUnavailableError, type AppUser, type EventQuery, type Store, type StoreHealth, type UserSync } from './types.ts';

export interface SqliteStoreOptions {
  /** Database file; the journal segments and snapshot temp files live beside it. */
  path: string;
  /** Events received longer ago than this are pruned; 0 keeps them forever. Default 90. */
  retentionDays?: number;
  /** Oldest events beyond this count are pruned. Default 1,000,000. */
  maxEvents?: number;
  log?: (msg: string) => void;
  /**
   * Journal size past which a snapshot is taken at the next pause in writes (≥ gapSnapshotMs without
   * one); at 4× this size it is taken at once, pause or not. Default 64 MiB (~150k events).
   */
  journalMaxBytes?: number;
  /** The pause in writes a size-triggered snapshot waits for. Default 1 s. */
  gapSnapshotMs?: number;
  /** A snapshot is taken once no write happened for this long and the journal is not empty. Default 30 s. */
  quietSnapshotMs?: number;
  /** How often retention by age runs. Default 60 s. */
  retentionIntervalMs?: number;
  /** Clock (ms); tests pass a fixed one. */
  now?: () => number;
  /** Test seam: runs after the temp file is fsynced and before it is renamed into place. */
  beforeSnapshotRename?: (tempPath: string) => void | Promise<void>;
}

export const DEFAULT_RETENTION_DAYS = 90;
export const DEFAULT_MAX_EVENTS = 1_000_000;
const DAY_MS = 86_400_000;
const PRUNE_BATCH = 2000;

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

// The owner column is NOT NULL so that the unique (user_id, id) index also dedupes anonymous
// events (SQLite treats NULLs as distinct); '' stands for "no owner" and is read back as null.
const ownerKey = (userId: string | null) => userId ?? '';

let sqlPromise: Promise<SqlJsStatic> | null = null;

/** Loads sql.js once, reading its .wasm from node_modules (no network; Deno needs --allow-read). */
function loadSql(): Promise<SqlJsStatic> {
  sqlPromise ??= (async () => {
    const require = createRequire(import.meta.url);
    const main = require.resolve('sql.js');
    const wasm = await readFile(join(dirname(main), 'sql-wasm.wasm'));
    const mod = (await import('sql.js')) as unknown as { default: (c: object) => Promise<SqlJsStatic> };
    const init = mod.default;
    return init({ wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) });
  })();
  return sqlPromise;
}

/** The database file exists but is not a database sql.js can read. */
export class CorruptDatabaseError extends Error {
  constructor(readonly path: string, cause: unknown) {
    super(
      `${path} is not a readable SQLite database (${cause instanceof Error ? cause.message : String(cause)}); ` +
        'the file was left untouched: move it aside or restore a backup, then start again',
      { cause },
    );
    this.name = 'CorruptDatabaseError';
  }
}

interface Op {
  /** Journal lines (each ending in \n); '' for a barrier such as a snapshot. */
  lines: string;
  apply: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const path = options.path;
  const retentionDays = options.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
  const log = options.log ?? (() => {});
  const journalMaxBytes = options.journalMaxBytes ?? 64 * 1024 * 1024;
  const quietMs = options.quietSnapshotMs ?? 30_000;
  const gapMs = options.gapSnapshotMs ?? 1000;
  const retentionIntervalMs = options.retentionIntervalMs ?? 60_000;
  const clock = options.now ?? Date.now;
  const dir = dirname(path);
  const tmpPrefix = basename(path) + '.tmp-';

  await mkdir(dir, { recursive: true });
  // A snapshot interrupted before its rename leaves a temp file; the database file is intact.
  for (const name of await readdir(dir)) {
    if (name.startsWith(tmpPrefix)) {
      await rm(join(dir, name), { force: true });
      log(`removed an unfinished snapshot ${name} (the previous snapshot and the journal are intact)`);
    }
  }

  const SQL = await loadSql();
  let existing: Uint8Array | null = null;
  try {
    existing = await readFile(path);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
  }
  let db: Database;
  try {
    db = existing && existing.length ? new SQL.Database(existing) : new SQL.Database();
    db.exec('SELECT count(*) FROM sqlite_master');
  } catch (err) {
    throw new CorruptDatabaseError(path, err);
  }
  existing = null;
  // Our journal is the durability; SQLite's own rollback journal can stay in memory.
  db.exec('PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=MEMORY;');
  try {
    db.exec(SCHEMA);
  } catch (err) {
    throw new CorruptDatabaseError(path, err);
  }

  const insertStmt = db.prepare(
    `INSERT OR IGNORE INTO events (seq, id, type, timestamp, source, session_id, page_url, message, severity, app_version,
       metadata, received_at, user_id, route_key, duration, ttfb, rating)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const upsertUserStmt = db.prepare(
    `INSERT INTO users (idp_user_id, email, display_name, last_seen_at) VALUES (?, ?, ?, ?)
     ON CONFLICT(idp_user_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`,
  );
  const getUserStmt = db.prepare('SELECT idp_user_id, email, display_name, last_seen_at FROM users WHERE idp_user_id = ?');
  // INDEXED BY: sql.js's planner otherwise may pick the (user_id, id) index and sort the user's rows.
  const listStmts = {
    all: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user WHERE user_id = ? ORDER BY seq DESC LIMIT ?`),
    type: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_type WHERE user_id = ? AND type = ? ORDER BY seq DESC LIMIT ?`),
    version: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_version WHERE user_id = ? AND app_version = ? ORDER BY seq DESC LIMIT ?`),
    both: db.prepare(`SELECT ${ROW_COLUMNS} FROM events INDEXED BY events_user_type WHERE user_id = ? AND type = ? AND app_version = ? ORDER BY seq DESC LIMIT ?`),
  };
  const activeStmt = db.prepare(
    `SELECT COUNT(DISTINCT session_id) FROM events INDEXED BY events_user_received
     WHERE user_id = ? AND received_at >= ? AND received_at <= ? AND session_id IS NOT NULL`,
  );
  const oldestStmt = db.prepare(
    `SELECT seq, user_id, type, app_version, received_at, session_id, route_key, duration, ttfb, timestamp, rating
     FROM events ORDER BY seq LIMIT ?`,
  );
  const deleteUpToStmt = db.prepare('DELETE FROM events WHERE seq <= ?');

  const aggs = new Map<string, UserAgg>();
  let eventCount = 0;
  let maxSeq = 0;
  let prunedTotal = 0;

  const aggOf = (owner: string) => {
    let a = aggs.get(owner);
    if (!a) aggs.set(owner, (a = new UserAgg()));
    return a;
  };

  const rowFromStmt = (s: Statement): { owner: string; row: AggRow } => {
    const v = s.get();
    const received = v[4] as string;
    return {
      owner: v[1] as string,
      row: {
        seq: v[0] as number,
        type: v[2] as string,
        version: v[3] as string | null,
        receivedMs: Date.parse(received),
        session: v[5] as string | null,
        route: v[6] as string | null,
        duration: v[7] as number | null,
        ttfb: v[8] as number | null,
        timestamp: v[9] as string,
        rating: v[10] as number | null,
      },
    };
  };

  /** Inserts events (in one transaction); returns those newly stored. Synchronous on purpose. */
  function applyEvents(events: StoredEvent[]): StoredEvent[] {
    const stored: StoredEvent[] = [];
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
        const seq = maxSeq + 1;
        const version = e.deployVersion ?? null;
        const cols: ColValues = [e.id, e.type, e.timestamp, receivedAt, owner, session, version, e.page_url ?? null, e.source ?? null, e.message ?? null, e.severity ?? null];
        insertStmt.run([
          seq, e.id, e.type, e.timestamp, cols[8], session, cols[7], cols[9], cols[10], version,
          metadataOf(e, cols), receivedAt, owner, route, duration, duration === null ? null : ttfb, rating,
        ]);
        if (db.getRowsModified() !== 1) continue;
        maxSeq = seq;
        eventCount++;
        stored.push(e);
        aggOf(owner).apply(
          { seq, type: e.type, version: e.deployVersion, receivedMs, session, route, duration, ttfb: duration === null ? null : ttfb, timestamp: e.timestamp, rating },
          1,
        );
      }
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
    return stored;
  }

  function applyUser(u: AppUser) {
    upsertUserStmt.run([u.idp_user_id, u.email, u.display_name, u.last_seen_at]);
  }

  /** Deletes up to PRUNE_BATCH of the oldest rows matching `old`; returns how many. */
  function pruneBatch(limit: number, old: (receivedAt: string) => boolean): number {
    const rows: { owner: string; row: AggRow }[] = [];
    oldestStmt.bind([Math.min(limit, PRUNE_BATCH)]);
    try {
      while (oldestStmt.step()) {
        const received = oldestStmt.get()[4] as string;
        if (!old(received)) break;
        rows.push(rowFromStmt(oldestStmt));
      }
    } finally {
      oldestStmt.reset();
    }
    if (!rows.length) return 0;
    db.exec('BEGIN');
    try {
      deleteUpToStmt.run([rows[rows.length - 1].row.seq]);
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
    for (const { owner, row } of rows) {
      const a = aggOf(owner);
      a.apply(row, -1);
      if (a.total === 0) aggs.delete(owner);
    }
    eventCount -= rows.length;
    prunedTotal += rows.length;
    return rows.length;
  }

  /** Retention by age and count, oldest first, a bounded batch at a time. Returns rows pruned. */
  function prune(maxRows = Infinity): { byAge: number; byCount: number } {
    let byAge = 0, byCount = 0;
    if (retentionDays > 0) {
      const cutoff = new Date(clock() - retentionDays * DAY_MS).toISOString();
      while (byAge < maxRows) {
        const n = pruneBatch(maxRows - byAge, (r) => r < cutoff);
        byAge += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    while (eventCount > maxEvents && byCount < maxRows) {
      const n = pruneBatch(Math.min(eventCount - maxEvents, maxRows - byCount), () => true);
      if (!n) break;
      byCount += n;
    }
    unloggedAge += byAge;
    unloggedCount += byCount;
    // At the count limit every write prunes a little: one line a minute, not one per batch.
    if ((unloggedAge || unloggedCount) && (clock() - lastPruneLog >= 60_000 || maxRows === Infinity)) {
      lastPruneLog = clock();
      if (unloggedAge) log(`retention: pruned ${unloggedAge} events received more than ${retentionDays} days ago`);
      if (unloggedCount) log(`retention: pruned ${unloggedCount} oldest events beyond SERVICE_MAX_EVENTS=${maxEvents}`);
      unloggedAge = unloggedCount = 0;
    }
    return { byAge, byCount };
  }
  let unloggedAge = 0, unloggedCount = 0, lastPruneLog = -Infinity;

  // ---- start-up: snapshot → journal replay → aggregates → retention → compaction ----
  {
    const s = db.prepare('SELECT COALESCE(MAX(seq), 0), COUNT(*) FROM events');
    s.step();
    [maxSeq, eventCount] = s.get() as number[];
    s.free();
  }
  const segments = await listSegments(path);
  const replayStart = performance.now();
  const journal = await readSegments(segments);
  let replayed = 0;
  for (let i = 0; i < journal.entries.length; ) {
    const events: StoredEvent[] = [];
    // Apply in journal order: runs of events in one transaction, users as they come.
    for (; i < journal.entries.length && events.length < 5000; i++) {
      const entry = journal.entries[i];
      if ('u' in entry) {
        if (events.length) break;
        applyUser(entry.u);
        continue;
      }
      events.push(entry.e as StoredEvent);
    }
    if (events.length) replayed += applyEvents(events).length;
  }
  const replayMs = performance.now() - replayStart;
  for (const t of journal.skipped) {
    log(`journal: skipped an unreadable ${t.last ? 'last ' : ''}line ${t.line} (${t.bytes} bytes) of ${t.path}` +
      (t.last ? ' (torn by a crash; it was never acknowledged)' : ''));
  }
  if (segments.length) {
    log(`journal: replayed ${journal.entries.length} entries from ${segments.length} segment(s) (${replayed} events new) in ${Math.round(replayMs)} ms`);
  }

  // Aggregates are rebuilt from the rows (by column, no JSON parsing) rather than persisted.
  aggs.clear();
  {
    const all = db.prepare(
      'SELECT seq, user_id, type, app_version, received_at, session_id, route_key, duration, ttfb, timestamp, rating FROM events ORDER BY seq',
    );
    while (all.step()) {
      const { owner, row } = rowFromStmt(all);
      aggOf(owner).apply(row, 1);
    }
    all.free();
  }
  const startPruned = prune();

  // ---- journal writer, group commit and snapshots ----
  let writer = await JournalWriter.open(path, segments.length ? segments[segments.length - 1].seq + 1 : 1);
  let queue: Op[] = [];
  let running = false;
  let closed = false;
  let tornTail = false;
  let lastWriteAt = clock();
  let snapshotWrite: Promise<void> | null = null;
  let lastSnapshot: { at: string; events: number; bytes: number; exportMs: number; writeMs: number } | null = null;
  let snapshotBytesOnDisk = 0;
  try {
    snapshotBytesOnDisk = (await stat(path)).size;
  } catch {
    // no snapshot yet
  }

  const encoder = new TextEncoder();

  function enqueue<T>(lines: string, apply: () => T): Promise<Awaited<T>> {
    if (closed) return Promise.reject(new StoreUnavailableError('The store is closed'));
    return new Promise<Awaited<T>>((resolve, reject) => {
      queue.push({ lines, apply, resolve: resolve as (v: unknown) => void, reject });
      if (!running) {
        running = true;
        void loop();
      }
    });
  }

  async function loop() {
    try {
      while (queue.length) {
        // A barrier (lines === '') ends a group: a snapshot must not cover lines written after it.
        let end = queue.findIndex((op) => op.lines === '');
        end = end === -1 ? queue.length : end === 0 ? 1 : end;
        const group = queue.slice(0, end);
        queue = queue.slice(end);
        const text = group.map((op) => op.lines).join('');
        if (text) {
          try {
            // After a failed write the file may end in a partial line: start on a fresh one.
            await writer.append(encoder.encode(tornTail ? '\n' + text : text));
            tornTail = false;
            lastWriteAt = clock();
          } catch (err) {
            tornTail = true;
            log(`journal: write failed: ${err instanceof Error ? err.message : String(err)}`);
            for (const op of group) op.reject(new StoreUnavailableError('The journal could not be written', { cause: err }));
            continue;
          }
        }
        for (const op of group) {
          try {
            op.resolve(await op.apply());
          } catch (err) {
            op.reject(err);
          }
        }
        if (eventCount > maxEvents) prune(PRUNE_BATCH * 5);
        // export() blocks the thread (~1 s at 1M events): past the soft size wait for a pause in
        // writes (the timer below); past 4× take it now, so replay time at start stays bounded.
        if (writer.bytes >= 4 * journalMaxBytes && !snapshotWrite) {
          await startSnapshot('journal size, hard limit').catch((err) => log(`snapshot failed: ${err instanceof Error ? err.message : String(err)}`));
        }
      }
    } finally {
      running = false;
    }
  }

  /**
   * Exports the database and rotates the journal (both inside the commit loop, so the export holds
   * exactly the closed segments' lines), then writes the file in the background.
   */
  async function startSnapshot(reason: string): Promise<{ written: Promise<void> }> {
    if (snapshotWrite) await snapshotWrite.catch(() => {});
    const t0 = performance.now();
    const bytes = db.export();
    const exportMs = performance.now() - t0;
    const events = eventCount;
    const covered = await writer.rotate();
    const write = (async () => {
      const t1 = performance.now();
      const tmp = join(dir, `${tmpPrefix}${Date.now()}-${Math.random().toString(36).slice(2)}`);
      try {
        const fh = await open(tmp, 'w');
        try {
          let off = 0;
          while (off < bytes.length) off += (await fh.write(bytes, off, Math.min(bytes.length - off, 8 << 20))).bytesWritten;
          await fh.sync();
        } finally {
          await fh.close();
        }
        await options.beforeSnapshotRename?.(tmp);
        await rename(tmp, path);
        await syncDir(dir);
        await removeSegmentsUpTo(path, covered);
        const writeMs = performance.now() - t1;
        snapshotBytesOnDisk = bytes.length;
        lastSnapshot = { at: new Date(clock()).toISOString(), events, bytes: bytes.length, exportMs: Math.round(exportMs), writeMs: Math.round(writeMs) };
        log(`snapshot (${reason}): ${events} events, ${(bytes.length / 1048576).toFixed(1)} MiB, export ${Math.round(exportMs)} ms, write ${Math.round(writeMs)} ms`);
      } catch (err) {
        await rm(tmp, { force: true }).catch(() => {});
        log(`snapshot (${reason}) failed; the journal is kept: ${err instanceof Error ? err.message : String(err)}`);
        throw err;
      }
    })();
    const tracked: Promise<void> = write.finally(() => {
      if (snapshotWrite === tracked) snapshotWrite = null;
    });
    tracked.catch(() => {});
    snapshotWrite = tracked;
    // Wrapped: the commit loop must not wait for the file write.
    return { written: tracked };
  }

  /** Takes a snapshot through the commit loop and waits for its file to be in place. */
  async function snapshotNow(reason: string): Promise<void> {
    const { written } = await enqueue('', () => startSnapshot(reason));
    await written;
  }

  // Compact at start when the journal held anything (or retention changed the database).
  if (segments.length || startPruned.byAge || startPruned.byCount) {
    if (journal.entries.length || startPruned.byAge || startPruned.byCount || journal.skipped.length) {
      await snapshotNow('start-up');
    } else {
      await removeSegmentsUpTo(path, writer.seq - 1);
    }
  }

  const quietTimer = setInterval(() => {
    if (closed || running || snapshotWrite || writer.bytes === 0) return;
    const idle = clock() - lastWriteAt;
    if (idle >= quietMs) snapshotNow('quiet period').catch(() => {});
    else if (writer.bytes >= journalMaxBytes && idle >= gapMs) snapshotNow('journal size').catch(() => {});
  }, Math.max(50, Math.min(quietMs, gapMs, 5000) / 2));
  const retentionTimer = setInterval(() => {
    if (closed) return;
    enqueue('', () => prune(PRUNE_BATCH * 10)).catch(() => {});
  }, retentionIntervalMs);
  unref(quietTimer);
  unref(retentionTimer);

  const userRow = (s: Statement): AppUser => {
    const [idp_user_id, email, display_name, last_seen_at] = s.get() as string[];
    return { idp_user_id, email, display_name, last_seen_at };
  };

  function listSync(q: EventQuery): StoredEvent[] {
    const limit = Math.max(0, Math.floor(q.limit));
    // '' is the anonymous owner key: unowned events appear for no user.
    if (limit === 0 || q.userId === '') return [];
    let stmt: Statement, params: (string | number)[];
    if (q.type !== undefined && q.version !== undefined) [stmt, params] = [listStmts.both, [q.userId, q.type, q.version, limit]];
    else if (q.type !== undefined) [stmt, params] = [listStmts.type, [q.userId, q.type, limit]];
    else if (q.version !== undefined) [stmt, params] = [listStmts.version, [q.userId, q.version, limit]];
    else [stmt, params] = [listStmts.all, [q.userId, limit]];
    const out: StoredEvent[] = [];
    stmt.bind(params);
    try {
      while (stmt.step()) out.push(eventFromRow(stmt.get() as RowValues));
    } finally {
      stmt.reset();
    }
    return out;
  }

  const alive = () => {
    if (closed) throw new StoreUnavailableError('The store is closed');
  };

  return {
    insert(events) {
      if (!events.length) return Promise.resolve([]);
      let lines = '';
      for (const e of events) lines += '{"e":' + JSON.stringify(e) + '}\n';
      return enqueue(lines, () => applyEvents(events));
    },
    async list(q) {
      alive();
      return listSync(q);
    },
    async stats(userId, now): Promise<Stats> {
      alive();
      const a = (userId !== '' && aggs.get(userId)) || new UserAgg();
      activeStmt.bind([userId === '' ? '\u0000' : userId, new Date(now - ACTIVE_WINDOW_MS).toISOString(), new Date(now).toISOString()]);
      let activeUsers = 0;
      try {
        if (activeStmt.step()) activeUsers = activeStmt.get()[0] as number;
      } finally {
        activeStmt.reset();
      }
      const latencyByRoute: Record<string, LatencySummary> = {};
      for (const [key, r] of a.routes) {
        const [p50, p95] = r.durations.percentiles([50, 95]);
        latencyByRoute[key] = {
          count: r.durations.size,
          p50,
          p95,
          avg: Math.round(r.sum / r.durations.size),
          points: r.points.map(({ duration, ttfb, timestamp }) => ({ duration, ttfb, timestamp })),
        };
      }
      const today = Math.floor(now / DAY_MS);
      const userValues: number[] = [], activityValues: number[] = [];
      for (let i = SERIES_DAYS - 1; i >= 0; i--) {
        const day = a.days.get(today - i);
        userValues.push(day ? day.sessions.size : 0);
        activityValues.push(day ? day.events : 0);
      }
      const n = (t: string) => a.byType.get(t) ?? 0;
      const fb = a.feedback;
      const feedbackTotal = fb[0] + fb[1] + fb[2] + fb[3] + fb[4];
      return {
        activeUsers,
        totalEvents: a.total,
        totalErrors: n('error'),
        errorsByVersion: Object.fromEntries(a.errorsByVersion),
        latencyByRoute,
        recentErrors: a.total ? listSync({ userId, type: 'error', limit: RECENT_ERRORS }) : [],
        eventsByType: Object.fromEntries(a.byType),
        averageLatency: a.latencyCount ? Math.round(a.latencySum / a.latencyCount) : 0,
        recentActivity: a.total ? listSync({ userId, limit: RECENT_ACTIVITY }) : [],
        analytics: {
          breakdownCounts: breakdownCounts(n),
          feedbackBreakdown: { '1': fb[0], '2': fb[1], '3': fb[2], '4': fb[3], '5': fb[4] },
          feedbackTotal,
          feedbackAverage: feedbackTotal ? round2(a.feedbackSum / feedbackTotal) : 0,
          customActivityTotal: n('custom'),
          userSeries: { labels: seriesLabels(), values: userValues },
          activitySeries: { labels: seriesLabels(), values: activityValues },
        },
      };
    },
    upsertUser(u: UserSync, now) {
      const user: AppUser = {
        idp_user_id: u.idpUserId,
        email: u.email,
        display_name: u.displayName,
        last_seen_at: new Date(now).toISOString(),
      };
      return enqueue(JSON.stringify({ u: user }) + '\n', () => {
        applyUser(user);
        return user;
      });
    },
    async getUser(id) {
      alive();
      getUserStmt.bind([id]);
      try {
        return getUserStmt.step() ? userRow(getUserStmt) : null;
      } finally {
        getUserStmt.reset();
      }
    },
    async health(): Promise<StoreHealth> {
      const pages = closed ? null : db.exec('PRAGMA page_count; PRAGMA page_size');
      const databaseBytes = pages ? (pages[0].values[0][0] as number) * (pages[1].values[0][0] as number) : 0;
      return {
        storage: 'sqlite',
        databasePath: path,
        eventCount,
        usersWithEvents: aggs.size,
        databaseBytes,
        snapshotBytes: snapshotBytesOnDisk,
        journalBytes: writer.bytes,
        journalMaxBytes,
        lastSnapshot,
        retentionDays,
        maxEvents,
        prunedEvents: prunedTotal,
        startup: { replayedEntries: journal.entries.length, replayMs: Math.round(replayMs), tornLinesSkipped: journal.skipped.length },
      };
    },
    async flush() {
      alive();
      await snapshotNow('flush');
    },
    async close() {
      if (closed) return;
      clearInterval(quietTimer);
      clearInterval(retentionTimer);
      try {
        if (writer.bytes > 0) await snapshotNow('shutdown');
        else await enqueue('', () => undefined);
        if (snapshotWrite) await snapshotWrite.catch(() => {});
      } finally {
        closed = true;
        await writer.close();
        if (writer.bytes === 0) await rm(segmentPath(path, writer.seq), { force: true });
        for (const s of [insertStmt, upsertUserStmt, getUserStmt, activeStmt, oldestStmt, deleteUpToStmt, ...Object.values(listStmts)]) s.free();
        db.close();
      }
    },
  };
}

async function syncDir(dir: string): Promise<void> {
  // The rename is durable only once the directory entry is; some platforms cannot fsync a directory.
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') throw err;
  }
}

function unref(timer: unknown) {
  (timer as { unref?: () => void }).unref?.();
}
