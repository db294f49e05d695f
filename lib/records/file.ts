// Records in one directory beside the sqlite database: the embedded deployment's record store.
//
// Records are few and small, so all of them are held in memory and every change is appended to a
// log, one JSON line per put or delete, synced before the call resolves. A batch is one line, so a
// power loss keeps all of it or none: a line cut short at the end of the log is dropped (and cut
// off) at open. When the log has grown well past what it describes, it is rewritten: the live
// records go to a temp file, synced, which is renamed over the log (lib/store/fs.ts says why each
// step is needed). Blobs are one file each, written the same way, named by the SHA-256 of their key
// so any key makes a safe file name. Everything goes through a StoreFs, so the power-loss tests can
// record the file operations and replay every state a crash could leave.
//
// One process at a time: the sqlite store's lock on its database guards this directory too.
import { createFile, ensureDir, nodeFs, renameDurably, writeNewFile, type StoreFile, type StoreFs } from '../store/fs.ts';
import { HeldRecords } from './held.ts';
import type { RecordStore } from './types.ts';

export interface FileRecordsOptions {
  /** The directory the log and blobs live in; created if missing. */
  dir: string;
  fs: StoreFs;
  /** The log is rewritten once it is this big and twice what its live records take. Default 1 MiB. */
  compactAtBytes?: number;
}

/** The log holds a line that is not a log entry and is not the torn end of a write. */
export class CorruptRecordsError extends Error {
  constructor(path: string, line: number) {
    super(`${path}: line ${line} is not a record log entry; restore the file from a backup or remove the line`);
    this.name = 'CorruptRecordsError';
  }
}

const LOG = 'records.log';
/** Characters of the log a compaction builds before writing them out (and yielding). */
const COMPACT_CHUNK = 1 << 20;
const NEWLINE = 10;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One line of the log: records put (kind, id, userId, body) or one record deleted. */
type Entry = { put: [string, string, string, unknown][] } | { del: [string, string] };

/**
 * The record store of the sqlite database at `path` (SERVICE_P1_DB): the directory `<path>.records`
 * beside it, on node:fs unless a test passes its own StoreFs.
 */
export function openSqliteRecords(options: { path: string; fs?: StoreFs }): Promise<RecordStore> {
  return openFileRecords({ dir: options.path + '.records', fs: options.fs ?? nodeFs });
}

