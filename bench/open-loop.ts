// Open-loop load: requests sent on a fixed schedule whatever the answers, for the latency a client
// sees at a given rate. wrk keeps a fixed number of requests in flight instead, so a slow answer
// delays the requests behind it and its latency is counted once, not for every request it held up;
// here each request's latency counts from when it was due.
import { request, Agent } from 'node:http';
import { BROWSER } from './payloads.ts';

export interface OpenLoopResult { sent: number; errors: number; p50: number; p99: number; max: number }

/** `forwardedFor`: each request carries the next of these addresses as X-Forwarded-For, in turn (as bench/post.lua). */
export async function openLoop(url: string, path: string, body: string, ratePerSecond: number, seconds: number, forwardedFor: string[] = []): Promise<OpenLoopResult> {
  const target = new URL(path, url);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const payload = Buffer.from(body);
  const latencies: number[] = [];
  let errors = 0;
  const total = Math.round(ratePerSecond * seconds);
  const interval = 1000 / ratePerSecond;
  const t0 = performance.now();
  const inFlight: Promise<void>[] = [];
  const send = (due: number, i: number) =>
    new Promise<void>((resolve) => {
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': payload.length, 'user-agent': BROWSER };
      if (forwardedFor.length) headers['x-forwarded-for'] = forwardedFor[i % forwardedFor.length];
      const req = request(target, { method: 'POST', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) errors++;
          latencies.push(performance.now() - due);
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(payload);
    });
  for (let i = 0; i < total; ) {
    const now = performance.now();
    // Everything due by now goes out, so a stalled timer does not lower the rate.
    for (; i < total && t0 + i * interval <= now; i++) inFlight.push(send(t0 + i * interval, i));
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(inFlight);
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;
  return { sent: total, errors, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN };
}
