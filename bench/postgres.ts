// PostgreSQL store at scale: BENCH_EVENTS (10,000,000) events over BENCH_DAYS (90) days for five
// users, half of them one user's. The load is a COPY into the previous schema (version 2: one
// plain table, statistics computed from raw rows), which is measured first as the baseline, on
// the same data, with the previous store's code taken from git (BENCH_BASELINE_COMMIT); then this
// store opens the database and migrates it (copying every event into daily partitions and rolling
// it up), and is measured: /api/stats through the handler for the heavy user (all time, last 30
// days), pages of GET /api/events (newest, 60 days back), HTTP ingest of batches of 20 into the
// loaded database (wrk, one instance), ingest latency while retention drops a day, bytes per event.
// Needs a PostgreSQL server (WATCHTOWER_TEST_DATABASE_URL or the local default) and wrk.
// BENCH_KEEP_DB=1 keeps the database at the end, for EXPLAIN.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { normalise, uuidv7, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { createHandler } from '../lib/handler.ts';
import { encodeCursor } from '../lib/store/cursor.ts';
import { feedbackRating, pageloadDuration } from '../lib/stats.ts';
import { routeKey } from '../lib/event-keys.ts';
import { compactClosedDays } from '../lib/store/postgres/maintenance/compaction.ts';
import { dropDaysBefore } from '../lib/store/postgres/maintenance/partitions.ts';
import { MIGRATIONS, migrationScript } from '../lib/store/postgres/migrations/index.ts';
import { pgArray } from '../lib/store/postgres/sql.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres.ts';
import { eventData, machine, median, parseWrk, ROOT, start, wrkArgs, wrkEnv, writeSection } from './lib.ts';
import { BROWSER } from './payloads.ts';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const DAYS = Number(process.env.BENCH_DAYS ?? 90);
const BASELINE_COMMIT = process.env.BENCH_BASELINE_COMMIT ?? '1d82615';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const DAY = 86_400_000;
const HEAVY = 'heavy';

const now = Date.now();
const first = now - DAYS * DAY;
const f1 = (n: number) => n.toFixed(1);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

// --- Data --------------------------------------------------------------------------------------

let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const TYPES = ['pageload', 'pageload', 'pageload', 'click', 'click', 'interaction', 'error', 'performance', 'feedback', 'custom', 'page_view'];
const OWNERS = [HEAVY, HEAVY, HEAVY, HEAVY, 'user-1', 'user-2', 'user-3', 'user-4'];
const sessionOf = new Map<string, number>();

/** Event i of `total`, received in order over the span; half the events are the heavy user's. */
function makeEvent(i: number, total: number): StoredEvent {
  const at = first + Math.floor((i / total) * DAYS * DAY);
  const owner = OWNERS[i % OWNERS.length];
  const type = TYPES[Math.floor(rand() * TYPES.length)];
  const data = eventData(type, rand);
  // A session lasts about 30 of its user's events.
  if (rand() < 1 / 30) sessionOf.set(owner, (sessionOf.get(owner) ?? 0) + 1);
  const raw: RawEvent = {
    id: uuidv7(at),
    type,
    sessionId: `${owner}-session-${sessionOf.get(owner) ?? 0}`,
    deployVersion: `1.${Math.floor((i / total) * 6)}.0`,
    route: `/route/${Math.floor(rand() * 20)}`,
    url: `https://app.example.com/route/${i % 20}`,
    appName: 'bench-app',
    data,
  };
  const e = normalise(raw, { now: at, owner });
  // A quarter of the events come with a project key.
  return i % 4 === 0 ? { ...e, projectId: 'web' } : e;
}

