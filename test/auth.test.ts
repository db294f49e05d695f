// Who is asking (docs/api.md#identity): bearer tokens verified against the provider's JWKS, the
// header fallback, and a header alone refused once a provider is configured. lib/auth.ts against
// keys served over HTTP.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { createAuthenticator, issuerFromPublishableKey, USER_HEADER, type AuthOptions, type Identity } from '../lib/auth.ts';
import { startJwks, type JwksServer } from './helpers/jwks.ts';

/** The identity without its expiry, for comparisons (the expiry has its own test). */
const plain = ({ expiresAt: _expiresAt, ...identity }: Identity) => identity;

const b64url = (value: unknown) => btoa(JSON.stringify(value)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
const now = () => Math.floor(Date.now() / 1000);

function request(headers: Record<string, string>): Request {
  return new Request('http://watchtower.test/api/events', { headers });
}
const bearer = (token: string) => request({ authorization: `Bearer ${token}` });

/** Runs `body` against a fresh JWKS server and always closes it. */
async function withJwks(body: (jwks: JwksServer) => Promise<void>): Promise<void> {
  const jwks = await startJwks();
  try {
    await body(jwks);
  } finally {
    await jwks.close();
  }
}
const auth = (jwks: JwksServer, extra: Partial<AuthOptions> = {}) =>
  createAuthenticator({ trustHeader: false, issuer: jwks.issuer, ...extra });

const INVALID: Identity = { userId: null, failure: 'invalid' };
const UNAVAILABLE: Identity = { userId: null, failure: 'unavailable' };

test('a bearer token signed by a published RSA, EC or Ed25519 key resolves to its sub', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    for (const key of ['rsa', 'ec', 'ed'] as const) {
      const token = await jwks.sign({ sub: `user-${key}` }, { key });
      assert.equal(plain(await a.resolve(bearer(token))), { userId: `user-${key}` }, key);
    }
    // The scheme name is case-insensitive (RFC 9110).
    assert.equal(plain(await a.resolve(request({ authorization: `bearer ${await jwks.sign({ sub: 'u1' })}` }))), { userId: 'u1' });
    assert.is(jwks.fetchCount, 1, 'the key set is fetched once and cached');
  }));

test('a verified token carries its expiry, so live streams can close when it passes', () =>
  withJwks(async (jwks) => {
    const exp = now() + 120;
    const identity = await auth(jwks).resolve(bearer(await jwks.sign({ sub: 'u1', exp })));
    assert.is(identity.expiresAt, exp * 1000);
    assert.is((await auth(jwks, { trustHeader: true }).resolve(request({ 'x-idp-user-id': 'u1' }))).expiresAt, undefined);
  }));

test('the jwksUrl option overrides <issuer>/.well-known/jwks.json', () =>
  withJwks(async (jwks) => {
    const token = await jwks.sign({ sub: 'u1', iss: 'https://idp.example' });
    const a = createAuthenticator({ trustHeader: false, issuer: 'https://idp.example/', jwksUrl: jwks.jwksUrl });
    assert.equal(plain(await a.resolve(bearer(token))), { userId: 'u1' });
  }));

test('tokens failing a claim check are invalid', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    const cases: Record<string, Record<string, unknown>> = {
      'wrong iss': { sub: 'u1', iss: 'https://evil.example' },
      'missing iss': { sub: 'u1', iss: undefined },
      'expired (beyond the 5 s tolerance)': { sub: 'u1', exp: now() - 30 },
      'nbf in the future': { sub: 'u1', nbf: now() + 60 },
      'no exp': { sub: 'u1', exp: undefined },
      'no sub': {},
      'empty sub': { sub: '' },
      'numeric sub': { sub: 12345 },
      'sub over 256 characters': { sub: 'x'.repeat(257) },
    };
    for (const [name, claims] of Object.entries(cases)) {
      assert.equal(plain(await a.resolve(bearer(await jwks.sign(claims)))), INVALID, name);
    }
    // Within the tolerance both edges still pass: the check is there, not stricter than designed.
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1', exp: now() - 2 })))), { userId: 'u1' });
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1', nbf: now() + 2 })))), { userId: 'u1' });
  }));

test('a token signed by a different key under a published kid is invalid', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    for (const kind of ['rsa', 'ec', 'ed'] as const) {
      const published = jwks.keys.find((k) => k.kind === kind)!;
      const impostor = await jwks.foreignKey(kind);
      const token = await jwks.sign({ sub: 'victim' }, { key: impostor, kid: published.kid });
      assert.equal(plain(await a.resolve(bearer(token))), INVALID, kind);
    }
  }));

