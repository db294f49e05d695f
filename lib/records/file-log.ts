// The record store's log (file.ts): one JSON line per put or delete, synced before a change is
// acknowledged, replayed into the held records at open, and rewritten as the live records alone
// once it has grown well past them. lib/store/fs.ts says why each durability step is needed.
import { createFile, renameDurably, type StoreFile, type StoreFs } from '../store/fs.ts';
import type { HeldRecords } from './held.ts';

/** The log holds a line that is not a log entry and is not the torn end of a write. */
export class CorruptRecordsError extends Error {
  constructor(path: string, line: number) {
    super(`${path}: line ${line} is not a record log entry; restore the file from a backup or remove the line`);
    this.name = 'CorruptRecordsError';
  }
}

/** Characters of the log a compaction builds before writing them out (and yielding). */
const COMPACT_CHUNK = 1 << 20;
const NEWLINE = 10;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One line of the log: records put (kind, id, userId, body) or one record deleted. */
type Entry = { put: [string, string, string, unknown][] } | { del: [string, string] };

export class RecordLog {
  /** Set when the log's state is unknown after a failed write: every later change is refused. */
  private broken: Error | null = null;

  private constructor(
    private readonly fs: StoreFs,
    private readonly path: string,
    private file: StoreFile,
    private readonly held: HeldRecords,
    private readonly compactAtBytes: number,
  ) {}

  /** Replays the log at `path` into `held` (creating it if missing), cutting off a torn last line. */
  static async open(fs: StoreFs, path: string, held: HeldRecords, compactAtBytes: number): Promise<RecordLog> {
    const bytes = await fs.read(path);
    let file: StoreFile;
    if (bytes === null) {
      file = await createFile(fs, path);
    } else {
      const valid = replay(bytes, path, (entry) => {
        if ('put' in entry) for (const [kind, id, userId, body] of entry.put) held.set(kind, id, userId, JSON.stringify(body));
        else held.delete(entry.del[0], entry.del[1]);
      });
      file = await fs.open(path, 'existing');
      if (valid < bytes.length) {
        // The torn end of the last write, never acknowledged: cut it off before appending after it.
        await file.truncate(valid);
        await file.sync();
      }
    }
    const log = new RecordLog(fs, path, file, held, compactAtBytes);
    if (bytes !== null && log.wantsCompaction()) await log.compact();
    return log;
  }

  /** Throws if an earlier failure left the log's end unknown. */
  check(): void {
    if (this.broken) throw this.broken;
  }

  /**
   * Appends one line and syncs it; `applied` makes it visible to reads once it is durable. A
   * failed append is cut off again so the next line starts clean; if even that fails, the log's
   * end is unknown and the log refuses further changes.
   */
  async append(line: string, applied: () => void): Promise<void> {
    const file = this.file;
    const before = file.size;
    try {
      await file.append(encoder.encode(line));
      await file.sync();
    } catch (err) {
      try {
        await file.truncate(before);
        await file.sync();
      } catch {
        this.broken = new Error(`${this.path}: a failed write could not be undone; reopen the store`, { cause: err });
      }
      throw err;
    }
    applied();
    // The change is durable now; a compaction that fails is tried again after the next change.
    if (this.wantsCompaction()) await this.compact().catch(() => {});
  }

  close(): Promise<void> {
    return this.file.close();
  }

  // Bytes the live records would take as a freshly written log are kept by `held` on every change,
  // since summing them on each write made a write cost O(records).
  private wantsCompaction(): boolean {
    return this.file.size > this.compactAtBytes && this.file.size > 2 * this.held.size;
  }

  /**
   * Rewrites the log as the live records alone, a chunk at a time: at 100,000 issues the log is
   * ~150 MB, and building it whole held the event loop for a second.
   */
  private async compact(): Promise<void> {
    const tmp = this.path + '.tmp';
    const out = await this.fs.open(tmp, 'new');
    try {
      let chunk = '';
      for (const [kind, id, r] of this.held.entries()) {
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
    await renameDurably(this.fs, tmp, this.path);
    const old = this.file;
    try {
      this.file = await this.fs.open(this.path, 'existing');
    } catch (err) {
      // Appending to the old handle would write to a file no longer named: refuse instead.
      this.broken = new Error(`${this.path}: the compacted log could not be opened; reopen the store`, { cause: err });
      throw err;
    }
    await old.close().catch(() => {});
  }
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
