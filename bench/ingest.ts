// Ingest throughput and latency against a bare server that only parses the same JSON, same run.
// BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_CONNECTIONS (50), BENCH_RUNTIMES (node,deno), BENCH_STORES (memory,sqlite)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { DENO, machine, median, spread, start, wrk, writeSection, type Child, type WrkResult } from './lib.ts';
import { cpuMs } from './proc.ts';
import { eventsPer, payloads } from './payloads.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const runtimes = (process.env.BENCH_RUNTIMES ?? 'node,deno').split(',');
const stores = (process.env.BENCH_STORES ?? 'memory,sqlite').split(',');
const tmp = mkdtempSync(tmpdir() + '/watchtower-bench-');

interface Target { name: string; baseline: boolean; launch(): Promise<Child> }
const targets = (runtime: string): Target[] => {
  const server = (env: Record<string, string>) =>
    runtime === 'node'
      ? start(process.execPath, ['--import', 'tsx', 'server.ts'], env)
      : start(DENO, ['run', '--allow-all', 'server.ts'], env);
  const list: Target[] = [
    {
      name: 'baseline',
      baseline: true,
      launch: () => (runtime === 'node' ? start(process.execPath, ['bench/baseline-node.mjs']) : start(DENO, ['run', '--allow-all', 'bench/baseline-deno.ts'])),
    },
  ];
  for (const store of stores) {
    list.push({
      name: `watchtower ${store}`,
      baseline: false,
      launch: () => server({ SERVICE_STORAGE: store, SERVICE_RATE_LIMIT: '0', SERVICE_P1_DB: `${tmp}/${runtime}-${store}-${Date.now()}.sqlite` }),
    });
  }
  return list;
};

const rows: string[] = [];
try {
  for (const runtime of runtimes) {
    for (const [payload, body] of Object.entries(payloads) as [keyof typeof payloads, string][]) {
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
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

writeSection(
  'ingest',
  `## Ingest throughput

\`npm run bench:ingest\` — wrk (1 thread, ${connections} connections, keep-alive) from a separate process, ${seconds} s per round after a 2 s warm-up, ${rounds} rounds, each server started fresh; rate limiting off. Baseline: a bare server on the same runtime that reads the body, \`JSON.parse\`s it and answers \`{accepted, rejected}\`. Target: ≥ 0.60× the baseline. ${machine()}.

Two ratios: throughput (requests/s against the baseline's) and CPU (the baseline's server CPU per request divided by ours; user + system time of the server process and all its threads, from /proc). wrk shares the machine's two cores with the server, and other work on this shared machine moves throughput from run to run; CPU per request moves much less, so it is the steadier figure of the two.

| runtime | payload | server | events/s | requests/s | p50 ms | p99 ms | errors | server CPU µs/request | vs baseline (throughput) | vs baseline (CPU) |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}`,
);
console.log(rows.join('\n'));
