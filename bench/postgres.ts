// PostgreSQL store: (1) the time-based layout, plain table + BRIN against declarative daily
// partitions, measured on the same data; (2) HTTP ingest with one and two instances on PostgreSQL
// beside the embedded store, same run. Needs a PostgreSQL server (WATCHTOWER_TEST_DATABASE_URL or
// the local default) and wrk.
// BENCH_LAYOUT_EVENTS (300000), BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_CONNECTIONS (50)
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import postgres from 'postgres';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { eventColumns, openPostgresStore, pgArray } from '../lib/store/postgres.ts';
import { createTestDatabase } from '../test/helpers/postgres.ts';
import { machine, median, parseWrk, spread, start, wrkArgs, wrkEnv, writeSection, type Child, type WrkResult } from './lib.ts';

const layoutEvents = Number(process.env.BENCH_LAYOUT_EVENTS ?? 300_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DAY = 86_400_000;
const SPAN_DAYS = 10;

const time = async (fn: () => Promise<unknown>, runs = 7): Promise<number> => {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return median(ms);
};

// --- 1. Layout ---------------------------------------------------------------------------------

function generate(n: number, now: number): StoredEvent[][] {
  const batches: StoredEvent[][] = [];
  let batch: StoredEvent[] = [];
  for (let i = 0; i < n; i++) {
    // Arrival order is time order, as in production: oldest first over SPAN_DAYS.
    const at = now - SPAN_DAYS * DAY + Math.floor((i / n) * SPAN_DAYS * DAY);
    const raw = {
      type: ['pageload', 'click', 'error', 'custom', 'feedback'][i % 5],
      sessionId: `s-${i % 500}`,
      deployVersion: `1.${i % 4}`,
      route: `/r/${i % 20}`,
      data: i % 5 === 0 ? { duration: 100 + (i % 900), ttfb: 20 } : i % 5 === 4 ? { rating: 1 + (i % 5) } : { target: 'button' },
    } as RawEvent;
    // Half the events belong to one heavy user, the rest to 50 others.
    batch.push(normalise(raw, { now: at, owner: i % 2 ? 'heavy' : `user-${i % 50}` }));
    if (batch.length === 500) {
      batches.push(batch);
      batch = [];
    }
  }
  if (batch.length) batches.push(batch);
  return batches;
}

const PARTITIONED_DDL = (from: number, days: number) => `
  create table part_events (
    seq bigint generated always as identity, id text not null, user_id text, type text not null,
    "timestamp" timestamptz, received_at timestamptz not null, session_id text, app_version text,
    page_url text, source text, message text, severity text, route_key text, duration double precision,
    ttfb double precision, rating smallint, metadata jsonb not null, raw text
  ) partition by range (received_at);
  ${Array.from({ length: days + 2 }, (_, d) => {
    const a = new Date(from + (d - 1) * DAY).toISOString().slice(0, 10);
    const b = new Date(from + d * DAY).toISOString().slice(0, 10);
    return `create table part_events_${d} partition of part_events for values from ('${a}') to ('${b}');`;
  }).join('\n')}
  -- A unique (owner, id) cannot span partitions: idempotency needs a table of its own.
  create table part_ids (owner text not null, id text not null, primary key (owner, id));
  create index on part_events (user_id, seq) where user_id is not null;
  create index on part_events (user_id, type, seq) where user_id is not null;
  create index on part_events (user_id, app_version, seq) where user_id is not null;
  create index on part_events (user_id, session_id) where user_id is not null;
  create index on part_events (user_id, received_at) include (session_id) where user_id is not null;
  create index on part_events (user_id, route_key, seq) where user_id is not null and duration is not null;`;

async function layout(): Promise<string> {
  const db = await createTestDatabase();
  const sql = postgres(db.url, { max: 4, onnotice: () => {}, fetch_types: false });
  try {
    const now = Date.now();
    const batches = generate(layoutEvents, now);
    const firstDay = Math.floor((now - SPAN_DAYS * DAY) / DAY) * DAY;

    // The same rows, the same statement shape (no NOTIFY) into each layout, batch by batch
    // alternately, so drift on this shared machine hits both alike.
    const store = await openPostgresStore({ url: db.url });
    await sql.unsafe(PARTITIONED_DDL(firstDay, SPAN_DAYS)).simple();
    const source = (c: ReturnType<typeof eventColumns>) => sql`
      select * from unnest(
        ${pgArray(c.id)}::text[], ${pgArray(c.user_id)}::text[], ${pgArray(c.type)}::text[], ${pgArray(c.ts)}::text[],
        ${pgArray(c.received_at)}::text[], ${pgArray(c.session_id)}::text[], ${pgArray(c.app_version)}::text[],
        ${pgArray(c.page_url)}::text[], ${pgArray(c.source)}::text[], ${pgArray(c.message)}::text[], ${pgArray(c.severity)}::text[],
        ${pgArray(c.route_key)}::text[], ${pgArray(c.duration)}::float8[], ${pgArray(c.ttfb)}::float8[],
        ${pgArray(c.rating)}::int2[], ${pgArray(c.metadata)}::text[], ${pgArray(c.raw)}::text[]
      ) as t(id, user_id, type, ts, received_at, session_id, app_version, page_url, source, message, severity,
             route_key, duration, ttfb, rating, metadata, raw)`;
    let plainMs = 0, partMs = 0, t = 0;
    for (const b of batches) {
      const c = eventColumns(b);
      t = performance.now();
      await sql`
        insert into watchtower_events (id, user_id, type, "timestamp", received_at, session_id, app_version, page_url, source,
                                       message, severity, route_key, duration, ttfb, rating, metadata, raw)
        select id, user_id, type, ts::timestamptz, received_at::timestamptz, session_id, app_version, page_url,
               source, message, severity, route_key, duration, ttfb, rating, metadata::jsonb, raw
        from (${source(c)}) t
        on conflict ((coalesce(user_id, '')), id) do nothing`;
      plainMs += performance.now() - t;
      t = performance.now();
      await sql`
        with t as (${source(c)}), fresh as (
          insert into part_ids select coalesce(user_id, ''), id from t on conflict do nothing returning owner, id
        )
        insert into part_events (id, user_id, type, "timestamp", received_at, session_id, app_version, page_url, source,
                                 message, severity, route_key, duration, ttfb, rating, metadata, raw)
        select t.id, t.user_id, t.type, t.ts::timestamptz, t.received_at::timestamptz, t.session_id, t.app_version, t.page_url,
               t.source, t.message, t.severity, t.route_key, t.duration, t.ttfb, t.rating, t.metadata::jsonb, t.raw
        from t join fresh on fresh.owner = coalesce(t.user_id, '') and fresh.id = t.id`;
      partMs += performance.now() - t;
    }
    const plainRate = layoutEvents / (plainMs / 1000);
    const partRate = layoutEvents / (partMs / 1000);
    await sql`vacuum analyze`;

    const size = async (rel: string, partitioned: boolean) => {
      const [r] = partitioned
        ? await sql`select sum(pg_total_relation_size(inhrelid))::float8 + pg_total_relation_size('part_ids')::float8 as b from pg_inherits where inhparent = 'part_events'::regclass`
        : await sql`select pg_total_relation_size(${rel})::float8 as b`;
      return `${(Number(r.b) / 2 ** 20).toFixed(0)} MiB`;
    };
    const since5m = new Date(now - 5 * 60_000).toISOString();
    const since7d = new Date(Math.floor(now / DAY) * DAY - 6 * DAY).toISOString();
    const queries = (table: string) => ({
      'active users (5 min, heavy user)': () => sql`select count(distinct session_id) from ${sql(table)} where user_id = 'heavy' and received_at >= ${since5m}::timestamptz`,
      '7-day series (heavy user)': () => sql`select floor(extract(epoch from received_at) / 86400), count(*), count(distinct session_id) from ${sql(table)} where user_id = 'heavy' and received_at >= ${since7d}::timestamptz group by 1`,
      'events in the last hour (all users)': () => sql`select count(*) from ${sql(table)} where received_at >= ${new Date(now - 3_600_000).toISOString()}::timestamptz`,
      'latest 100 (heavy user)': () => sql`select metadata from ${sql(table)} where user_id = 'heavy' order by seq desc limit 100`,
    });
    const plainQ = queries('watchtower_events');
    const partQ = queries('part_events');
    const rows: string[] = [
      `| insert, batches of 500 (events/s) | ${plainRate.toFixed(0)} | ${partRate.toFixed(0)} |`,
      `| size on disk (table + indexes) | ${await size('watchtower_events', false)} | ${await size('part_events', true)} |`,
    ];
    for (const name of Object.keys(plainQ) as (keyof typeof plainQ)[]) {
      rows.push(`| ${name}, median ms | ${(await time(plainQ[name])).toFixed(1)} | ${(await time(partQ[name])).toFixed(1)} |`);
    }
    const stats = await time(() => store.stats('heavy', now), 5);
    // Retention: removing the oldest day.
    const cut = new Date(firstDay + DAY).toISOString();
    t = performance.now();
    await sql`delete from watchtower_events where received_at < ${cut}::timestamptz`;
    const deleteMs = performance.now() - t;
    t = performance.now();
    await sql.unsafe('drop table part_events_0; drop table part_events_1').simple();
    const dropMs = performance.now() - t;
    rows.push(`| drop the oldest day (retention), ms | ${deleteMs.toFixed(0)} (DELETE; space reused after VACUUM) | ${dropMs.toFixed(0)} (DROP partition; the ids table still needs a DELETE) |`);
    await store.close();
    return `### Time-based layout: plain table + BRIN (chosen) against daily partitions

${layoutEvents.toLocaleString('en-US')} events over ${SPAN_DAYS} days, half of them one user's, inserted in batches of 500 in arrival order. \`/api/stats\` for that user (${(layoutEvents / 2).toLocaleString('en-US')} events) on the chosen layout: ${stats.toFixed(0)} ms median.

| | plain + BRIN | partitioned by day |
|---|---|---|
${rows.join('\n')}`;
  } finally {
    await sql.end({ timeout: 2 });
    await db.drop();
  }
}

// --- 2. HTTP ingest ----------------------------------------------------------------------------

function wrkAsync(url: string, bodyFile: string): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    execFile('wrk', wrkArgs(url, { connections, seconds }), { env: wrkEnv({ bodyFile, path: '/api/events' }), encoding: 'utf8' }, (err, out) =>
      err ? reject(err) : resolve(parseWrk(out)),
    );
  });
}

