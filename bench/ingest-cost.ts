// Where an ingest request's CPU goes, stage by stage, in one process (no sockets): the work the
// baseline does (JSON.parse) beside the work Watchtower adds per event. Run on Node, and on Deno by
// the same script. BENCH_COST_RUNTIMES (node,deno)
// A second table times, per batch of 20, what campaigns (UTM), countries and custom event
// properties add (issue 37), on the two bodies BENCH_ANALYTICS=1 npm run bench:ingest compares.
import { execFileSync } from 'node:child_process';
import { clientInfo, parseClientInfo } from '../lib/client-info.ts';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryStore } from '../lib/store/memory.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { batchItems, validateEvents } from '../lib/schema.ts';
import { utmOf, utmOfQuery } from '../lib/event-fields.ts';
import { countryLookup, countryOfAddress } from '../lib/geo.ts';
import { propertiesOf } from '../lib/properties.ts';
import { HourRollup, hourOf, rollupRow } from '../lib/rollup/hour.ts';
import { createHandler } from '../lib/handler.ts';
import { analyticsPayloads, BROWSER, CLIENT_ADDRESSES, ingestRequest, payloads } from './payloads.ts';

declare const Deno: { args: string[] } | undefined;
const isDeno = typeof Deno !== 'undefined';
// What bench/post.lua sends: a desktop Chrome.

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
      'browser, OS and device from the User-Agent (once per request; a cache hit)': per(await cost(() => clientInfo(BROWSER), calls)),
      'the same, a user agent not in the cache (parsed)': per(await cost(() => parseClientInfo(BROWSER), Math.min(calls, 20_000))),
      'envelope check': per(await cost(() => validateEvents(items, text.length), calls)),
      'normalise (ids, timestamps, the stored shape)': per(await cost(() => valid.map(norm), calls)),
      'memory store insert (dedupe by owner and id)': per(await costOfEach(Array.from({ length: calls * 2 }, () => valid.map(norm)), (batch) => store.insert(batch))),
      'JSON of each stored event (persisted stores only: their answer carries the events)': per(await cost(() => events.map((e) => JSON.stringify(e)), calls)),
      'answer and journal text from that JSON (sqlite store)': per(await cost(() => [`{"accepted":${n},"rejected":0,"events":[${texts.join(',')}]}`, texts.map((t) => '{"e":' + t + '}\n').join('')], calls)),
    };
  }
  return out;
}

/**
 * A whole POST /api/events of each body through the handler (no sockets), owned events: `without`
 * with countries off, `with` with them on and the proxy's address trusted. The two alternate in
 * blocks, so that this shared machine's drift, which moves the end-to-end figures by 2× from one
 * 10 s run to the next, hits both alike. µs per request (process CPU where the runtime reports it,
 * else time), medians of the blocks after the first ten, and the median of the blocks' ratios.
 * On the memory store one request at a time, blocks of 100; on the sqlite store (its worker's CPU
 * is the process's too) 32 in flight, as the journal's group commits see them under load, blocks
 * of 400, each block timed until its rows are written (flush), so that no block's writing is
 * counted in the next one's.
 */
