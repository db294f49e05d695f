// npm run bench:ingest-instructions: what campaigns, countries and properties add to batch ingest,
// counted in machine instructions rather than timed. On a shared machine one server's CPU per
// request moves by ±5% from one fresh process to the next and with the machine's speed
// (BENCHMARKS.md, "Ingest cost of campaigns, countries and properties"), more than the few per cent
// sought; the instructions a process executes barely depend on either. Each measurement is a
// process run under valgrind (Debian: apt-get install valgrind; `cachegrind` without its cache
// simulation), started as `npm start` starts the server, that sends N requests of one body through
// the handler on a fresh store, 32 in flight (no sockets: their cost is the same for every body),
// and waits for them to be stored. A request's instructions are the difference between a run of
// LARGE and one of SMALL requests over LARGE − SMALL, so that start-up and warm-up cancel. Every
// thread is counted (valgrind runs them one at a time), the collector's and the worker's included.
// BENCH_STORES (memory,sqlite), BENCH_REPEATS (2), BENCH_SMALL (300), BENCH_LARGE (1300).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHandler } from '../lib/handler.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { machine, median, npmStart, spread, writeSection } from './lib.ts';
import { analyticsPayloads, CLIENT_ADDRESSES, ingestRequest } from './payloads.ts';

type Body = keyof typeof analyticsPayloads;
const BODIES: Body[] = ['without', 'with', 'landing'];

/** The child: `n` requests of `body` through the handler on a fresh `store`, countries on for every body but `without`. */
async function child(body: Body, store: string, n: number): Promise<void> {
  const geo = body !== 'without';
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-instructions-'));
  try {
    const s = store === 'memory' ? createMemoryStore() : await openSqliteStore({ path: join(dir, 'p1.sqlite'), retentionDays: 0 });
    const handler = createHandler({ store: s, geo, trustProxy: geo, defaultOwner: 'bench-owner', rateLimit: { rate: 0, burst: 1 }, log: () => {} });
    let sent = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (sent < n) {
        const address = CLIENT_ADDRESSES[sent++ % CLIENT_ADDRESSES.length];
        const res = await handler(ingestRequest(analyticsPayloads[body], address));
        if (res.status !== 200) throw new Error(`${body}: ${res.status} ${await res.text()}`);
        await res.text();
      }
    }));
    await s.flush();
    await s.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Instructions of one child process run under valgrind. */
function count(body: Body, store: string, n: number): Promise<number> {
  const { env, flags } = npmStart();
  const args = ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null', process.execPath, ...flags, '--import', 'tsx', fileURLToPath(import.meta.url), '--child', body, store, String(n)];
  return new Promise((resolve, reject) => {
    execFile('valgrind', args, { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 }, (err, _out, stderr) => {
      if ((err as { code?: string } | null)?.code === 'ENOENT') return reject(new Error('this benchmark counts instructions with valgrind, which is not installed (Debian: apt-get install valgrind)'));
      const refs = /I\s+refs:\s+([\d,]+)/.exec(stderr);
      if (err || !refs) return reject(new Error(`valgrind ${body} ${store} ${n}: ${err?.message ?? ''}\n${stderr.slice(-2000)}`));
      resolve(Number(refs[1].replaceAll(',', '')));
    });
  });
}

/** Runs `jobs` two at a time (the machine's two cores; valgrind runs each process's threads on one). */
async function inPairs<T>(jobs: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all([0, 1].map(async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  }));
  return out;
}

async function main(): Promise<void> {
  const stores = (process.env.BENCH_STORES ?? 'memory,sqlite').split(',');
  const repeats = Number(process.env.BENCH_REPEATS ?? 2);
  const small = Number(process.env.BENCH_SMALL ?? 300);
  const large = Number(process.env.BENCH_LARGE ?? 1300);
  const rows: string[] = [];
  for (const store of stores) {
    // Per repeat and body, one small and one large run, the bodies interleaved.
    const keys = Array.from({ length: repeats }, () => BODIES.flatMap((body) => [[body, small], [body, large]] as const)).flat();
    const counts = await inPairs(keys.map(([body, n]) => () => count(body, store, n)));
    const perRequest = (body: Body) => {
      const out: number[] = [];
      for (let i = 0; i < keys.length; i += 2) if (keys[i][0] === body) out.push((counts[i + 1] - counts[i]) / (large - small));
      return out;
    };
    const base = perRequest('without');
    for (const body of BODIES) {
      const per = perRequest(body);
      const ratio = body === 'without' ? '—' : (median(per) / median(base)).toFixed(3);
      const each = body === 'without' ? '—' : per.map((p, i) => (p / base[i]).toFixed(3)).join(', ');
      rows.push(`| ${store} | ${body} | ${spread(per.map((p) => p / 1e6), 2)} | ${each} | ${ratio} |`);
      console.log(rows[rows.length - 1]);
    }
  }
  writeSection(
    'ingest-analytics-instructions',
    `## Ingest cost of campaigns, countries and properties, in instructions

\`npm run bench:ingest-instructions\` (BENCH_STORES=${stores.join(',')}) — the instructions of a batch20 request of each body of the sections above (without; with, a campaign on every page load; landing, on the first only; countries on for both), counted by valgrind (cachegrind, no cache simulation) over every thread of a process started as \`npm start\` starts the server, which sends the requests through the handler (no sockets) on a fresh store, 32 in flight, and waits until they are stored: (instructions of ${large} requests − of ${small}) / ${large - small}, ${repeats} repeats, the bodies interleaved. Instructions are not time (cache misses, the collector's threads running beside the main one), but they do not drift with a shared machine's speed. Target (issue 37): ≤ 1.05 against without. ${machine()}.

| store | body | M instructions per request (median, min–max) | ÷ without, per repeat | ÷ without (medians) |
|---|---|---|---|---|
${rows.join('\n')}`,
  );
}

if (process.argv[2] === '--child') await child(process.argv[3] as Body, process.argv[4], Number(process.argv[5]));
else await main();
