// Ingest throughput and latency against a bare server that only parses the same JSON, same run.
// BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_CONNECTIONS (50), BENCH_RUNTIMES (node,deno), BENCH_STORES (memory,sqlite),
// BENCH_PAYLOADS (single,batch20)
// BENCH_COMPARE=<git ref>: also serve that commit's server.ts in the same rounds, to measure a change
// (figures go to their own section of BENCHMARKS.md, "ingest-compare").
// After the rounds, each store's server takes requests at half its median saturated rate, on a
// fixed schedule (open-loop.ts), for the latency a client sees when the service is not saturated
// (after a saturated warm-up and 2 s at that rate to settle).
// BENCH_ANALYTICS=1: instead, what campaigns (UTM), countries and custom event properties cost
// batch ingest: each store's server without them and two with them (a campaign on every page load,
// or on the landing page load only), up together and taking turns in short bursts
// (bench/ingest-features.ts, BENCH_BURSTS, BENCH_BURST_SECONDS; figures to their own section of
// BENCHMARKS.md, "ingest-analytics"); with BENCH_LOAD=half at half the saturated rate, on a fixed
// schedule ("ingest-analytics-half-load").
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { DENO, ROOT, machine, median, spread, start, wrk, writeSection, type Child, type WrkResult } from './lib.ts';
import { cpuMs } from './proc.ts';
import { openLoop } from './open-loop.ts';
import { eventsPer, payloads } from './payloads.ts';
import { compareFeatures } from './ingest-features.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const runtimes = (process.env.BENCH_RUNTIMES ?? 'node,deno').split(',');
const stores = (process.env.BENCH_STORES ?? 'memory,sqlite').split(',');
const only = (process.env.BENCH_PAYLOADS ?? 'single,batch20').split(',');
const compare = process.env.BENCH_COMPARE;
const tmp = mkdtempSync(tmpdir() + '/watchtower-bench-');

