// PostgreSQL funnels over blocks' funnel indexes (migration 22, lib/store/postgres/funnel-index.ts):
// one range mixing blocks with an index, blocks without one (written before the migration), blocks
// and rows from before step keys (migration 21), rows of the open day and rows inserted late into
// closed days (whose later blocks overlap others' seqs), sessions crossing midnight between them;
// each funnel equal to the reference. The index's bytes against the block's own arrays, the index
// of a block written without one (indexBlocks) against blockDay's, the upgrade from version 21, and
// the time budget.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import type { FunnelQuery } from '../lib/funnels/count.ts';
import { referenceFunnel } from '../lib/funnels/reference.ts';
import type { FunnelStep } from '../lib/funnels/steps.ts';
import { decodeFunnelIndex } from '../lib/store/postgres/funnel-index.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { indexBlocks } from '../lib/store/postgres/maintenance/funnel-backfill.ts';
import { MIGRATIONS } from '../lib/store/postgres/migrations/index.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { random } from './funnel-contract.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason, type TestDatabase } from './helpers/postgres.ts';

const MIN = 60_000;
const DAY = 86_400_000;
const TODAY = Math.floor(Date.now() / DAY) * DAY;
const PATHS = ['/', '/a', '/product/1', '/product/2', '/checkout', '/checkout/pay'];
const NAMES = ['signup', 'add_to_cart', 'buy'];
const PATTERNS = ['/', '/a', '/product/*', '/checkout/**', '/**', '/checkout*'];

let ids = 0;
/**
 * Events around the midnights of the three days before today and into today's first hour (`days`
 * back, or within the last `recentMinutes` before now), few sessions, so that chains cross days.
 */
function events(seed: number, n: number, at: (r: ReturnType<typeof random>) => number): StoredEvent[] {
  const r = random(seed);
  return Array.from({ length: n }, () => {
    const t = at(r);
    const kind = r.int(10);
    const session = r.next() < 0.05 ? undefined : `s${r.int(6)}`;
    const raw: Partial<RawEvent> = kind < 5
      ? { type: 'pageload', sessionId: session, ...(r.next() < 0.5 ? { route: r.pick(PATHS) } : { url: `https://shop.example${r.pick(PATHS)}` }),
          ...(r.next() < 0.5 ? { data: { duration: 100 } } : {}) }
      : kind < 9
        ? { type: 'custom', sessionId: session, ...(r.next() < 0.1 ? { name: '' } : { name: r.pick(NAMES) }) }
        : { type: 'click', sessionId: session, route: '/' };
    const e = normalise({ ...raw } as RawEvent, { now: t, owner: r.next() < 0.05 ? 'u2' : 'u1', newId: () => `x${++ids}` });
    const p = r.next();
    if (p < 0.85) e.projectId = 'p1';
    else if (p < 0.95) e.projectId = 'p2';
    return e;
  });
}

/** Around a midnight among the last three (±90 minutes), or in today's first minutes. */
const nearMidnight = (r: ReturnType<typeof random>) => TODAY - (1 + r.int(3)) * DAY + (r.int(180) - 90) * MIN;
const inClosedDay = (day: number) => (r: ReturnType<typeof random>) => TODAY - day * DAY + (r.int(120) - 60) * MIN + 90 * MIN;

function queries(seed: number, count: number): FunnelQuery[] {
  const r = random(seed);
  return Array.from({ length: count }, () => {
    const steps: FunnelStep[] = Array.from({ length: 2 + r.int(4) }, () => (r.next() < 0.6 ? { page: r.pick(PATTERNS) } : { event: r.pick(NAMES) }));
    const from = TODAY - 4 * DAY + r.int(3) * r.int(2) * DAY + r.int(120) * MIN;
    return { userId: 'u1', projectId: r.next() < 0.8 ? 'p1' : 'p2', from, to: TODAY + DAY, windowMs: r.pick([1, 10, 30, 120, 24 * 60]) * MIN, steps };
  });
}

const compact = (db: TestDatabase) => db.query((sql) => compactClosedDays(sql, TODAY + COMPACT_AFTER_MS));
const blocks = (db: TestDatabase) => db.query((sql) => sql<{ indexed: number; unindexed: number; unkeyed: number; rows: number }[]>`
  select count(*) filter (where funnel is not null)::int as indexed, count(*) filter (where funnel is null and step_keys is not null)::int as unindexed,
         count(*) filter (where step_keys is null)::int as unkeyed, (select count(*)::int from watchtower_events) as rows
  from watchtower_event_blocks`);

