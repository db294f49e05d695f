// Start-up, in the worker: leftover files of a previous process → manifests → the snapshot → the
// rollups and live windows → the journal's replay → retention → the hot rows' keys for the main
// thread. docs/architecture.md (SQLite store, Start-up and Time segments) says why each step.
import { basename, dirname, join } from 'node:path';
import type { Database, SqlJsStatic } from 'sql.js';
import { PART_DIMENSIONS } from '../../../breakdowns.ts';
import { FrozenHour } from '../../../rollup/codec.ts';
import { removeGradually, type StoreFs } from '../../fs.ts';
import { funnelIndexFile } from '../funnel-index.ts';
import { listSegments, readSegments, removeSegmentsUpTo } from '../journal.ts';
import { manifestFile, readManifest, segmentFile, segmentName, type Manifest } from '../manifest.ts';
import type { InitArgs, InitResult } from '../protocol.ts';
import { rowFrom, TRACK_COLUMNS } from '../row.ts';
import { loadSqlJs, readDatabaseFile } from '../sqljs.ts';
import { Engine } from './engine.ts';
import { CorruptFile, DAY_MS, log } from './state.ts';

/** Manifests read at once at start-up: one after another, they spent most of their time waiting on the file system's thread pool. */
const MANIFEST_READS = 16;

// sql.js is loaded (read and compiled, ~0.1 s) as soon as the worker starts, while the main thread
// takes the database's lock and start-up reads the manifests. A failure surfaces in start().
const sqlJs = loadSqlJs();
sqlJs.catch(() => {});

/** Start-up: manifests → hot snapshot → rollups and windows → journal replay → retention → keys. */
export async function start(args: InitArgs, fs: StoreFs): Promise<{ engine: Engine; result: InitResult }> {
  const t0 = performance.now();
  const { path } = args;
  const inDedupeWindow = (m: Manifest) => m.maxReceived >= args.now - args.dedupeWindowMs;
  const { live, orphans } = await tidyFiles(fs, path);
  const manifests = await readManifests(fs, path, live, inDedupeWindow);
  for (const id of orphans) {
    await removeGradually(fs, segmentFile(path, id));
    log(`removed segment file ${id} without a manifest (an unfinished seal or drop; its events are in the journal or were past retention)`);
  }
  const { SQL, db, bytes } = await openSnapshot(fs, path);
  const engine = new Engine(SQL, db, args, fs, manifests);
  engine.snapshots.bytes = bytes;
  const s = engine.state;

  const watermark = s.sealedJournal;
  const all = await listSegments(fs, path);
  // Segments up to the watermark are wholly in sealed segments: replaying them would store again
  // what retention may have dropped.
  const segments = all.filter((seg) => seg.seq > watermark);
  derive(engine, manifests, args.retentionDays > 0 ? args.now - args.retentionDays * DAY_MS : -Infinity);
  const replayStart = performance.now();
  const journal = await readSegments(fs, segments);
  // Replayed events are counted now and their rows written after start-up, a slice at a time as
  // any insert's are (reads see them meanwhile): writing them here was most of a replay's time.
  const replayed = engine.writes.applyEntries(journal.entries);
  const replayMs = performance.now() - replayStart;
  for (const t of journal.skipped) {
    log(`journal: skipped an unreadable ${t.last ? 'last ' : ''}line ${t.line} (${t.bytes} bytes) of ${t.path}` +
      (t.last ? ' (torn by a crash; it was never acknowledged)' : ''));
  }
  if (segments.length) {
    log(`journal: replayed ${journal.entries.length} entries from ${segments.length} segment(s) (${replayed} events new) in ${Math.round(replayMs)} ms`);
  }
  if (all.length > segments.length) await removeSegmentsUpTo(fs, path, watermark);
  // Counted rows it prunes are taken back, and dropped segments leave the rollups. Its messages to
  // the main thread (keys to forget, filters to drop) arrive before the answer below and find
  // nothing to forget: the keys and filters the answer carries are the ones left after it.
  const pruned = await engine.retention.prune(args.now);
  const keys = hotKeys(engine);
  const changed = journal.entries.length > 0 || pruned.byAge > 0 || pruned.byCount > 0 || journal.skipped.length > 0;
  const lastSegment = Math.max(all.length ? all[all.length - 1].seq : 0, watermark);
  // Segments that held nothing new can go now; anything else is compacted by a snapshot.
  if (segments.length && !changed) await removeSegmentsUpTo(fs, path, lastSegment);
  engine.startup = {
    replayedEntries: journal.entries.length, replayMs: Math.round(replayMs), tornLinesSkipped: journal.skipped.length,
    ms: Math.round(performance.now() - t0),
  };
  const filters = manifests
    .filter((m) => s.sealed.has(m.id) && inDedupeWindow(m))
    .map((m) => ({ segment: m.id, maxReceived: m.maxReceived, hashes: m.filter }));
  return { engine, result: { keys, filters, lastSegment, compact: changed, hotOldest: s.hotOldest } };
}

