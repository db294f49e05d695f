// Bearer tokens (docs/api.md#identity) against a real OpenID Connect provider: access tokens issued
// by oidc-provider, verified through its published key set, as a deployment with any OIDC provider
// would run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createAuthenticator, USER_HEADER } from '../lib/auth.ts';
import type { Identity } from '../lib/auth.ts';
import { startOidc, SERVICE_CLIENT_ID, DASHBOARD_CLIENT_ID } from './helpers/oidc.ts';

/** The identity without its expiry, for comparisons (the expiry has its own test). */
const plain = ({ expiresAt: _expiresAt, ...identity }: Identity) => identity;

const bearer = (token: string, headers: Record<string, string> = {}) =>
  new Request('http://watchtower.test/api/stats', { headers: { authorization: `Bearer ${token}`, ...headers } });

test('a real provider\'s access tokens (client credentials, code + PKCE sign-in) resolve to their sub', async () => {
  const oidc = await startOidc();
  try {
    const auth = createAuthenticator({ trustHeader: false, issuer: oidc.issuer });

    const service = await oidc.clientCredentialsToken();
    assert.is(decodeProtectedHeader(service).alg, 'ES256');
    assert.is(decodeJwt(service).iss, oidc.issuer);
    assert.equal(plain(await auth.resolve(bearer(service))), { userId: SERVICE_CLIENT_ID });

    const user = await oidc.signIn('user_2abc');
    assert.is(decodeJwt(user).sub, 'user_2abc');
    assert.equal(plain(await auth.resolve(bearer(user, { [USER_HEADER]: 'someone-else' }))), { userId: 'user_2abc' });

    // Only tokens for the dashboard client count once authorized parties are set.
    const strict = createAuthenticator({ trustHeader: false, issuer: oidc.issuer, authorizedParties: [DASHBOARD_CLIENT_ID] });
    assert.equal(plain(await strict.resolve(bearer(user))), { userId: 'user_2abc' });
    assert.equal(plain(await strict.resolve(bearer(service))), { userId: null, failure: 'invalid' });

    // Another provider instance (own keys, own issuer) cannot sign in here.
    const other = await startOidc();
    try {
      assert.equal(plain(await auth.resolve(bearer(await other.signIn('user_2abc')))), { userId: null, failure: 'invalid' });
    } finally {
      await other.close();
    }
  } finally {
    await oidc.close();
  }
});

test.run();
