// `npm run bench:environment`: statistics of one environment (GET /api/stats?environment=) from
// its rollups (lib/environment-scopes.ts), against the same range of every environment from the
// owner's rollups and against the same environment built from its events at request time (the path
// of a name beyond the owner's bound, lib/environment-stats.ts), on the sqlite store holding
// BENCH_EVENTS events (300,000 by default) over 30 days, 70% of them in production. Writes its
// figures into BENCHMARKS.md (section bench:environment).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { environmentStats } from '../lib/environment-stats.ts';
import { normalise, uuidv7, type StoredEvent } from '../lib/event.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { machine, spread, writeSection } from './lib.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 300_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DAY = 86_400_000;
const USER = 'bench-user';
const NOW = Date.now();

let seed = 7;
const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296);

function* batches(size: number): Generator<StoredEvent[]> {
  let batch: StoredEvent[] = [];
  for (let i = 0; i < TOTAL; i++) {
    const t = NOW - 30 * DAY + Math.floor((i / TOTAL) * 30 * DAY);
    const r = rand();
    const environment = r < 0.7 ? 'production' : r < 0.9 ? 'staging' : 'development';
    const type = rand() < 0.5 ? 'pageload' : rand() < 0.5 ? 'click' : 'error';
    batch.push(normalise({ type, environment, sessionId: `s${Math.floor(i / 20)}`, route: `/p/${i % 40}`, data: { duration: 200 + (i % 500) } },
      { now: t, owner: USER, newId: () => uuidv7(t) }));
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

async function timed(fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  await fn();
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-env-'));
const store = await openSqliteStore({ path: join(dir, 'watchtower.sqlite'), now: () => NOW });
try {
  for (const b of batches(500)) await store.insert(b);
  await store.flush();
  const range30 = { from: NOW - 30 * DAY }, range7 = { from: NOW - 7 * DAY };
  const fromRollups = async (environment: string, range: { from: number }) => {
    const stats = await store.statsOfEnvironment!(USER, NOW, range, undefined, environment);
    if (!stats) throw new Error(`${environment} has no rollups`);
    return stats;
  };
  const rows = [
    ['30 days, all environments (rollups)', await timed(() => store.stats(USER, NOW, range30))],
    ['30 days, production (70% of the events), rollups', await timed(() => fromRollups('production', range30))],
    ['7 days, staging (20%), rollups', await timed(() => fromRollups('staging', range7))],
    ['30 days, production, from its events', await timed(() => environmentStats(store, { owner: USER, environment: 'production', now: NOW, range: range30, budgetMs: Infinity }))],
    ['7 days, staging, from its events', await timed(() => environmentStats(store, { owner: USER, environment: 'staging', now: NOW, range: range7, budgetMs: Infinity }))],
  ] as const;
  const md = `\`npm run bench:environment\` (BENCH_EVENTS=${TOTAL}) — the sqlite store holding ${TOTAL.toLocaleString('en-US')} events of one user over 30 days, 70% production, 20% staging, 10% development; median (min–max) of ${ROUNDS} reads after one warm-up, in one process, no HTTP. ${machine()}.

| read | ms |
|---|---|
${rows.map(([name, ms]) => `| ${name} | ${spread(ms)} |`).join('\n')}
`;
  console.log(md);
  writeSection('environment', `## Statistics of one environment\n\n${md}`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
