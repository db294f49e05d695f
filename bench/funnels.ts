// `npm run bench:funnels`: a 4-step funnel over 30 days of one project (BENCH_EVENTS events, 1M
// by default: ~20-event sessions of page loads, custom events and clicks) on the sqlite store and
// on PostgreSQL (its closed days compacted into blocks, as its upkeep does), the same answer from
// both and from the reference. Writes its figures into BENCHMARKS.md (section bench:funnels).
// BENCH_KEEP_DB=1 keeps the PostgreSQL database, for EXPLAIN.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalise, uuidv7, type RawEvent, type StoredEvent } from '../lib/event.ts';
import type { FunnelQuery } from '../lib/funnels/count.ts';
import { referenceFunnel } from '../lib/funnels/reference.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase } from '../test/helpers/postgres.ts';
import { machine, spread, writeSection } from './lib.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DAY = 86_400_000;
const MIN = 60_000;
const USER = 'bench-user';
const PROJECT = '1';

let seed = 42;
const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];

/** Sessions of ~20 events over the last 30 days, oldest first; about half go past the home page. */
function* batches(size: number): Generator<StoredEvent[]> {
  const now = START;
  const sessions = Math.ceil(TOTAL / 20);
  let made = 0, batch: StoredEvent[] = [];
  for (let s = 0; s < sessions && made < TOTAL; s++) {
    let t = now - 30 * DAY + Math.floor((s / sessions) * 30 * DAY);
    const sessionId = `s${s}`;
    for (let i = 0; i < 20 && made < TOTAL; i++, made++) {
      t += Math.floor(rand() * 3 * MIN);
      const r = rand();
      const raw: RawEvent = r < 0.45
        ? { type: 'pageload', sessionId, url: `https://shop.example${pick(['/', '/', '/product/1', '/product/2', '/cart', '/checkout/pay', '/blog/post'])}?ref=${i}`, data: { duration: 300 } }
        : r < 0.6 ? { type: 'custom', sessionId, name: pick(['add_to_cart', 'add_to_cart', 'purchase', 'search']) }
          : { type: pick(['click', 'performance', 'error']), sessionId, data: {} };
      const e = normalise(raw, { now: t, owner: USER, newId: () => uuidv7(t) });
      e.projectId = PROJECT;
      batch.push(e);
      if (batch.length >= size) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length) yield batch;
}

// One query for every store and the reference: the last sessions run up to an hour past the
// generation's now, and a bound taken again at each call would cut them differently.
const START = Date.now();
const QUERY: FunnelQuery = {
  userId: USER, projectId: PROJECT, from: START - 30 * DAY, to: START + DAY, windowMs: 30 * MIN,
  steps: [{ page: '/' }, { page: '/product/*' }, { event: 'add_to_cart' }, { page: '/checkout/**' }],
};
const query = () => QUERY;

async function time(store: Store): Promise<{ ms: number[]; counts: number[] }> {
  const ms: number[] = [];
  let counts: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    counts = await store.funnel(query());
    ms.push(performance.now() - t0);
  }
  return { ms, counts };
}

const all: StoredEvent[] = [];
const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-funnels-'));
const db = await createTestDatabase();
try {
  const sqlite = await openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0 });
  const pg = await openPostgresStore({ url: db.url, operationTimeoutMs: 600_000 });
  console.log(`inserting ${TOTAL.toLocaleString('en-US')} events over 30 days into sqlite and PostgreSQL`);
  for (const batch of batches(5000)) {
    await Promise.all([sqlite.insert(batch), pg.insert(batch)]);
    all.push(...batch);
  }
  await sqlite.flush();
  await db.query((sql) => compactClosedDays(sql, Math.floor(Date.now() / DAY) * DAY + COMPACT_AFTER_MS));
  await db.query((sql) => sql`vacuum analyze`);
  const reference = referenceFunnel(all, query());
  const s = await time(sqlite);
  const p = await time(pg);
  const same = JSON.stringify(s.counts) === JSON.stringify(reference) && JSON.stringify(p.counts) === JSON.stringify(reference);
  const lines = [
    `${machine()}; ${TOTAL.toLocaleString('en-US')} events of one project over 30 days, ~20 per session; a 4-step funnel (page, page pattern, custom event, page pattern; 30-minute window) over the 30 days, ${ROUNDS} rounds, ms median (min–max).`,
    '',
    '| store | funnel query (ms) | sessions per step |',
    '|---|---|---|',
    `| sqlite | ${spread(s.ms)} | ${s.counts.join(' → ')} |`,
    `| PostgreSQL (closed days compacted) | ${spread(p.ms)} | ${p.counts.join(' → ')} |`,
    '',
    `Both equal the reference evaluator: ${same ? 'yes' : `NO (reference ${reference.join(' → ')})`}.`,
  ];
  console.log(lines.join('\n'));
  writeSection('funnels', `## Funnels (bench:funnels)\n\n${lines.join('\n')}`);
  await sqlite.close();
  await pg.close();
  if (!same) process.exitCode = 1;
} finally {
  if (process.env.BENCH_KEEP_DB !== '1') await db.drop();
  else {
    console.log(`kept database ${db.url}`);
    await db.admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
}
