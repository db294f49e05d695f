// The package's entry points export what embedders use, and they load on every runtime.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as watchtower from '../lib/mod.ts';
import * as postgres from '../lib/postgres.ts';
import * as sqlite from '../lib/sqlite.ts';

test('the package root exports the handler, the memory store, config and the pure functions', async () => {
  for (const name of [
    'createHandler', 'createMemoryStore', 'loadConfig', 'createAuthenticator', 'createHub',
    'normalise', 'validateEvents', 'resolveOwner', 'computeStats', 'percentile', 'computeInsights', 'evaluateQuery', 'createRateLimiter',
  ]) {
    assert.type((watchtower as Record<string, unknown>)[name], 'function', name);
  }
  const handler = watchtower.createHandler({ store: watchtower.createMemoryStore() });
  const res = await handler(new Request('http://x/api/health'));
  assert.is((await res.json()).status, 'ok');
});

test('the persisted stores have entry points of their own, apart from the root', () => {
  assert.type(sqlite.openSqliteStore, 'function');
  assert.type(postgres.openPostgresStore, 'function');
  // Each with its record store (projects and other per-user records).
  assert.type(sqlite.openSqliteRecords, 'function');
  assert.type(postgres.openPostgresRecords, 'function');
  assert.not.ok('openPostgresRecords' in watchtower);
  assert.not.ok('openSqliteStore' in watchtower);
  assert.not.ok('openPostgresStore' in watchtower);
});

test.run();
