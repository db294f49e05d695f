// `npm run bench:analytics` (issue 37): one project's events over 90 days, loaded day by day with
// busy days (every 7th day five times the others) and bursts (half of a day's events within ten
// minutes), UTM fields on a quarter of the page loads and a country on every client, custom events
// by name. Then, on the sqlite store (BENCH_EVENTS, default 2,000,000) and on PostgreSQL
// (BENCH_PG_EVENTS, default 1,000,000; its closed days compacted into blocks as its upkeep does):
// 30-day statistics with every breakdown and 5 goals, and a 4-step funnel over the same 30 days;
// store calls in this process (no HTTP), BENCH_ROUNDS rounds (default 5) after a first one that is
// reported apart. The funnel answers are checked equal between the stores when both hold the same
// events (BENCH_PG_EVENTS = BENCH_EVENTS). Writes its section of BENCHMARKS.md (bench:analytics).
// BENCH_EVENTS=0 skips sqlite (a PostgreSQL-only comparison; the section is then not written);
// BENCH_KEEP_DB=1 keeps the PostgreSQL database, for EXPLAIN.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FunnelQuery } from '../lib/funnels/count.ts';
import type { GoalDefinition } from '../lib/goals/evaluate.ts';
import type { StoredEvent } from '../lib/event.ts';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase } from '../test/helpers/postgres.ts';
import { historyEvent, USERS_PREFIX } from './history-data.ts';
import { machine, median, spread, writeSection } from './lib.ts';

const SQLITE_EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000_000);
const PG_EVENTS = Number(process.env.BENCH_PG_EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DAY = 86_400_000;
const MIN = 60_000;
const DAYS = 90;
const USER = USERS_PREFIX + '0';
const PROJECT = '1';
const NOW = Math.floor(Date.now() / DAY) * DAY + 12 * 60 * MIN;

const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'IN', 'BR', 'JP', 'CA', 'NL', 'SE', null];
const UTM = [{ source: 'google', medium: 'cpc', campaign: 'spring' }, { source: 'newsletter', medium: 'email', campaign: 'weekly' }, { source: 'twitter', medium: 'social' }];

/** Receive times of `total` events over the 90 days before NOW, oldest first: busy days and bursts. */
function* times(total: number): Generator<number> {
  const weight = (d: number) => (d % 7 === 3 ? 5 : 1);
  let weights = 0;
  for (let d = 0; d < DAYS; d++) weights += weight(d);
  let made = 0;
  for (let d = 0; d < DAYS && made < total; d++) {
    const n = d === DAYS - 1 ? total - made : Math.round((total * weight(d)) / weights);
    const start = NOW - (DAYS - d) * DAY;
    for (let i = 0; i < n && made < total; i++, made++) {
      // The first half spread over the day's 24 hours, the second within 10 minutes from 14:00.
      const half = Math.floor(n / 2);
      yield i < half ? start + Math.floor((i / half) * (DAY - 20 * MIN)) : start + 14 * 60 * MIN + Math.floor(((i - half) / (n - half)) * 10 * MIN);
    }
  }
}

/** The events in batches, in time order: the history data set, one owner, one project. */
function* batches(total: number, size: number): Generator<StoredEvent[]> {
  let batch: StoredEvent[] = [];
  let i = 0;
  for (const at of times(total)) {
    const e = historyEvent(i, at, 1);
    e.projectId = PROJECT;
    const session = Math.floor(i / 20);
    e.client = { ...e.client!, country: COUNTRIES[session % COUNTRIES.length] };
    if (e.type === 'pageload' && session % 4 === 0) e.utm = UTM[session % UTM.length];
    i++;
    batch.push(e);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

const GOALS: GoalDefinition[] = [
  { id: 'g1', name: 'Saw a product', page: '/app/product/**', event: null },
  { id: 'g2', name: 'Reached checkout', page: '/app/checkout/*', event: null },
  { id: 'g3', name: 'Signed up', page: null, event: 'signup' },
  { id: 'g4', name: 'Shared', page: null, event: 'share' },
  { id: 'g5', name: 'Searched', page: '/app/search/**', event: null },
];
const RANGE = { from: NOW - 30 * DAY, to: NOW + DAY, goals: GOALS };
const FUNNEL: FunnelQuery = {
  userId: USER, projectId: PROJECT, from: RANGE.from, to: RANGE.to, windowMs: 30 * MIN,
  steps: [{ page: '/app/home/*' }, { page: '/app/product/**' }, { event: 'filter' }, { page: '/app/checkout/*' }],
};

async function load(store: Store, total: number, label: string): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  for (const batch of batches(total, 2000)) {
    await store.insert(batch);
    n += batch.length;
    if (n % 500_000 < 2000) console.log(`${label}: ${n.toLocaleString('en-US')} events`);
  }
  return (performance.now() - t0) / 1000;
}

async function timed<T>(f: () => Promise<T>): Promise<{ first: number; ms: number[]; value: T }> {
  let t0 = performance.now();
  let value = await f();
  const first = performance.now() - t0;
  const ms: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    t0 = performance.now();
    value = await f();
    ms.push(performance.now() - t0);
  }
  return { first, ms, value };
}

