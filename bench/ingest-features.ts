// BENCH_ANALYTICS=1 npm run bench:ingest: what reading campaigns (UTM), countries and custom event
// properties costs batch ingest, end to end (issue 37's target: at most 5% of its server CPU). Each
// store's server runs twice per round, one right after the other (their order swapped every
// round): `without`, started with SERVICE_GEO=off, taking batches with no campaign in their URLs
// and no properties in their custom events; `with`, started with countries on and
// SERVICE_TRUST_PROXY=true, taking the same batches with campaigns and five properties
// (analyticsPayloads). Both take every request with an X-Forwarded-For of a public address, one
// of CLIENT_ADDRESSES in turn; only `with` trusts it, so only there is a country looked up. Both
// own what they take (DEFAULT_INGEST_OWNER_USER_ID), as a deployment's keyed events are owned:
// only owned events are counted in rollups, where properties are read.
import { writeFileSync } from 'node:fs';
import { DENO, machine, median, spread, start, wrk, writeSection, type Child, type WrkResult } from './lib.ts';
import { cpuMs } from './proc.ts';
import { analyticsPayloads, CLIENT_ADDRESSES } from './payloads.ts';

export interface FeatureRun { rounds: number; seconds: number; connections: number; runtimes: string[]; stores: string[]; tmp: string }

type Variant = keyof typeof analyticsPayloads;
const SERVER_ENV: Record<Variant, Record<string, string>> = {
  without: { SERVICE_GEO: 'off', SERVICE_TRUST_PROXY: 'false' },
  with: { SERVICE_GEO: 'on', SERVICE_TRUST_PROXY: 'true' },
};

/**
 * One request before the measured ones, on a store that answers with the stored events: the
 * `with` server must find a campaign, a country and properties, the `without` one none, or the
 * comparison measures nothing.
 */
async function check(server: Child, variant: Variant, body: string): Promise<void> {
  const res = await fetch(server.url + '/api/events', { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-forwarded-for': '8.8.8.8' } });
  const answer = (await res.json()) as { events?: { utm?: unknown; client?: { country?: unknown } }[] };
  if (!answer.events) return;
  const e = answer.events[0];
  const found = e.utm !== undefined && e.client?.country === 'US';
  if (found !== (variant === 'with')) throw new Error(`${variant}: the server stored utm ${JSON.stringify(e.utm)}, country ${JSON.stringify(e.client?.country)}`);
}

export async function compareFeatures(o: FeatureRun): Promise<void> {
  const rows: string[] = [];
  for (const runtime of o.runtimes) {
    const bodyFile = (v: Variant) => `${o.tmp}/batch20-${v}.json`;
    for (const v of ['without', 'with'] as const) writeFileSync(bodyFile(v), analyticsPayloads[v]);
    const results = new Map<string, (WrkResult & { cpuUs: number })[]>();
    for (let round = 0; round < o.rounds; round++) {
      for (const store of o.stores) {
        // Swapped each round, so that neither always runs on the machine the other has just warmed.
        const order: Variant[] = round % 2 ? ['with', 'without'] : ['without', 'with'];
        for (const variant of order) {
          const env = { SERVICE_STORAGE: store, SERVICE_RATE_LIMIT: '0', DEFAULT_INGEST_OWNER_USER_ID: 'bench-owner', SERVICE_P1_DB: `${o.tmp}/${runtime}-${store}-${variant}-${Date.now()}.sqlite`, ...SERVER_ENV[variant] };
          const server = await (runtime === 'node'
            ? start(process.execPath, ['--import', 'tsx', 'server.ts'], env)
            : start(DENO, ['run', '--allow-all', 'server.ts'], env));
          try {
            await check(server, variant, analyticsPayloads[variant]);
            const opts = { connections: o.connections, bodyFile: bodyFile(variant), path: '/api/events', forwardedFor: CLIENT_ADDRESSES };
            wrk(server.url, { ...opts, seconds: 2 }); // warm-up (JIT, and the country database loaded)
            const cpu0 = cpuMs(server.child.pid!);
            const w = wrk(server.url, { ...opts, seconds: o.seconds });
            const cpu1 = cpuMs(server.child.pid!);
            const r = { ...w, cpuUs: cpu0 === null || cpu1 === null ? NaN : ((cpu1 - cpu0) * 1000) / w.requests };
            const key = `${store} ${variant}`;
            results.set(key, [...(results.get(key) ?? []), r]);
            console.log(`${runtime} batch20 ${store} ${variant} round ${round + 1}: ${r.rps.toFixed(0)} req/s p50 ${r.p50} ms p99 ${r.p99} ms errors ${r.errors} cpu ${r.cpuUs.toFixed(1)} µs/req`);
          } finally {
            await server.stop();
          }
        }
      }
    }
    for (const store of o.stores) {
      const off = results.get(`${store} without`)!;
      const on = results.get(`${store} with`)!;
      // Per round: the two ran one right after the other, so their ratio is spared the drift between rounds.
      const cpuRatio = on.map((r, i) => r.cpuUs / off[i].cpuUs);
      const rpsRatio = on.map((r, i) => r.rps / off[i].rps);
      const added = on.map((r, i) => r.cpuUs - off[i].cpuUs);
      const errors = [...off, ...on].reduce((a, r) => a + r.errors, 0);
      rows.push(
        `| ${runtime} | ${store} | ${spread(off.map((r) => r.rps))} | ${spread(on.map((r) => r.rps))} | ${spread(off.map((r) => r.cpuUs))} | ${spread(on.map((r) => r.cpuUs))} | ${spread(added)} | ${spread(cpuRatio, 3)} | ${(median(on.map((r) => r.cpuUs)) / median(off.map((r) => r.cpuUs))).toFixed(3)} | ${spread(rpsRatio, 3)} | ${errors} |`,
      );
    }
  }
  writeFeatureSection(o, rows);
  console.log(rows.join('\n'));
}

/** The BENCHMARKS.md section of a run's table rows. */
export function writeFeatureSection(o: Omit<FeatureRun, 'tmp'>, rows: string[]): void {
  writeSection(
    'ingest-analytics',
    `## Ingest cost of campaigns, countries and properties

\`BENCH_ANALYTICS=1 npm run bench:ingest\` (BENCH_RUNTIMES=${o.runtimes.join(',')}, BENCH_STORES=${o.stores.join(',')}) — batches of 20 events, wrk (1 thread, ${o.connections} connections, keep-alive), ${o.seconds} s per run after a 2 s warm-up, ${o.rounds} rounds; in each round every store's server is started fresh twice, one right after the other (order swapped every round): **without** (SERVICE_GEO=off; no \`utm_\` in the page URLs, custom events' values one level down in \`data\`, so no properties) and **with** (countries on, SERVICE_TRUST_PROXY=true; every page URL with a campaign query, encoded values and a repeated key among them, and custom events with five properties). Same events, types and body size (30 bytes apart); every request carries an X-Forwarded-For of one of 16 public IPv4 and IPv6 addresses in turn; events are owned (DEFAULT_INGEST_OWNER_USER_ID), so the stores count them in rollups. Server CPU is user + system time of the server process per request, from /proc. Target (issue 37): with ÷ without ≤ 1.05 in server CPU per request. ${machine()}.

| runtime | store | requests/s without | requests/s with | CPU µs/request without | CPU µs/request with | CPU added µs/request (per round) | CPU with ÷ without (per round) | CPU with ÷ without (medians) | throughput with ÷ without (per round) | errors |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}`,
  );
}
