// Append-only journal beside the database file: the durability of the sqlite store.
// An operation is acknowledged only after its line is written and synced. The journal is split
// into numbered segments (`<db>.journal.<n>`) so a snapshot can cover the closed segments while
// new writes go to a fresh one; a segment is deleted once a snapshot containing it is renamed into
// place. One JSON document per line: a crash can only tear the last line of the last segment.
// Every file operation goes through a StoreFs (fs.ts).
import { basename, dirname, join } from 'node:path';
import { createFile, removeGradually, type StoreFile, type StoreFs } from '../fs.ts';

export type JournalEntry =
  | { e: Record<string, unknown> }
  | { u: { idp_user_id: string; email: string; display_name: string; last_seen_at: string } };

export interface Segment { seq: number; path: string }

export const segmentPath = (dbPath: string, seq: number) => `${dbPath}.journal.${seq}`;

/** Existing segments of a database, oldest first. */
export async function listSegments(fs: StoreFs, dbPath: string): Promise<Segment[]> {
  const dir = dirname(dbPath);
  const prefix = basename(dbPath) + '.journal.';
  const out: Segment[] = [];
  for (const name of await fs.list(dir)) {
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
export async function readSegments(fs: StoreFs, segments: Segment[]): Promise<ReadResult> {
  const result: ReadResult = { entries: [], skipped: [], bytes: 0 };
  for (let s = 0; s < segments.length; s++) {
    const buf = (await fs.read(segments[s].path)) ?? new Uint8Array(0);
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
 * commit loop); `append` resolves after the bytes are synced.
 */
export class JournalWriter {
  private constructor(
    private fs: StoreFs,
    readonly dbPath: string,
    public seq: number,
    private file: StoreFile,
    /** Bytes appended and synced to the current segment. */
    public bytes: number,
  ) {}

  /**
   * Starts segment `seq`, which must not exist: a new file whose name is durable before the first
   * append is acknowledged (createFile).
   */
  static async open(fs: StoreFs, dbPath: string, seq: number): Promise<JournalWriter> {
    return new JournalWriter(fs, dbPath, seq, await createFile(fs, segmentPath(dbPath, seq)), 0);
  }

  async append(data: Uint8Array): Promise<void> {
    await this.file.append(data);
    await this.file.sync();
    this.bytes += data.length;
  }

  /**
   * Closes this segment and continues in the next one; returns the closed segment's number. The
   * next segment's name is synced into the directory before any append to it can be acknowledged.
   */
  async rotate(): Promise<number> {
    const closed = this.seq;
    const next = await createFile(this.fs, segmentPath(this.dbPath, closed + 1));
    await this.file.close();
    this.file = next;
    this.seq = closed + 1;
    this.bytes = 0;
    return closed;
  }

  async close(): Promise<void> {
    await this.file.close();
  }
}

export async function removeSegmentsUpTo(fs: StoreFs, dbPath: string, seq: number): Promise<void> {
  for (const s of await listSegments(fs, dbPath)) if (s.seq <= seq) await removeGradually(fs, s.path);
}