async function ingest(): Promise<string> {
  const tmp = mkdtempSync(tmpdir() + '/watchtower-pg-bench-');
  const bodyFile = `${tmp}/batch20.json`;
  const event = (i: number) => ({
    type: ['pageload', 'click', 'error', 'custom'][i % 4],
    sessionId: `session-${i % 7}`,
    deployVersion: '1.4.2',
    url: `https://shop.example/products/${i}`,
    route: '/products/:id',
    data: i % 4 === 0 ? { duration: 420 + i, ttfb: 80 } : { target: 'button#buy' },
  });
  writeFileSync(bodyFile, JSON.stringify({ events: Array.from({ length: 20 }, (_, i) => event(i)) }));
  const server = (env: Record<string, string>) =>
    start(process.execPath, ['--import', 'tsx', 'server.ts'], { SERVICE_RATE_LIMIT: '0', ...env });
  const results = new Map<string, WrkResult[]>();
  try {
    for (let round = 0; round < rounds; round++) {
      const targets: [string, () => Promise<Child[]>][] = [
        ['embedded (sqlite), 1 instance', async () => [await server({ SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: `${tmp}/r${round}.sqlite` })]],
        ['postgres, 1 instance', async () => {
          const db = await createTestDatabase();
          dbs.push(db);
          return [await server({ SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url })];
        }],
        ['postgres, 2 instances', async () => {
          const db = await createTestDatabase();
          dbs.push(db);
          const first = await server({ SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url });
          return [first, await server({ SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url })];
        }],
      ];
      const dbs: Awaited<ReturnType<typeof createTestDatabase>>[] = [];
      for (const [name, launch] of targets) {
        const children = await launch();
        try {
          await Promise.all(children.map((c) => wrkAsync(c.url, bodyFile).catch(() => null))); // warm-up
          const rs = await Promise.all(children.map((c) => wrkAsync(c.url, bodyFile)));
          // Instances are measured at once; their sum is the deployment's throughput.
          const r = { rps: rs.reduce((a, x) => a + x.rps, 0), p50: median(rs.map((x) => x.p50)), p99: Math.max(...rs.map((x) => x.p99)), errors: rs.reduce((a, x) => a + x.errors, 0), requests: rs.reduce((a, x) => a + x.requests, 0) };
          results.set(name, [...(results.get(name) ?? []), r]);
          console.log(`${name} round ${round + 1}: ${(r.rps * 20).toFixed(0)} events/s p50 ${r.p50} ms p99 ${r.p99} ms errors ${r.errors}`);
        } finally {
          await Promise.all(children.map((c) => c.stop()));
        }
      }
      for (const db of dbs) await db.drop();
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const rows = [...results].map(([name, rs]) =>
    `| ${name} | ${spread(rs.map((r) => r.rps * 20))} | ${spread(rs.map((r) => r.rps))} | ${spread(rs.map((r) => r.p50), 2)} | ${spread(rs.map((r) => r.p99), 2)} | ${rs.reduce((a, r) => a + r.errors, 0)} |`);
  return `### Ingest: one and two instances on PostgreSQL beside the embedded store

wrk (1 thread, ${connections} connections per instance, keep-alive), batches of 20 events, ${seconds} s per round after a warm-up, ${rounds} rounds, Node, rate limiting off; with two instances one wrk per instance runs at the same time and the figures are summed. PostgreSQL runs on the same machine, with its default settings (synchronous commit: an acknowledged batch is on disk).

| deployment | events/s | requests/s | p50 ms | p99 ms | errors |
|---|---|---|---|---|---|
${rows.join('\n')}`;
}

const layoutSection = await layout();
console.log(layoutSection);
const ingestSection = await ingest();
console.log(ingestSection);
writeSection('postgres', `## PostgreSQL store

\`node --import tsx bench/postgres.ts\`. ${machine()}.

${layoutSection}

${ingestSection}`);