async function sameAsReference(store: Store, all: StoredEvent[], seed: number, count = 40): Promise<void> {
  for (const q of queries(seed, count)) assert.equal(await store.funnel(q), referenceFunnel(all, q), JSON.stringify(q));
}

const reason = await unavailableReason();
if (reason === null) {
  test('a range of indexed and unindexed blocks, blocks and rows before step keys, late and open rows: equal to the reference', async () => {
    const db = await createTestDatabase();
    let store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
    try {
      const all: StoredEvent[] = [];
      const first = events(1, 500, nearMidnight).sort((a, b) => Date.parse(a.receivedAt) - Date.parse(b.receivedAt));
      await store.insert(first);
      all.push(...first);
      // The oldest day's rows as a version before 21 stored them: its blocks have no step keys.
      await db.query((sql) => sql`update watchtower_events set step_key = null where received_at < ${new Date(TODAY - 2 * DAY).toISOString()}`);
      await compact(db);
      const [{ early }] = await db.query((sql) => sql<{ early: string }[]>`select max(last_seq)::text as early from watchtower_event_blocks`);
      // Late rows into two closed days, interleaved, and today's rows: blocked later, the late rows
      // make blocks whose seqs overlap each other's and today's rows'.
      const late = events(2, 200, (r) => (r.next() < 0.4 ? inClosedDay(1)(r) : r.next() < 0.5 ? inClosedDay(2)(r) : TODAY + r.int(60) * MIN));
      await store.insert(late);
      all.push(...late);
      await compact(db);
      // Blocks written before version 22 and not indexed since (indexBlocks has not run yet): the
      // middle day's first ones have no index; its late ones keep theirs.
      await db.query((sql) => sql`update watchtower_event_blocks set funnel = null where day = ${TODAY / DAY - 2} and last_seq <= ${early}`);
      // And rows of before step keys among today's.
      const unkeyed = events(3, 100, (r) => TODAY + r.int(90) * MIN);
      await store.insert(unkeyed);
      all.push(...unkeyed);
      await db.query((sql) => sql`update watchtower_events set step_key = null where seq % 3 = 0`);
      const [b] = await blocks(db);
      assert.ok(b.indexed >= 4 && b.unindexed > 0 && b.unkeyed > 0 && b.rows > 0, JSON.stringify(b));
      // The late blocks overlap others' seqs (what the merge of overlapping blocks is for).
      const [{ overlaps }] = await db.query((sql) => sql<{ overlaps: number }[]>`
        select count(*)::int as overlaps from watchtower_event_blocks a join watchtower_event_blocks b
          on a.user_id = b.user_id and a.first_seq < b.first_seq and b.first_seq < a.last_seq and a.funnel is not null and b.funnel is not null`);
      assert.ok(overlaps > 0, 'blocks whose seqs overlap');
      await sameAsReference(store, all, 7);
      // The store reopened (nothing cached) answers the same.
      await store.close();
      store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
      await sameAsReference(store, all, 8, 10);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  test('a block\'s funnel index holds its pageload and custom events with a session, per project in seq order', async () => {
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
    try {
      await store.insert(events(4, 2500, inClosedDay(2)));
      await compact(db);
      const rows = await db.query((sql) => sql<{ funnel: Uint8Array; events: string }[]>`
        select funnel, (select json_agg(json_build_array(x.seq, x.received_at, x.type, x.session_id, x.project_id, x.step_key) order by x.seq)
                        from unnest(seqs, received, types, sessions, projects, step_keys) as x(seq, received_at, type, session_id, project_id, step_key))::text as events
        from watchtower_event_blocks order by user_id, first_seq`);
      assert.ok(rows.length >= 3, 'several blocks');
      for (const r of rows) {
        const list = JSON.parse(r.events) as [number, string, string, string | null, string | null, string][];
        const want = new Map<string | null, { seq: number; t: number; session: string; key: string }[]>();
        for (const [seq, at, type, session, project, key] of list) {
          if ((type !== 'pageload' && type !== 'custom') || session === null) continue;
          if (!want.has(project)) want.set(project, []);
          want.get(project)!.push({ seq, t: Date.parse(at), session, key: type === 'pageload' ? 'p' + key : key === '' ? 'n' : 'c' + key });
        }
        const got = decodeFunnelIndex(r.funnel);
        assert.equal(got.map((g) => g.project).sort(), [...want.keys()].sort());
        for (const g of got) {
          const decoded = Array.from(g.times, (t, i) => ({ seq: g.seqs[i], t, session: g.sessions[g.sessionOf[i]], key: g.keys[g.keyOf[i]] }));
          assert.equal(decoded, want.get(g.project));
        }
        assert.equal(decodeFunnelIndex(r.funnel, 'p1').map((g) => g.project), want.has('p1') ? ['p1'] : []);
      }
    } finally {
      await store.close();
      await db.drop();
    }
  });

  test('indexBlocks gives a block written without an index the same bytes blockDay writes; blocks without step keys keep none', async () => {
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
    try {
      await store.insert(events(13, 3000, (r) => (r.next() < 0.5 ? inClosedDay(2)(r) : inClosedDay(1)(r))));
      // One day's rows as a version before 21 stored them: no step keys, so nothing to index.
      await db.query((sql) => sql`update watchtower_events set step_key = null where received_at < ${new Date(TODAY - DAY - 2 * 60 * MIN).toISOString()}`);
      await compact(db);
      const written = await db.query((sql) => sql<{ first_seq: string; funnel: Uint8Array | null; keyed: boolean }[]>`
        select first_seq::text, funnel, step_keys is not null as keyed from watchtower_event_blocks order by user_id, first_seq`);
      assert.ok(written.filter((b) => b.keyed).length >= 3 && written.some((b) => !b.keyed), 'blocks with and without step keys');
      assert.ok(written.every((b) => (b.funnel !== null) === b.keyed), 'blockDay indexes exactly the blocks with step keys');
      await db.query((sql) => sql`update watchtower_event_blocks set funnel = null`);
      const indexed = await db.query((sql) => indexBlocks(sql));
      assert.is(indexed, written.filter((b) => b.keyed).length);
      const again = await db.query((sql) => sql<{ first_seq: string; funnel: Uint8Array | null }[]>`
        select first_seq::text, funnel from watchtower_event_blocks order by user_id, first_seq`);
      assert.equal(again.map((b) => b.first_seq), written.map((b) => b.first_seq));
      again.forEach((b, i) => assert.equal(b.funnel && Buffer.from(b.funnel).toString('hex'), written[i].funnel && Buffer.from(written[i].funnel!).toString('hex'), b.first_seq));
      assert.is(await db.query((sql) => indexBlocks(sql)), 0, 'nothing left to index');
    } finally {
      await store.close();
      await db.drop();
    }
  });

  test('upgrade from schema version 21: blocks without an index answer as before, blocks made after have one', async () => {
    const db = await createTestDatabase();
    let store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
    try {
      const all = events(5, 400, nearMidnight).sort((a, b) => Date.parse(a.receivedAt) - Date.parse(b.receivedAt));
      await store.insert(all);
      await compact(db);
      await store.close();
      // The database as version 21 left it.
      await db.query((sql) => sql.unsafe(`
        alter table watchtower_event_blocks drop column funnel;
        alter table watchtower_day_points drop column received;
        delete from watchtower_migrations where version > 21;`).simple());
      const [{ keyed }] = await db.query((sql) => sql<{ keyed: number }[]>`select count(*)::int as keyed from watchtower_event_blocks where step_keys is not null`);
      assert.ok(keyed > 0, 'blocks to index');
      store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
      assert.is((await store.health()).schemaVersion, MIGRATIONS[MIGRATIONS.length - 1].version);
      assert.ok(MIGRATIONS[MIGRATIONS.length - 1].version >= 22);
      // Answered while the store's own maintenance may be indexing the old blocks.
      await sameAsReference(store, all, 9, 20);
      const late = events(6, 100, inClosedDay(1));
      await store.insert(late);
      all.push(...late);
      await compact(db);
      // The blocks moved before the upgrade are indexed by the same pass (indexBlocks).
      const [after] = await blocks(db);
      assert.ok(after.indexed > keyed && after.unindexed === 0, JSON.stringify(after));
      await sameAsReference(store, all, 10, 20);
    } finally {
      await store.close();
      await db.drop();
    }
  });

  test('a funnel over its time budget gives up with FunnelTooLargeError', async () => {
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, max: 4, retentionDays: 0 });
    try {
      await store.insert(events(11, 300, nearMidnight));
      await compact(db);
      const q = queries(12, 1)[0];
      const err = await store.funnel({ ...q, budgetMs: 0 }).then(() => null, (e: Error) => e);
      assert.is(err?.name, 'FunnelTooLargeError');
      assert.ok(Array.isArray(await store.funnel({ ...q, budgetMs: 60_000 })));
    } finally {
      await store.close();
      await db.drop();
    }
  });
} else if (REQUIRE_POSTGRES) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(reason));
}

test.run();
