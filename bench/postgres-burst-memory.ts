// Where the PostgreSQL-store server's memory goes during and after today's burst of
// bench:postgres-busy, and what V8's heap settings change of it. Replays the burst (BENCH_BUSY,
// 300,000 events over HTTP, fresh sessions) on copies of a database that bench:postgres-busy kept
// as its server found it (BENCH_KEEP_DB=1 leaves `<name>_loaded`; pass that name as
// BENCH_DATABASE), once per Node flag set of BENCH_SERVER_FLAGS (`;`-separated; by default V8's
// own settings and `npm start`'s flags), the sets alternating over BENCH_ROUNDS rounds, each with
// `npm start`'s environment. Each run:
// the reads of bench:postgres-busy, the burst, the reads again, BENCH_SETTLE_S (60) s idle with the
// RSS read every 10 s, the reads once more. The server runs with --trace-gc, so its mark-compacts
// tell how much of its heap was live and when V8's memory reducer shrank it ("(reduce)").
import postgres from 'postgres';
import { ADMIN_URL, databaseUrl } from '../test/helpers/postgres.ts';
import { HEADERS, prefixSessions, send } from './busy-data.ts';
import { machine, median, npmStart, start, writeSection } from './lib.ts';
import { cpuMs, rssOf } from './proc.ts';

const SOURCE = process.env.BENCH_DATABASE;
if (!SOURCE || !/^[a-z0-9_]+$/.test(SOURCE)) throw new Error('BENCH_DATABASE=<the _loaded database bench:postgres-busy kept> is required');
const AS_STARTED = npmStart();
const FLAG_SETS = (process.env.BENCH_SERVER_FLAGS ?? `;${AS_STARTED.flags.join(' ')}`).split(';').map((s) => s.trim());
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BUSY = Number(process.env.BENCH_BUSY ?? 300_000);
const SETTLE_S = Number(process.env.BENCH_SETTLE_S ?? 60);
const READS = Number(process.env.BENCH_RUNS ?? 7);
const DAY = 86_400_000, HOUR = 3_600_000;

interface Run {
  flags: string; burstS: number; burstCpuS: number; gcMs: number; markCompacts: number;
  /** Live heap after the last mark-compact of the burst and its reads, and the heap's size then, MiB. */
  live: number; heap: number;
  rss: { before: number; after: number; settle: number[]; settled: number; peak: number };
  /** Seconds after the burst's reads when V8 first shrank the heap, or null. */
  reducedAfterS: number | null;
  readsAfter: number;
}