// COPY's text format: backslash, newline, carriage return and tab escaped; \N is null.
const copyText = (v: string | number | null) =>
  v === null ? '\\N' : typeof v === 'number' ? String(v) : v.replace(/[\\\n\r\t]/g, (c) => ({ '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]!);

/** Rows of the version 2 table, as its store wrote them (the columns it extracted). */
async function* v2Rows(total: number): AsyncGenerator<string> {
  seed = 1;
  sessionOf.clear();
  let chunk = '';
  for (let i = 0; i < total; i++) {
    const e = makeEvent(i, total);
    const duration = pageloadDuration(e);
    const ttfb = e.data.ttfb;
    chunk += [e.id, e.user_id, e.type, e.timestamp, e.receivedAt, e.sessionId, e.deployVersion, e.page_url, e.source, e.message,
      e.severity, duration === null ? null : routeKey(e), duration, duration !== null && typeof ttfb === 'number' ? ttfb : null,
      feedbackRating(e), JSON.stringify(e), null].map(copyText).join('\t') + '\n';
    if (chunk.length > 1 << 20) {
      yield chunk;
      chunk = '';
    }
    if (i % 1_000_000 === 999_999) console.log(`  copied ${int(i + 1)} events`);
  }
  if (chunk) yield chunk;
}

/** The version 2 schema filled by COPY, its indexes built after the load (as a restore would). */
async function loadV2(sql: postgres.Sql, total: number): Promise<number> {
  const old = MIGRATIONS.filter((m) => m.version <= 2);
  await sql.unsafe(migrationScript(old)).simple();
  const indexes = old.flatMap((m) => m.sql.split(';').map((s) => s.trim()).filter((s) => /^create (unique )?index/.test(s)));
  const names = indexes.map((s) => /index (?:if not exists )?(\w+)/.exec(s)![1]);
  await sql.unsafe(`drop index ${names.join(', ')}`);
  const t0 = performance.now();
  const copy = await sql`copy watchtower_events (id, user_id, type, "timestamp", received_at, session_id, app_version, page_url,
    source, message, severity, route_key, duration, ttfb, rating, metadata, raw) from stdin`.writable();
  await pipeline(Readable.from(v2Rows(total)), copy);
  for (const ddl of indexes) await sql.unsafe(ddl);
  return (performance.now() - t0) / 1000;
}

// --- Measures ----------------------------------------------------------------------------------

const timeRuns = async (fn: () => Promise<unknown>, runs = RUNS): Promise<number[]> => {
  await fn(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return ms;
};

interface Reads { statsAll: number[]; stats30: number[]; newest: number[]; back60: number[] }

/** /api/stats and GET /api/events through the handler, in process (no sockets). */
async function reads(store: Store, back: string, runs = RUNS): Promise<Reads> {
  const handler = createHandler({ store, log: () => {} });
  const get = async (path: string) => {
    const res = await handler(new Request('http://bench.test' + path, { headers: { 'x-idp-user-id': HEAVY } }));
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const page = (await get(`/api/events?limit=50&before=${back}`)) as { events: StoredEvent[] };
  if (page.events.length !== 50) throw new Error('no page 60 days back');
  return {
    statsAll: await timeRuns(() => get('/api/stats'), runs),
    stats30: await timeRuns(() => get(`/api/stats?from=${new Date(Date.now() - 30 * DAY).toISOString()}`), runs),
    newest: await timeRuns(() => get('/api/events?limit=50'), runs),
    back60: await timeRuns(() => get(`/api/events?limit=50&before=${back}`), runs),
  };
}

/** Resolves once no other session of the database has run a statement for a second. */
async function idle(sql: postgres.Sql) {
  for (let quiet = 0; quiet < 5;) {
    const [{ busy }] = await sql<{ busy: number }[]>`select count(*)::int as busy from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state = 'active'`;
    quiet = busy ? 0 : quiet + 1;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The store's tables. */
const TABLES = ['watchtower_events', 'watchtower_event_blocks', 'watchtower_event_ids', 'watchtower_rollups', 'watchtower_rollup_sessions', 'watchtower_day_sessions',
  'watchtower_breakdown_sessions', 'watchtower_rollup_days'];

/** Table + index bytes of the tables (and their partitions) per event, of those tables that exist. */
async function bytesPerEvent(sql: postgres.Sql, events: number) {
  const out: Record<string, number> = {};
  for (const t of TABLES) {
    if ((await sql`select to_regclass(${t}) as r`)[0].r === null) continue;
    const [{ b }] = await sql<{ b: number }[]>`
      select (pg_total_relation_size(${t}::regclass)
              + coalesce((select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = ${t}::regclass), 0))::float8 as b`;
    out[t] = b / events;
  }
  return out;
}

function wrkAsync(url: string, bodyFile: string) {
  return new Promise<ReturnType<typeof parseWrk>>((resolve, reject) => {
    execFile('wrk', wrkArgs(url, { connections: CONNECTIONS, seconds: SECONDS }), { env: wrkEnv({ bodyFile, path: '/api/events' }), encoding: 'utf8' },
      (err, out) => (err ? reject(err) : resolve(parseWrk(out))));
  });
}

/** wrk against one server.ts instance (from `cwd`) on `db`, events owned by a user (so rolled up). */
async function ingest(db: TestDatabase, bodyFile: string, cwd = ROOT) {
  const server = await start(process.execPath, ['--import', 'tsx', 'server.ts'],
    { SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url, SERVICE_RATE_LIMIT: '0', DEFAULT_INGEST_OWNER_USER_ID: 'ingest-user', SERVICE_RETENTION_DAYS: '0' }, cwd);
  try {
    await wrkAsync(server.url, bodyFile).catch(() => null); // warm-up
    const r = await wrkAsync(server.url, bodyFile);
    console.log(`  ingest (${cwd === ROOT ? 'this store' : 'baseline'}): ${int(r.rps * 20)} events/s, p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors}`);
    return r;
  } finally {
    await server.stop();
  }
}

/**
 * Open loop through HTTP: one batch of 20 due every 10 ms for 8 s; 3 s in, if `drop`, retention
 * drops the two oldest days (the same function the instances call). Latency counts from when a
 * request was due; the first 1.5 s warm the fresh server up and are not counted. Run without
 * `drop` too, as the control: the same load on the same machine.
 */
const WARM_UP_REQUESTS = 150;
const DROP_ROUNDS = Number(process.env.BENCH_DROP_ROUNDS ?? 3);

async function ingestWhileDropping(db: TestDatabase, sql: postgres.Sql, body: string, drop = true) {
  const server = await start(process.execPath, ['--import', 'tsx', 'server.ts'],
    { SERVICE_STORAGE: 'postgres', DATABASE_URL: db.url, SERVICE_RATE_LIMIT: '0', DEFAULT_INGEST_OWNER_USER_ID: 'ingest-user', SERVICE_RETENTION_DAYS: '0' });
  try {
    const [{ day }] = await sql<{ day: number }[]>`select min(substr(inhrelid::regclass::text, 20)::int) as day from pg_inherits
      where inhparent = 'watchtower_events'::regclass`;
    // The two oldest days: the first is cut by the span's start, the second is a whole one.
    // Counted by day: their rows are blocks once compacted.
    const [{ n: dayEvents }] = await sql<{ n: number }[]>`select coalesce(sum(events), 0)::float8 as n from watchtower_event_days
      where day < ${day + 2}`;
    const latencies: number[] = [];
    let dropMs = 0;
    const t0 = performance.now();
    const dropping = !drop ? Promise.resolve() : new Promise<void>((resolve, reject) => setTimeout(() => {
      const t = performance.now();
      dropDaysBefore(sql, day + 2).then(() => {
        dropMs = performance.now() - t;
        resolve();
      }, reject);
    }, 3000));
    const sends: Promise<void>[] = [];
    for (let k = 0; k < 800; k++) {
      const due = t0 + k * 10;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      sends.push(fetch(server.url + '/api/events', { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': BROWSER }, body }).then(async (res) => {
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}`);
        if (k >= WARM_UP_REQUESTS) latencies.push(performance.now() - due);
      }));
    }
    await Promise.all([...sends, dropping]);
    return { p50: pct(latencies, 50), p99: pct(latencies, 99), max: Math.max(...latencies), dropMs, dayEvents };
  } finally {
    await server.stop();
  }
}

// --- Run ---------------------------------------------------------------------------------------

const tmp = mkdtempSync(tmpdir() + '/watchtower-pg-bench-');
const bodyFile = `${tmp}/batch20.json`;
const body = JSON.stringify({
  events: Array.from({ length: 20 }, (_, i) => ({
    type: ['pageload', 'click', 'error', 'custom'][i % 4], sessionId: `session-${i % 7}`, deployVersion: '1.4.2',
    url: `https://shop.example/products/${i}`, route: '/products/:id', data: i % 4 === 0 ? { duration: 420 + i, ttfb: 80 } : { target: 'button#buy' },
  })),
});
writeFileSync(bodyFile, body);

// The previous store's code, from git, in a directory of its own that shares node_modules.
const baseDir = `${tmp}/baseline`;
execFileSync('sh', ['-c', `mkdir -p ${baseDir} && git -C ${ROOT} archive ${BASELINE_COMMIT} | tar -x -C ${baseDir}`]);
symlinkSync(ROOT + 'node_modules', `${baseDir}/node_modules`);

const db = await createTestDatabase();
const sql = postgres(db.url, { max: 2, onnotice: () => {}, fetch_types: false });
let section = '';
try {
  console.log(`loading ${int(TOTAL)} events over ${DAYS} days into the version 2 table (COPY, then its indexes)`);
  const loadSeconds = await loadV2(sql, TOTAL);
  await sql`vacuum analyze`;
  const [{ heavy }] = await sql<{ heavy: number }[]>`select count(*)::int as heavy from watchtower_events where user_id = ${HEAVY}`;
  // A page 60 days back: before the heavy user's first event after that (seqs stay through the migration).
  const [{ seq }] = await sql<{ seq: string }[]>`select max(seq) as seq from watchtower_events
    where user_id = ${HEAVY} and received_at < ${new Date(now - 60 * DAY).toISOString()}::timestamptz`;
  const back = encodeCursor(Number(seq) + 1);
  console.log(`  loaded in ${loadSeconds.toFixed(0)} s; baseline: the store at ${BASELINE_COMMIT}`);
  const { openPostgresStore: openOld } = (await import(`${baseDir}/lib/postgres.ts`)) as { openPostgresStore: typeof openPostgresStore };
  // Its statistics of a 30-day range read every event of the range: give them time.
  const old = await openOld({ url: db.url, operationTimeoutMs: 900_000 });
  // After it opened the database: a baseline with rollups migrates it to its own schema first.
  const baseBytes = Object.values(await bytesPerEvent(sql, TOTAL)).reduce((a, b) => a + b, 0);
  const baseReads = await reads(old, back, 1);
  await old.close();
  console.log(`  baseline stats p50 ${f1(median(baseReads.statsAll))} ms (all), ${f1(median(baseReads.stats30))} ms (30 days)`);
  const baseIngest = await ingest(db, bodyFile, baseDir);

  console.log('migrating to this store\'s schema');
  let t0 = performance.now();
  const store = await openPostgresStore({ url: db.url, operationTimeoutMs: 900_000, log: (m) => console.log(`  [store] ${m}`) });
  const migrateSeconds = (performance.now() - t0) / 1000;
  // The store compacts the closed days in the background from its start; the bench waits for
  // that work by doing it too (whichever gets to a day first stores it, the other skips it).
  t0 = performance.now();
  await compactClosedDays(sql, Date.now());
  const compactSeconds = (performance.now() - t0) / 1000;
  // The store's pass may still be moving or packing a day, and a VACUUM frees nothing that another
  // statement's snapshot can still see: once it is done, a second pass (as the next hourly one
  // would) packs what the first could not.
  await idle(sql);
  await compactClosedDays(sql, Date.now());
  console.log(`  compacted the closed days (rollups, blocks) in ${compactSeconds.toFixed(0)} s`);
  t0 = performance.now();
  await sql`vacuum analyze`;
  console.log(`  migrated in ${migrateSeconds.toFixed(0)} s; vacuum analyze ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const [{ events }] = await sql<{ events: number }[]>`select sum(events)::float8 as events from watchtower_event_days`;
  const bytes = await bytesPerEvent(sql, events);
  const totalBytes = Object.values(bytes).reduce((a, b) => a + b, 0);
  // Today's events are rows until the day closes, and today holds the events the baseline's ingest
  // wrote besides the loaded ones: the bytes of the other days, per event of theirs, are what a
  // database of many days costs.
  const today = Math.floor(Date.now() / DAY);
  const [open] = await sql<{ bytes: number; events: number; closed: number; unpacked: number }[]>`
    select coalesce(pg_total_relation_size(to_regclass(${'watchtower_events_p' + today})), 0)::float8 as bytes,
           (select coalesce(sum(events), 0) from watchtower_event_days where day >= ${today})::float8 as events,
           (select coalesce(sum(pg_total_relation_size(inhrelid)), 0) from pg_inherits
             where inhparent = 'watchtower_events'::regclass and inhrelid::regclass::text < ${'watchtower_events_p' + today})::float8 as closed,
           (select count(*) from pg_inherits where inhparent = 'watchtower_events'::regclass
             and inhrelid::regclass::text < ${'watchtower_events_p' + today} and pg_relation_size(inhrelid) > 0)::int as unpacked`;
  // Today's share of the rest: its partitions of the rollup tables, and its events' ids.
  const [{ todayRollups }] = await sql<{ todayRollups: number }[]>`
    select coalesce(sum(pg_total_relation_size(to_regclass(t || ${'_p' + today}))), 0)::float8 as "todayRollups"
    from unnest(${pgArray(['watchtower_rollups', 'watchtower_rollup_sessions', 'watchtower_day_sessions', 'watchtower_breakdown_sessions'])}::text[]) as t`;
  const todayBytes = open.bytes + todayRollups + (bytes.watchtower_event_ids ?? 0) * open.events;
  const closedBytes = (totalBytes * events - todayBytes) / (events - open.events);
  const r = await reads(store, back);
  await store.close();
  console.log(`  stats p50 ${f1(median(r.statsAll))} ms (all), ${f1(median(r.stats30))} ms (30 days); pages ${f1(median(r.newest))} / ${f1(median(r.back60))} ms`);
  const ingested = await ingest(db, bodyFile);
  // Rounds alternate the control and the drop, so that both see the same moments of a shared machine.
  const controls: Awaited<ReturnType<typeof ingestWhileDropping>>[] = [], drops: typeof controls = [];
  for (let i = 0; i < DROP_ROUNDS; i++) {
    const control = await ingestWhileDropping(db, sql, body, false);
    console.log(`  the same open loop, nothing dropped: p50 ${f1(control.p50)} p99 ${f1(control.p99)} max ${f1(control.max)} ms`);
    const drop = await ingestWhileDropping(db, sql, body);
    console.log(`  while dropping two days (${drop.dropMs.toFixed(0)} ms): p50 ${f1(drop.p50)} p99 ${f1(drop.p99)} max ${f1(drop.max)} ms`);
    controls.push(control);
    drops.push(drop);
  }
  const p99s = (rs: typeof controls) => rs.map((r) => f1(r.p99)).join(', ');
  const drop = { p99: median(drops.map((r) => r.p99)), p50: median(drops.map((r) => r.p50)), dropMs: median(drops.map((r) => r.dropMs)), dayEvents: drops[0].dayEvents };
  const control = { p99: median(controls.map((r) => r.p99)), p50: median(controls.map((r) => r.p50)) };

  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  const row = (name: string, now: string, base: string, target: string) => `| ${name} | ${now} | ${base} | ${target} |`;
  section = `## PostgreSQL store at ${int(TOTAL)} events

\`npm run bench:postgres\` (BENCH_EVENTS=${TOTAL}). ${machine()}. PostgreSQL 15 on the same two cores, default settings (synchronous commit); other work was running on the machine at the same time, so absolute figures are pessimistic: compare the columns.

${int(TOTAL)} events received over ${DAYS} days by 5 users, ${int(heavy)} of them one user's (11 types, 20 routes, sessions of ~30 events, a quarter with a project key). Load: \`COPY\` into the previous schema (version 2: one plain table, statistics computed from raw rows), then its indexes (${loadSeconds.toFixed(0)} s). The baseline column is the previous store's code (commit ${BASELINE_COMMIT}) on that database. Then this store opened it and migrated it (every event copied into daily partitions and rolled up, in one transaction: ${migrateSeconds.toFixed(0)} s), its closed days compacted (rollups merged, events moved into blocks, partitions vacuumed and reindexed: ${compactSeconds.toFixed(0)} s), followed by \`VACUUM ANALYZE\`. Reads go through the handler in process (no sockets), ${RUNS} runs after a warm-up (the baseline: one, its statistics take seconds); ingest is wrk against one \`server.ts\` (1 thread, ${CONNECTIONS} connections, ${SECONDS} s after a warm-up, batches of 20 owned by one user, so rolled up) into the loaded database.

| measure | this store | baseline (previous store, same data) | target |
|---|---|---|---|
${row(`\`/api/stats\` p50, heavy user, all time`, `${f1(median(r.statsAll))} ms (p95 ${f1(pct(r.statsAll, 95))})`, `${f1(median(baseReads.statsAll))} ms`, '< 50 ms')}
${row(`\`/api/stats\` p50, heavy user, last 30 days`, `${f1(median(r.stats30))} ms (p95 ${f1(pct(r.stats30, 95))})`, `${f1(median(baseReads.stats30))} ms`, '< 50 ms')}
${row('`GET /api/events` p50, newest page of 50', `${f1(median(r.newest))} ms`, `${f1(median(baseReads.newest))} ms`, '< 20 ms')}
${row('`GET /api/events` p50, a page 60 days back', `${f1(median(r.back60))} ms`, `${f1(median(baseReads.back60))} ms`, '< 100 ms')}
${row('ingest, batches of 20, one instance, events/s', `${int(ingested.rps * 20)} (p99 ${ingested.p99} ms; ${ratio(ingested.rps, baseIngest.rps)} the baseline)`, `${int(baseIngest.rps * 20)} (p99 ${baseIngest.p99} ms)`, '≥ 20,000')}
${row('ingest p99 while retention drops days', `${f1(drop.p99)} ms, median of ${DROP_ROUNDS} rounds (${p99s(drops)}; p50 ${f1(drop.p50)}; dropping the two oldest days, ${int(drop.dayEvents)} events in the first round, took ${drop.dropMs.toFixed(0)} ms); the same load with nothing dropped, alternating with them: p99 ${f1(control.p99)} (${p99s(controls)}), p50 ${f1(control.p50)}`, '— (retention was a DELETE)', '< 100 ms')}
${row('table + index bytes per event', `${int(totalBytes)} B`, `${int(baseBytes)} B`, '< 400 B')}

Bytes per event by table: ${Object.entries(bytes).map(([t, b]) => `${t} ${int(b)} B`).join(', ')}. Today's events (${int(open.events)}, ${f1((100 * open.events) / events)}% of them: the baseline's ingest wrote into today) are rows until the day closes; the other days (the tables' bytes but today's partitions and today's events' share of the ids) hold ${int(closedBytes)} B per event of theirs. The closed days' partitions of watchtower_events (emptied into blocks) hold ${int(open.closed / (events - open.events))} B per event of theirs; ${open.unpacked} of them still had rows or pages.`;
  console.log(section);
} finally {
  await sql.end({ timeout: 2 });
  // BENCH_KEEP_DB=1 keeps the loaded database for a look at its plans (drop it by hand after).
  if (process.env.BENCH_KEEP_DB === '1') {
    console.log(`kept database ${db.name}`);
    await db.admin.end({ timeout: 2 });
  } else await db.drop();
  rmSync(tmp, { recursive: true, force: true });
}
// A run at another size (while iterating) gets a section of its own beside the 10M figures.
writeSection(TOTAL === 10_000_000 ? 'postgres' : `postgres-${TOTAL}`, section);