async function measure(store: Store) {
  const stats = await timed(() => store.stats(USER, NOW, RANGE, PROJECT));
  const funnel = await timed(() => store.funnel(FUNNEL));
  return { stats, funnel };
}

const fmt = (ms: number) => ms.toLocaleString('en-US', { maximumFractionDigits: 0 });
const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-analytics-'));
const db = await createTestDatabase();
try {
  const sqlite = await openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0 });
  const sqliteLoad = await load(sqlite, SQLITE_EVENTS, 'sqlite');
  await sqlite.flush();
  // Idle work (rollup merges, funnel indexes of the segments just sealed) gets a moment, as a
  // server has between a load and a dashboard's first read.
  if (SQLITE_EVENTS > 0) await new Promise((r) => setTimeout(r, 5000));
  const s = await measure(sqlite);
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });

  const pg = await openPostgresStore({ url: db.url, operationTimeoutMs: 600_000 });
  const pgLoad = await load(pg, PG_EVENTS, 'PostgreSQL');
  await db.query((sql) => compactClosedDays(sql, Math.floor(Date.now() / DAY) * DAY + COMPACT_AFTER_MS));
  await db.query((sql) => sql`vacuum analyze`);
  const p = await measure(pg);
  await pg.close();

  const goalsOk = (v: { goals?: unknown[] }) => (v.goals?.length === 5 ? 'yes' : 'NO');
  const same = SQLITE_EVENTS === PG_EVENTS ? (JSON.stringify(s.funnel.value) === JSON.stringify(p.funnel.value) ? 'equal' : 'DIFFERENT') : 'not compared (different sizes)';
  const lines = [
    `${machine()}; one project's events over 90 days (every 7th day five times busier, half of each day's events within ten minutes), the history data set with UTM fields on a quarter of the page loads and a country per session; store calls, no HTTP; ${ROUNDS} rounds after a first one, ms median (min–max).`,
    '',
    '| store | events | load (s) | 30-day stats, all breakdowns, 5 goals: first / rounds (ms) | 4-step funnel, 30 days: first / rounds (ms) | sessions per step |',
    '|---|---|---|---|---|---|',
    `| sqlite | ${SQLITE_EVENTS.toLocaleString('en-US')} | ${sqliteLoad.toFixed(0)} | ${fmt(s.stats.first)} / ${spread(s.stats.ms)} | ${fmt(s.funnel.first)} / ${spread(s.funnel.ms)} | ${s.funnel.value.join(' → ')} |`,
    `| PostgreSQL (closed days compacted) | ${PG_EVENTS.toLocaleString('en-US')} | ${pgLoad.toFixed(0)} | ${fmt(p.stats.first)} / ${spread(p.stats.ms)} | ${fmt(p.funnel.first)} / ${spread(p.funnel.ms)} | ${p.funnel.value.join(' → ')} |`,
    '',
    `Goals in both answers: sqlite ${goalsOk(s.stats.value)}, PostgreSQL ${goalsOk(p.stats.value)}. Funnel answers of the two stores: ${same}.`,
    `Targets (issue 37, at 20M sqlite / 10M PostgreSQL): stats p50 < 50 ms — sqlite ${median(s.stats.ms) < 50 ? 'met' : 'not met'}, PostgreSQL ${median(p.stats.ms) < 50 ? 'met' : 'not met'} at these sizes; funnel p50 < 1 s — sqlite ${median(s.funnel.ms) < 1000 ? 'met' : 'not met'}, PostgreSQL ${median(p.funnel.ms) < 1000 ? 'met' : 'not met'}.`,
    `Command: \`BENCH_EVENTS=${SQLITE_EVENTS} BENCH_PG_EVENTS=${PG_EVENTS} npm run bench:analytics\`.`,
  ];
  console.log(lines.join('\n'));
  if (SQLITE_EVENTS > 0) writeSection('analytics', `## Analytics: statistics with goals, and funnels (bench:analytics)\n\n${lines.join('\n')}`);
} finally {
  if (process.env.BENCH_KEEP_DB !== '1') await db.drop();
  else {
    console.log(`kept database ${db.url}`);
    await db.admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
}