if (process.env.BENCH_ANALYTICS === '1') {
  try {
    await compareFeatures({ rounds, connections, runtimes, stores, tmp });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(0);
}

// The compared commit's files, unpacked beside this checkout and sharing its node_modules.
const before = compare ? execFileSync('git', ['rev-parse', '--short', compare], { cwd: ROOT, encoding: 'utf8' }).trim() : undefined;
const beforeDir = `${tmp}/before`;
if (before) {
  mkdirSync(beforeDir);
  execFileSync('sh', ['-c', 'git archive "$0" | tar -x -C "$1"', before, beforeDir], { cwd: ROOT });
  symlinkSync(ROOT + 'node_modules', `${beforeDir}/node_modules`);
}

interface Target { name: string; baseline: boolean; launch(): Promise<Child> }
const targets = (runtime: string): Target[] => {
  const server = (env: Record<string, string>, cwd = ROOT) =>
    runtime === 'node'
      ? start(process.execPath, ['--import', 'tsx', 'server.ts'], env, cwd)
      : start(DENO, ['run', '--allow-all', 'server.ts'], env, cwd);
  const list: Target[] = [
    {
      name: 'baseline',
      baseline: true,
      launch: () => (runtime === 'node' ? start(process.execPath, ['bench/baseline-node.mjs']) : start(DENO, ['run', '--allow-all', 'bench/baseline-deno.ts'])),
    },
  ];
  for (const store of stores) {
    const env = () => ({ SERVICE_STORAGE: store, SERVICE_RATE_LIMIT: '0', SERVICE_P1_DB: `${tmp}/${runtime}-${store}-${Date.now()}.sqlite` });
    list.push({ name: `watchtower ${store}`, baseline: false, launch: () => server(env()) });
    if (before) list.push({ name: `watchtower ${store} @${before}`, baseline: false, launch: () => server(env(), beforeDir) });
  }
  return list;
};

const rows: string[] = [];
const changes: string[] = [];
const halfRate: string[] = [];
try {
  for (const runtime of runtimes) {
    for (const [payload, body] of (Object.entries(payloads) as [keyof typeof payloads, string][]).filter(([name]) => only.includes(name))) {
      const bodyFile = `${tmp}/${payload}.json`;
      writeFileSync(bodyFile, body);
      const results = new Map<string, (WrkResult & { cpuUs: number })[]>();
      for (let round = 0; round < rounds; round++) {
        // Targets alternate within a round, so drift on this shared machine hits all of them alike.
        for (const target of targets(runtime)) {
          const server = await target.launch();
          try {
            wrk(server.url, { connections, seconds: 2, bodyFile, path: '/api/events' }); // warm-up (JIT)
            const cpu0 = cpuMs(server.child.pid!);
            const w = wrk(server.url, { connections, seconds, bodyFile, path: '/api/events' });
            const cpu1 = cpuMs(server.child.pid!);
            const r = { ...w, cpuUs: cpu0 === null || cpu1 === null ? NaN : ((cpu1 - cpu0) * 1000) / w.requests };
            results.set(target.name, [...(results.get(target.name) ?? []), r]);
            console.log(`${runtime} ${payload} ${target.name} round ${round + 1}: ${r.rps.toFixed(0)} req/s p50 ${r.p50} ms p99 ${r.p99} ms errors ${r.errors} cpu ${r.cpuUs.toFixed(1)} µs/req`);
          } finally {
            await server.stop();
          }
        }
      }
      const base = median(results.get('baseline')!.map((r) => r.rps));
      const baseCpu = median(results.get('baseline')!.map((r) => r.cpuUs));
      for (const [name, rs] of results) {
        const rps = rs.map((r) => r.rps);
        const cpu = rs.map((r) => r.cpuUs);
        const ratio = (x: number) => (name === 'baseline' ? '1.00×' : x.toFixed(2) + '×');
        rows.push(
          `| ${runtime} | ${payload} | ${name} | ${spread(rps.map((x) => x * eventsPer[payload]))} | ${spread(rps)} | ${spread(rs.map((r) => r.p50), 2)} | ${spread(rs.map((r) => r.p99), 2)} | ${rs.reduce((a, r) => a + r.errors, 0)} | ${spread(cpu)} | ${ratio(median(rps) / base)} | ${ratio(baseCpu / median(cpu))} |`,
        );
      }
      for (const target of targets(runtime).filter((t) => !t.baseline && !t.name.includes('@'))) {
        const rate = median(results.get(target.name)!.map((r) => r.rps)) / 2;
        const server = await target.launch();
        try {
          wrk(server.url, { connections, seconds: 2, bodyFile, path: '/api/events' }); // warm-up (JIT)
          // Then the same rate for 2 s before the measured run, for the generator's own JIT and for
          // the store to settle: measured right after the saturated warm-up, the first 500 ms had a
          // p50 of ~150 ms (single events on sqlite) while neither of the server's threads stalled
          // over 25 ms, which set the p99 of the whole run; it was the cold generator and the
          // worker still applying the saturated backlog, not the latency at this rate.
          await openLoop(server.url, '/api/events', body, rate, 2);
          const r = await openLoop(server.url, '/api/events', body, rate, seconds);
          console.log(`${runtime} ${payload} ${target.name} at ${rate.toFixed(0)} req/s: p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms max ${r.max.toFixed(1)} ms errors ${r.errors}`);
          halfRate.push(`| ${runtime} | ${payload} | ${target.name} | ${(rate * eventsPer[payload]).toFixed(0)} | ${rate.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} | ${r.errors} |`);
        } finally {
          await server.stop();
        }
      }
      for (const store of before ? stores : []) {
        const now = results.get(`watchtower ${store}`)!;
        const then = results.get(`watchtower ${store} @${before}`)!;
        const throughput = median(now.map((r) => r.rps)) / median(then.map((r) => r.rps));
        // The two ran one after the other in each round: their ratio per round is spared the drift between rounds.
        const paired = median(now.map((r, i) => r.rps / then[i].rps));
        const cpu = median(then.map((r) => r.cpuUs)) / median(now.map((r) => r.cpuUs));
        changes.push(`| ${runtime} | ${payload} | ${store} | ${throughput.toFixed(3)}× | ${paired.toFixed(3)}× | ${cpu.toFixed(3)}× |`);
      }
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const header = `| runtime | payload | server | events/s | requests/s | p50 ms | p99 ms | errors | server CPU µs/request | vs baseline (throughput) | vs baseline (CPU) |
|---|---|---|---|---|---|---|---|---|---|---|`;
if (before) {
  writeSection(
    'ingest-compare',
    `## Ingest before and after a change

\`BENCH_COMPARE=${compare} npm run bench:ingest\` (BENCH_RUNTIMES=${runtimes.join(',')}, BENCH_STORES=${stores.join(',')}) — the ingest benchmark below, with commit ${before} served too, in the same rounds: each round starts the baseline, this checkout and ${before} one after the other. ${rounds} rounds of ${seconds} s, ${connections} connections. ${machine()}.

Change: this checkout against ${before}, above 1.000× when this checkout is faster. Throughput is requests/s, as the ratio of the medians and as the median of each round's ratio; CPU is ${before}'s server CPU per request divided by this checkout's (medians), the steadier figure on this shared machine, whose load moves throughput by up to 2× between runs a few seconds apart.

| runtime | payload | store | throughput vs ${before} (medians) | throughput vs ${before} (median of per-round ratios) | CPU per request vs ${before} |
|---|---|---|---|---|---|
${changes.join('\n')}

${header}
${rows.join('\n')}`,
  );
} else {
  writeSection(
    'ingest',
    `## Ingest throughput

\`npm run bench:ingest\` — wrk (1 thread, ${connections} connections, keep-alive) from a separate process, ${seconds} s per round after a 2 s warm-up, ${rounds} rounds, each server started fresh; rate limiting off. Baseline: a bare server on the same runtime that reads the body, \`JSON.parse\`s it and answers \`{accepted, rejected}\`. Target: ≥ 0.60× the baseline. ${machine()}.

Two ratios: throughput (requests/s against the baseline's) and CPU (the baseline's server CPU per request divided by ours; user + system time of the server process and all its threads, from /proc). wrk shares the machine's two cores with the server, and other work on this shared machine moves throughput from run to run; CPU per request moves much less, so it is the steadier figure of the two.

${header}
${rows.join('\n')}

At half the saturated rate: each store's server, started fresh and warmed up (2 s saturated, then 2 s at the rate below to settle), takes requests sent on a fixed schedule at half its median requests/s above for ${seconds} s, from the benchmark's own process; latency counts from when each request was due (an open loop, unlike wrk's fixed number in flight). Target: p99 < 100 ms.

| runtime | payload | server | events/s | requests/s | p50 ms | p99 ms | max ms | errors |
|---|---|---|---|---|---|---|---|---|
${halfRate.join('\n')}`,
  );
}
console.log([...changes, ...rows].join('\n'));
