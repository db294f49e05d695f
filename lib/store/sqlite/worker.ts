// The worker thread that owns the sqlite store's databases (sql.js). sqlite.ts starts it; see there
// and docs/architecture.md#sqlite-store for the design. This side holds everything that touches a
// database: the hot segment (inserts, users, snapshots of it as `<db>`), sealing it into a segment
// (seal.ts), the sealed segments opened on demand (segment-cache.ts), reads across segments, the
// per-user rollups and live windows statistics are assembled from, retention, health figures and
// start-up. Its file operations go through a StoreFs (fs.ts), as the main thread's do.
//
// Messages are handled in arrival order, each once the previous one's database work is done (a
// snapshot's: once its file is written; a read's: once it has read every segment it needs), which
// is what makes snapshots, seals and read-your-writes correct. An insert's work is only counting
// it: its row waits in the tail (hot-tail.ts) and is written a slice at a time when no message
// waits, and reads see a segment's database and its tail together, so a read never waits behind
// the inserts before it. A seal's slow part (gzip, writing) holds nothing: the sealed database
// stays open for reads meanwhile.
import { basename, dirname, join } from 'node:path';
import { setImmediate } from 'node:timers';
import { parentPort, workerData } from 'node:worker_threads';
import type { Database, SqlJsStatic } from 'sql.js';
import type { StoredEvent } from '../../event.ts';
import { withinDepth } from '../../shape.ts';
import { activeSpan, NO_RECENTS, RecentsBuilder, type RangeCounts, type Recents } from '../../live-window.ts';
import { assembleStats, planStats, rangeCounts } from '../../rollup/assemble.ts';
import { encodePart, FrozenHour } from '../../rollup/codec.ts';
import { HourRollup, type RollupPart, type RollupRow } from '../../rollup/hour.ts';
import { UserRollups, WithParts } from '../../rollup/user.ts';
import { HOUR_MS, type ResolvedRange, type Stats, type StatsRange } from '../../stats.ts';
import { loadStoreFs, removeGradually, renameDurably, writeNewFile, type StoreFs, type StoreFsModule } from '../fs.ts';
import { listSegments, readSegments, removeSegmentsUpTo, type JournalEntry } from './journal.ts';
import { manifestFile, readManifest, readSegment, segmentFile, segmentName, withProjects, writeManifestBytes, type Manifest, type OwnerParts, type ScopeParts } from './manifest.ts';
import { HotTail, SegmentView } from './hot-tail.ts';
import { Scopes } from '../scopes.ts';
import { SegmentCache, type SealedSegment } from './segment-cache.ts';
import { SCHEMA, SegmentDb } from './segment.ts';
import { databaseFile, loadSqlJs, readDatabaseFile } from './sqljs.ts';
import { postAnswer, postError, threadMemory, type FromWorker, type HealthFigures, type InitArgs, type InitResult, type WorkerRequest, type RowsQuery, type RowsResult, type SealAnswer, type SealFigures, type ToWorker } from './protocol.ts';
import { ownerKey, rowFrom, tailRow, TRACK_COLUMNS, type TrackedRow } from './row.ts';
import type { AppUser, ErrorScan, ErrorScanQuery } from '../types.ts';

const DAY_MS = 86_400_000;
const PRUNE_BATCH = 2000;
/** Bytes of a sealed database copied between two turns of the event loop (see sealAfterPrune). */
const COPY_SLICE = 4 << 20;
/** Hour parts a seal encodes between two turns of the event loop (~10 ms of work). */
const ENCODE_SLICE = 24;
/** Rows written to a segment's database in one transaction. */
const WRITE_BATCH = 32;
/** Rows written in one transaction when every counted row is written at once (before retention deletes hot rows): fewer commits. */
const BULK_BATCH = 1000;
/** Time a turn of the event loop spends writing rows (a read waits at most about this for them). */
const WRITE_SLICE_MS = 4;
/** Seqs of a segment the project backfill reads between two turns of the event loop (~5 ms). */
const BACKFILL_SLICE = 4000;
/** Manifests read at once at start-up. */
const MANIFEST_READS = 16;
/** Snapshot bytes written between two syncs of the temp file (see writeNewFile). */
const SYNC_EVERY = 2 << 20;
const PRAGMAS = 'PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=MEMORY;';

class CorruptFile extends Error {
  override name = 'CorruptDatabaseError';
}

const port = parentPort!;
const post = (m: FromWorker) => port.postMessage(m);
const log = (msg: string) => post({ log: msg });

const UPSERT_USER = `INSERT INTO users (idp_user_id, email, display_name, last_seen_at) VALUES (?, ?, ?, ?)
  ON CONFLICT(idp_user_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`;

/** A fresh database with the schema (a new hot segment), or an existing one checked and upgraded. */
function prepareDatabase(db: Database): Database {
  // Our journal is the durability; SQLite's own rollback journal can stay in memory.
  db.exec(PRAGMAS);
  try {
    db.exec(SCHEMA);
  } catch (err) {
    throw new CorruptFile(String(err instanceof Error ? err.message : err));
  }
  return db;
}

/** The databases and everything derived from them. One per worker. */
class Engine {
  /** The hot segment: takes inserts; `<db>` is a snapshot of it. */
  private hot: SegmentDb;
  private hotId: number;
  /** The hot id recorded in `<db>` on disk: segments below it may be dropped (see prune). */
  private durableHot: number;
  /** Journal segments up to this are wholly in sealed segments. */
  private sealedJournal: number;
  private sealed: SegmentCache;
  /** Per owner and per project: the rollups (tag = segment id) and live windows statistics come from. */
  private scopes = new Scopes();
  /**
   * Sealed segments whose manifest predates project statistics, newest first: idle time rolls up
   * their projects' parts from their rows (backfillStep). Until then a project's statistics read
   * those segments' rows of the project instead.
   */
  private backfill: number[] = [];
  /** The backfill's segment and what its slices collected so far. */
  private backfilling: { id: number; nextSeq: number; rows: Map<string, Map<string, RollupRow[]>> } | null = null;
  /** Segments backfilled: a stats read that saw one of them change reads again (see stats). */
  private projectsBackfilled = 0;
  private closed = false;
  /**
   * While starting (derive to hotKeys): the (seq, owner, id) of every hot row counted, for the main
   * thread's dedupe set. Retention may then prune the oldest seqs; hotKeys() leaves those out.
   */
  private startKeys: { seqs: number[]; owners: string[]; ids: string[] } | null = null;
  /** Rows counted but not written to their segment's database yet (hot-tail.ts). */
  private tail = new HotTail();
  /** A segment being sealed while its last rows are written to it. */
  private sealing: { id: number; db: SegmentDb } | null = null;
  /** A snapshot is writing the hot database as it is: no row may be written meanwhile. */
  private writesPaused = false;
  private writeScheduled = false;
  /** While starting: (owner, id) of every hot row, so that the replay skips what the snapshot holds. */
  private startSeen: Set<string> | null = null;
  private hotCount = 0;
  private maxSeq = 0;
  private prunedTotal = 0;
  /** Receive times of the hot segment's rows, its bounds when sealed (retention may have pruned the oldest: then `min` is a lower bound). */
  private hotReceived = { min: Infinity, max: -Infinity };
  /** File removals of dropped segments, in order, off the message queue (dropSegment). */
  private removals: Promise<void> = Promise.resolve();
  private unloggedAge = 0;
  private unloggedCount = 0;
  private lastPruneLog = -Infinity;
  private snapshotBytes = 0;
  private lastSnapshot: HealthFigures['lastSnapshot'] = null;
  private lastSeal: SealFigures | null = null;
  private sealStarted = new Map<number, { t0: number; reason: string; count: number }>();
  startup: HealthFigures['startup'] = { replayedEntries: 0, replayMs: 0, tornLinesSkipped: 0, ms: 0 };