test('alg none and HS256 signed with the public key (PEM and JWK) are invalid', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    const rsa = jwks.keys.find((k) => k.kind === 'rsa')!;
    const claims = { sub: 'victim', iss: jwks.issuer, exp: now() + 300 };
    const none = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
    assert.equal(plain(await a.resolve(bearer(none))), INVALID, 'alg none');
    const pem = await exportSPKI(rsa.publicKey);
    const secrets = {
      'PEM': new TextEncoder().encode(pem),
      'JWK': new TextEncoder().encode(JSON.stringify(rsa.publicJwk)),
    };
    for (const [form, secret] of Object.entries(secrets)) {
      const token = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: rsa.kid }).sign(secret);
      assert.equal(plain(await a.resolve(bearer(token))), INVALID, `HS256 with the ${form} public key`);
    }
    // A token with an asymmetric alg outside the allow-list (RS512) is refused too.
    const { privateKey } = await generateKeyPair('RS512');
    const rs512 = await new SignJWT(claims).setProtectedHeader({ alg: 'RS512', kid: rsa.kid }).sign(privateKey);
    assert.equal(plain(await a.resolve(bearer(rs512))), INVALID, 'RS512');
  }));

test('a tampered payload, an empty Bearer and garbage are invalid', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    const [header, , signature] = (await jwks.sign({ sub: 'u1' })).split('.');
    const tampered = `${header}.${b64url({ sub: 'u2', iss: jwks.issuer, exp: now() + 300 })}.${signature}`;
    assert.equal(plain(await a.resolve(bearer(tampered))), INVALID, 'tampered');
    const fetched = jwks.fetchCount;
    for (const value of ['Bearer', 'Bearer ', 'Bearer    ', 'Bearer garbage', 'Bearer a.b.c', 'Bearer ....', `Bearer ${'x'.repeat(10_000)}`]) {
      assert.equal(plain(await a.resolve(request({ authorization: value }))), INVALID, JSON.stringify(value.slice(0, 20)));
    }
    assert.is(jwks.fetchCount, fetched, 'malformed tokens are refused before any key is fetched');
  }));

test('azp must be an authorized party when IDP_AUTHORIZED_PARTIES is set', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks, { authorizedParties: ['https://dash.example', 'https://other.example'] });
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1', azp: 'https://dash.example' })))), { userId: 'u1' });
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1', azp: 'https://evil.example' })))), INVALID, 'wrong azp');
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1' })))), INVALID, 'no azp');
    // Without the option, azp is not checked.
    assert.equal(plain(await auth(jwks).resolve(bearer(await jwks.sign({ sub: 'u1', azp: 'https://evil.example' })))), { userId: 'u1' });
  }));

test('a kid published after a rotation is accepted once the cooldown has passed', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks, { cooldownMs: 1_000 });
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1' })))), { userId: 'u1' });
    assert.is(jwks.fetchCount, 1);
    const fresh = await jwks.rotate('ec');
    const token = await jwks.sign({ sub: 'u2' });
    assert.equal(plain(await a.resolve(bearer(token))), INVALID, 'within the cooldown the unknown kid is not fetched');
    assert.is(jwks.fetchCount, 1);
    await new Promise((r) => setTimeout(r, 1_100));
    assert.equal(plain(await a.resolve(bearer(token))), { userId: 'u2' });
    assert.is(jwks.fetchCount, 2);
    assert.ok(jwks.keys.some((k) => k.kid === fresh.kid));
  }));

test('200 tokens with random kids do not cause 200 JWKS fetches', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    assert.equal(plain(await a.resolve(bearer(await jwks.sign({ sub: 'u1' })))), { userId: 'u1' });
    const before = jwks.fetchCount;
    const tokens = await Promise.all(Array.from({ length: 200 }, () => jwks.sign({ sub: 'u1' }, { kid: crypto.randomUUID() })));
    const sequential: Identity[] = [];
    for (const token of tokens.slice(0, 100)) sequential.push(await a.resolve(bearer(token)));
    const concurrent = await Promise.all(tokens.slice(100).map((t) => a.resolve(bearer(t))));
    for (const identity of [...sequential, ...concurrent]) assert.equal(identity, INVALID);
    assert.ok(jwks.fetchCount - before <= 1, `${jwks.fetchCount - before} fetches`);
    // A fresh authenticator under the same flood also fetches once, not once per token.
    const cold = auth(jwks);
    const start = jwks.fetchCount;
    await Promise.all(tokens.map((t) => cold.resolve(bearer(t))));
    assert.ok(jwks.fetchCount - start <= 2, `${jwks.fetchCount - start} fetches`);
  }));

