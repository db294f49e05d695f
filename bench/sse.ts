// Live stream fan-out: N subscribers, R broadcasts/s for S seconds; delivery latency and server CPU.
// BENCH_SSE_SUBSCRIBERS (1000), BENCH_SSE_RATE (100), BENCH_SECONDS (10), BENCH_ROUNDS (3)
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { machine, spread, start, writeSection } from './lib.ts';
import { cpuMs } from './proc.ts';

const subscribers = Number(process.env.BENCH_SSE_SUBSCRIBERS ?? 1000);
const rate = Number(process.env.BENCH_SSE_RATE ?? 100);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

async function round() {
  const server = await start(process.execPath, ['--import', 'tsx', 'server.ts'], { SERVICE_STORAGE: 'memory', SERVICE_RATE_LIMIT: '0' });
  const clients = spawn(process.execPath, ['bench/sse-clients.mjs', server.url, String(subscribers), String(seconds)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  clients.stdout!.on('data', (c) => (out += c));
  await new Promise<void>((resolve, reject) => {
    const t = setInterval(() => out.includes('READY') && (clearInterval(t), resolve()), 20);
    setTimeout(() => reject(new Error('subscribers did not connect')), 60_000);
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const post = (i: number) =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({ type: 'custom', data: { name: 'tick', i, sentAt: performance.timeOrigin + performance.now() } });
      const req = request(server.url + '/api/events', { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.end(body);
    });
  const cpu0 = cpuMs(server.child.pid!) ?? NaN;
  const clientCpu0 = cpuMs(clients.pid!) ?? NaN;
  const t0 = performance.now();
  const sends: Promise<void>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sends.push(post(i));
  }
  await Promise.all(sends);
  await new Promise((r) => setTimeout(r, 500));
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = ((cpuMs(server.child.pid!) ?? NaN) - cpu0) / 1000 / elapsed;
  const clientCpu = ((cpuMs(clients.pid!) ?? NaN) - clientCpu0) / 1000 / elapsed;
  clients.stdin!.write('report\n');
  await new Promise((r) => clients.once('exit', r));
  agent.destroy();
  await server.stop();
  const result = JSON.parse(out.split('\n').find((l) => l.startsWith('{'))!);
  return { ...result, cpu, clientCpu, expected: subscribers * rate * seconds };
}

const results = [];
for (let i = 0; i < rounds; i++) {
  const r = await round();
  console.log(`round ${i + 1}: delivered ${r.delivered}/${r.expected} p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms max ${r.max.toFixed(1)} ms server CPU ${(r.cpu * 100).toFixed(0)}% subscribers' CPU ${(r.clientCpu * 100).toFixed(0)}%`);
  results.push(r);
}

writeSection(
  'sse',
  `## Live stream fan-out

\`npm run bench:sse\` — ${subscribers} SSE subscribers (a separate process), ${rate} broadcasts/s (one event per POST) for ${seconds} s, ${rounds} rounds, Node, memory store. Latency: from the publisher's clock at send to the subscriber's at parse (same machine clock). One broadcast is encoded once per owner, and each subscriber's pending messages are written together every 20 ms. Target: p99 under 100 ms. ${machine()}.

The subscribers' process shares the machine's two cores with the server and the publisher; its CPU is shown because latency grows once the two cores are busy, wherever the time goes.

| delivered / expected | p50 ms | p99 ms | max ms | server CPU (one core = 100%) | subscribers' process CPU |
|---|---|---|---|---|---|
| ${results.map((r) => r.delivered).join(', ')} / ${results[0].expected} | ${spread(results.map((r) => r.p50), 1)} | ${spread(results.map((r) => r.p99), 1)} | ${spread(results.map((r) => r.max), 1)} | ${spread(results.map((r) => r.cpu * 100))}% | ${spread(results.map((r) => r.clientCpu * 100))}% |`,
);
