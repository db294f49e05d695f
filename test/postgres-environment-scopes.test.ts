// Rollups per environment on PostgreSQL (lib/environment-scopes.ts, migration 19): statistics of
// one environment come from its scopes (statsOfEnvironment never null here), equal computeStats
// over its events over random ranges across compacted closed days, blocks, folded and open days,
// with and without a project; an owner keeps at most MAX_ENVIRONMENT_SCOPES names even when two
// instances admit at once; a database upgraded from version 18 answers null (the events are read)
// for ranges reaching back before the migration, and exactly from the scopes after it.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_ENVIRONMENT_SCOPES } from '../lib/environment-scopes.ts';
import { environmentStats } from '../lib/environment-stats.ts';
import { normalise, type StoredEvent } from '../lib/event.ts';
import { computeStats, type StatsRange } from '../lib/stats.ts';
import { COMPACT_AFTER_MS, compactClosedDays, foldOpenDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { randomRanges } from './helpers/ranges.ts';

const HOUR = 3_600_000, DAY = 86_400_000;
const ENVS = ['production', 'production', 'staging', 'qa', undefined];

/** Seeded events over the `hours` before `end`, most with an environment, some in project `p1`. */
function events(n: number, end: number, hours: number, seed: number, idPrefix: string, owner = 'alice'): StoredEvent[] {
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x80000000);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  return Array.from({ length: n }, (_, i) => {
    const type = pick(['pageload', 'pageload', 'error', 'click', 'custom']);
    const at = end - hours * HOUR + Math.floor(((i + 1) / n) * hours * HOUR) - 1;
    const e = normalise({
      type, sessionId: `s${Math.floor(rand() * 40)}`, environment: pick(ENVS), route: pick(['/', '/a', '/b']),
      name: type === 'custom' ? 'buy' : undefined, data: type === 'pageload' ? { duration: Math.floor(rand() * 900) } : {},
    }, { now: at, owner: rand() < 0.9 ? owner : 'bob', newId: () => `${idPrefix}-${i}` });
    if (rand() < 0.5) e.projectId = 'p1';
    return e;
  });
}

const json = (x: unknown) => JSON.parse(JSON.stringify(x));
const mineOf = (all: StoredEvent[], owner: string, environment: string, projectId?: string) =>
  all.filter((e) => e.user_id === owner && e.environment === environment && (projectId === undefined || e.projectId === projectId));

/** Each environment's statistics from its scopes (never null here) against computeStats over its events. */
async function checkFromScopes(store: Store, all: StoredEvent[], now: number, rs: (StatsRange | undefined)[], label: string, owner = 'alice') {
  for (const range of rs) {
    for (const projectId of [undefined, 'p1']) {
      for (const environment of ['production', 'staging', 'qa', 'nowhere']) {
        const got = await store.statsOfEnvironment!(owner, now, range, projectId, environment);
        const what = `${label}: ${environment} ${projectId} ${JSON.stringify(range)}`;
        assert.ok(got, `${what} from the scopes`);
        assert.equal(json(got), json(computeStats(mineOf(all, owner, environment, projectId), now, range)), what);
      }
    }
  }
}

async function insertAll(store: Store, all: StoredEvent[], batch: number) {
  for (let i = 0; i < all.length; i += batch) await store.insert(all.slice(i, i + batch));
}