const GC_LINE = /(\d+) ms: (Scavenge|Mark-Compact)( \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(([\d.]+)\) MB, ([\d.]+) \/ [\d.]+ ms(?:\s+\(\+ ([\d.]+) ms)?/;
const iso = (ms: number) => new Date(ms).toISOString();
const paths = () => [`/api/stats?from=${iso(Date.now() - 30 * DAY)}`, `/api/stats?from=${iso(Date.now() - HOUR)}`, `/api/stats?from=${iso(Date.now() - 7 * DAY)}&interval=day`, '/api/stats'];

async function once(admin: postgres.Sql, flags: string, tag: string): Promise<Run> {
  const name = `${SOURCE}_m${tag}`;
  await admin.unsafe(`drop database if exists ${name}`);
  await admin.unsafe(`create database ${name} template ${SOURCE}`);
  const server = await start(process.execPath, [...flags.split(/\s+/).filter(Boolean), '--trace-gc', '--import', 'tsx', 'server.ts'],
    { SERVICE_STORAGE: 'postgres', DATABASE_URL: databaseUrl(name), SERVICE_RATE_LIMIT: '0', SERVICE_RETENTION_DAYS: '0', ...AS_STARTED.env });
  const pid = server.child.pid!;
  // The main isolate's collections, with the server's clock (ms since its start) of each.
  const gcs: { at: number; kind: string; reduce: boolean; after: number; size: number; ms: number }[] = [];
  let isolate = '';
  let pending = '';
  server.child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      const m = GC_LINE.exec(line);
      if (!m) continue;
      // Helper threads print their own collections: the first isolate seen scavenging a heap over
      // 30 MB is the main thread's (the others stay a few MB).
      const id = /0x[0-9a-f]+/.exec(line)?.[0] ?? '';
      if (!isolate && m[2] === 'Scavenge' && Number(m[5]) > 30) isolate = id;
      if (id !== isolate) continue;
      gcs.push({ at: Number(m[1]), kind: m[2], reduce: !!m[3], after: Number(m[4]), size: Number(m[5]), ms: Number(m[6]) + Number(m[7] ?? 0) });
    }
  });
  // The server's clock as of its latest collection: while it works it collects every few hundred ms.
  const serverClock = () => gcs.length ? gcs[gcs.length - 1].at : 0;
  const reads = async () => {
    const times: number[] = [];
    for (const path of paths()) {
      for (let i = 0; i < READS; i++) {
        const t = performance.now();
        const res = await fetch(server.url + path, { headers: HEADERS });
        await res.text();
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        times.push(performance.now() - t);
      }
    }
    return median(times);
  };
  try {
    await reads();
    const before = rssOf(pid).rss;
    const gcFrom = gcs.length, cpu0 = cpuMs(pid)!, t0 = performance.now();
    prefixSessions(`m${tag}`);
    await send(BUSY, 0, 0, async (_at, agent, body) => {
      const res = await fetch(server.url + '/api/events', { method: 'POST', headers: { ...HEADERS, 'user-agent': agent }, body });
      await res.arrayBuffer();
      if (res.status !== 202 && res.status !== 200) throw new Error(`ingest ${res.status}`);
    });
    const burstS = (performance.now() - t0) / 1000, burstCpuS = (cpuMs(pid)! - cpu0) / 1000;
    const burstGcs = gcs.slice(gcFrom);
    const readsAfter = await reads();
    const after = rssOf(pid).rss;
    const quietFrom = serverClock();
    const lastMc = gcs.filter((g) => g.kind === 'Mark-Compact').at(-1);
    const settle: number[] = [];
    for (let s = 0; s < SETTLE_S; s += 10) {
      await new Promise((r) => setTimeout(r, 10_000));
      settle.push(rssOf(pid).rss);
    }
    const reduced = gcs.find((g) => g.reduce && g.at >= quietFrom);
    await reads();
    const { rss: settled, peak } = rssOf(pid);
    return {
      flags, burstS, burstCpuS, gcMs: burstGcs.reduce((a, g) => a + g.ms, 0), markCompacts: burstGcs.filter((g) => g.kind === 'Mark-Compact').length,
      live: lastMc?.after ?? NaN, heap: lastMc?.size ?? NaN, rss: { before, after, settle, settled, peak },
      reducedAfterS: reduced ? (reduced.at - quietFrom) / 1000 : null, readsAfter,
    };
  } finally {
    await server.stop();
    await admin.unsafe(`drop database if exists ${name}`);
  }
}

const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
const runs: Run[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 ? [...FLAG_SETS].reverse() : FLAG_SETS;
  for (const flags of order) {
    const r = await once(admin, flags, `${round}${FLAG_SETS.indexOf(flags)}`);
    console.log(JSON.stringify(r));
    runs.push(r);
  }
}
await admin.end();

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const f1 = (n: number) => n.toFixed(1);
const rows = runs.map((r) =>
  `| ${r.flags ? `\`${r.flags}\`${r.flags === AS_STARTED.flags.join(' ') ? ' (`npm start`)' : ''}` : "V8's defaults"} | ${f1(r.burstS)} s, ${f1(r.burstCpuS)} s CPU | ${int(r.gcMs)} ms (${r.markCompacts} mark-compacts) | ${int(r.live)} of ${int(r.heap)} | ${int(r.rss.before)} | ${int(r.rss.after)} | ${r.rss.settle.map(int).join(', ')} | ${r.reducedAfterS === null ? 'not within the settle' : `${f1(r.reducedAfterS)} s`} | ${int(r.rss.settled)} (peak ${int(r.rss.peak)}) | ${f1(r.readsAfter)} ms |`);
writeSection('postgres-burst-memory', `## The PostgreSQL-store server's memory through a burst

\`BENCH_DATABASE=<name>_loaded npm run bench:postgres-burst-memory\` (BENCH_BUSY=${BUSY}, BENCH_ROUNDS=${ROUNDS}, BENCH_SETTLE_S=${SETTLE_S}): today's burst of bench:postgres-busy (${int(BUSY)} events over HTTP, 8 requests in flight) replayed on fresh copies of the database its server found (${SOURCE}), once per Node flag set, the sets alternating. Reads: ${READS} of each of 4 ranged and all-time statistics before the burst, right after it, and after ${SETTLE_S} s idle. GC figures are the main thread's, from --trace-gc, during the burst; live heap is what the last mark-compact before the idle time kept, of the heap's size then (MiB). ${machine()}.

| server flags | burst | GC during it | live of heap, MiB | RSS before, MiB | RSS after burst and reads | RSS every 10 s idle | heap shrunk by V8 after | RSS after the settled reads | median read right after |
|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}`);
