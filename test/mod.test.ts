// The package root exports what embedders use, and it loads on every runtime.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as watchtower from '../lib/mod.ts';

test('the package root exports the handler, stores, config and the pure functions', async () => {
  for (const name of [
    'createHandler', 'createMemoryStore', 'openSqliteStore', 'openPostgresStore', 'loadConfig', 'createAuthenticator', 'createHub',
    'normalise', 'validateEvents', 'resolveOwner', 'computeStats', 'percentile', 'computeInsights', 'evaluateQuery', 'createRateLimiter',
  ]) {
    assert.type((watchtower as Record<string, unknown>)[name], 'function', name);
  }
  const handler = watchtower.createHandler({ store: watchtower.createMemoryStore() });
  const res = await handler(new Request('http://x/api/health'));
  assert.is((await res.json()).status, 'ok');
});

test.run();
