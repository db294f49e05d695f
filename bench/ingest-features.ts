// BENCH_ANALYTICS=1 npm run bench:ingest: what reading campaigns (UTM), countries and custom event
// properties costs batch ingest, end to end (issue 37's target: at most 5% of its server CPU). In
// each round, each store runs three servers side by side, taking turns (round()): `without`,
// started with SERVICE_GEO=off, taking batches with no campaign in their URLs and no properties in
// their custom events; `with` and `landing`, started with countries on and
// SERVICE_TRUST_PROXY=true, taking the same batches with five properties per custom event and a
// campaign on every page load (`with`, the worst case) or on the landing page load only
// (`landing`, as sites send them) (analyticsPayloads). All take every request with an
// X-Forwarded-For of a public address, one of CLIENT_ADDRESSES in turn; only the servers with
// countries trust it, so only there is a country looked up. All
// own what they take (DEFAULT_INGEST_OWNER_USER_ID), as a deployment's keyed events are owned:
// only owned events are counted in rollups, where properties are read. Node's servers are started
// as `npm start` starts them (its environment and V8 flags; Deno's get the same flags), since how
// V8 collects decides much of what the larger events cost.
import { writeFileSync } from 'node:fs';
import { DENO, machine, median, npmStart, spread, start, wrk, writeSection, type Child, type WrkResult } from './lib.ts';
import { openLoop } from './open-loop.ts';
import { cpuMs, rssOf } from './proc.ts';
import { analyticsPayloads, CLIENT_ADDRESSES } from './payloads.ts';

export interface FeatureRun { rounds: number; connections: number; runtimes: string[]; stores: string[]; tmp: string }

/**
 * Seconds of each burst, bursts of each server per round, and the warm-up of each server. A
 * shared machine's speed can drift by 2× over seconds (BENCHMARKS.md, the notes on this section),
 * so the servers take turns in short bursts and each is charged its CPU over the whole
 * turn-taking: drift then hits them alike.
 */
const BURST_S = Number(process.env.BENCH_BURST_SECONDS ?? 1);
const BURSTS = Number(process.env.BENCH_BURSTS ?? 20);
const WARM_S = 5;
/**
 * BENCH_LOAD=half: every turn sends requests on a fixed schedule (open-loop.ts) at half the rate
 * the `without` server answered in its warm-up (the load DESIGN.md's ingest latency target is set
 * at), instead of wrk's as fast as the servers answer. A deployment mostly runs below saturation,
 * where requests wait less for the journal, so fewer are in flight when V8 collects.
 */
const HALF_LOAD = process.env.BENCH_LOAD === 'half';
/** After the last burst, before the last CPU reading: a server's work still queued (the sqlite worker's rows) is charged to it. */
const SETTLE_MS = 1000;

type Variant = keyof typeof analyticsPayloads;
const VARIANTS: Variant[] = ['without', 'with', 'landing'];
const SERVER_ENV: Record<Variant, Record<string, string>> = {
  without: { SERVICE_GEO: 'off', SERVICE_TRUST_PROXY: 'false' },
  with: { SERVICE_GEO: 'on', SERVICE_TRUST_PROXY: 'true' },
  landing: { SERVICE_GEO: 'on', SERVICE_TRUST_PROXY: 'true' },
};

/**
 * One request before the measured ones, on a store that answers with the stored events: the
 * `with` and `landing` servers must find a campaign (on the first page load) and a country, the
 * `without` one neither, or the comparison measures nothing.
 */