if (await postgresAvailable('PostgreSQL environment scope tests')) {
  const opened: { db: TestDatabase; stores: Store[]; sql: postgres.Sql }[] = [];
  const open = async (db?: TestDatabase) => {
    db ??= await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, connectTimeout: 3, max: 4 });
    const sql = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    opened.push({ db, stores: [store], sql });
    return { db, store, sql, again: async () => {
      const s = await openPostgresStore({ url: db!.url, connectTimeout: 3, max: 4 });
      opened[opened.length - 1].stores.push(s);
      return s;
    } };
  };
  test.after(async () => {
    for (const o of opened) {
      await o.sql.end({ timeout: 1 }).catch(() => {});
      for (const s of o.stores) await s.close().catch(() => {});
    }
    for (const o of new Set(opened.map((x) => x.db))) await o.drop();
  });

  test('environments from their scopes: rows, compacted closed days, blocks, folded open day, with and without a project', async () => {
    const { store, sql } = await open();
    const now = Date.now();
    const today = Math.floor(now / DAY) * DAY;
    // Three closed days and the open day up to now.
    const all = events(1500, now - 1000, (now - today) / HOUR + 72, 7, 'a');
    await insertAll(store, all, 40);
    const span: [number, number] = [today - 72 * HOUR - HOUR, now + HOUR];
    await checkFromScopes(store, all, now, randomRanges(11, 8, span, true, now), 'rows');
    // Closed days compacted: fold rows, and rows moved into blocks with their points kept.
    await compactClosedDays(sql, today + COMPACT_AFTER_MS);
    const [{ days }] = await sql`select count(*)::int as days from watchtower_rollup_days where scope = chr(1) || 'production'`;
    assert.ok(days >= 3, 'the environment\'s closed days are compacted');
    const [{ blocks }] = await sql`select count(*)::int as blocks from watchtower_event_blocks where user_id = 'alice'`;
    assert.ok(blocks > 0, 'closed days are blocks');
    await checkFromScopes(store, all, now, randomRanges(12, 14, span, true, now), 'compacted');
    // The open day folded, then more events on top of the fold.
    await foldOpenDays(sql, now, () => false, 1);
    const [{ folds }] = await sql`select count(*)::int as folds from watchtower_rollup_days where scope = '#p1' || chr(1) || 'staging' and day = ${Math.floor(now / DAY)}`;
    assert.ok(folds > 0, 'the open day is folded');
    const more = events(200, now - 10, (now - today) / HOUR, 13, 'b');
    await insertAll(store, more, 25);
    all.push(...more);
    await checkFromScopes(store, all, now, randomRanges(14, 14, span, true, now), 'folded');
  });

  test('a block wholly inside a range\'s edge is unpacked for an environment (its rollup is of all the owner\'s events)', async () => {
    const { store, sql } = await open();
    const now = Date.now();
    const today = Math.floor(now / DAY) * DAY;
    // One owner's closed day: 30 events within minutes 20–40 of an hour, so the day is one block.
    const at = today - 10 * HOUR + 20 * 60_000;
    const all = Array.from({ length: 30 }, (_, i) => normalise({ type: i % 3 ? 'click' : 'error', sessionId: `s${i % 4}`, environment: ENVS[i % ENVS.length] },
      { now: at + i * 40_000, owner: 'frank', newId: () => `f-${i}` }));
    all.forEach((e, i) => { if (i % 2) e.projectId = 'p1'; });
    await store.insert(all);
    await compactClosedDays(sql, today + COMPACT_AFTER_MS);
    const [{ blocks }] = await sql`select count(*)::int as blocks from watchtower_event_blocks where user_id = 'frank'`;
    assert.is(blocks, 1);
    // Edges inside the block's hour: the block lies wholly inside the first one.
    await checkFromScopes(store, all, now, [{ from: at - 5 * 60_000, to: now }, { from: at - 60_000, to: at + 30 * 60_000, interval: 'hour' }], 'edge block', 'frank');
  });

  test(`at most ${MAX_ENVIRONMENT_SCOPES} names per owner, also when two instances admit at once`, async () => {
    const { db, store, sql, again } = await open();
    const other = await again();
    const now = Date.now();
    const names = Array.from({ length: 16 }, (_, i) => `env-${i}`);
    const sent = names.map((environment, i) => normalise({ type: 'click', environment }, { now: now - 1000 + i, owner: 'carol', newId: () => `c-${i}` }));
    // Each instance sends its half at once, one event a batch.
    await Promise.all([store, other].map((s, k) => Promise.all(sent.filter((_, i) => i % 2 === k).map((e) => s.insert([e])))));
    const [{ held }] = await sql`select count(*)::int as held from watchtower_environment_scopes where user_id = 'carol'`;
    assert.is(held, MAX_ENVIRONMENT_SCOPES);
    const [{ full }] = await sql`select "full" from watchtower_environment_owners where user_id = 'carol'`;
    assert.is(full, true);
    const scoped = new Set((await sql<{ name: string }[]>`select name from watchtower_environment_scopes where user_id = 'carol'`).map((r) => r.name));
    // Further events of every name: scoped names are counted, the others answered null (read from events).
    const later = names.map((environment, i) => normalise({ type: 'error', environment }, { now: now - 500 + i, owner: 'carol', newId: () => `d-${i}` }));
    await other.insert(later);
    for (const name of names) {
      const got = await store.statsOfEnvironment!('carol', now, { from: now - HOUR }, undefined, name);
      if (!scoped.has(name)) {
        assert.is(got, null, `${name} has no scope`);
        continue;
      }
      const mine = [...sent, ...later].filter((e) => e.environment === name);
      assert.equal(json(got), json(computeStats(mine, now, { from: now - HOUR })), name);
    }
    // A new name of a full owner gets no scope either.
    await store.insert([normalise({ type: 'click', environment: 'late' }, { now: now - 100, owner: 'carol', newId: () => 'late' })]);
    assert.is(await other.statsOfEnvironment!('carol', now, { from: now - HOUR }, undefined, 'late'), null);
    const [{ after }] = await sql`select count(*)::int as after from watchtower_environment_scopes where user_id = 'carol'`;
    assert.is(after, MAX_ENVIRONMENT_SCOPES);
    // One batch of 12 new names: the first 10 sent get scopes.
    const batch = Array.from({ length: 12 }, (_, i) => normalise({ type: 'click', environment: `g${11 - i}` }, { now: now - 200 + i, owner: 'gina', newId: () => `g-${i}` }));
    await store.insert(batch);
    const gina = (await sql<{ name: string }[]>`select name from watchtower_environment_scopes where user_id = 'gina' order by name`).map((r) => r.name);
    assert.equal(gina, batch.slice(0, MAX_ENVIRONMENT_SCOPES).map((e) => e.environment).sort());
    // The bound under many admissions at once (as many instances would send them), on connections of their own.
    const pool = postgres(db.url, { max: 8, onnotice: () => {}, fetch_types: false });
    try {
      await Promise.all(Array.from({ length: 96 }, (_, i) => pool`select * from watchtower_admit_environments(
        array['erin'], array[${`n-${i}`}::text], array[now()], ${MAX_ENVIRONMENT_SCOPES}::integer)`));
    } finally {
      await pool.end({ timeout: 1 });
    }
    const [{ erin }] = await sql`select count(*)::int as erin from watchtower_environment_scopes where user_id = 'erin'`;
    assert.is(erin, MAX_ENVIRONMENT_SCOPES, 'admitted at once');
  });

  test('a database upgraded from version 18: null before the migration, exact from the scopes after it', async () => {
    const { db, store, sql } = await open();
    const now = Date.now();
    const today = Math.floor(now / DAY) * DAY;
    // Events of version 18: closed days only, compacted; then the database as version 18 left it
    // (no environment scopes, no tables of migration 19).
    const old = events(800, today - HOUR, 60, 21, 'o');
    await insertAll(store, old, 50);
    await compactClosedDays(sql, today + COMPACT_AFTER_MS);
    await store.close();
    for (const table of ['watchtower_rollups', 'watchtower_rollup_sessions', 'watchtower_day_sessions', 'watchtower_breakdown_sessions', 'watchtower_rollup_days', 'watchtower_day_points']) {
      await sql`delete from ${sql(table)} where strpos(scope, chr(1)) > 0`;
    }
    await sql.unsafe(`drop function watchtower_admit_environments; drop table watchtower_environment_scopes; drop table watchtower_environment_owners;
      delete from watchtower_migrations where version = 19`).simple();
    // Upgraded, then events of today.
    const upgraded = await openPostgresStore({ url: db.url, connectTimeout: 3, max: 4 });
    opened[opened.length - 1].stores.push(upgraded);
    const fresh = events(400, now - 1000, (now - today) / HOUR, 22, 'n');
    await insertAll(upgraded, fresh, 40);
    const all = [...old, ...fresh];
    await checkFromScopes(upgraded, all, now, randomRanges(23, 10, [today, now + HOUR], false, now), 'after the migration');
    for (const range of [undefined, ...randomRanges(24, 6, [today - 60 * HOUR, today - 1], false)]) {
      for (const projectId of [undefined, 'p1']) {
        const what = `before the migration: ${projectId} ${JSON.stringify(range)}`;
        assert.is(await upgraded.statsOfEnvironment!('alice', now, range, projectId, 'production'), null, what);
        // …and the events answer it.
        const scanned = await environmentStats(upgraded, { owner: 'alice', projectId, environment: 'production', now, range });
        assert.equal(json(scanned), json(computeStats(mineOf(all, 'alice', 'production', projectId), now, range)), what);
      }
    }
    // A new owner had nothing before the migration: every range of theirs is read from the scopes.
    const dave = events(200, now - 1000, 30, 25, 'v', 'dave');
    await insertAll(upgraded, dave, 40);
    await checkFromScopes(upgraded, dave, now, randomRanges(26, 5, [now - 31 * HOUR, now + HOUR], true, now), 'a new owner', 'dave');
  });

  test.run();
}
