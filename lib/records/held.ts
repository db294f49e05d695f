// Records held in memory: kind → id → owner and body. The memory record store is one of these;
// the file record store replays its log into one. Bodies are kept as JSON text and every read
// parses a fresh copy, so no caller can change what is stored by changing what it got.
import { RecordConflictError, type RecordStore, type StoredRecord } from './types.ts';

export interface Held {
  userId: string;
  text: string;
}

export class HeldRecords {
  private readonly kinds = new Map<string, Map<string, Held>>();
  /** kind → owner → records: count() without a walk. */
  private readonly owned = new Map<string, Map<string, number>>();
  /** What the records take as a freshly written log (see size): kept on every change, not summed. */
  private bytes = 0;

  /** The record if `userId` owns it (another user's reads as missing), or any owner's without one. */
  get<T>(kind: string, id: string, userId?: string): StoredRecord<T> | null {
    const r = this.kinds.get(kind)?.get(id);
    return r && (userId === undefined || r.userId === userId) ? read<T>(kind, id, r) : null;
  }

  count(kind: string, userId: string): number {
    return this.owned.get(kind)?.get(userId) ?? 0;
  }

  /** Bytes the live records would take as a freshly written log (the file store's compaction test). */
  get size(): number {
    return this.bytes;
  }

  list<T>(kind: string, userId: string): StoredRecord<T>[] {
    const out: StoredRecord<T>[] = [];
    for (const [id, r] of this.kinds.get(kind) ?? []) if (r.userId === userId) out.push(read<T>(kind, id, r));
    return out;
  }

  /** Throws RecordConflictError when one of the records exists with another owner. */
  /** The record store's reads, answered from what is held (both stores that hold records use them). */
  reads(): Pick<RecordStore, 'get' | 'find' | 'list' | 'count'> {
    return {
      get: async (kind, id, userId) => this.get(kind, id, userId),
      count: async (kind, userId) => this.count(kind, userId),
      find: async (kind, id) => this.get(kind, id),
      list: async (kind, userId) => this.list(kind, userId),
    };
  }

  checkOwners(records: Iterable<{ kind: string; id: string; userId: string }>): void {
    for (const r of records) {
      const held = this.kinds.get(r.kind)?.get(r.id);
      if (held && held.userId !== r.userId) throw new RecordConflictError(r.kind, r.id);
    }
  }

  owns(kind: string, id: string, userId: string): boolean {
    return this.kinds.get(kind)?.get(id)?.userId === userId;
  }

  set(kind: string, id: string, userId: string, text: string): void {
    let m = this.kinds.get(kind);
    if (!m) this.kinds.set(kind, (m = new Map()));
    this.forget(kind, id, m.get(id));
    m.set(id, { userId, text });
    this.bytes += entryBytes(kind, id, userId, text);
    let counts = this.owned.get(kind);
    if (!counts) this.owned.set(kind, (counts = new Map()));
    counts.set(userId, (counts.get(userId) ?? 0) + 1);
  }

  delete(kind: string, id: string): void {
    const m = this.kinds.get(kind);
    this.forget(kind, id, m?.get(id));
    m?.delete(id);
  }

  private forget(kind: string, id: string, held: Held | undefined): void {
    if (!held) return;
    this.bytes -= entryBytes(kind, id, held.userId, held.text);
    const counts = this.owned.get(kind)!;
    const n = counts.get(held.userId)! - 1;
    if (n > 0) counts.set(held.userId, n);
    else counts.delete(held.userId);
  }

  *entries(): Iterable<[kind: string, id: string, held: Held]> {
    for (const [kind, m] of this.kinds) for (const [id, r] of m) yield [kind, id, r];
  }
}

const read = <T>(kind: string, id: string, r: Held): StoredRecord<T> => ({ kind, id, userId: r.userId, body: JSON.parse(r.text) as T });

/** A record's share of a freshly written log line: its texts and ~20 bytes of JSON around them. */
const entryBytes = (kind: string, id: string, userId: string, text: string) => kind.length + id.length + userId.length + text.length + 20;
