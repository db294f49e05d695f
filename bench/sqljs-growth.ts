// `npm run bench:sqljs`: does the patched file growth of sql.js (lib/store/sqljs.ts) still pay for
// itself now that the hot segment is sealed at DEFAULT_SEAL_EVENTS? Fills a hot segment's schema with
// BENCH_EVENTS events (default: the seal size) in transactions of 500 rows, as the worker applies
// them, once with sql.js as the store loads it and once with the stock module, alternating, for
// BENCH_ROUNDS rounds in one process. Reports the fill time, the slowest transaction (a growth copy
// stalls one) and the copy a snapshot makes before it can write (none patched: the file is written
// as it is; stock: an export). A snapshot holds the database for that copy and its write. Writes BENCHMARKS.md (bench:sqljs).
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { loadavg } from 'node:os';
import type { Database, SqlJsStatic } from 'sql.js';
import { SCHEMA } from '../lib/store/sqlite/segment.ts';
import { DEFAULT_SEAL_EVENTS } from '../lib/store/sqlite/store.ts';
import { databaseFile, loadSqlJs } from '../lib/store/sqlite/sqljs.ts';
import { eventData, machine, median, spread, writeSection } from './lib.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? DEFAULT_SEAL_EVENTS);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 500;
const TYPES = ['pageload', 'click', 'error', 'feedback', 'custom'];
const INSERT = `INSERT OR IGNORE INTO events (seq, id, type, timestamp, source, session_id, page_url, message, severity, app_version,
  metadata, received_at, user_id, route_key, duration, ttfb, rating) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

async function stockSqlJs(): Promise<SqlJsStatic> {
  const require = createRequire(import.meta.url);
  const wasm = await readFile(join(dirname(require.resolve('sql.js')), 'sql-wasm.wasm'));
  const init = ((await import('sql.js')) as unknown as { default: (c: object) => Promise<SqlJsStatic> }).default;
  return init({ wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) });
}

interface Round { fillMs: number; worstTxMs: number; holdMs: number; bytes: number }

function fill(SQL: SqlJsStatic, patched: boolean, events = EVENTS): Round {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const db: Database = new SQL.Database();
  db.exec('PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=MEMORY;');
  db.exec(SCHEMA);
  const insert = db.prepare(INSERT);
  const t0 = performance.now();
  let worstTxMs = 0;
  const start = Date.parse('2026-05-01T00:00:00Z');
  for (let seq = 1; seq <= events; ) {
    const tx = performance.now();
    db.exec('BEGIN');
    for (const end = Math.min(events, seq + BATCH - 1); seq <= end; seq++) {
      const type = TYPES[Math.floor(rand() * TYPES.length)];
      const at = new Date(start + seq * 500).toISOString();
      const data = eventData(type, rand);
      insert.run([
        seq, `01890000-0000-7000-8000-${String(seq).padStart(12, '0')}`, type, at, 'web', `s${Math.floor(rand() * 20_000)}`,
        `https://shop.example/p/${Math.floor(rand() * 20)}`, null, null, `1.${Math.floor(rand() * 5)}.0`,
        JSON.stringify({ data, userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0' }), at, 'bench-user',
        type === 'pageload' ? `/p/${Math.floor(rand() * 20)}` : null, (data.duration as number) ?? null, (data.ttfb as number) ?? null,
        (data.rating as number) ?? null,
      ]);
    }
    db.exec('COMMIT');
    worstTxMs = Math.max(worstTxMs, performance.now() - tx);
  }
  const fillMs = performance.now() - t0;
  insert.free();
  const h = performance.now();
  const bytes = patched ? databaseFile(db)! : db.export();
  const holdMs = performance.now() - h;
  const round = { fillMs, worstTxMs, holdMs, bytes: bytes.length };
  db.close();
  return round;
}

const loaded = await loadSqlJs();
if (loaded.fileGrowth !== 'in place') throw new Error('sql.js was not patched: nothing to compare');
const stock = await stockSqlJs();
const rounds: Record<'patched' | 'stock', Round[]> = { patched: [], stock: [] };
// Warm-up (compilation of both modules and of this loop), not counted.
fill(loaded.SQL, true, 20_000);
fill(stock, false, 20_000);
const load0 = loadavg()[0].toFixed(1);
for (let r = 0; r < ROUNDS; r++) {
  for (const variant of (r % 2 ? ['stock', 'patched'] : ['patched', 'stock']) as ('patched' | 'stock')[]) {
    const round = fill(variant === 'patched' ? loaded.SQL : stock, variant === 'patched');
    rounds[variant].push(round);
    console.log(`round ${r + 1} ${variant}: fill ${round.fillMs.toFixed(0)} ms, worst transaction ${round.worstTxMs.toFixed(1)} ms, ` +
      `snapshot hold ${round.holdMs.toFixed(1)} ms, ${(round.bytes / 1048576).toFixed(1)} MiB`);
  }
}
const load1 = loadavg()[0].toFixed(1);
const of = (v: 'patched' | 'stock', k: keyof Round) => rounds[v].map((x) => x[k]);
const ratio = median(of('patched', 'fillMs')) / median(of('stock', 'fillMs'));
const row = (v: 'patched' | 'stock') =>
  `| ${v === 'patched' ? 'patched (as the store loads it)' : 'stock sql.js'} | ${spread(of(v, 'fillMs'))} | ${spread(of(v, 'worstTxMs'), 1)} | ${spread(of(v, 'holdMs'), 1)} |`;
const text = `
\`npm run bench:sqljs\` (BENCH_EVENTS=${EVENTS}, ${ROUNDS} rounds, variants alternating in one process) — one hot
segment's schema filled in transactions of ${BATCH} rows, database ${(median(of('patched', 'bytes')) / 1048576).toFixed(0)} MiB.
${machine()}; load average ${load0} before, ${load1} after.

| sql.js | fill (ms) | slowest transaction (ms) | copy before a snapshot writes (ms) |
|---|---|---|---|
${row('patched')}
${row('stock')}

Fill time, patched against stock: **${ratio.toFixed(2)}×**.
`;
console.log(text);
if (!process.env.BENCH_NO_WRITE) writeSection('sqljs', text);
