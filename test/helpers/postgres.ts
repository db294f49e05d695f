// A fresh PostgreSQL database per test run, dropped at the end. The server is the one named by
// WATCHTOWER_TEST_DATABASE_URL (default: a local cluster with trust authentication).
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPostgresStore } from '../../lib/store/postgres/store.ts';
import type { Store } from '../../lib/store/types.ts';

export const ADMIN_URL = process.env.WATCHTOWER_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
/** Set in CI: an unreachable database is then a failure, not a skip. */
export const REQUIRE_POSTGRES = process.env.WATCHTOWER_REQUIRE_POSTGRES === '1';

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/** Null when the server answers, else why it cannot be used (one line). */
export async function unavailableReason(): Promise<string | null> {
  const sql = postgres(ADMIN_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
    return null;
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return `cannot connect to ${redact(ADMIN_URL)} (${e.code ?? ''} ${e.message ?? String(err)})`.replace(/\s+/g, ' ');
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/**
 * Whether a suite's PostgreSQL tests can run. When the server cannot be reached, says why: a
 * skip with its reason, or in CI (WATCHTOWER_REQUIRE_POSTGRES=1) a failing test, so that an
 * unreachable server never passes as a green run.
 */
export async function postgresAvailable(suite: string): Promise<boolean> {
  const reason = await unavailableReason();
  if (reason === null) return true;
  if (!REQUIRE_POSTGRES) {
    console.log(`${suite} skipped: ${reason}. Set WATCHTOWER_TEST_DATABASE_URL to a reachable server (CI sets WATCHTOWER_REQUIRE_POSTGRES=1 to make this a failure).`);
  } else {
    test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(reason));
    test.run();
  }
  return false;
}

export interface TestDatabase {
  name: string;
  url: string;
  /** Runs SQL as the admin user (for example to terminate the store's connections). */
  admin: postgres.Sql;
  /** Runs queries on the test database over a short-lived connection of its own. */
  query<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T>;
  /** Terminates every connection to the database but the admin's; resolves to how many. */
  terminateConnections(): Promise<number>;
  drop(): Promise<void>;
}

/** The URL of database `name` on the server ADMIN_URL names, as its admin user. */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = '/' + name;
  return url.toString();
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `watchtower_test_${Date.now().toString(36)}_${crypto.randomUUID().slice(0, 8)}`;
  const admin = postgres(ADMIN_URL, { max: 2, connect_timeout: 5, onnotice: () => {} });
  // A generated identifier of [a-z0-9_] only: safe to splice, and CREATE DATABASE takes no parameters.
  await admin.unsafe(`create database ${name}`);
  const url = databaseUrl(name);
  return {
    name,
    url,
    admin,
    async query(fn) {
      const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
      try {
        return await fn(sql);
      } finally {
        await sql.end({ timeout: 2 });
      }
    },
    async terminateConnections() {
      const rows = await admin`
        select pg_terminate_backend(pid) as ok from pg_stat_activity
        where datname = ${name} and pid <> pg_backend_pid()`;
      return rows.filter((r) => r.ok).length;
    },
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end({ timeout: 2 });
    },
  };
}

/** The databases of the stores openFreshPostgresStore opened, and how each closes without dropping it. */
const fresh = new WeakMap<Store, { own: TestDatabase; closeStore: () => Promise<void> }>();

/** A store on `own` whose close() drops the database too. */
async function ownedStore(own: TestDatabase): Promise<Store> {
  const store = await openPostgresStore({ url: own.url, connectTimeout: 3 });
  const closeStore = store.close.bind(store);
  fresh.set(store, { own, closeStore });
  store.close = async () => {
    await closeStore().catch(() => {});
    await own.drop();
  };
  return store;
}

/**
 * A store factory for suites that run against every store (test/helpers/stores.ts): each store
 * gets a fresh database of its own, dropped when the store is closed.
 */
export async function openFreshPostgresStore(): Promise<Store> {
  const own = await createTestDatabase();
  try {
    return await ownedStore(own);
  } catch (err) {
    await own.drop();
    throw err;
  }
}

/**
 * A restart of a store openFreshPostgresStore opened: closes it, keeping its database, and opens a
 * new store on that database, which the new store's close() drops.
 */
export async function reopenFreshPostgresStore(store: Store): Promise<Store> {
  const entry = fresh.get(store);
  if (!entry) throw new Error('not a store of openFreshPostgresStore');
  fresh.delete(store);
  store.close = async () => {};
  await entry.closeStore();
  return ownedStore(entry.own);
}
