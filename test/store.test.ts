// The store contract against the memory store and the sqlite store (a real file in a temp dir).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryStore } from '../lib/store/memory.ts';
import { openSqliteStore } from '../lib/store/sqlite.ts';
import { storeContract } from './store-contract.ts';

storeContract('memory', async () => createMemoryStore(), { rollupStats: true, projects: true });

const dirs: string[] = [];
process.on('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
storeContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-contract-'));
  dirs.push(dir);
  // Retention off: the contract's data sets are dated in the past on purpose.
  return openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0 });
}, { rollupStats: true, projects: true });
// The same store sealing its hot segment every 40 events: every read crosses sealed segments, and
// a small cache budget makes them open and close as reads move between them.
storeContract('sqlite, sealing every 40 events', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-contract-'));
  dirs.push(dir);
  return openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0, sealEvents: 40, cacheMb: 1 });
}, { rollupStats: true, projects: true });