async function measureHandlers(kind: 'memory' | 'sqlite'): Promise<Record<string, number>> {
  const dir = kind === 'sqlite' ? mkdtempSync(join(tmpdir(), 'watchtower-cost-')) : '';
  const store = async (variant: string): Promise<Store> => kind === 'memory' ? createMemoryStore() : openSqliteStore({ path: join(dir, `${variant}.sqlite`), retentionDays: 0 });
  const stores = { without: await store('without'), with: await store('with') };
  const handler = (geo: boolean) => createHandler({ store: stores[geo ? 'with' : 'without'], geo, trustProxy: geo, defaultOwner: 'bench-user', rateLimit: { rate: 0, burst: 1 }, log: () => {} });
  const variants = { without: handler(false), with: handler(true) };
  let n = 0;
  const send = async (variant: 'with' | 'without') => {
    const res = await variants[variant](ingestRequest(analyticsPayloads[variant], CLIENT_ADDRESSES[n++ % CLIENT_ADDRESSES.length]));
    if (res.status !== 200) throw new Error(`${variant}: ${res.status} ${await res.text()}`);
  };
  const [block, inFlight, blocks] = kind === 'memory' ? [100, 1, 50] : [400, 32, 30];
  const cpu = () => (typeof process !== 'undefined' && process.cpuUsage ? (({ user, system }) => user + system)(process.cpuUsage()) : performance.now() * 1000);
  const times: Record<'with' | 'without', number[]> = { with: [], without: [] };
  for (let b = 0; b < blocks; b++) {
    for (const variant of b % 2 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
      const t = cpu();
      let sent = 0;
      await Promise.all(Array.from({ length: inFlight }, async () => {
        while (sent++ < block) await send(variant);
      }));
      await stores[variant].flush();
      if (b >= 10) times[variant].push((cpu() - t) / block); // the first 10: warm-up
    }
  }
  await Promise.all([stores.with.close(), stores.without.close()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];
  const on = kind === 'memory' ? '' : ' (sqlite store)';
  return {
    [`whole request${on}, without`]: med(times.without),
    [`whole request${on}, with`]: med(times.with),
    [`whole request${on}, with ÷ without (median of the blocks' ratios)`]: med(times.with.map((t, i) => t / times.without[i])),
  };
}

/** µs per batch20 request of each stage campaigns, countries and properties add, with and without them. */
async function measureAnalytics(): Promise<Record<string, number>> {
  const calls = 10_000;
  const now = Date.now();
  const receivedAt = new Date(now).toISOString();
  const client = clientInfo(BROWSER);
  const raws = (text: string) => validateEvents(batchItems(JSON.parse(text)), text.length).valid;
  const norm = (raw: RawEvent) => normalise(raw, { now, receivedAt, owner: 'bench-user' });
  const [withRaw, withoutRaw] = [raws(analyticsPayloads.with), raws(analyticsPayloads.without)];
  // As ingest stores them: the `with` server found a country, the `without` one looked none up.
  const stored = (list: RawEvent[], country: string | null) => list.map((raw) => Object.assign(norm(raw), { client: { ...client, country } }));
  const withEvents = stored(withRaw, 'US');
  const withoutEvents = stored(withoutRaw, null);
  const urls = (events: StoredEvent[]) => events.map((e) => e.url ?? e.page_url);
  const [withUrls, withoutUrls] = [urls(withEvents), urls(withoutEvents)];
  const withQueries = withUrls.map((u) => u!.slice(u!.indexOf('?') + 1));
  const addresses = (v6: boolean) => CLIENT_ADDRESSES.filter((a) => a.includes(':') === v6);
  await countryLookup(); // the database loaded before timing
  const lookups = (list: string[]) => Array.from({ length: calls * 2 }, (_, i) => list[i % list.length]);
  // A fresh hour's rollup per round of 1,000 batches, as a store's hour collects its events.
  const rollup = (events: StoredEvent[]) => {
    let part = new HourRollup(hourOf(now)), n = 0;
    return () => {
      if (++n % 1000 === 0) part = new HourRollup(hourOf(now));
      for (const e of events) part.add(rollupRow(e, now));
    };
  };
  return {
    'campaign (utmOf) of the 20 page URLs, each with a campaign query': await cost(() => withUrls.map(utmOf), calls),
    'campaign: the 20 queries read afresh (utmOfQuery; utmOf remembers the queries it read lately)': await cost(() => withQueries.map(utmOfQuery), calls),
    'campaign: the 20 URLs without `utm_`': await cost(() => withoutUrls.map(utmOf), calls),
    'country of the client address (countryOfAddress, once per request; remembered for these addresses), IPv4': await costOfEach(lookups(addresses(false)), countryOfAddress),
    'country: the same, IPv6': await costOfEach(lookups(addresses(true)), countryOfAddress),
    'properties of the 5 custom events (propertiesOf), 5 each': await cost(() => withEvents.map((e) => propertiesOf(e.type, e.name as string ?? null, e.data)), calls),
    'properties: the 5 custom events without': await cost(() => withoutEvents.map((e) => propertiesOf(e.type, e.name as string ?? null, e.data)), calls),
    'rollup of the 20 events (rollupRow and HourRollup.add), with campaigns, country and properties': await cost(rollup(withEvents), calls),
    'rollup: the 20 events without': await cost(rollup(withoutEvents), calls),
    'normalise the 20 events (which reads the campaign), with': await cost(() => withRaw.map(norm), calls),
    'normalise: the 20 events without': await cost(() => withoutRaw.map(norm), calls),
  };
}

if (isDeno || process.argv.includes('--child')) {
  console.log(JSON.stringify({ stages: await measure(), analytics: { ...(await measureAnalytics()), ...(await measureHandlers('memory')), ...(await measureHandlers('sqlite')) } }));
} else {
  const { machine, writeSection, DENO } = await import('./lib.ts');
  const runtimes = (process.env.BENCH_COST_RUNTIMES ?? 'node,deno').split(',');
  type Child = { stages: Record<string, Record<string, number>>; analytics: Record<string, number> };
  const results: Record<string, Record<string, Record<string, number>>> = {};
  const analytics: Record<string, Record<string, number>> = {};
  for (const runtime of runtimes) {
    const args = runtime === 'node' ? ['--import', 'tsx', 'bench/ingest-cost.ts', '--child'] : ['run', '--allow-all', 'bench/ingest-cost.ts'];
    const child: Child = JSON.parse(execFileSync(runtime === 'node' ? process.execPath : DENO, args, { encoding: 'utf8' }).trim().split('\n').pop()!);
    results[runtime] = child.stages;
    analytics[runtime] = child.analytics;
  }
  const stages = Object.keys(Object.values(Object.values(results)[0])[0]);
  const cols = runtimes.flatMap((r) => Object.keys(results[r]).map((p) => [r, p] as const));
  const f = (x: number) => x.toFixed(2);
  const rows = stages.map((s) => `| ${s} | ${cols.map(([r, p]) => f(results[r][p][s])).join(' | ')} |`);
  // What the three add to a batch20 request: normalise's difference holds the campaign's reading,
  // the rollup's holds reading properties and counting all three; one country lookup per request.
  const a = (r: string, prefix: string) => analytics[r][Object.keys(analytics[r]).find((k) => k.startsWith(prefix))!];
  const added = (r: string) => a(r, 'normalise the') - a(r, 'normalise:') + a(r, 'rollup of') - a(r, 'rollup:') + a(r, 'country of');
  // The memory store's request, stage by stage (the rows above but the uncached user agent and the persisted stores' serialising).
  const memoryTotal = (r: string) => 20 * (['JSON.parse', 'browser, OS', 'envelope', 'normalise', 'memory store'] as const)
    .reduce((sum, prefix) => sum + results[r].batch20[stages.find((s) => s.startsWith(prefix))!], 0);
  const analyticsRows = [
    ...Object.keys(analytics[runtimes[0]]).map((s) => `| ${s} | ${runtimes.map((r) => f(analytics[r][s])).join(' | ')} |`),
    `| **added by the three** (normalise and rollup with − without, and one IPv4 lookup) | ${runtimes.map((r) => f(added(r))).join(' | ')} |`,
    `| the memory store's whole request above (parse, user agent, envelope, normalise, insert; × 20) | ${runtimes.map((r) => f(memoryTotal(r))).join(' | ')} |`,
    `| added ÷ that | ${runtimes.map((r) => ((100 * added(r)) / memoryTotal(r)).toFixed(1) + '%').join(' | ')} |`,
    `| added ÷ the sqlite store's whole request without them (above) | ${runtimes.map((r) => ((100 * added(r)) / a(r, 'whole request (sqlite store), without')).toFixed(1) + '%').join(' | ')} |`,
  ];
  writeSection(
    'ingest-cost',
    `## Where the ingest time goes

\`npm run bench:cost\` — each stage of an ingest request timed alone in one process (no sockets, no HTTP), on the payloads of the ingest benchmark; µs per event, median of 5 rounds. The baseline server's whole per-event work is the first row; every other row is work Watchtower adds. On the persisted stores each stored event is serialised once, for the answer (README, "API") and the sqlite journal alike; that costs more than parsing it did, because the stored shape carries both camelCase and column-aligned fields (README, "Events"). The memory store (the base behaviour) answers with the counts only. ${machine()}.

| stage (µs per event) | ${cols.map(([r, p]) => `${r} ${p}`).join(' | ')} |
|---|${cols.map(() => '---').join('|')}|
${rows.join('\n')}

Campaigns, countries and properties (issue 37), µs per batch20 request, on the two bodies \`BENCH_ANALYTICS=1 npm run bench:ingest\` compares (bench/payloads.ts, analyticsPayloads): **with** a campaign query in every page URL and five properties per custom event, **without** neither. Countries: one lookup per request, of one of 8 public addresses in turn, each remembered after its first lookup (lib/geo.ts), as a client's own address is. The whole requests go through the handler, the two bodies alternating in blocks: on the memory store one at a time, on the sqlite store 32 in flight, each block timed until its rows are written.

| stage (µs per batch20 request) | ${runtimes.join(' | ')} |
|---|${runtimes.map(() => '---').join('|')}|
${analyticsRows.join('\n')}`,
  );
  console.log([...rows, '', ...analyticsRows].join('\n'));
}