async function check(server: Child, variant: Variant, body: string): Promise<void> {
  const res = await fetch(server.url + '/api/events', { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-forwarded-for': '8.8.8.8' } });
  const answer = (await res.json()) as { events?: { utm?: unknown; client?: { country?: unknown } }[] };
  if (!answer.events) return;
  const e = answer.events[0];
  const found = e.utm !== undefined && e.client?.country === 'US';
  if (found !== (variant !== 'without')) throw new Error(`${variant}: the server stored utm ${JSON.stringify(e.utm)}, country ${JSON.stringify(e.client?.country)}`);
}

type Figures = WrkResult & { cpuUs: number; rssMiB: number };
const AS_STARTED = npmStart();

/**
 * One round of one store: the servers started fresh and kept up together; after a warm-up each,
 * they take BURSTS turns of BURST_S seconds (their order reverses every turn), and each one's CPU
 * per request is its CPU from the first turn to SETTLE_MS after the last, over the requests of its
 * turns. Which server is started, warmed and served first rotates from round to round: of three
 * identical servers, the third started took 5% more CPU per request than the first in each of two runs.
 */
async function round(o: FeatureRun, runtime: string, store: string, index: number): Promise<Record<Variant, Figures>> {
  const servers = {} as Record<Variant, Child>;
  const order = VARIANTS.map((_, i) => VARIANTS[(i + index) % VARIANTS.length]);
  try {
    for (const variant of order) {
      const env = {
        ...AS_STARTED.env, SERVICE_STORAGE: store, SERVICE_RATE_LIMIT: '0', DEFAULT_INGEST_OWNER_USER_ID: 'bench-owner',
        SERVICE_P1_DB: `${o.tmp}/${runtime}-${store}-${variant}-${index}.sqlite`, ...SERVER_ENV[variant],
      };
      servers[variant] = await (runtime === 'node'
        ? start(process.execPath, [...AS_STARTED.flags, '--import', 'tsx', 'server.ts'], env)
        : start(DENO, ['run', '--allow-all', ...(AS_STARTED.flags.length ? [`--v8-flags=${AS_STARTED.flags.join(',')}`] : []), 'server.ts'], env));
      await check(servers[variant], variant, analyticsPayloads[variant]);
    }
    const opts = (variant: Variant) => ({ connections: o.connections, bodyFile: `${o.tmp}/batch20-${variant}.json`, path: '/api/events', forwardedFor: CLIENT_ADDRESSES });
    const warm = {} as Record<Variant, WrkResult>;
    for (const variant of order) warm[variant] = wrk(servers[variant].url, { ...opts(variant), seconds: WARM_S }); // JIT, and the country database loaded
    const rate = HALF_LOAD ? warm.without.rps / 2 : 0;
    const turn = async (variant: Variant): Promise<WrkResult> => {
      if (!rate) return wrk(servers[variant].url, { ...opts(variant), seconds: BURST_S });
      const r = await openLoop(servers[variant].url, '/api/events', analyticsPayloads[variant], rate, BURST_S, CLIENT_ADDRESSES);
      return { rps: rate, p50: r.p50, p99: r.p99, errors: r.errors, requests: r.sent };
    };
    const cpu = (variant: Variant) => cpuMs(servers[variant].child.pid!) ?? NaN;
    const first = Object.fromEntries(VARIANTS.map((v) => [v, cpu(v)])) as Record<Variant, number>;
    const tally = () => ({ requests: 0, errors: 0, seconds: 0, p50: [] as number[], p99: [] as number[] });
    const sum = Object.fromEntries(VARIANTS.map((v) => [v, tally()])) as Record<Variant, ReturnType<typeof tally>>;
    for (let b = 0; b < BURSTS; b++) {
      for (const variant of b % 2 ? [...order].reverse() : order) {
        const w = await turn(variant);
        const s = sum[variant];
        s.requests += w.requests;
        s.errors += w.errors;
        s.seconds += w.requests / w.rps;
        s.p50.push(w.p50);
        s.p99.push(w.p99);
      }
    }
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const out = {} as Record<Variant, Figures>;
    for (const variant of VARIANTS) {
      const s = sum[variant];
      out[variant] = {
        requests: s.requests, errors: s.errors, rps: s.requests / s.seconds, p50: median(s.p50), p99: median(s.p99),
        cpuUs: ((cpu(variant) - first[variant]) * 1000) / s.requests, rssMiB: rssOf(servers[variant].child.pid!).rss,
      };
    }
    return out;
  } finally {
    for (const variant of VARIANTS) await servers[variant]?.stop();
  }
}

export async function compareFeatures(o: FeatureRun): Promise<void> {
  const rows: string[] = [];
  for (const variant of VARIANTS) writeFileSync(`${o.tmp}/batch20-${variant}.json`, analyticsPayloads[variant]);
  for (const runtime of o.runtimes) {
    const results = new Map<string, Figures[]>();
    for (let index = 0; index < o.rounds; index++) {
      for (const store of o.stores) {
        const figures = await round(o, runtime, store, index);
        for (const variant of VARIANTS) {
          const r = figures[variant];
          const key = `${store} ${variant}`;
          results.set(key, [...(results.get(key) ?? []), r]);
          console.log(`${runtime} batch20 ${store} ${variant} round ${index + 1}: ${r.rps.toFixed(0)} req/s p50 ${r.p50} ms p99 ${r.p99} ms errors ${r.errors} cpu ${r.cpuUs.toFixed(1)} µs/req rss ${r.rssMiB.toFixed(0)} MiB`);
        }
      }
    }
    for (const store of o.stores) {
      const off = results.get(`${store} without`)!;
      for (const variant of VARIANTS) {
        const on = results.get(`${store} ${variant}`)!;
        // Per round: the servers took turns on the same machine, so their ratio is spared its drift.
        const ratios = (f: (r: Figures, base: Figures) => number) => (variant === 'without' ? '—' : spread(on.map((r, i) => f(r, off[i])), 3));
        const ofMedians = variant === 'without' ? '—' : (median(on.map((r) => r.cpuUs)) / median(off.map((r) => r.cpuUs))).toFixed(3);
        rows.push(
          `| ${runtime} | ${store} | ${variant} | ${spread(on.map((r) => r.rps))} | ${spread(on.map((r) => r.cpuUs))} | ${variant === 'without' ? '—' : spread(on.map((r, i) => r.cpuUs - off[i].cpuUs))} | ${ratios((r, base) => r.cpuUs / base.cpuUs)} | ${ofMedians} | ${ratios((r, base) => r.rps / base.rps)} | ${spread(on.map((r) => r.rssMiB))} | ${on.reduce((a, r) => a + r.errors, 0)} |`,
        );
      }
    }
  }
  writeFeatureSection(o, rows);
  console.log(rows.join('\n'));
}

/** The BENCHMARKS.md section of a run's table rows. */
export function writeFeatureSection(o: Omit<FeatureRun, 'tmp'>, rows: string[]): void {
  writeSection(
    HALF_LOAD ? 'ingest-analytics-half-load' : 'ingest-analytics',
    `## Ingest cost of campaigns, countries and properties${HALF_LOAD ? ', at half load' : ''}

\`BENCH_ANALYTICS=1${HALF_LOAD ? ' BENCH_LOAD=half' : ''} npm run bench:ingest\` (BENCH_RUNTIMES=${o.runtimes.join(',')}, BENCH_STORES=${o.stores.join(',')}) — batches of 20 events, ${HALF_LOAD ? `turns sent on a fixed schedule (bench/open-loop.ts, keep-alive) at half the rate the without server answered in its warm-up (wrk, 1 thread, ${o.connections} connections; BENCH_LOAD=half)` : `wrk (1 thread, ${o.connections} connections, keep-alive)`}, ${o.rounds} rounds; in each round, for each store, three servers are started fresh and kept up together, warmed up ${WARM_S} s each, then take ${BURSTS} turns of ${BURST_S} s each (their order reverses every turn, and which is first rotates from round to round), and each is charged its CPU from its first turn to ${SETTLE_MS / 1000} s after the last, over the requests of its turns: **without** (SERVICE_GEO=off; no \`utm_\` in the page URLs, custom events' values one level down in \`data\`, so no properties), **with** (countries on, SERVICE_TRUST_PROXY=true; every page URL with a campaign query, encoded values and a repeated key among them, and custom events with five properties: the worst case) and **landing** (as with, but a campaign on the batch's first page load only, as a site's batches carry them: the pages after a campaign's landing page have none). Same events, types and body size (30 bytes apart); every request carries an X-Forwarded-For of one of 16 public IPv4 and IPv6 addresses in turn; events are owned (DEFAULT_INGEST_OWNER_USER_ID), so the stores count them in rollups. Servers run as \`npm start\` starts them (Node: \`${[...Object.entries(AS_STARTED.env).map(([k, v]) => `${k}=${v}`), ...AS_STARTED.flags].join(' ')}\`; Deno: the same V8 flags). Server CPU is user + system time of the server process per request, from /proc; RSS is the server's after its last turn. Target (issue 37): ≤ 1.05 in server CPU per request against without. ${machine()}.

| runtime | store | body | requests/s | CPU µs/request | CPU added µs/request (per round) | CPU ÷ without (per round) | CPU ÷ without (medians) | throughput ÷ without (per round) | RSS MiB | errors |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}`,
  );
}