test('an unreachable, failing, hanging or unparseable JWKS is unavailable, never a pass', async () => {
  const jwks = await startJwks();
  const token = await jwks.sign({ sub: 'u1' });
  try {
    for (const mode of ['error', 'html', 'not-a-key-set', 'hang'] as const) {
      jwks.setMode(mode);
      const started = Date.now();
      const identity = await auth(jwks, { timeoutMs: 300 }).resolve(bearer(token));
      assert.equal(identity, UNAVAILABLE, mode);
      assert.ok(Date.now() - started < 3_000, `${mode} took ${Date.now() - started} ms`);
    }
    jwks.setMode('ok');
    // Keys cached before the provider went away keep working; an unknown kid then cannot be checked.
    const warm = auth(jwks, { cooldownMs: 0 });
    assert.equal(plain(await warm.resolve(bearer(token))), { userId: 'u1' });
    jwks.setMode('error');
    assert.equal(plain(await warm.resolve(bearer(token))), { userId: 'u1' });
    assert.equal(plain(await warm.resolve(bearer(await jwks.sign({ sub: 'u1' }, { kid: 'unknown' })))), UNAVAILABLE);
  } finally {
    await jwks.close();
  }
  // Server gone: connection refused.
  assert.equal(plain(await auth(jwks).resolve(bearer(token))), UNAVAILABLE, 'server down');
  // Garbage is still invalid even when the keys cannot be fetched: it is refused before any fetch.
  assert.equal(plain(await auth(jwks).resolve(bearer('garbage'))), INVALID);
});

test('provider configured, only X-IdP-User-Id → invalid (401)', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks);
    assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'u1' }))), INVALID);
    assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'u1', authorization: 'Bearer nope' }))), INVALID);
    assert.equal(plain(await a.resolve(request({}))), { userId: null }, 'no credentials at all is anonymous, not a failure');
  }));

test('with SERVICE_TRUST_USER_HEADER (trustHeader) the header is accepted alongside a provider', () =>
  withJwks(async (jwks) => {
    const a = auth(jwks, { trustHeader: true });
    assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'u1' }))), { userId: 'u1' });
    assert.equal(plain(await a.resolve(request({ [USER_HEADER]: ' u1 ' }))), { userId: 'u1' });
    assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'x'.repeat(257) }))), INVALID);
  }));

test('a bearer token for another user wins over the header', () =>
  withJwks(async (jwks) => {
    for (const trustHeader of [true, false]) {
      const a = auth(jwks, { trustHeader });
      const token = await jwks.sign({ sub: 'token-user' });
      assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'header-user', authorization: `Bearer ${token}` }))), { userId: 'token-user' });
      // A bad token never falls back to the header, even when the header is trusted.
      assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'header-user', authorization: 'Bearer bad' }))), INVALID);
    }
  }));

test('no provider configured → header trust; a bearer token cannot be verified', async () => {
  const a = createAuthenticator({ trustHeader: true });
  assert.equal(plain(await a.resolve(request({ [USER_HEADER]: 'u1' }))), { userId: 'u1' });
  assert.equal(plain(await a.resolve(request({}))), { userId: null });
  assert.equal(plain(await a.resolve(request({ authorization: 'Bearer a.b.c', [USER_HEADER]: 'u1' }))), INVALID);
  // Other schemes (a reverse proxy's Basic auth) are not an identity and do not hide the header.
  assert.equal(plain(await a.resolve(request({ authorization: 'Basic dTpw', [USER_HEADER]: 'u1' }))), { userId: 'u1' });
});

test('issuerFromPublishableKey derives https://<host> from pk_test_/pk_live_ keys', () => {
  const key = (prefix: string, text: string) => prefix + btoa(text);
  assert.is(issuerFromPublishableKey(key('pk_test_', 'clerk.example.com$')), 'https://clerk.example.com');
  assert.is(issuerFromPublishableKey(key('pk_live_', 'auth.watchtower.dev$')), 'https://auth.watchtower.dev');
  assert.is(issuerFromPublishableKey(key('pk_test_', 'precise-ox-12.clerk.accounts.dev$').replace(/=+$/, '')), 'https://precise-ox-12.clerk.accounts.dev');
  const fails: Record<string, [string, RegExp]> = {
    'wrong prefix': [key('sk_test_', 'clerk.example.com$'), /pk_test_ or pk_live_/],
    'no prefix': [btoa('clerk.example.com$'), /pk_test_ or pk_live_/],
    'bad base64': ['pk_test_not*base64!', /base64/],
    'truncated base64': ['pk_test_Y2xlcmsuZ', /base64/],
    'missing $': [key('pk_live_', 'clerk.example.com'), /"\$"/],
    'empty host': [key('pk_test_', '$'), /empty host/],
    'empty after prefix': ['pk_test_', /base64/],
    'not a host': [key('pk_test_', 'evil.com/path?x$'), /host/],
  };
  for (const [name, [value, message]] of Object.entries(fails)) {
    assert.throws(() => issuerFromPublishableKey(value), (err: Error) => message.test(err.message) && !err.message.includes('\n'), name);
  }
});

test.run();