/**
 * Removes the unfinished work of a previous process (the main thread holds the database's lock: no
 * other process is writing these). Returns the ids of the segments whose manifest and file are both
 * there, ascending, and of segment files without a manifest (removed once the manifests are read).
 */
async function tidyFiles(fs: StoreFs, path: string): Promise<{ live: number[]; orphans: Set<number> }> {
  const dir = dirname(path);
  const base = basename(path);
  const segName = segmentName(base);
  const manifestIds: number[] = [];
  const segmentIds = new Set<number>();
  const funnelIds = new Set<number>();
  for (const name of await fs.list(dir)) {
    if (name.startsWith(base + '.tmp-')) {
      await fs.remove(join(dir, name));
      log(`removed an unfinished snapshot ${name} (the previous snapshot and the journal are intact)`);
    } else if (name.startsWith(base + '.old-')) {
      // A second name of a snapshot being replaced; the live file is `path`. Only the name goes.
      await fs.remove(join(dir, name));
      log(`removed ${name}, a replaced snapshot a crash left behind`);
    } else if (name.startsWith(base + '.seg-') && name.endsWith('.funnel.tmp')) {
      await fs.remove(join(dir, name)); // an unfinished funnel index, built again when needed
    } else if (name.startsWith(base + '.seg-') && name.endsWith('.tmp')) {
      await fs.remove(join(dir, name));
      log(`removed ${name}, an unfinished seal (its events are in the journal)`);
    } else if (name.startsWith(base + '.seg-') && name.endsWith('.funnel')) {
      funnelIds.add(Number(name.slice(base.length + 5, -7)));
    } else {
      const m = segName.exec(name);
      if (m && m[2] === 'manifest') manifestIds.push(Number(m[1]));
      else if (m) segmentIds.add(Number(m[1]));
    }
  }
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
  // A funnel index whose segment is gone (a drop a crash interrupted) is derived from nothing.
  for (const id of funnelIds) if (!live.includes(id)) await fs.remove(funnelIndexFile(path, id));
  return { live, orphans: segmentIds };
}

/** The manifests of `ids`, MANIFEST_READS at a time, each read only as far as start-up needs it. */
async function readManifests(fs: StoreFs, path: string, ids: number[], inDedupeWindow: (m: Manifest) => boolean): Promise<Manifest[]> {
  const manifests: Manifest[] = [];
  const newestId = Math.max(...ids);
  for (let i = 0; i < ids.length; i += MANIFEST_READS) {
    manifests.push(...await Promise.all(ids.slice(i, i + MANIFEST_READS).map(async (id) => {
      try {
        // Only the newest manifest's live windows are read (derive), and only the key filters of
        // segments within the dedupe window.
        return await readManifest(fs, path, id, { windows: id === newestId, filter: inDedupeWindow });
      } catch (err) {
        throw new CorruptFile(`${manifestFile(path, id)}: ${err instanceof Error ? err.message : String(err)}`);
      }
    })));
  }
  return manifests;
}

/** sql.js and the hot segment's database: the snapshot `<db>`, or a new one. */
async function openSnapshot(fs: StoreFs, path: string): Promise<{ SQL: SqlJsStatic; db: Database; bytes: number }> {
  const { SQL, fileGrowth } = await sqlJs;
  if (fileGrowth === 'stock') log('sql.js differs from the pinned version: its in-memory file grows by copying (slower inserts, longer stalls)');
  const existing = await readDatabaseFile(path, fs);
  try {
    const db = existing && existing.length ? new SQL.Database(existing) : new SQL.Database();
    db.exec('SELECT count(*) FROM sqlite_master');
    return { SQL, db, bytes: existing?.length ?? 0 };
  } catch (err) {
    throw new CorruptFile(String(err instanceof Error ? err.message : err));
  }
}

