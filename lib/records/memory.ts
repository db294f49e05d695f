// Records held in memory: the memory store's companion, lost on restart like its events.
import { RecordConflictError, type RecordStore, type StoredRecord } from './types.ts';

export function createMemoryRecords(): RecordStore {
  // kind → id → record. Bodies are stored as JSON text so a caller's later mutation of an object
  // it put (or got) never changes what is stored, as with the durable stores.
  const kinds = new Map<string, Map<string, { userId: string; text: string }>>();
  const of = (kind: string) => {
    let m = kinds.get(kind);
    if (!m) kinds.set(kind, (m = new Map()));
    return m;
  };
  const blobs = new Map<string, Uint8Array>();
  const read = <T>(kind: string, id: string, r: { userId: string; text: string }): StoredRecord<T> =>
    ({ kind, id, userId: r.userId, body: JSON.parse(r.text) as T });

  return {
    async get<T>(kind: string, id: string, userId: string) {
      const r = kinds.get(kind)?.get(id);
      return r && r.userId === userId ? read<T>(kind, id, r) : null;
    },
    async find<T>(kind: string, id: string) {
      const r = kinds.get(kind)?.get(id);
      return r ? read<T>(kind, id, r) : null;
    },
    async list<T>(kind: string, userId: string) {
      const out: StoredRecord<T>[] = [];
      for (const [id, r] of kinds.get(kind) ?? []) if (r.userId === userId) out.push(read<T>(kind, id, r));
      return out;
    },
    async put(records) {
      for (const r of records) {
        const held = kinds.get(r.kind)?.get(r.id);
        if (held && held.userId !== r.userId) throw new RecordConflictError(r.kind, r.id);
      }
      for (const r of records) of(r.kind).set(r.id, { userId: r.userId, text: JSON.stringify(r.body) });
    },
    async delete(kind, id, userId) {
      const m = kinds.get(kind);
      if (m?.get(id)?.userId !== userId) return false;
      return m.delete(id);
    },
    async putBlob(key, bytes) {
      blobs.set(key, bytes.slice());
    },
    async getBlob(key) {
      return blobs.get(key)?.slice() ?? null;
    },
    async deleteBlob(key) {
      blobs.delete(key);
    },
    async close() {},
  };
}
