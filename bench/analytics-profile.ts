// `npm run bench:analytics-profile`: where bench:analytics's 30-day statistics spend their time on
// the sqlite store. Loads its data set (BENCH_EVENTS, default 2,000,000) into BENCH_DIR once (a
// later run with the same BENCH_DIR reads the store it left, with the same NOW), then times
// store.stats for variants of the request: 30 days with every breakdown and 5 goals, without goals,
// each goal alone, and the 7-day answer without a range (no breakdowns). Run it under
// `node --cpu-prof` to see the hot functions (the store reads in its worker, which gets its own
// profile). Prints only; BENCHMARKS.md keeps notes by hand.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const DIR = process.env.BENCH_DIR ?? join(tmpdir(), 'watchtower-bench-analytics-profile');
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const nowFile = join(DIR, 'now');
const fresh = !existsSync(nowFile);
mkdirSync(DIR, { recursive: true });
// The data set's NOW is fixed at import: the stored one, so a reused store is read at its own time.
if (!fresh) process.env.BENCH_NOW = readFileSync(nowFile, 'utf8');
const { GOALS, load, NOW, PROJECT, RANGE, USER } = await import('./analytics-data.ts');
const { openSqliteStore } = await import('../lib/store/sqlite/store.ts');
const { median, spread } = await import('./lib.ts');

const store = await openSqliteStore({ path: join(DIR, 'watchtower.sqlite'), retentionDays: 0 });
if (fresh) {
  const s = await load(store, EVENTS, 'sqlite');
  await store.flush();
  writeFileSync(nowFile, String(NOW));
  console.log(`loaded ${EVENTS} events in ${s.toFixed(0)} s into ${DIR}`);
}
// The idle moment bench:analytics gives after its load (the worker merges closed days meanwhile).
await new Promise((r) => setTimeout(r, Number(process.env.BENCH_IDLE_MS ?? 5000)));

async function time(label: string, f: () => Promise<unknown>) {
  let t0 = performance.now();
  await f();
  const first = performance.now() - t0;
  const ms: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    t0 = performance.now();
    await f();
    ms.push(performance.now() - t0);
  }
  console.log(`${label.padEnd(44)} first ${first.toFixed(0).padStart(5)} ms, then ${spread(ms)} (median ${median(ms).toFixed(1)})`);
}

const only = process.env.BENCH_ONLY;
const variants: [string, () => Promise<unknown>][] = [
  ['30 days, breakdowns, 5 goals', () => store.stats(USER, NOW, RANGE, PROJECT)],
  ['30 days, breakdowns, no goals', () => store.stats(USER, NOW, { from: RANGE.from, to: RANGE.to }, PROJECT)],
  ...GOALS.map((g): [string, () => Promise<unknown>] => [`30 days, goal ${g.page ?? g.event}`, () => store.stats(USER, NOW, { ...RANGE, goals: [g] }, PROJECT)]),
  ['7-day series, no range (no breakdowns)', () => store.stats(USER, NOW, undefined, PROJECT)],
];
for (const [label, f] of variants) if (!only || label.includes(only)) await time(label, f);
await store.close();