/**
 * Before the journal's replay: the rollups from the sealed segments' manifests and the live windows
 * as the newest manifest left them, then the snapshot's rows on top. From here on every row
 * inserted or pruned is counted as it happens, start-up's replay and retention included, as they
 * are later: one way of counting rows, and no replayed event held until afterwards.
 */
function derive(engine: Engine, manifests: Manifest[], windowsCutoff: number): void {
  const { scopes, sealed, hot } = engine.state;
  scopes.clear();
  const held = manifests.filter((m) => sealed.has(m.id));
  // Project windows made from nothing are complete only after every event they may have missed:
  // those of segments without project parts, and those of the newest if it kept no project windows.
  const newest = manifests[manifests.length - 1];
  const unknown = held.filter((m) => !m.projectsKnown);
  // Segments with parts kept before the newer dimensions or before properties: rebuilt from their
  // rows (backfill.ts), which hold the events' data.
  const older = new Set<number>();
  const missed = [...unknown, ...(newest && newest.projectWindows === null ? [newest] : [])];
  scopes.projectWindowsFrom = missed.length ? Math.max(...missed.map((m) => m.maxReceived)) + 1 : -Infinity;
  // Environments' windows made from nothing: complete after the segments sealed before they were kept.
  const before = held.filter((m) => !m.environmentsKnown);
  scopes.environmentWindowsFrom = before.length ? Math.max(...before.map((m) => m.maxReceived)) + 1 : -Infinity;
  for (const m of held) {
    const set = (owner: string, project: string | undefined, bytes: Uint8Array) => {
      const part = FrozenHour.decode(bytes);
      if (part.dimensions < PART_DIMENSIONS) older.add(m.id);
      scopes.setPart(owner, project, part, m.id);
    };
    for (const [owner, { parts, projects }] of Object.entries(m.owners)) {
      for (const p of parts) set(owner, undefined, p);
      for (const [project, own] of Object.entries(projects)) {
        for (const p of own.parts) set(owner, project, p);
      }
    }
  }
  engine.backfill.setSegments(unknown.map((m) => m.id), [...older]);
  if (newest) {
    for (const [owner, state] of Object.entries(newest.windows)) scopes.setWindow(owner, undefined, state, windowsCutoff);
    for (const [owner, projects] of Object.entries(newest.projectWindows ?? {})) {
      for (const [project, state] of Object.entries(projects)) scopes.setWindow(owner, project, state, windowsCutoff);
    }
    // As the newest seal left them: later rows are counted on top, as they were before the restart.
    for (const owner of newest.environmentsFull ?? []) scopes.setEnvironmentsFull(owner);
  }
  const writes = engine.writes;
  writes.startKeys = { seqs: [], owners: [], ids: [] };
  writes.startSeen = new Set();
  const all = hot.db.prepare(`SELECT ${TRACK_COLUMNS} FROM events ORDER BY seq`);
  try {
    while (all.step()) {
      const { seq, owner, row, e } = rowFrom(all.get(), hot.format);
      writes.startSeen.add(owner + '\n' + e.id);
      engine.state.noteReceived(row.receivedMs);
      writes.count(seq, owner, row, e);
    }
  } finally {
    all.free();
  }
}

/**
 * The end of start-up: every hot (owner, id), grouped by owner, for the main thread's dedupe set.
 * Retention deletes the oldest seqs first, so the rows still there are those from the lowest seq.
 */
function hotKeys(engine: Engine): Record<string, string> {
  const writes = engine.writes;
  const { seqs, owners, ids } = writes.startKeys ?? { seqs: [], owners: [], ids: [] };
  writes.startKeys = null;
  writes.startSeen = null;
  const s = engine.state;
  // Rows not written yet have higher seqs than every written row.
  const first = s.hot.scalar('SELECT MIN(seq) FROM events') ?? s.tail.peek()?.seq ?? Infinity;
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