export async function openFileRecords(options: FileRecordsOptions): Promise<RecordStore> {
  const { dir, fs } = options;
  const compactAtBytes = options.compactAtBytes ?? 1 << 20;
  const logPath = `${dir}/${LOG}`;
  await ensureDir(fs, dir);

  // Temp files are only ever renamed into place once whole: one left over is a write a crash cut off.
  for (const name of await fs.list(dir)) if (name.endsWith('.tmp')) await fs.remove(`${dir}/${name}`);

  const held = new HeldRecords();
  const apply = (entry: Entry) => {
    if ('put' in entry) for (const [kind, id, userId, body] of entry.put) held.set(kind, id, userId, JSON.stringify(body));
    else held.delete(entry.del[0], entry.del[1]);
  };

  const bytes = await fs.read(logPath);
  let file: StoreFile;
  if (bytes === null) {
    file = await createFile(fs, logPath);
  } else {
    const valid = replay(bytes, logPath, apply);
    file = await fs.open(logPath, 'existing');
    if (valid < bytes.length) {
      // The torn end of the last write, never acknowledged: cut it off before appending after it.
      await file.truncate(valid);
      await file.sync();
    }
  }

  /** Set when the log's state is unknown after a failed write: every later change is refused. */
  let broken: Error | null = null;

  // Bytes the live records would take as a freshly written log: kept by `held` on every change, since
  // summing them on each write made a write cost O(records) (grouping slowed to ~80 issues/s at 30,000).
  const liveBytes = () => held.size;

  /**
   * Rewrites the log as the live records alone, a chunk at a time: at 100,000 issues the log is
   * ~150 MB, and building it whole held the event loop for a second.
   */
  async function compact(): Promise<void> {
    const tmp = logPath + '.tmp';
    const out = await fs.open(tmp, 'new');
    try {
      let chunk = '';
      for (const [kind, id, r] of held.entries()) {
        chunk += `{"put":[[${JSON.stringify(kind)},${JSON.stringify(id)},${JSON.stringify(r.userId)},${r.text}]]}\n`;
        if (chunk.length >= COMPACT_CHUNK) {
          await out.append(encoder.encode(chunk));
          chunk = '';
        }
      }
      await out.append(encoder.encode(chunk));
      await out.sync();
    } finally {
      await out.close();
    }
    // Until the rename the old log stays in use, so a failed compaction costs nothing but a retry.
    await renameDurably(fs, tmp, logPath);
    const old = file;
    try {
      file = await fs.open(logPath, 'existing');
    } catch (err) {
      // Appending to the old handle would write to a file no longer named: refuse instead.
      broken = new Error(`${logPath}: the compacted log could not be opened; reopen the store`, { cause: err });
      throw err;
    }
    await old.close().catch(() => {});
  }

  if (bytes !== null && file.size > compactAtBytes && file.size > 2 * liveBytes()) await compact();

  // Changes run one at a time, in order: each validates against, then updates, what the one
  // before it left. A failed append is cut off again so the next line starts clean; if even that
  // fails, the log's end is unknown and the store refuses further changes.
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  const serial = <T>(op: () => Promise<T>): Promise<T> => {
    const run = queue.then(() => {
      if (closed) throw new Error('the record store is closed');
      if (broken) throw broken;
      return op();
    });
    queue = run.catch(() => {});
    return run;
  };

  async function append(entry: Entry): Promise<void> {
    await appendLine(JSON.stringify(entry) + '\n', () => apply(entry));
  }

  /** Appends one line and syncs it; `applied` makes it visible to reads once it is durable. */
  async function appendLine(line: string, applied: () => void): Promise<void> {
    const before = file.size;
    try {
      await file.append(encoder.encode(line));
      await file.sync();
    } catch (err) {
      try {
        await file.truncate(before);
        await file.sync();
      } catch {
        broken = new Error(`${logPath}: a failed write could not be undone; reopen the store`, { cause: err });
      }
      throw err;
    }
    applied();
    // The change is durable now; a compaction that fails is tried again after the next change.
    if (file.size > compactAtBytes && file.size > 2 * liveBytes()) await compact().catch(() => {});
  }

  const blobPath = async (key: string) => {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(key)));
    return `${dir}/blob-${Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')}`;
  };

  return {
    ...held.reads(),
    put(records) {
      // Serialised now, once: a caller's later change to a body must not reach the log, and the
      // same text is both the log line and what is held.
      const texts = records.map((r) => JSON.stringify(r.body ?? null));
      return serial(async () => {
        held.checkOwners(records);
        if (!records.length) return;
        const line = records.map((r, i) => `[${JSON.stringify(r.kind)},${JSON.stringify(r.id)},${JSON.stringify(r.userId)},${texts[i]}]`).join(',');
        await appendLine(`{"put":[${line}]}\n`, () => {
          for (let i = 0; i < records.length; i++) held.set(records[i].kind, records[i].id, records[i].userId, texts[i]);
        });
      });
    },
    delete(kind, id, userId) {
      return serial(async () => {
        if (!held.owns(kind, id, userId)) return false;
        await append({ del: [kind, id] });
        return true;
      });
    },
    putBlob(key, bytes) {
      const copy = bytes.slice();
      return serial(async () => {
        const path = await blobPath(key);
        await writeNewFile(fs, path + '.tmp', copy);
        await renameDurably(fs, path + '.tmp', path);
      });
    },
    async getBlob(key) {
      return fs.read(await blobPath(key));
    },
    deleteBlob(key) {
      return serial(async () => {
        const path = await blobPath(key);
        await fs.remove(path);
        await fs.syncDir(dir);
      });
    },
    async close() {
      if (closed) return;
      await queue;
      closed = true;
      await file.close();
    },
  };
}

/**
 * Applies every whole line of the log; returns how many bytes they take. What follows the last
 * newline is a write cut short and is left out. A whole line that does not parse is a torn write
 * only if nothing valid follows it (a file system may leave garbage in a block it had not written);
 * before a valid line it means the file was damaged, and opening fails rather than lose records.
 */
function replay(bytes: Uint8Array, path: string, apply: (entry: Entry) => void): number {
  let valid = 0;
  let bad = -1;
  let line = 0;
  for (let start = 0; start < bytes.length; ) {
    const end = bytes.indexOf(NEWLINE, start);
    if (end < 0) break;
    line++;
    const entry = parseEntry(bytes.subarray(start, end));
    if (entry === null) {
      if (bad < 0) bad = line;
    } else {
      if (bad >= 0) throw new CorruptRecordsError(path, bad);
      apply(entry);
      valid = end + 1;
    }
    start = end + 1;
  }
  return valid;
}

function parseEntry(bytes: Uint8Array): Entry | null {
  try {
    const v = JSON.parse(decoder.decode(bytes)) as Record<string, unknown>;
    if (Array.isArray(v?.put) && v.put.every((r) => Array.isArray(r) && r.length === 4 && r.slice(0, 3).every((s) => typeof s === 'string'))) {
      return v as Entry;
    }
    if (Array.isArray(v?.del) && v.del.length === 2 && v.del.every((s) => typeof s === 'string')) return v as Entry;
    return null;
  } catch {
    return null;
  }
}
