import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, DEFAULT_DB_PATH, loadConfig } from '../lib/config.ts';

const root = '/srv/watchtower';

test('defaults: port 3000, sqlite at the default path, no owner, no provider', () => {
  const c = loadConfig({}, root);
  assert.is(c.port, 3000);
  assert.is(c.storage, 'sqlite');
  assert.is(c.dbPath, `${root}/${DEFAULT_DB_PATH}`);
  assert.is(c.bufferSize, 10_000);
  assert.is(c.defaultOwner, null);
  assert.is(c.issuer, null);
  assert.is(c.trustUserHeaderForced, false);
  assert.is(c.trustHeader, true, 'no provider → header trust');
  assert.equal(c.authorizedParties, []);
  assert.is(c.keepBots, false, 'bots are dropped unless asked');
  assert.is(c.sourceMapMaxMb, 100);
});

test('every variable is read', () => {
  const c = loadConfig(
    {
      PORT: '8080', HOST: '127.0.0.1', SERVICE_STORAGE: 'memory', SERVICE_P1_DB: '/var/lib/wt.sqlite',
      SERVICE_BUFFER_SIZE: '50', SERVICE_RETENTION_DAYS: '7', SERVICE_MAX_EVENTS: '1000',
      DEFAULT_INGEST_OWNER_USER_ID: 'user_1', SERVICE_TRUST_USER_HEADER: 'true',
      IDP_JWT_ISSUER: 'https://idp.example/', IDP_JWKS_URL: 'https://idp.example/keys', IDP_AUTHORIZED_PARTIES: 'a, b',
      IDP_PUBLISHABLE_KEY: 'pk_test_' + btoa('idp.example$'), SERVICE_RATE_LIMIT: '0', SERVICE_RATE_BURST: '5', SERVICE_TRUST_PROXY: 'true',
      SERVICE_KEEP_BOTS: '1', SERVICE_SOURCEMAP_MAX_MB: '250',
    },
    root,
  );
  assert.equal(
    [c.port, c.host, c.storage, c.dbPath, c.bufferSize, c.retentionDays, c.maxEvents, c.defaultOwner, c.trustUserHeaderForced, c.issuer, c.jwksUrl, c.authorizedParties, c.publishableKey, c.rateLimit, c.rateBurst, c.trustProxy, c.keepBots, c.sourceMapMaxMb],
    [8080, '127.0.0.1', 'memory', '/var/lib/wt.sqlite', 50, 7, 1000, 'user_1', true, 'https://idp.example', 'https://idp.example/keys', ['a', 'b'], 'pk_test_' + btoa('idp.example$'), 0, 5, true, true, 250],
  );
});

const rejects = (env: Record<string, string>, variable: string) => {
  try {
    loadConfig(env, root);
  } catch (err) {
    assert.instance(err, ConfigError);
    assert.is((err as ConfigError).variable, variable);
    assert.ok((err as Error).message.startsWith(variable + ':'), (err as Error).message);
    assert.not.ok((err as Error).message.includes('\n'), 'one line');
    return;
  }
  assert.unreachable(`${variable} should be rejected`);
};

test('invalid values name their variable', () => {
  rejects({ PORT: 'abc' }, 'PORT');
  rejects({ PORT: '70000' }, 'PORT');
  rejects({ PORT: '-1' }, 'PORT');
  rejects({ SERVICE_STORAGE: 'mongo' }, 'SERVICE_STORAGE');
  rejects({ SERVICE_P1_DB: 'relative/file.sqlite' }, 'SERVICE_P1_DB');
  rejects({ SERVICE_BUFFER_SIZE: '0' }, 'SERVICE_BUFFER_SIZE');
  rejects({ SERVICE_SOURCEMAP_MAX_MB: '0' }, 'SERVICE_SOURCEMAP_MAX_MB');
  rejects({ SERVICE_SOURCEMAP_MAX_MB: '1.5' }, 'SERVICE_SOURCEMAP_MAX_MB');
  rejects({ SERVICE_TRUST_USER_HEADER: 'yes please' }, 'SERVICE_TRUST_USER_HEADER');
  rejects({ IDP_JWT_ISSUER: 'not a url' }, 'IDP_JWT_ISSUER');
  rejects({ IDP_JWKS_URL: 'ftp://x' }, 'IDP_JWKS_URL');
  rejects({ SERVICE_RATE_LIMIT: 'fast' }, 'SERVICE_RATE_LIMIT');
  rejects({ SERVICE_KEEP_BOTS: 'some' }, 'SERVICE_KEEP_BOTS');
  rejects({ IDP_PUBLISHABLE_KEY: 'sk_live_abc' }, 'IDP_PUBLISHABLE_KEY');
  rejects({ SERVICE_STORAGE: 'postgres' }, 'DATABASE_URL');
  rejects({ SERVICE_STORAGE: 'postgres', DATABASE_URL: 'mysql://x' }, 'DATABASE_URL');
  assert.is(loadConfig({ SERVICE_STORAGE: 'postgres', DATABASE_URL: 'postgres://u@127.0.0.1/db' }, root).databaseUrl, 'postgres://u@127.0.0.1/db');
});

test('the issuer comes from IDP_JWT_ISSUER or the publishable key', () => {
  const key = 'pk_test_' + btoa('clerk.example.com$');
  const derived = loadConfig({ IDP_PUBLISHABLE_KEY: key }, root);
  assert.is(derived.issuer, 'https://clerk.example.com');
  assert.is(derived.trustHeader, false, 'a provider turns header trust off');
  assert.is(loadConfig({ IDP_PUBLISHABLE_KEY: key, IDP_JWT_ISSUER: 'https://other.example' }, root).issuer, 'https://other.example');
  assert.is(loadConfig({ IDP_JWT_ISSUER: 'https://idp.example', SERVICE_TRUST_USER_HEADER: 'true' }, root).trustHeader, true);
});

test('empty values count as unset', () => {
  assert.is(loadConfig({ PORT: '', DEFAULT_INGEST_OWNER_USER_ID: ' ' }, root).port, 3000);
  assert.is(loadConfig({ DEFAULT_INGEST_OWNER_USER_ID: ' ' }, root).defaultOwner, null);
});

test.run();
