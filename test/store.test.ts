// The store contract against the memory store and the sqlite store (a real file in a temp dir).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryStore } from '../lib/store/memory.ts';
import { openSqliteStore, type SqliteStoreOptions } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { storeContract } from './store-contract.ts';

storeContract('memory', async () => createMemoryStore(), { rollupStats: true, projects: true });

const dirs: string[] = [];
process.on('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
/** A sqlite store in a fresh directory, which reopen() closes and opens again on the same files. */
const sqlite = (options: Omit<SqliteStoreOptions, 'path'>) => {
  const paths = new WeakMap<Store, string>();
  const openAt = async (path: string) => {
    const store = await openSqliteStore({ path, ...options });
    paths.set(store, path);
    return store;
  };
  return {
    factory: () => {
      const dir = mkdtempSync(join(tmpdir(), 'watchtower-contract-'));
      dirs.push(dir);
      return openAt(join(dir, 'watchtower.sqlite'));
    },
    reopen: async (store: Store) => {
      await store.close();
      return openAt(paths.get(store)!);
    },
  };
};
// Retention off: the contract's data sets are dated in the past on purpose.
const plain = sqlite({ retentionDays: 0 });
storeContract('sqlite', plain.factory, { rollupStats: true, projects: true, reopen: plain.reopen });
// The same store sealing its hot segment every 40 events: every read crosses sealed segments, and
// a small cache budget makes them open and close as reads move between them.
const sealing = sqlite({ retentionDays: 0, sealEvents: 40, cacheMb: 1 });
storeContract('sqlite, sealing every 40 events', sealing.factory, { rollupStats: true, projects: true, reopen: sealing.reopen });
