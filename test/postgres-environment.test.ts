// The events list's environment filter on PostgreSQL where the store contract does not reach: rows
// of closed days moved into compressed blocks, and an environment holding an escaped NUL (which
// PostgreSQL's text cannot hold), found as the other stores find it.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';

const DAY = 86_400_000;
if (await postgresAvailable('PostgreSQL environment tests')) {
  let db: TestDatabase;
  let store: Store;
  let sql: postgres.Sql;
  test.before(async () => {
    db = await createTestDatabase();
    store = await openPostgresStore({ url: db.url, connectTimeout: 3 });
    sql = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
  });
  test.after(async () => {
    await sql?.end({ timeout: 1 }).catch(() => {});
    await store?.close();
    await db?.drop();
  });

  test('list by environment reads rows and blocks alike; a NUL in another event\'s environment fails nothing', async () => {
    const now = Date.now();
    const envs: unknown[] = ['production', 'staging', undefined, 5, 'prod\u0000uction', { a: 1 }];
    let n = 0;
    const events: StoredEvent[] = Array.from({ length: 600 }, (_, i) => normalise(
      { type: i % 2 ? 'error' : 'click', ...(envs[i % envs.length] === undefined ? {} : { environment: envs[i % envs.length] }) } as RawEvent,
      { now: now - 3.5 * DAY + (i / 600) * 3.5 * DAY, owner: i % 7 === 0 ? 'other' : 'pg-env', newId: () => `pe-${++n}` }));
    // Ingest drops an environment that is no string or holds control characters; an embedder
    // inserting its own events is not held to that, so the store must still read such a field
    // (and match only strings) without failing.
    events.forEach((e, i) => {
      if (envs[i % envs.length] === undefined) delete e.environment;
      else (e as Record<string, unknown>).environment = envs[i % envs.length];
    });
    for (let i = 0; i < events.length; i += 50) await store.insert(events.slice(i, i + 50));
    const want = (env: string) => events.filter((e) => e.user_id === 'pg-env' && e.environment === env).reverse().map((e) => e.id);
    const listed = async (env: string) => {
      const ids: string[] = [];
      let before: string | undefined;
      do {
        const page = await store.list({ userId: 'pg-env', environment: env, limit: 37, ...(before ? { before } : {}) });
        ids.push(...page.events.map((e) => e.id));
        before = page.nextCursor ?? undefined;
      } while (before);
      return ids;
    };
    assert.equal(await listed('production'), want('production'), 'rows');
    await compactClosedDays(sql, Math.floor(now / DAY) * DAY + COMPACT_AFTER_MS);
    const [{ blocks }] = await sql`select count(*)::int as blocks from watchtower_event_blocks where user_id = 'pg-env'`;
    assert.ok(blocks > 0, 'closed days are blocks');
    assert.equal(await listed('production'), want('production'), 'blocks and rows');
    assert.equal(await listed('staging'), want('staging'));
    assert.equal(await listed('5'), []);
    assert.equal(await listed('prod\u0000uction'), want('prod\u0000uction'), 'a NUL matches as in the other stores');
    assert.ok(want('prod\u0000uction').length > 0);
  });

  test.run();
}