  constructor(private SQL: SqlJsStatic, db: Database, private args: InitArgs, private fs: StoreFs, manifests: Manifest[]) {
    this.hot = new SegmentDb(prepareDatabase(db));
    const meta = (key: string) => this.hot.scalar('SELECT value FROM meta WHERE key = ?', [key]);
    const fileHot = meta('hot');
    const lastManifest = manifests.length ? manifests[manifests.length - 1].id : 0;
    this.durableHot = fileHot ?? 0;
    this.hotId = Math.max(fileHot ?? 1, lastManifest + 1);
    if (fileHot !== null && fileHot < this.hotId) {
      // A snapshot of a hot segment that was sealed since: its events are in that segment (or were
      // dropped with it).
      this.hot.db.exec('DELETE FROM events');
      log(`start-up: the database file held hot segment ${fileHot}, sealed since; its events are read from the segment`);
    }
    if ((fileHot ?? 0) < this.hotId && manifests.length) {
      // The users as of the newest seal (the journal after it is replayed on top). A segment is only
      // dropped once `<db>` names a later hot segment, so the newest manifest is there when needed.
      for (const u of manifests[manifests.length - 1].users) this.applyUser(u);
    }
    this.sealedJournal = Math.max(meta('sealedJournal') ?? 0, ...manifests.map((m) => m.journal));
    this.setMeta();
    this.sealed = new SegmentCache(args.cacheBytes, async (id) => {
      const bytes = await readSegment(this.fs, this.args.path, id);
      return new SegmentDb(prepareReadOnly(this.SQL, bytes));
    });
    for (const m of manifests) this.sealed.add(sealedOf(m));
    this.hotCount = this.hot.scalar('SELECT COUNT(*) FROM events') ?? 0;
    this.maxSeq = Math.max(this.hot.scalar('SELECT MAX(seq) FROM events') ?? 0, ...manifests.map((m) => m.maxSeq));
  }

  get journalWatermark() {
    return this.sealedJournal;
  }

  private setMeta() {
    this.hot.db.run('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?), (?, ?)', ['hot', this.hotId, 'sealedJournal', this.sealedJournal]);
  }

  private get eventCount() {
    return this.hotCount + this.sealed.eventCount;
  }

  private noteReceived(ms: number) {
    if (ms < this.hotReceived.min) this.hotReceived.min = ms;
    if (ms > this.hotReceived.max) this.hotReceived.max = ms;
  }

  /** Counts a hot row (track); while starting, also keeps its key for hotKeys(). */
  private count(seq: number, owner: string, row: RollupRow, e: StoredEvent) {
    this.scopes.add(owner, row, e, this.hotId);
    const keys = this.startKeys;
    if (!keys) return;
    keys.seqs.push(seq);
    keys.owners.push(owner);
    keys.ids.push(e.id);
  }

