// The funnel contract (test/funnel-contract.ts) against every store: memory, sqlite (one segment,
// and sealing every 40 events so that reads cross sealed segments and the hot tail), PostgreSQL
// (rows of open days and, after compaction, blocks of closed ones; and rows and blocks stored
// before step keys, migration 21, which are read from their texts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createMemoryStore } from '../lib/store/memory.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { funnelContract } from './funnel-contract.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';

const dirs: string[] = [];
process.on('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const sqlite = (options: { sealEvents?: number; cacheMb?: number }) => async () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-funnel-'));
  dirs.push(dir);
  return { store: await openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0, ...options }) };
};

funnelContract('memory', async () => ({ store: createMemoryStore() }));
funnelContract('sqlite', sqlite({}));
funnelContract('sqlite, sealing every 40 events', sqlite({ sealEvents: 40, cacheMb: 1 }));

const reason = await unavailableReason();
if (reason === null) {
  const day = 86_400_000;
  /** A PostgreSQL store whose settle runs `before` (on half the events), then compacts if asked. */
  const postgresBackend = (before: string | null, compact: boolean) => async () => {
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, connectTimeout: 3, retentionDays: 0 });
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await db.drop();
    };
    const settle = async () => {
      if (before !== null) await db.query((sql) => sql.unsafe(before));
      // Every closed day compacted, as the store's upkeep does: the fixture's events move into blocks.
      if (compact) await db.query((sql) => compactClosedDays(sql, Math.floor(Date.now() / day) * day + COMPACT_AFTER_MS));
    };
    return { store, settle };
  };
  // Rows as a version before 22 stored them: no step key (every other one, so both kinds meet).
  const unkeyed = 'update watchtower_events set step_key = null where seq % 2 = 0';
  funnelContract('postgres', postgresBackend(null, true));
  funnelContract('postgres, rows without step keys', postgresBackend(unkeyed, false));
  // Blocks holding such rows: a block has every step key or none.
  funnelContract('postgres, blocks of rows without step keys', postgresBackend(unkeyed, true));
} else if (REQUIRE_POSTGRES) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(reason));
  test.run();
}
