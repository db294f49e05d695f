// Where an issue's events are in the event store: their positions (Store.scanErrors' sequence
// numbers), so the issue page walks every event of the issue, newest to oldest, without reading the
// owner's other events. Events do not say which issue they are in (grouping happens after they are
// stored, with the source maps and bounds of that moment), so grouping records it: each slice adds
// the positions of an issue's errors to the issue, in the same record-store put as the issue and
// grouping's progress, so after a crash the positions are exactly those of the errors counted.
//
// The newest positions (up to CHUNK) ride in the issue record; each full CHUNK is written once as a
// record of its own. Positions are ascending, written as base-36 differences (a few bytes each).
// Bounded: the newest MAX_CHUNKS chunks are kept (chunk n lives in slot n mod MAX_CHUNKS, so a new
// chunk replaces the oldest without a delete), i.e. the newest ~100,000 events of an issue are
// walkable; older ones are counted but no longer reachable one by one.
import type { RecordStore, StoredRecord } from '../records/types.ts';

export const POSITIONS_KIND = 'issue-events';
export const CHUNK = 256;
export const MAX_CHUNKS = 400;

export interface IssuePositions {
  /** The newest positions, ascending, encoded (encodePositions); fewer than CHUNK. */
  head: string;
  /** Chunks written so far: chunk n for n < chunks, the newest MAX_CHUNKS of them kept. */
  chunks: number;
}

interface Chunk { n: number; seqs: string }

export function encodePositions(seqs: readonly number[]): string {
  let prev = 0;
  const out: string[] = [];
  for (const s of seqs) {
    out.push((s - prev).toString(36));
    prev = s;
  }
  return out.join(',');
}

export function decodePositions(text: string): number[] {
  if (text === '') return [];
  let at = 0;
  return text.split(',').map((d) => (at += parseInt(d, 36)));
}

const chunkId = (issueId: string, n: number) => `${issueId}.${n % MAX_CHUNKS}`;

/**
 * `seqs` (ascending, after every position the issue has) added: the new positions, and the chunk
 * records to write with the issue (those that filled up).
 */
export function addPositions(issueId: string, owner: string, current: IssuePositions | undefined, seqs: readonly number[]): { positions: IssuePositions; records: StoredRecord<Chunk>[] } {
  let head = decodePositions(current?.head ?? '');
  let chunks = current?.chunks ?? 0;
  const records: StoredRecord<Chunk>[] = [];
  for (const s of seqs) {
    if (head.length && s <= head[head.length - 1]) continue; // already there (never expected: grouping goes forward)
    head.push(s);
    if (head.length === CHUNK) {
      records.push({ kind: POSITIONS_KIND, id: chunkId(issueId, chunks), userId: owner, body: { n: chunks, seqs: encodePositions(head) } });
      chunks++;
      head = [];
    }
  }
  return { positions: { head: encodePositions(head), chunks }, records };
}

/** Reads an issue's chunks, each once per walk; a slot holding another chunk reads as none. */
function chunkReader(records: RecordStore, owner: string, issueId: string, positions: IssuePositions) {
  const cache = new Map<number, number[]>();
  const oldest = Math.max(0, positions.chunks - MAX_CHUNKS);
  return {
    oldest,
    async read(n: number): Promise<number[]> {
      let seqs = cache.get(n);
      if (!seqs) {
        const r = n >= oldest && n < positions.chunks ? await records.get<Chunk>(POSITIONS_KIND, chunkId(issueId, n), owner) : null;
        cache.set(n, (seqs = r && r.body.n === n ? decodePositions(r.body.seqs) : []));
      }
      return seqs;
    },
  };
}

/**
 * The issue's positions below `before` (all when undefined), newest first, at most `limit`. The
 * chunk to start from is found by bisection: a few record reads however deep the walk starts.
 */
export async function positionsBelow(records: RecordStore, owner: string, issueId: string, positions: IssuePositions | undefined, before: number | undefined, limit: number): Promise<number[]> {
  if (!positions || limit <= 0) return [];
  const below = (s: number) => before === undefined || s < before;
  const out = decodePositions(positions.head).filter(below).reverse().slice(0, limit);
  const reader = chunkReader(records, owner, issueId, positions);
  // The newest chunk with a position below `before`: chunks are ascending, so bisect on their first.
  let lo = reader.oldest, hi = positions.chunks - 1, start = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const seqs = await reader.read(mid);
    if (seqs.length && below(seqs[0])) (start = mid), (lo = mid + 1);
    else if (seqs.length) hi = mid - 1;
    else lo = mid + 1; // a missing chunk (never expected): look at newer ones
  }
  for (let n = start; n >= reader.oldest && out.length < limit; n--) {
    const seqs = await reader.read(n);
    for (let i = seqs.length - 1; i >= 0 && out.length < limit; i--) if (below(seqs[i])) out.push(seqs[i]);
  }
  return out;
}

/** The issue's position just above `after` (the next newer event), or null; bisects like positionsBelow. */
export async function positionAbove(records: RecordStore, owner: string, issueId: string, positions: IssuePositions | undefined, after: number): Promise<number | null> {
  if (!positions) return null;
  const reader = chunkReader(records, owner, issueId, positions);
  let lo = reader.oldest, hi = positions.chunks - 1, found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const seqs = await reader.read(mid);
    if (seqs.length && seqs[seqs.length - 1] > after) (found = mid), (hi = mid - 1);
    else lo = mid + 1;
  }
  const seqs = found >= 0 ? await reader.read(found) : decodePositions(positions.head);
  return seqs.find((s) => s > after) ?? null;
}

/** Removes an issue's chunk records (the issue is deleted). */
export async function deletePositions(records: RecordStore, owner: string, issueId: string, positions: IssuePositions | undefined): Promise<void> {
  if (!positions) return;
  for (let n = Math.max(0, positions.chunks - MAX_CHUNKS); n < positions.chunks; n++) await records.delete(POSITIONS_KIND, chunkId(issueId, n), owner);
}
