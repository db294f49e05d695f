// What every role of the database worker shares: the hot segment and the sealed ones, the rows not
// written yet, the statistics counted from them, and the worker's few settings. The roles (writes,
// reads, retention, snapshot, seal, backfill, recovery) are files of their own that work on it;
// none of them owns it.
import { parentPort } from 'node:worker_threads';
import type { Database, SqlJsStatic } from 'sql.js';
import type { StoreFs } from '../../fs.ts';
import { Scopes } from '../../scopes.ts';
import type { AppUser } from '../../types.ts';
import { HotTail } from '../hot-tail.ts';
import { readSegment, type Manifest } from '../manifest.ts';
import type { FromWorker, InitArgs } from '../protocol.ts';
import { SegmentCache, type SealedSegment } from '../segment-cache.ts';
import { SCHEMA, SegmentDb } from '../segment.ts';

export const DAY_MS = 86_400_000;
const PRAGMAS = 'PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=MEMORY;';
const UPSERT_USER = `INSERT INTO users (idp_user_id, email, display_name, last_seen_at) VALUES (?, ?, ?, ?)
  ON CONFLICT(idp_user_id) DO UPDATE SET email = excluded.email, display_name = excluded.display_name, last_seen_at = excluded.last_seen_at`;

/** A database file sql.js cannot read; the main thread answers it as CorruptDatabaseError. */
export class CorruptFile extends Error {
  override name = 'CorruptDatabaseError';
}

/** Posts a message to the main thread (log lines, keys and filters retention removed). */
export const post = (m: FromWorker) => parentPort!.postMessage(m);
export const log = (msg: string) => post({ log: msg });

/** A fresh database with the schema (a new hot segment), or an existing one checked and upgraded. */
export function prepareDatabase(db: Database): Database {
  // Our journal is the durability; SQLite's own rollback journal can stay in memory.
  db.exec(PRAGMAS);
  try {
    db.exec(SCHEMA);
  } catch (err) {
    throw new CorruptFile(String(err instanceof Error ? err.message : err));
  }
  return db;
}

function prepareReadOnly(SQL: SqlJsStatic, bytes: Uint8Array): Database {
  const db = new SQL.Database(bytes);
  db.exec('PRAGMA query_only=ON; PRAGMA cache_size=-2000;');
  return db;
}

/** A sealed segment as reads and retention see it, from its manifest. */
export function sealedOf(m: Manifest): SealedSegment {
  return {
    id: m.id, count: m.count, minSeq: m.minSeq, maxSeq: m.maxSeq, minReceived: m.minReceived, maxReceived: m.maxReceived,
    bytes: m.bytes, owners: new Set(Object.keys(m.owners)), writing: false, projectsKnown: m.projectsKnown,
    environmentsKnown: m.environmentsKnown === true,
  };
}

export class WorkerState {
  /** The hot segment: takes inserts; `<db>` is a snapshot of it. */
  hot: SegmentDb;
  hotId: number;
  /** The hot id recorded in `<db>` on disk: segments below it may be dropped (see retention). */
  durableHot: number;
  /** Journal segments up to this are wholly in sealed segments. */
  sealedJournal: number;
  readonly sealed: SegmentCache;
  /** Per owner and per project: the rollups (tag = segment id) and live windows statistics come from. */
  readonly scopes = new Scopes();
  /** Rows counted but not written to their segment's database yet (hot-tail.ts). */
  readonly tail = new HotTail();
  /** A segment being sealed while its last rows are written to it. */
  sealing: { id: number; db: SegmentDb } | null = null;
  hotCount = 0;
  maxSeq = 0;
  prunedTotal = 0;
  /** Receive times of the hot segment's rows, its bounds when sealed (retention may have pruned the oldest: then `min` is a lower bound). */
  hotReceived = { min: Infinity, max: -Infinity };
  closed = false;

  constructor(readonly SQL: SqlJsStatic, db: Database, readonly args: InitArgs, readonly fs: StoreFs, manifests: Manifest[]) {
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

  /** Records the hot id and the sealed journal in the hot database (`<db>` carries them). */
  setMeta(): void {
    this.hot.db.run('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?), (?, ?)', ['hot', this.hotId, 'sealedJournal', this.sealedJournal]);
  }

  get eventCount(): number {
    return this.hotCount + this.sealed.eventCount;
  }

  noteReceived(ms: number): void {
    if (ms < this.hotReceived.min) this.hotReceived.min = ms;
    if (ms > this.hotReceived.max) this.hotReceived.max = ms;
  }

  applyUser(u: AppUser): void {
    this.hot.statement(UPSERT_USER).run([u.idp_user_id, u.email, u.display_name, u.last_seen_at]);
  }

  /**
   * A new, empty hot segment with the users of the current one (they live in the hot segment);
   * returns the users copied. The caller swaps it in.
   */
  freshHot(): { db: SegmentDb; users: AppUser[] } {
    const fresh = new SegmentDb(prepareDatabase(new this.SQL.Database()));
    const rows = this.hot.db.exec('SELECT idp_user_id, email, display_name, last_seen_at FROM users')[0]?.values ?? [];
    const users: AppUser[] = [];
    for (const u of rows) {
      fresh.statement(UPSERT_USER).run(u);
      users.push({ idp_user_id: u[0] as string, email: u[1] as string, display_name: u[2] as string, last_seen_at: u[3] as string });
    }
    return { db: fresh, users };
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

  /** Receive time of the hot segment's oldest event (null: empty). */
  get hotOldest(): number | null {
    const t = this.hot.db.exec('SELECT MIN(received_at) FROM events')[0]?.values[0][0] as string | null | undefined;
    return t ? Date.parse(t) : null;
  }
}