  /**
   * Counts events into the hot segment (seq, rollups, live window) and queues their rows for
   * writing (writeSlice). Returns how many were new: a replay meets events the snapshot holds
   * already; live inserts were deduped by the main thread.
   */
  private accept(events: StoredEvent[]): number {
    let added = 0;
    const seen = this.startSeen;
    for (const given of events) {
      // Journal lines written before ingest bounded the shape of events may nest deeper: such an
      // event is counted, written and held cut at MAX_DEPTH, as reads return it (eventFromRow).
      const e = withinDepth(given);
      const owner = ownerKey(e.user_id);
      if (seen) {
        const key = owner + '\n' + e.id;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      const { tail, row } = tailRow(e, this.hotId, ++this.maxSeq);
      this.tail.push(tail);
      this.hotCount++;
      this.noteReceived(row.receivedMs);
      added++;
      this.count(tail.seq, owner, row, e);
    }
    this.scheduleWrites();
    return added;
  }

  /**
   * Writes rows of the tail to their segments' databases, oldest first, `batch` to a
   * transaction, for about `budgetMs`: a read waits at most for one slice.
   */
  private writeSlice(budgetMs: number, batchSize = WRITE_BATCH): void {
    const t0 = performance.now();
    for (let first = this.tail.peek(); first && performance.now() - t0 < budgetMs; first = this.tail.peek()) {
      const target = first.segment === this.hotId ? this.hot : first.segment === this.sealing?.id ? this.sealing.db : null;
      if (!target) throw new Error(`row ${first.seq} belongs to segment ${first.segment}, which takes no rows`);
      const batch = this.tail.front(batchSize, first.segment);
      target.insert(batch);
      this.tail.advance(batch.length);
    }
  }

  /** Writes the tail a slice at a time, one slice per turn of the event loop, while it holds rows. */
  private scheduleWrites(): void {
    if (this.writeScheduled || this.writesPaused || this.closed || !this.tail.size) return;
    this.writeScheduled = true;
    setImmediate(() => {
      this.writeScheduled = false;
      if (this.writesPaused || this.closed) return;
      try {
        this.writeSlice(WRITE_SLICE_MS);
      } catch (err) {
        // Reads would miss counted rows from here on: every wait for them fails, and the main
        // thread stops the store (a restart replays the journal).
        log(`writing rows failed: ${err instanceof Error ? err.message : String(err)}`);
        this.tail.fail(err);
        return;
      }
      this.scheduleWrites();
    });
  }

  applyUser(u: AppUser) {
    this.hot.statement(UPSERT_USER).run([u.idp_user_id, u.email, u.display_name, u.last_seen_at]);
  }

  /**
   * Journal entries in journal order: events are counted (accept) and their rows written later,
   * users written as they come (their table is apart, and a snapshot holding a user newer than
   * its rows is replayed the same).
   */
  applyEntries(entries: JournalEntry[]): number {
    let added = 0;
    let events: StoredEvent[] = [];
    for (const entry of entries) {
      if (!('u' in entry)) {
        events.push(entry.e as unknown as StoredEvent);
        continue;
      }
      added += this.accept(events);
      events = [];
      this.applyUser(entry.u);
    }
    return added + this.accept(events);
  }

  /**
   * Start-up, before the journal's replay: the rollups from the sealed segments' manifests and the
   * live windows as the newest manifest left them, then the snapshot's rows on top. From here on
   * every row inserted or pruned is counted as it happens, start-up's replay and retention included,
   * as they are later: one way of counting rows, and no replayed event held until afterwards.
   */
  derive(manifests: Manifest[], windowsCutoff: number): void {
    this.scopes.clear();
    const held = manifests.filter((m) => this.sealed.has(m.id));
    // Project windows made from nothing are complete only after every event they may have missed:
    // those of segments without project parts, and those of the newest if it kept no project windows.
    const newest = manifests[manifests.length - 1];
    const unknown = held.filter((m) => !m.projectsKnown);
    this.backfill = unknown.map((m) => m.id).reverse();
    const missed = [...unknown, ...(newest && newest.projectWindows === null ? [newest] : [])];
    this.scopes.projectWindowsFrom = missed.length ? Math.max(...missed.map((m) => m.maxReceived)) + 1 : -Infinity;
    for (const m of held) {
      for (const [owner, { parts, projects }] of Object.entries(m.owners)) {
        for (const p of parts) this.scopes.setPart(owner, undefined, FrozenHour.decode(p), m.id);
        for (const [project, own] of Object.entries(projects)) {
          for (const p of own.parts) this.scopes.setPart(owner, project, FrozenHour.decode(p), m.id);
        }
      }
    }
    if (newest) {
      for (const [owner, state] of Object.entries(newest.windows)) this.scopes.setWindow(owner, undefined, state, windowsCutoff);
      for (const [owner, projects] of Object.entries(newest.projectWindows ?? {})) {
        for (const [project, state] of Object.entries(projects)) this.scopes.setWindow(owner, project, state, windowsCutoff);
      }
    }
    this.startKeys = { seqs: [], owners: [], ids: [] };
    this.startSeen = new Set();
    const all = this.hot.db.prepare(`SELECT ${TRACK_COLUMNS} FROM events ORDER BY seq`);
    try {
      while (all.step()) {
        const { seq, owner, row, e } = rowFrom(all.get());
        this.startSeen.add(owner + '\n' + e.id);
        this.noteReceived(row.receivedMs);
        this.count(seq, owner, row, e);
      }
    } finally {
      all.free();
    }
  }

  /**
   * The end of start-up: every hot (owner, id), grouped by owner, for the main thread's dedupe set.
   * Retention deletes the oldest seqs first, so the rows still there are those from the lowest seq.
   */
  hotKeys(): Record<string, string> {
    const { seqs, owners, ids } = this.startKeys ?? { seqs: [], owners: [], ids: [] };
    this.startKeys = null;
    this.startSeen = null;
    // Rows not written yet have higher seqs than every written row.
    const first = this.hot.scalar('SELECT MIN(seq) FROM events') ?? this.tail.peek()?.seq ?? Infinity;
    const byOwner = new Map<string, string[]>();
    for (let i = 0; i < seqs.length; i++) {
      if (seqs[i] < first) continue;
      let list = byOwner.get(owners[i]);
      if (!list) byOwner.set(owners[i], (list = []));
      list.push(ids[i]);
    }
    const keys: Record<string, string> = {};
    for (const [owner, list] of byOwner) keys[owner] = list.join('\n');
    return keys;
  }

  /** Deletes up to PRUNE_BATCH of the hot segment's oldest rows matching `old`; returns how many. */
  private pruneBatch(limit: number, old: (receivedAt: number) => boolean): number {
    const oldest = this.hot.statement(`SELECT ${TRACK_COLUMNS} FROM events ORDER BY seq LIMIT ?`);
    const rows: TrackedRow[] = [];
    oldest.bind([Math.min(limit, PRUNE_BATCH)]);
    try {
      while (oldest.step()) {
        const r = rowFrom(oldest.get());
        if (!old(r.row.receivedMs)) break;
        rows.push(r);
      }
    } finally {
      oldest.reset();
    }
    if (!rows.length) return 0;
    this.hot.db.exec('BEGIN');
    try {
      this.hot.statement('DELETE FROM events WHERE seq <= ?').run([rows[rows.length - 1].seq]);
      this.hot.db.exec('COMMIT');
    } catch (err) {
      this.hot.db.exec('ROLLBACK');
      throw err;
    }
    const keys: string[] = [];
    for (const { owner, row, e } of rows) {
      // Always the oldest stored, as LiveWindow.remove needs.
      this.scopes.remove(owner, row, e, this.hotId);
      keys.push(owner, e.id);
    }
    // The main thread's dedupe set must forget them, or a re-sent pruned event would be ignored.
    post({ forgetKeys: keys });
    this.hotCount -= rows.length;
    this.prunedTotal += rows.length;
    return rows.length;
  }

  /**
   * Drops a whole sealed segment: its manifest goes first (after that it no longer exists: a segment
   * file without a manifest is removed at start), then its file. Only a segment below the hot id
   * recorded in `<db>` on disk: until then a start-up would take that file's rows for unsealed ones.
   * Removals need not be durable: a segment that comes back after a power loss is past retention
   * again and dropped again at start. They run in the background, in order: reads no longer see the
   * segment, and holding the message queue for them made reads wait up to 180 ms behind a seal (whose
   * retention pass drops a segment) while the journal's fsyncs kept the disk busy.
   */
  private dropSegment(s: SealedSegment, cutoff: number): void {
    this.sealed.remove(s.id);
    this.prunedTotal += s.count;
    this.scopes.drop(s.id, cutoff);
    const { path } = this.args;
    this.removals = this.removals
      .then(async () => {
        await this.fs.remove(manifestFile(path, s.id));
        await removeGradually(this.fs, segmentFile(path, s.id));
      })
      .catch((err) => log(`retention: removing segment ${s.id}'s files failed; the next start removes them: ${err instanceof Error ? err.message : String(err)}`));
  }

  /**
   * Retention by age and count: whole sealed segments past it (oldest first), and the hot segment's
   * oldest events one by one, a bounded batch at a time. Returns the sealed segments dropped.
   */
  async prune(now: number, maxRows = Infinity): Promise<{ byAge: number; byCount: number; dropped: number[] }> {
    const { retentionDays, maxEvents } = this.args;
    let byAge = 0, byCount = 0;
    const dropped: number[] = [];
    const cutoff = retentionDays > 0 ? now - retentionDays * DAY_MS : -Infinity;
    for (const s of this.sealed.oldestFirst()) {
      if (s.id >= this.durableHot || s.writing) break;
      const old = s.maxReceived < cutoff;
      if (!old && this.eventCount - s.count < maxEvents) break;
      this.dropSegment(s, old ? cutoff : s.maxReceived + 1);
      dropped.push(s.id);
      if (old) byAge += s.count;
      else byCount += s.count;
    }
    // Hot rows are deleted from the database: those still in the tail are written first.
    if (this.tail.size && ((retentionDays > 0 && this.hotReceived.min < cutoff) || this.eventCount > maxEvents)) this.writeAll();
    if (retentionDays > 0) {
      let n = 0;
      while (n < maxRows) {
        const k = this.pruneBatch(maxRows - n, (t) => t < cutoff);
        n += k;
        if (k < PRUNE_BATCH) break;
      }
      byAge += n;
    }
    while (this.eventCount > maxEvents && this.hotCount > 0 && byCount < maxRows) {
      const k = this.pruneBatch(Math.min(this.eventCount - maxEvents, maxRows - byCount), () => true);
      if (!k) break;
      byCount += k;
    }
    if (dropped.length) post({ dropFilters: dropped });
    this.unloggedAge += byAge;
    this.unloggedCount += byCount;
    // At the count limit every write prunes a little: one line a minute, not one per batch.
    if ((this.unloggedAge || this.unloggedCount) && (now - this.lastPruneLog >= 60_000 || maxRows === Infinity)) {
      this.lastPruneLog = now;
      if (this.unloggedAge) log(`retention: pruned ${this.unloggedAge} events received more than ${retentionDays} days ago`);
      if (this.unloggedCount) log(`retention: pruned ${this.unloggedCount} oldest events beyond SERVICE_MAX_EVENTS=${maxEvents}`);
      this.unloggedAge = this.unloggedCount = 0;
    }
    return { byAge, byCount, dropped };
  }

  /**
   * Counts journal lines the main thread acknowledged. `written` settles once their rows are in the
   * database (the main thread's backlog counts them until then). Past the count limit the oldest
   * rows are pruned once those rows are written, which the next messages wait for (`prune`), so
   * that no read sees more than the limit.
   */
  applyLines(lines: string, now: number): { written: Promise<void>; prune?: Promise<unknown> } {
    const entries: JournalEntry[] = [];
    for (const line of lines.split('\n')) if (line) entries.push(JSON.parse(line) as JournalEntry);
    this.applyEntries(entries);
    const written = this.tail.written();
    if (this.eventCount <= this.args.maxEvents) return { written };
    return { written, prune: written.then(() => this.prune(now, PRUNE_BATCH * 5)) };
  }

  /** Writes every counted row now. */
  private writeAll(): void {
    this.writeSlice(Infinity, BULK_BATCH);
  }

  /** Settles once every row counted so far is in its database. */
  written(): Promise<void> {
    return this.tail.written();
  }

  /**
   * The segments that may hold rows of `userId` within the given seq and time bounds, in the order
   * a read visits them: newest first (hot, then sealed by descending id) or the reverse.
   */
  private sources(userId: string, order: 'newest' | 'oldest', b: { afterSeq?: number; beforeSeq?: number; maxSeq?: number; since?: number; until?: number }): ('hot' | SealedSegment)[] {
    const sealed = this.sealed.newestFirst().filter((s) =>
      s.owners.has(userId) &&
      (b.afterSeq === undefined || s.maxSeq > b.afterSeq) &&
      (b.beforeSeq === undefined || s.minSeq < b.beforeSeq) &&
      (b.maxSeq === undefined || s.minSeq <= b.maxSeq) &&
      (b.since === undefined || s.maxReceived >= b.since) &&
      (b.until === undefined || s.minReceived < b.until));
    const all: ('hot' | SealedSegment)[] = ['hot', ...sealed];
    return order === 'newest' ? all : all.reverse();
  }

  /** A segment as reads see it: its database and its rows still in the tail (use it at once). */
  private async view(s: 'hot' | SealedSegment): Promise<SegmentView> {
    const db = s === 'hot' ? this.hot : await this.sealed.open(s.id);
    const id = s === 'hot' ? this.hotId : s.id;
    return new SegmentView(db, this.tail.size && (id === this.hotId || id === this.sealing?.id) ? this.tail.of(id) : []);
  }

  /**
   * A page of list or a batch of export: the user's rows of the filter, by seq in either direction
   * across segments, one more than `limit` read to tell whether more follow.
   */
  async rows(q: RowsQuery): Promise<RowsResult> {
    const { events, seqs, more } = await this.seqRows(q);
    return { events, lastSeq: events.length ? seqs[events.length - 1] : null, more, maxSeq: this.maxSeq };
  }

  private async seqRows(q: RowsQuery): Promise<{ events: StoredEvent[]; seqs: number[]; more: boolean }> {
    const limit = Math.max(0, Math.floor(q.limit));
    const events: StoredEvent[] = [], seqs: number[] = [];
    // '' is the anonymous owner key: unowned events appear for no user.
    if (limit === 0 || q.userId === '') return { events, seqs, more: false };
    for (const s of this.sources(q.userId, q.order, q)) {
      const r = (await this.view(s)).rows(q, limit + 1 - events.length);
      events.push(...r.events);
      seqs.push(...r.seqs);
      if (events.length > limit) break;
    }
    const more = events.length > limit;
    if (more) events.length = seqs.length = limit;
    return { events, seqs, more };
  }

  /**
   * Issue processing's feed (Store.scanErrors): error rows after a seq, oldest first, across owners
   * (segments by seq) or of one owner (its index, as an export reads it).
   */
  async errors(q: ErrorScanQuery): Promise<ErrorScan> {
    const upTo = Math.min(q.upTo ?? Infinity, this.maxSeq);
    const limit = Math.max(0, Math.floor(q.limit));
    // No room for an answer: nothing is covered (any error after `after` would be passed over).
    if (limit === 0) return { events: [], seqs: [], through: q.after, head: this.maxSeq };
    if (q.userId !== undefined) {
      const r = await this.seqRows({ userId: q.userId, type: 'error', afterSeq: q.after, maxSeq: upTo, order: 'oldest', limit });
      return { events: r.events, seqs: r.seqs, through: r.more ? r.seqs[r.seqs.length - 1] : Math.max(q.after, upTo), head: this.maxSeq };
    }
    const events: StoredEvent[] = [], seqs: number[] = [];
    const sealed = this.sealed.oldestFirst().filter((s) => s.maxSeq > q.after && s.minSeq <= upTo);
    for (const s of [...sealed, 'hot' as const]) {
      if (events.length >= limit) break;
      const r = (await this.view(s)).errors(q.after, upTo, limit - events.length);
      events.push(...r.events);
      seqs.push(...r.seqs);
    }
    return { events, seqs, through: events.length >= limit ? seqs[seqs.length - 1] : Math.max(q.after, upTo), head: this.maxSeq };
  }

  /**
   * Statistics, assembled like every store's (lib/rollup/assemble.ts): whole hours from the owner's
   * rollups, the partial hours at a range's edges from its rows, recents from the live window (or,
   * when it cannot answer exactly, from the range's rows).
   */
  async stats(userId: string, now: number, range?: StatsRange, projectId?: string): Promise<Stats> {
    // A segment backfilled while the reads below wait would count twice (its rows, then its parts).
    for (;;) {
      const backfilled = this.projectsBackfilled;
      const stats = await this.statsOnce(userId, now, range, projectId);
      if (backfilled === this.projectsBackfilled) return stats;
    }
  }

  private async statsOnce(userId: string, now: number, range?: StatsRange, projectId?: string): Promise<Stats> {
    const stat = userId === '' ? undefined : this.scopes.get(userId, projectId);
    const plan = planStats(now, range, stat?.window.newest);
    // Segments sealed before project statistics were kept have no parts of the project (until
    // backfillStep gives them some): its rows there count as raw rows, over the whole hours too.
    const [h0, h1] = plan.fullHours;
    const unknown = projectId === undefined || userId === '' ? [] : this.sealed.newestFirst().filter((s) =>
      !s.projectsKnown && s.owners.has(userId) && s.maxReceived >= h0 * HOUR_MS && s.minReceived < h1 * HOUR_MS);
    if (!stat && !unknown.length) return assembleStats({ plan, rollups: new UserRollups(), edges: [], recents: NO_RECENTS });
    const rowsOf = async (start: number, end: number, from: ('hot' | SealedSegment)[]) => {
      const rows: RollupRow[] = [];
      for (const s of from) (await this.view(s)).track({ userId, start, end, order: 'ASC', projectId }, (r) => void rows.push(r.row));
      return HourRollup.fromRows(rows);
    };
    const edges: RollupPart[] = [];
    for (const [start, end] of plan.rawSpans) edges.push(...(await rowsOf(start, end, this.sources(userId, 'oldest', { since: start, until: end }))));
    const own = stat?.rollups ?? new UserRollups();
    const rollups = unknown.length ? new WithParts(own, await rowsOf(h0 * HOUR_MS, h1 * HOUR_MS, unknown)) : own;
    const recents = stat?.window.recents(now, plan.range) ??
      (await this.recentsFromRows(userId, projectId, now, plan.range, rangeCounts(plan, rollups, edges)));
    return assembleStats({ plan, rollups, edges, recents });
  }

  /**
   * Recents as recentsOf computes them, from rows: the active sessions from the rows of the last 5
   * minutes (received-time index), and each list from its own walk of the range's rows newest first
   * (the latest rows, the latest errors, the latest pageloads), which stops once the list holds what
   * the range has (its counts, from the rollups). Reading every row of the range instead took 30 s
   * for a past 30-day range at 20M events (the dashboard's comparison period); one walk for all
   * three lists read four times the rows the separate walks do, for the points.
   */
  private async recentsFromRows(userId: string, projectId: string | undefined, now: number, range: ResolvedRange | null, counts: RangeCounts): Promise<Recents> {
    const active = new Set<string>();
    const span = activeSpan(now, range);
    if (span) {
      for (const s of this.sources(userId, 'newest', { since: span[0], until: span[1] })) {
        (await this.view(s)).track({ userId, projectId, start: span[0], end: span[1], order: 'DESC' }, ({ e }) => void (e.sessionId && active.add(e.sessionId)));
      }
    }
    const latest = new RecentsBuilder(counts);
    const from = range ? range.from : -Infinity, to = range ? range.to : Infinity;
    const walks: [type: string | undefined, done: () => boolean, take: (r: TrackedRow) => boolean][] = [
      [undefined, () => latest.activityDone, ({ e }) => latest.takeActivity(e)],
      ['error', () => latest.errorsDone, ({ e }) => latest.takeError(e)],
      ['pageload', () => latest.pointsDone, ({ e, row }) => row.route === null || latest.takePoint(e, row.route, row.duration!)],
    ];
    for (const [type, done, take] of walks) {
      for (const s of this.sources(userId, 'newest', range ? { since: from, until: to } : {})) {
        if (done()) break;
        (await this.view(s)).track({ userId, projectId, start: from, end: to, order: 'DESC', via: 'seq', type }, take);
      }
    }
    return latest.recents(active.size);
  }

  getUser(id: string): AppUser | null {
    const s = this.hot.statement('SELECT idp_user_id, email, display_name, last_seen_at FROM users WHERE idp_user_id = ?');
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
    const pages = this.hot.db.exec('PRAGMA page_count; PRAGMA page_size');
    return {
      eventCount: this.eventCount,
      usersWithEvents: this.scopes.size,
      databaseBytes: (pages[0].values[0][0] as number) * (pages[1].values[0][0] as number),
      snapshotBytes: this.snapshotBytes,
      lastSnapshot: this.lastSnapshot,
      prunedEvents: this.prunedTotal,
      startup: this.startup,
      segments: {
        sealed: this.sealed.size, hotEvents: this.hotCount, cacheBytes: this.sealed.openBytes, cacheOpen: this.sealed.openCount, lastSeal: this.lastSeal,
        projectsPending: this.backfill.length,
      },
      workerMemory: threadMemory(),
    };
  }

  /** The size of the snapshot the database was loaded from (0: none). */
  set loadedBytes(bytes: number) {
    this.snapshotBytes = bytes;
  }

  /**
   * Writes the hot segment's database to a temp file, syncs it and renames it into place as `<db>`,
   * then drops the journal segments it covers. `rowsFirst`: the rows counted before the request are
   * written to the database first (the journal segments it covers hold them). A small database
   * (right after a seal, or in light traffic) is copied, which takes a few milliseconds, and other
   * messages go on while the copy is written. A large one is written as sql.js holds it, and no
   * other message is handled and no row written until it is (`written`: reads wait meanwhile;
   * acknowledgements never do), rather than doubling the memory it takes. Only a stock sql.js,
   * whose file is out of reach, exports.
   */
  snapshot(covered: number, reason: string, now: number, rowsFirst: boolean): { written: Promise<void>; done: Promise<void> } {
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const done = (async () => {
      if (rowsFirst) await this.tail.written();
      const live = databaseFile(this.hot.db);
      const copy = live && live.length <= this.args.snapshotCopyBytes ? live.slice() : null;
      if (copy) {
        wrote();
        return this.writeSnapshot(covered, reason, now, () => {}, copy);
      }
      this.writesPaused = true;
      const resume = () => {
        this.writesPaused = false;
        this.scheduleWrites();
        wrote();
      };
      await this.writeSnapshot(covered, reason, now, resume, null).finally(resume);
    })();
    return { written, done: done.finally(wrote) };
  }

  private async writeSnapshot(covered: number, reason: string, now: number, wrote: () => void, copy: Uint8Array | null): Promise<void> {
    const { fs } = this;
    const path = this.args.path;
    const dir = dirname(path);
    const t0 = performance.now();
    const events = this.hotCount;
    const hotId = this.hotId;
    const tmp = join(dir, `${basename(path)}.tmp-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const live = copy ? null : databaseFile(this.hot.db);
    try {
      const bytes = copy ?? live ?? this.hot.export();
      const size = bytes.length;
      await writeNewFile(fs, tmp, bytes, SYNC_EVERY);
      wrote(); // the database may change again
      const heldMs = copy ? 0 : performance.now() - t0;
      // The replaced snapshot keeps a second name through the rename, so the rename does not free
      // its blocks all at once (see removeGradually); a crash leaves that name for start-up to remove.
      const old = join(dir, `${basename(path)}.old-${Date.now()}`);
      const kept = await fs.link(path, old).then(() => true, () => false);
      // Durable before any segment it covers is deleted.
      await renameDurably(fs, tmp, path);
      this.durableHot = hotId;
      if (kept) await removeGradually(fs, old);
      await removeSegmentsUpTo(fs, path, covered);
      const totalMs = performance.now() - t0;
      this.snapshotBytes = size;
      this.lastSnapshot = { at: new Date(now).toISOString(), events, bytes: size, heldMs: Math.round(heldMs), totalMs: Math.round(totalMs) };
      log(`snapshot (${reason}): ${events} events, ${(size / 1048576).toFixed(1)} MiB, ` +
        `${copy ? 'a copy written' : `database held ${Math.round(heldMs)} ms${live ? '' : ' (exported: a copy)'}`}, ${Math.round(totalMs)} ms in all`);
    } catch (err) {
      await fs.remove(tmp).catch(() => {});
      log(`snapshot (${reason}) failed; the journal is kept: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
  }

  /**
   * Seals the hot segment (which holds exactly the journal segments up to `covered`): a new, empty
   * hot segment (with the users) takes inserts at once and the sealed database stays open for
   * reads. Answers with the sealed database's bytes and its manifest: the main thread gzips and
   * writes them (this thread's event loop is busy with inserts and reads; its file writes would
   * wait behind them), then sends `sealed`.
   */
  seal(covered: number, reason: string, now: number): { swapped: Promise<unknown>; done: Promise<SealAnswer | null> } {
    let swap!: () => void;
    const swapped = new Promise<void>((resolve) => (swap = resolve));
    const done = this.sealAfterPrune(covered, reason, now, swap).finally(swap);
    return { swapped, done };
  }

  private async sealAfterPrune(covered: number, reason: string, now: number, swapped: () => void): Promise<SealAnswer | null> {
    // Events already past retention are not sealed (sealed segments are only dropped whole).
    await this.prune(now);
    if (this.hotCount === 0) return null;
    const t0 = performance.now();
    const id = this.hotId;
    const old = this.hot;
    // Everything up to the swap holds every read and insert queued behind the seal: its bounds come
    // from what inserts tracked (a scan for them took 15–25 ms at 50,000 events), its last rows are
    // written and its bytes copied after the swap.
    const minSeq = old.scalar('SELECT MIN(seq) FROM events') ?? this.tail.of(id)[0]?.seq ?? this.maxSeq;
    // The parts of this segment (inserts from now on go to the next one's) and the windows.
    const { shares, windows, projectWindows } = this.scopes.sealed(id);
    const owners: Manifest['owners'] = {};
    const toEncode: [entry: ScopeParts, parts: RollupPart[], owner: string, project: string | undefined][] = [];
    const total = (parts: RollupPart[]) => parts.reduce((n, p) => n + p.total, 0);
    for (const { owner, parts, projects } of shares) {
      const entry: OwnerParts = (owners[owner] = { count: total(parts), parts: [], projects: {} });
      toEncode.push([entry, parts, owner, undefined]);
      for (const [project, own] of projects) {
        entry.projects[project] = { count: total(own), parts: [] };
        toEncode.push([entry.projects[project], own, owner, project]);
      }
    }
    const manifest: Manifest = {
      id,
      journal: covered,
      count: this.hotCount,
      minSeq,
      maxSeq: this.maxSeq,
      minReceived: this.hotReceived.min,
      maxReceived: this.hotReceived.max,
      bytes: 0, // below, once its last rows are written
      owners,
      windows,
      projectWindows,
      projectsKnown: true,
      users: [],
      // The main thread fills it in from the exact ids it holds for this segment.
      filter: new Float64Array(0),
    };
    // The new hot segment, with the users (they live in the hot segment).
    const fresh = new SegmentDb(prepareDatabase(new this.SQL.Database()));
    const users = old.db.exec('SELECT idp_user_id, email, display_name, last_seen_at FROM users')[0]?.values ?? [];
    for (const u of users) {
      fresh.statement(UPSERT_USER).run(u);
      manifest.users.push({ idp_user_id: u[0] as string, email: u[1] as string, display_name: u[2] as string, last_seen_at: u[3] as string });
    }
    this.hot = fresh;
    this.hotId = id + 1;
    this.hotCount = 0;
    this.hotReceived = { min: Infinity, max: -Infinity };
    this.sealedJournal = covered;
    this.setMeta();
    const segment = sealedOf(manifest);
    segment.writing = true;
    this.sealing = { id, db: old };
    this.sealed.add(segment, old);
    this.sealStarted.set(id, { t0, reason, count: manifest.count });
    swapped(); // the next message sees the new hot segment, and the sealed one among the others
    // Its rows still in the tail go to it before any of the new hot segment's (reads see them there
    // meanwhile); then nothing writes to it any more.
    await this.tail.written();
    this.sealing = null;
    const file = databaseFile(old.db) ?? old.export();
    manifest.bytes = file.length;
    this.sealed.setBytes(id, file.length);
    // A copy for the main thread to gzip and write: the sealed database stays open here for reads.
    // Copied 4 MiB at a time, the messages that arrive meanwhile handled between slices: in one
    // piece it held them for up to 64 ms.
    const database = new Uint8Array(file.length);
    for (let at = 0; at < file.length; at += COPY_SLICE) {
      await new Promise((r) => setTimeout(r, 0));
      database.set(file.subarray(at, at + COPY_SLICE), at);
    }
    // Encoding a segment's hour parts took up to 230 ms for a few busy days: done in slices, with
    // the messages that arrive meanwhile (reads, inserts) handled between them. Each part is
    // replaced by its frozen form, which takes less memory and reads the same.
    for (const [entry, parts, owner, project] of toEncode) {
      for (let i = 0; i < parts.length; i += ENCODE_SLICE) {
        if (i > 0) await new Promise((r) => setTimeout(r, 0));
        // Retention dropped the segment meanwhile (only when it alone exceeds the event limit).
        if (!this.sealed.has(id)) return null;
        for (const part of parts.slice(i, i + ENCODE_SLICE)) {
          const bytes = encodePart(part);
          entry.parts.push(bytes);
          this.scopes.setPart(owner, project, FrozenHour.decode(bytes), id);
        }
      }
    }
    return { manifest, database };
  }

  /**
   * The main thread wrote the segment and its manifest: `<db>` still names the sealed segment as
   * hot, so it is replaced by a snapshot of the new hot segment (small this soon after the seal),
   * which also drops the journal segments the seal covered.
   */
  sealWritten(id: number, covered: number, disk: number, now: number): { written: Promise<void>; done: Promise<void> } {
    const segment = this.sealed.get(id);
    if (segment) segment.writing = false;
    const started = this.sealStarted.get(id);
    this.sealStarted.delete(id);
    // Only the covered journal segments must be in it, and their rows are in the sealed segment:
    // the hot segment's tail need not be written first.
    const { written, done } = this.snapshot(covered, `after sealing segment ${id}`, now, false);
    return {
      written,
      done: done.then(() => {
        if (!started) return;
        const ms = Math.round(performance.now() - started.t0);
        this.lastSeal = { at: new Date(now).toISOString(), segment: id, events: started.count, bytes: disk, ms };
        log(`sealed segment ${id} (${started.reason}): ${started.count} events, ${(disk / 1048576).toFixed(1)} MiB on disk, ${ms} ms`);
      }),
    };
  }

  holds(segment: number): boolean {
    return this.sealed.has(segment);
  }

  get hotOldest(): number | null {
    const t = this.hot.db.exec('SELECT MIN(received_at) FROM events')[0]?.values[0][0] as string | null | undefined;
    return t ? Date.parse(t) : null;
  }

  /**
   * Work for when no message is waiting, a slice at a time; true while some is left: merging days
   * of rollups that reads took hour by hour (UserRollups.mergePending, one owner's budget at a
   * time), then rolling up the projects of segments sealed before project statistics were kept.
   */
  async idleStep(): Promise<boolean> {
    if (this.closed) return false;
    if (this.scopes.mergeIdle()) return true;
    return this.backfillStep();
  }

  /**
   * One slice of the backfill: BACKFILL_SLICE seqs of the newest segment still without its
   * projects' parts, whose rows with a project are collected by owner and project. After the last
   * slice the parts are set and the segment counts as known, at once (reads then stop reading its
   * rows for a project), and its manifest is rewritten with the parts.
   */
  private async backfillStep(): Promise<boolean> {
    const id = this.backfill[0];
    if (id === undefined) return false;
    const segment = this.sealed.get(id);
    if (!segment || segment.projectsKnown) {
      this.backfill.shift();
      return this.backfill.length > 0;
    }
    let b = this.backfilling;
    if (b?.id !== id) b = this.backfilling = { id, nextSeq: segment.minSeq, rows: new Map() };
    // Opened for each slice: between two, a read may have let the cache close it.
    const db = await this.sealed.open(id);
    if (this.closed || this.backfilling !== b || !this.sealed.has(id)) return !this.closed;
    const end = Math.min(b.nextSeq + BACKFILL_SLICE, segment.maxSeq + 1);
    db.projectRows(b.nextSeq, end, ({ owner, row, e }) => {
      let projects = b.rows.get(owner);
      if (!projects) b.rows.set(owner, (projects = new Map()));
      let rows = projects.get(e.projectId!);
      if (!rows) projects.set(e.projectId!, (rows = []));
      rows.push(row);
    });
    b.nextSeq = end;
    if (end <= segment.maxSeq) return true;
    const found: Record<string, Record<string, ScopeParts>> = {};
    for (const [owner, projects] of b.rows) {
      for (const [project, rows] of projects) (found[owner] ??= {})[project] = { count: rows.length, parts: HourRollup.fromRows(rows).map(encodePart) };
    }
    // The manifest first: until the parts are set below, reads take the segment's rows.
    try {
      const file = manifestFile(this.args.path, id);
      const bytes = await this.fs.read(file);
      if (!bytes) throw new Error(`${file} is missing`);
      await writeManifestBytes(this.fs, this.args.path, id, await withProjects(bytes, file, found));
    } catch (err) {
      log(`segment ${id}: writing its projects' parts failed; the next start rolls them up again: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.backfill.shift();
    this.backfilling = null;
    // Retention may have dropped it meanwhile (its manifest goes too, or start-up removes it).
    if (!this.sealed.has(id) || this.closed) return !this.closed;
    for (const [owner, projects] of Object.entries(found)) {
      for (const [project, { parts }] of Object.entries(projects)) {
        for (const bytes of parts) this.scopes.setPart(owner, project, FrozenHour.decode(bytes), id);
      }
    }
    segment.projectsKnown = true;
    this.projectsBackfilled++;
    const shares = Object.values(found).flatMap((p) => Object.values(p));
    log(`segment ${id}: its projects' statistics rolled up from its rows (${shares.reduce((n, p) => n + p.count, 0)} events in ${shares.length} projects)`);
    return this.backfill.length > 0;
  }

  /** Resolves once the files of dropped segments are gone. */
  async close(): Promise<void> {
    await this.tail.written();
    this.closed = true;
    this.hot.close();
    this.sealed.close();
    await this.removals;
  }
}

function sealedOf(m: Manifest): SealedSegment {
  return {
    id: m.id, count: m.count, minSeq: m.minSeq, maxSeq: m.maxSeq, minReceived: m.minReceived, maxReceived: m.maxReceived,
    bytes: m.bytes, owners: new Set(Object.keys(m.owners)), writing: false, projectsKnown: m.projectsKnown,
  };
}

function prepareReadOnly(SQL: SqlJsStatic, bytes: Uint8Array): Database {
  const db = new SQL.Database(bytes);
  db.exec('PRAGMA query_only=ON; PRAGMA cache_size=-2000;');
  return db;
}

// sql.js is loaded (read and compiled, ~0.1 s) as soon as the worker starts, while the main thread
// takes the database's lock and start-up reads the manifests. A failure surfaces in start().
const sqlJs = loadSqlJs();
sqlJs.catch(() => {});

/** Start-up: manifests → hot snapshot → rollups and windows → journal replay → retention → keys. */
async function start(args: InitArgs): Promise<{ engine: Engine; result: InitResult }> {
  const t0 = performance.now();
  const { path } = args;
  const fs = await loadStoreFs((workerData as { fs?: StoreFsModule } | undefined)?.fs);
  const dir = dirname(path);
  const base = basename(path);
  const segName = segmentName(base);
  const manifestIds: number[] = [];
  const segmentIds = new Set<number>();
  // Unfinished work of a previous process (the main thread holds the database's lock: no other
  // process is writing these).
  for (const name of await fs.list(dir)) {
    if (name.startsWith(base + '.tmp-')) {
      await fs.remove(join(dir, name));
      log(`removed an unfinished snapshot ${name} (the previous snapshot and the journal are intact)`);
    } else if (name.startsWith(base + '.old-')) {
      // A second name of a snapshot being replaced; the live file is `path`. Only the name goes.
      await fs.remove(join(dir, name));
      log(`removed ${name}, a replaced snapshot a crash left behind`);
    } else if (name.startsWith(base + '.seg-') && name.endsWith('.tmp')) {
      await fs.remove(join(dir, name));
      log(`removed ${name}, an unfinished seal (its events are in the journal)`);
    } else {
      const m = segName.exec(name);
      if (m && m[2] === 'manifest') manifestIds.push(Number(m[1]));
      else if (m) segmentIds.add(Number(m[1]));
    }
  }
  const manifests: Manifest[] = [];
  const inDedupeWindow = (m: Manifest) => m.maxReceived >= args.now - args.dedupeWindowMs;
  const newestId = Math.max(...manifestIds.filter((id) => segmentIds.has(id)));
  const live: number[] = [];
  for (const id of manifestIds.sort((a, b) => a - b)) {
    if (segmentIds.delete(id)) {
      live.push(id);
      continue;
    }
    // Retention removes the manifest, then the file; a power loss can bring back either name.
    await fs.remove(manifestFile(path, id));
    log(`removed the manifest of segment ${id}, whose file is gone (a drop a crash interrupted)`);
  }
  // Several at a time: one after another, the 391 manifests of 20M events took ~0.3 s, most of it
  // waiting on the file system's thread pool.
  for (let i = 0; i < live.length; i += MANIFEST_READS) {
    manifests.push(...await Promise.all(live.slice(i, i + MANIFEST_READS).map(async (id) => {
      try {
        // Only the newest manifest's live windows are read (derive), and only the key filters of
        // segments within the dedupe window (the filters returned below).
        return await readManifest(fs, path, id, { windows: id === newestId, filter: inDedupeWindow });
      } catch (err) {
        throw new CorruptFile(`${manifestFile(path, id)}: ${err instanceof Error ? err.message : String(err)}`);
      }
    })));
  }
  for (const id of segmentIds) {
    await removeGradually(fs, segmentFile(path, id));
    log(`removed segment file ${id} without a manifest (an unfinished seal or drop; its events are in the journal or were past retention)`);
  }
  const { SQL, fileGrowth } = await sqlJs;
  if (fileGrowth === 'stock') log('sql.js differs from the pinned version: its in-memory file grows by copying (slower inserts, longer stalls)');
  let existing = await readDatabaseFile(path, fs);
  let db: Database;
  try {
    db = existing && existing.length ? new SQL.Database(existing) : new SQL.Database();
    db.exec('SELECT count(*) FROM sqlite_master');
  } catch (err) {
    throw new CorruptFile(String(err instanceof Error ? err.message : err));
  }
  const engine = new Engine(SQL, db, args, fs, manifests);
  engine.loadedBytes = existing?.length ?? 0;
  existing = null;

  const watermark = engine.journalWatermark;
  const all = await listSegments(fs, path);
  // Segments up to the watermark are wholly in sealed segments: replaying them would store again
  // what retention may have dropped.
  const segments = all.filter((s) => s.seq > watermark);
  const cutoff = args.retentionDays > 0 ? args.now - args.retentionDays * DAY_MS : -Infinity;
  engine.derive(manifests, cutoff);
  const replayStart = performance.now();
  const journal = await readSegments(fs, segments);
  // Replayed events are counted now and their rows written after start-up, a slice at a time as
  // any insert's are (reads see them meanwhile): writing them here was ~60% of a 100,000-event replay.
  const replayed = engine.applyEntries(journal.entries);
  const replayMs = performance.now() - replayStart;
  for (const t of journal.skipped) {
    log(`journal: skipped an unreadable ${t.last ? 'last ' : ''}line ${t.line} (${t.bytes} bytes) of ${t.path}` +
      (t.last ? ' (torn by a crash; it was never acknowledged)' : ''));
  }
  if (segments.length) {
    log(`journal: replayed ${journal.entries.length} entries from ${segments.length} segment(s) (${replayed} events new) in ${Math.round(replayMs)} ms`);
  }
  if (all.length > segments.length) await removeSegmentsUpTo(fs, path, watermark);
  // Counted rows it prunes are taken back, and dropped segments leave the rollups. Its
  // messages to the main thread (pruned keys, dropped filters) arrive before the answer below and
  // find nothing to forget: the keys and filters the answer carries are the ones left after it.
  const pruned = await engine.prune(args.now);
  const keys = engine.hotKeys();
  const changed = journal.entries.length > 0 || pruned.byAge > 0 || pruned.byCount > 0 || journal.skipped.length > 0;
  const lastSegment = Math.max(all.length ? all[all.length - 1].seq : 0, watermark);
  // Segments that held nothing new can go now; anything else is compacted by a snapshot.
  if (segments.length && !changed) await removeSegmentsUpTo(fs, path, lastSegment);
  engine.startup = {
    replayedEntries: journal.entries.length, replayMs: Math.round(replayMs), tornLinesSkipped: journal.skipped.length,
    ms: Math.round(performance.now() - t0),
  };
  const filters = manifests
    .filter((m) => engine.holds(m.id) && inDedupeWindow(m))
    .map((m) => ({ segment: m.id, maxReceived: m.maxReceived, hashes: m.filter }));
  return { engine, result: { keys, filters, lastSegment, compact: changed, hotOldest: engine.hotOldest } };
}

// ---- the message loop ----

let engine: Engine | null = null;

/** A message's answer, and until when the next message must wait (the database work it holds). */
interface Handled {
  answer: unknown;
  holds?: Promise<unknown>;
}

function handle(req: WorkerRequest): Handled {
  if (req.op === 'open') {
    const started = start(req.args).then((s) => {
      engine = s.engine;
      return s.result;
    });
    return { answer: started, holds: started };
  }
  if (!engine) throw new Error('the database is not open');
  switch (req.op) {
    case 'apply': {
      // Counted now; written a slice at a time after (Engine.writeSlice): later messages, reads
      // above all, need not wait for the writes (unless retention by count must run after them).
      const { written, prune } = engine.applyLines(req.lines, req.now);
      return { answer: prune ? Promise.all([written, prune]) : written, holds: prune };
    }
    case 'readRows': {
      // A read may open sealed segments (async): nothing else runs until it has read them all.
      const rows = engine.rows(req.query);
      return { answer: rows, holds: rows };
    }
    case 'scanErrors': {
      const errors = engine.errors(req.query);
      return { answer: errors, holds: errors };
    }
    case 'readStats': {
      const stats = engine.stats(req.userId, req.now, req.range, req.projectId);
      return { answer: stats, holds: stats };
    }
    case 'readUser':
      return { answer: engine.getUser(req.idpUserId) };
    case 'drainTail':
      // Holds nothing: reads and inserts go on while the rows are written.
      return { answer: engine.written() };
    case 'readHealth':
      return { answer: engine.health() };
    case 'prune': {
      const pruned = engine.prune(req.now, PRUNE_BATCH * 10);
      return { answer: pruned.then(() => undefined), holds: pruned };
    }
    case 'snapshot': {
      const { written, done } = engine.snapshot(req.covered, req.reason, req.now, true);
      return { answer: done, holds: written };
    }
    case 'seal': {
      // Holds until the new hot segment took over.
      const { swapped, done } = engine.seal(req.covered, req.reason, req.now);
      return { answer: done, holds: swapped };
    }
    case 'finishSeal': {
      const { written, done } = engine.sealWritten(req.segment, req.covered, req.diskBytes, req.now);
      return { answer: done, holds: written };
    }
    case 'close': {
      const closed = engine.close();
      engine = null;
      return { answer: closed, holds: closed };
    }
  }
}

/** Settles once the previous message's database work is done: each message waits for it. */
let ready: Promise<unknown> = Promise.resolve();
/** Messages received whose database work is not done; idle work runs only when there are none. */
let busy = 0;
let idleScheduled = false;
/** An idle step is under way (it may wait for a segment to open): the next starts after it. */
let idleRunning = false;

/** Runs Engine.idleStep a step at a time while no message is waiting. */
function whenIdle() {
  if (busy || idleScheduled || idleRunning || !engine) return;
  idleScheduled = true;
  setTimeout(() => {
    idleScheduled = false;
    if (busy || !engine) return;
    idleRunning = true;
    engine.idleStep().then(
      (more) => {
        idleRunning = false;
        if (more) whenIdle();
      },
      (err: unknown) => {
        idleRunning = false;
        log(`idle work failed: ${err instanceof Error ? err.message : String(err)}`);
      },
    );
  }, 0);
}

port.on('message', (msg: ToWorker) => {
  const { id, req } = msg;
  busy++;
  const handled = ready.then(() => handle(req));
  ready = handled.then((h) => h.holds?.catch(() => {}), () => {}).then(() => {
    busy--;
    whenIdle();
  });
  handled.then((h) => h.answer).then(
    (value) => {
      const sealed = value as SealAnswer | null;
      // A seal's bytes travel without a copy.
      const transfer = req.op === 'seal' && sealed ? [sealed.database.buffer as ArrayBuffer] : [];
      // An answer that cannot be posted is answered with an error (postAnswer): the request settles.
      const refused = postAnswer(port, id, req.op, value, transfer);
      if (refused) log(`the answer to a ${req.op} request could not be sent and was answered with an error: ${refused.name}: ${refused.message}`);
    },
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      postError(port, id, { name: e.name, message: e.message, path: e instanceof CorruptFile ? (req as { args: InitArgs }).args.path : undefined });
    },
  );
});
