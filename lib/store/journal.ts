// Append-only journal beside the database file: the durability of the sqlite store.
// An operation is acknowledged only after its line is written and fsynced. The journal is split
// into numbered segments (`<db>.journal.<n>`) so a snapshot can cover the closed segments while
// new writes go to a fresh one; a segment is deleted once a snapshot containing it is renamed into
// place. One JSON document per line: a crash can only tear the last line of the last segment.
import { open, readdir, readFile, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export type JournalEntry =
  | { e: Record<string, unknown> }
  | { u: { idp_user_id: string; email: string; display_name: string; last_seen_at: string } };

export interface Segment { seq: number; path: string }

export const segmentPath = (dbPath: string, seq: number) => `${dbPath}.journal.${seq}`;

/** Existing segments of a database, oldest first. */
export async function listSegments(dbPath: string): Promise<Segment[]> {
  const dir = dirname(dbPath);
  const prefix = basename(dbPath) + '.journal.';
  const out: Segment[] = [];
  for (const name of await readdir(dir)) {
    if (!name.startsWith(prefix)) continue;
    const rest = name.slice(prefix.length);
    if (!/^\d+$/.test(rest)) continue;
    out.push({ seq: Number(rest), path: join(dir, name) });
  }
  return out.sort((a, b) => a.seq - b.seq);
}

export interface ReadResult {
  entries: JournalEntry[];
  /** Lines that did not parse (a torn tail after a crash), with where they were. */
  skipped: { path: string; line: number; bytes: number; last: boolean }[];
  bytes: number;
}

/** Reads segments in order. Unparseable lines are skipped and reported, never fatal. */
export async function readSegments(segments: Segment[]): Promise<ReadResult> {
  const result: ReadResult = { entries: [], skipped: [], bytes: 0 };
  for (let s = 0; s < segments.length; s++) {
    const buf = await readFile(segments[s].path);
    result.bytes += buf.length;
    const text = new TextDecoder().decode(buf);
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line === '') continue;
      try {
        const parsed = JSON.parse(line) as JournalEntry;
        if (parsed && typeof parsed === 'object' && ('e' in parsed || 'u' in parsed)) {
          result.entries.push(parsed);
          continue;
        }
      } catch {
        // fall through: reported below
      }
      const last = s === segments.length - 1 && lines.slice(i + 1).every((l) => l === '');
      result.skipped.push({ path: segments[s].path, line: i + 1, bytes: line.length, last });
    }
  }
  return result;
}

/**
 * The writer of the current segment. Appends are serialised by the caller (the store's group
 * commit loop); `append` resolves after the bytes are fsynced.
 */
export class JournalWriter {
  private constructor(
    readonly dbPath: string,
    public seq: number,
    private handle: FileHandle,
    public bytes: number,
  ) {}

  static async open(dbPath: string, seq: number): Promise<JournalWriter> {
    const path = segmentPath(dbPath, seq);
    const handle = await open(path, 'a');
    const { size } = await stat(path);
    return new JournalWriter(dbPath, seq, handle, size);
  }

  async append(data: Uint8Array): Promise<void> {
    let off = 0;
    while (off < data.length) {
      const { bytesWritten } = await this.handle.write(data, off, data.length - off);
      off += bytesWritten;
    }
    await this.handle.datasync();
    this.bytes += data.length;
  }

  /** Closes this segment and continues in the next one; returns the closed segment's number. */
  async rotate(): Promise<number> {
    const closed = this.seq;
    const next = await open(segmentPath(this.dbPath, closed + 1), 'a');
    await this.handle.close();
    this.handle = next;
    this.seq = closed + 1;
    this.bytes = 0;
    return closed;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

export async function removeSegmentsUpTo(dbPath: string, seq: number): Promise<void> {
  for (const s of await listSegments(dbPath)) if (s.seq <= seq) await removeGradually(s.path);
}

/**
 * Deletes a file after truncating it a slice at a time. Freeing the blocks of a large file in one
 * unlink holds the file system's journal long enough (~100 ms per 150 MB measured on ext4) to stall
 * every fsync meanwhile — the journal's, on which acknowledgements wait. Slices keep each stall short.
 */
export async function removeGradually(path: string, slice = 16 << 20): Promise<void> {
  try {
    const fh = await open(path, 'r+');
    try {
      for (let size = (await fh.stat()).size; size > 0; ) {
        size = Math.max(0, size - slice);
        await fh.truncate(size);
      }
    } finally {
      await fh.close();
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return;
    // Cannot open or truncate it (permissions, platform): a plain delete still does the job.
  }
  await rm(path, { force: true });
}
