// Where an ingest request's CPU goes, stage by stage, in one process (no sockets): the work the
// baseline does (JSON.parse) beside the work Watchtower adds per event. Run on Node, and on Deno by
// the same script. BENCH_COST_RUNTIMES (node,deno)
import { execFileSync } from 'node:child_process';
import { clientInfo, parseClientInfo } from '../lib/client-info.ts';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { batchItems, validateEvents } from '../lib/schema.ts';
import { payloads } from './payloads.ts';

declare const Deno: { args: string[] } | undefined;
const isDeno = typeof Deno !== 'undefined';
// What bench/post.lua sends: a desktop Chrome.
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/** µs per call: median of 5 rounds, after a warm-up. */
async function cost(fn: () => unknown, calls: number): Promise<number> {
  for (let i = 0; i < calls / 4; i++) await fn();
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    for (let i = 0; i < calls; i++) await fn();
    rounds.push(((performance.now() - t) * 1000) / calls);
  }
  return rounds.sort((a, b) => a - b)[2];
}

/** µs per call over distinct inputs (an insert of the same ids twice would be a no-op): median of 5 rounds, after a warm-up. */
async function costOfEach<T>(inputs: T[], fn: (input: T) => unknown): Promise<number> {
  const warm = Math.floor(inputs.length / 6);
  for (let i = 0; i < warm; i++) await fn(inputs[i]);
  const rounds: number[] = [];
  const per = Math.floor((inputs.length - warm) / 5);
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    for (let i = 0; i < per; i++) await fn(inputs[warm + r * per + i]);
    rounds.push(((performance.now() - t) * 1000) / per);
  }
  return rounds.sort((a, b) => a - b)[2];
}

async function measure(): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [name, text] of Object.entries(payloads)) {
    const n = name === 'single' ? 1 : 20;
    const calls = name === 'single' ? 100_000 : 10_000;
    const items = batchItems(JSON.parse(text));
    const valid = validateEvents(items, text.length).valid;
    const now = Date.now();
    const receivedAt = new Date(now).toISOString();
    const norm = (raw: RawEvent) => normalise(raw, { now, receivedAt, owner: 'bench-user' });
    const events: StoredEvent[] = valid.map(norm);
    const texts = events.map((e) => JSON.stringify(e));
    const store = createMemoryStore({ capacity: 10_000 });
    const per = (us: number) => us / n;
    out[name] = {
      'JSON.parse of the body (all the baseline does)': per(await cost(() => JSON.parse(text), calls)),
      // Once per request, whatever the batch size: the cache's hit, and what a user agent not seen lately costs.
      'browser, OS and device from the User-Agent (once per request; a cache hit)': per(await cost(() => clientInfo(CHROME), calls)),
      'the same, a user agent not in the cache (parsed)': per(await cost(() => parseClientInfo(CHROME), Math.min(calls, 20_000))),
      'envelope check': per(await cost(() => validateEvents(items, text.length), calls)),
      'normalise (ids, timestamps, the stored shape)': per(await cost(() => valid.map(norm), calls)),
      'memory store insert (dedupe by owner and id)': per(await costOfEach(Array.from({ length: calls * 2 }, () => valid.map(norm)), (batch) => store.insert(batch))),
      'JSON of each stored event (persisted stores only: their answer carries the events)': per(await cost(() => events.map((e) => JSON.stringify(e)), calls)),
      'answer and journal text from that JSON (sqlite store)': per(await cost(() => [`{"accepted":${n},"rejected":0,"events":[${texts.join(',')}]}`, texts.map((t) => '{"e":' + t + '}\n').join('')], calls)),
    };
  }
  return out;
}

if (isDeno || process.argv.includes('--child')) {
  console.log(JSON.stringify(await measure()));
} else {
  const { machine, writeSection, DENO } = await import('./lib.ts');
  const runtimes = (process.env.BENCH_COST_RUNTIMES ?? 'node,deno').split(',');
  const results: Record<string, Record<string, Record<string, number>>> = {};
  for (const runtime of runtimes) {
    const args = runtime === 'node' ? ['--import', 'tsx', 'bench/ingest-cost.ts', '--child'] : ['run', '--allow-all', 'bench/ingest-cost.ts'];
    results[runtime] = JSON.parse(execFileSync(runtime === 'node' ? process.execPath : DENO, args, { encoding: 'utf8' }).trim().split('\n').pop()!);
  }
  const stages = Object.keys(Object.values(Object.values(results)[0])[0]);
  const cols = runtimes.flatMap((r) => Object.keys(results[r]).map((p) => [r, p] as const));
  const f = (x: number) => x.toFixed(2);
  const rows = stages.map((s) => `| ${s} | ${cols.map(([r, p]) => f(results[r][p][s])).join(' | ')} |`);
  writeSection(
    'ingest-cost',
    `## Where the ingest time goes

\`npm run bench:cost\` — each stage of an ingest request timed alone in one process (no sockets, no HTTP), on the payloads of the ingest benchmark; µs per event, median of 5 rounds. The baseline server's whole per-event work is the first row; every other row is work Watchtower adds. On the persisted stores each stored event is serialised once, for the answer (README, "API") and the sqlite journal alike; that costs more than parsing it did, because the stored shape carries both camelCase and column-aligned fields (README, "Events"). The memory store (the base behaviour) answers with the counts only. ${machine()}.

| stage (µs per event) | ${cols.map(([r, p]) => `${r} ${p}`).join(' | ')} |
|---|${cols.map(() => '---').join('|')}|
${rows.join('\n')}`,
  );
  console.log(rows.join('\n'));
}
