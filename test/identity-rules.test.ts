// Identity rules no other suite covers: a user record never holds a credential, and the provider's
// publishable key reaches the pages through a generated client configuration that is never committed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { app } from './helpers/app.ts';
import { tempSqliteStore } from './helpers/stores.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
// @ts-expect-error: a plain ESM build script without type declarations
import { clientConfig, configScript } from '../scripts/build-pages.mjs';
import { ROOT } from './helpers/server.ts';

for (const [name, open] of [['memory', async () => createMemoryStore()], ['sqlite', tempSqliteStore]] as const) {
  test(`${name}: the user record holds no password or credential, whatever is sent`, async () => {
    const store = await open();
    try {
      const { send, as } = app({ store });
      const body = { idpUserId: 'u1', email: 'a@example.com', displayName: 'Ada', password: 'hunter2', token: 'secret', session: 'abc' };
      const res = await send('POST', '/api/users/sync', { body, headers: as('u1') });
      assert.is(res.status, 200);
      const user = await res.json();
      assert.equal(Object.keys(user).sort(), ['display_name', 'email', 'idp_user_id', 'last_seen_at']);
      assert.equal(Object.keys((await store.getUser('u1'))!).sort(), ['display_name', 'email', 'idp_user_id', 'last_seen_at']);
      assert.not.match(JSON.stringify(await store.getUser('u1')), /hunter2|secret/);
    } finally {
      await store.close();
    }
  });
}

test('the publishable key reaches a generated client configuration, which is never committed', () => {
  const key = 'pk_live_' + btoa('accounts.example.com$');
  const config = clientConfig({ IDP_PUBLISHABLE_KEY: key, IDP_CLIENT_ID: 'dash' });
  assert.equal(config, { mode: 'provider', issuer: 'https://accounts.example.com', clientId: 'dash', publishableKey: key, scope: 'openid profile email' });
  assert.is(clientConfig({}).mode, 'dev');
  const script = configScript({ ...config, clientId: '</script><script>alert(1)</script>' });
  assert.not.match(script, /<\/script>/i, 'a value cannot close the script element');
  assert.match(readFileSync(ROOT + '.gitignore', 'utf8'), /^dist\/$/m, 'dist/ (with dist/assets/config.js) is ignored');
});

test.run();
