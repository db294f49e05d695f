// Records held in memory: the memory store's companion, lost on restart like its events.
import { HeldRecords } from './held.ts';
import type { RecordStore } from './types.ts';

export function createMemoryRecords(): RecordStore {
  const held = new HeldRecords();
  const blobs = new Map<string, Uint8Array>();

  return {
    ...held.reads(),
    async put(records) {
      held.checkOwners(records);
      for (const r of records) held.set(r.kind, r.id, r.userId, JSON.stringify(r.body));
    },
    async delete(kind, id, userId) {
      if (!held.owns(kind, id, userId)) return false;
      held.delete(kind, id);
      return true;
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
