// `npm run bench:analytics` (issue 37): one project's events over 90 days, loaded day by day with
// busy days (every 7th day five times the others) and bursts (half of a day's events within ten
// minutes), UTM fields on a quarter of the page loads and a country on every client, custom events
// by name. Then, on the sqlite store (BENCH_EVENTS, default 2,000,000) and on PostgreSQL
// (BENCH_PG_EVENTS, default 1,000,000; its closed days compacted into blocks as its upkeep does):
// 30-day statistics with every breakdown and 5 goals, and a 4-step funnel over the same 30 days;
// store calls in this process (no HTTP), BENCH_ROUNDS rounds (default 5) after a first one that is
// reported apart. The funnel answers are checked equal between the stores when both hold the same
// events (BENCH_PG_EVENTS = BENCH_EVENTS); BENCH_PG_EVENTS=0 leaves PostgreSQL out, BENCH_EVENTS=0
// leaves sqlite out (the section is then not written). Writes its section of BENCHMARKS.md
// (bench:analytics). BENCH_KEEP_DB=1 keeps the PostgreSQL database, for EXPLAIN.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPACT_AFTER_MS, compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase } from '../test/helpers/postgres.ts';
import { DAY, FUNNEL, load, NOW, PROJECT, RANGE, USER } from './analytics-data.ts';
import { machine, median, spread, writeSection } from './lib.ts';

const SQLITE_EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000_000);
const PG_EVENTS = Number(process.env.BENCH_PG_EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
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
const db = PG_EVENTS > 0 ? await createTestDatabase() : null;
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

  let pgLoad = 0, p: Awaited<ReturnType<typeof measure>> | null = null;
  if (db) {
    const pg = await openPostgresStore({ url: db.url, operationTimeoutMs: 600_000 });
    pgLoad = await load(pg, PG_EVENTS, 'PostgreSQL');
    await db.query((sql) => compactClosedDays(sql, Math.floor(Date.now() / DAY) * DAY + COMPACT_AFTER_MS));
    await db.query((sql) => sql`vacuum analyze`);
    p = await measure(pg);
    await pg.close();
  }

  const goalsOk = (v: { goals?: unknown[] }) => (v.goals?.length === 5 ? 'yes' : 'NO');
  const same = !p ? 'not compared (no PostgreSQL)' : SQLITE_EVENTS === PG_EVENTS ? (JSON.stringify(s.funnel.value) === JSON.stringify(p.funnel.value) ? 'equal' : 'DIFFERENT') : 'not compared (different sizes)';
  const met = (ms: number[], limit: number) => (median(ms) < limit ? 'met' : 'not met');
  const lines = [
    `${machine()}; one project's events over 90 days (every 7th day five times busier, half of each day's events within ten minutes), the history data set with UTM fields on a quarter of the page loads and a country per session; store calls, no HTTP; ${ROUNDS} rounds after a first one, ms median (min–max).`,
    '',
    '| store | events | load (s) | 30-day stats, all breakdowns, 5 goals: first / rounds (ms) | 4-step funnel, 30 days: first / rounds (ms) | sessions per step |',
    '|---|---|---|---|---|---|',
    `| sqlite | ${SQLITE_EVENTS.toLocaleString('en-US')} | ${sqliteLoad.toFixed(0)} | ${fmt(s.stats.first)} / ${spread(s.stats.ms)} | ${fmt(s.funnel.first)} / ${spread(s.funnel.ms)} | ${s.funnel.value.join(' → ')} |`,
    ...(p ? [`| PostgreSQL (closed days compacted) | ${PG_EVENTS.toLocaleString('en-US')} | ${pgLoad.toFixed(0)} | ${fmt(p.stats.first)} / ${spread(p.stats.ms)} | ${fmt(p.funnel.first)} / ${spread(p.funnel.ms)} | ${p.funnel.value.join(' → ')} |`] : []),
    '',
    `Goals in the answers: sqlite ${goalsOk(s.stats.value)}${p ? `, PostgreSQL ${goalsOk(p.stats.value)}` : ''}. Funnel answers of the two stores: ${same}.`,
    `Targets (issue 37, at 20M sqlite / 10M PostgreSQL): stats p50 < 50 ms — sqlite ${met(s.stats.ms, 50)}${p ? `, PostgreSQL ${met(p.stats.ms, 50)}` : ''} at these sizes; funnel p50 < 1 s — sqlite ${met(s.funnel.ms, 1000)}${p ? `, PostgreSQL ${met(p.funnel.ms, 1000)}` : ''}.`,
    `Command: \`BENCH_EVENTS=${SQLITE_EVENTS} BENCH_PG_EVENTS=${PG_EVENTS} npm run bench:analytics\`.`,
  ];
  console.log(lines.join('\n'));
  if (SQLITE_EVENTS > 0) writeSection('analytics', `## Analytics: statistics with goals, and funnels (bench:analytics)\n\n${lines.join('\n')}`);
} finally {
  if (process.env.BENCH_KEEP_DB !== '1') await db?.drop();
  else if (db) {
    console.log(`kept database ${db.url}`);
    await db.admin.end();
  }
  rmSync(dir, { recursive: true, force: true });
}
