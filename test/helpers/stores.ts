// Store factories beyond memory, for suites that run against every store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { openSqliteStore } from '../../lib/store/sqlite/store.ts';
import type { Store } from '../../lib/store/types.ts';
import { openFreshPostgresStore, unavailableReason } from './postgres.ts';

/** A sqlite store in a fresh temp directory, removed again when the store is closed. */
export async function tempSqliteStore(): Promise<Store> {
  const dir = mkdtempSync(tmpdir() + '/watchtower-store-');
  const store = await openSqliteStore({ path: dir + '/watchtower.sqlite' });
  const close = store.close.bind(store);
  return Object.assign(store, {
    close: async () => {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

/** sqlite always; PostgreSQL when a server is reachable (its own suite says when it is not). */
export async function storeFactories(): Promise<(readonly [string, () => Promise<Store>])[]> {
  const stores: (readonly [string, () => Promise<Store>])[] = [['sqlite', tempSqliteStore]];
  if ((await unavailableReason()) === null) stores.push(['postgres', openFreshPostgresStore]);
  return stores;
}
