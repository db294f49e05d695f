// PostgreSQL ingest in process, this store against the store of another commit, alternating.
// Through the handler (no sockets, no wrk competing for the two cores): CONCURRENCY requests of
// the bench's batch of 20 at a time, owned by one user (so rolled up), for SECONDS each run, each
// run on a fresh database. Rounds alternate the two codes, so that both see the same moments of a
// shared machine; the figures to compare are the per-round pairs.
// `BENCH_BASELINE_COMMIT=<commit> npm run bench:postgres-ingest` (BENCH_ENVIRONMENTS=1: see body).
// `BENCH_DATABASE=<name> npm run bench:postgres-ingest` compares instead this store on a fresh
// database with this store on a loaded one (left as it was found, but for the events inserted),
// such as the one `BENCH_KEEP_DB=1 npm run bench:postgres` keeps.
// Each run also counts the blocks its inserts read from outside PostgreSQL's shared buffers.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import postgres from 'postgres';
import { createHandler } from '../lib/handler.ts';
import type { openPostgresStore } from '../lib/store/postgres/store.ts';
import { ADMIN_URL, createTestDatabase, databaseUrl, type TestDatabase } from '../test/helpers/postgres.ts';
import { median, ROOT } from './lib.ts';
import { BROWSER } from './payloads.ts';

const BASELINE_COMMIT = process.env.BENCH_BASELINE_COMMIT ?? 'HEAD';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONNECTIONS ?? 50);
const LOADED = process.env.BENCH_DATABASE;

// The batch of bench/postgres.ts; with BENCH_ENVIRONMENTS=1 its events carry four environment names
// (as bench/payloads.ts), counted in scopes of their own (lib/environment-scopes.ts).
const environments = process.env.BENCH_ENVIRONMENTS === '1';
const body = JSON.stringify({
  events: Array.from({ length: 20 }, (_, i) => ({
    ...(environments ? { environment: ['production', 'production', 'staging', 'preview'][i % 4] } : {}),
    type: ['pageload', 'click', 'error', 'custom'][i % 4], sessionId: `session-${i % 7}`, deployVersion: '1.4.2',
    url: `https://shop.example/products/${i}`, route: '/products/:id', data: i % 4 === 0 ? { duration: 420 + i, ttfb: 80 } : { target: 'button#buy' },
  })),
});

const tmp = mkdtempSync(tmpdir() + '/watchtower-pg-ingest-');
const thisStore = ((await import(`${ROOT}lib/postgres.ts`)) as { openPostgresStore: typeof openPostgresStore }).openPostgresStore;
/** What each run opens: a store's code, and a database (a fresh one unless named). */
interface Contender { open: typeof openPostgresStore; database?: string; label: string }
const contenders: Record<string, Contender> = {};
if (LOADED) {
  contenders['fresh database'] = { open: thisStore, label: 'this store, a fresh database each run' };
  contenders['loaded database'] = { open: thisStore, database: LOADED, label: `this store, database ${LOADED}` };
} else {
  const baseDir = `${tmp}/baseline`;
  execFileSync('sh', ['-c', `mkdir -p ${baseDir} && git -C ${ROOT} archive ${BASELINE_COMMIT} | tar -x -C ${baseDir}`]);
  symlinkSync(ROOT + 'node_modules', `${baseDir}/node_modules`);
  contenders.baseline = {
    open: ((await import(`${baseDir}/lib/postgres.ts`)) as { openPostgresStore: typeof openPostgresStore }).openPostgresStore,
    label: BASELINE_COMMIT,
  };
  contenders['this store'] = { open: thisStore, label: 'working tree' };
}

/** What a run needs of its database; a named one is left in place (drop only ends the connection). */
type Target = Pick<TestDatabase, 'name' | 'url' | 'admin' | 'drop'>;
function existing(name: string): Target {
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  return { name, url: databaseUrl(name), admin, drop: () => admin.end() };
}

/** Blocks read by the database's tables and indexes from outside the shared buffers so far: all, and the ids table's. */
async function blocksRead(sql: postgres.Sql): Promise<{ all: number; ids: number }> {
  const [r] = await sql<{ all: number; ids: number }[]>`
    select coalesce(sum(heap_blks_read + coalesce(idx_blks_read, 0)), 0)::float8 as all,
           coalesce(sum(heap_blks_read + coalesce(idx_blks_read, 0)) filter (where relname = 'watchtower_event_ids'), 0)::float8 as ids
    from pg_statio_user_tables`;
  return r;
}

/** CPU seconds (user + system) the database's backends have used, from /proc (same machine). */
const ticks = Number(process.env.BENCH_CLOCK_TICKS ?? 100);
async function backendCpu(admin: postgres.Sql, name: string): Promise<number> {
  const pids = await admin<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${name}`;
  let total = 0;
  for (const { pid } of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / ticks;
    } catch {
      // A backend that ended meanwhile.
    }
  }
  return total;
}

/**
 * Events/s, the CPU per event of this process and of the database's backends, and the database's
 * bytes per event stored (events, ids and rollups, with their indexes).
 */
async function run({ open, database }: Contender) {
  const db: Target = database ? existing(database) : await createTestDatabase();
  const store = await open({ url: db.url });
  const stats = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
  try {
    const handler = createHandler({ store, log: () => {}, defaultOwner: 'ingest-user', rateLimit: { rate: 0, burst: 0 } });
    const post = async () => {
      const res = await handler(new Request('http://bench.test/api/events', { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': BROWSER }, body }));
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    };
    const loop = async (until: number, counter: { n: number }) => {
      while (performance.now() < until) {
        await post();
        counter.n++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, () => loop(performance.now() + 1000, { n: 0 }))); // warm-up
    const counter = { n: 0 };
    const read0 = await blocksRead(stats);
    const cpu0 = process.cpuUsage(), db0 = await backendCpu(db.admin, db.name);
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, () => loop(t0 + SECONDS * 1000, counter)));
    const eps = (counter.n * 20) / ((performance.now() - t0) / 1000);
    const cpu = process.cpuUsage(cpu0), dbCpu = (await backendCpu(db.admin, db.name)) - db0;
    const events = counter.n * 20;
    // The backends report their counters once idle (at most once a second).
    await new Promise((r) => setTimeout(r, 1500));
    const read1 = await blocksRead(stats);
    const [{ bytes, stored }] = await stats<{ bytes: number; stored: number }[]>`
      select (select sum(pg_total_relation_size(c.oid)) from pg_class c
              where c.relkind = 'r' and c.relname like 'watchtower\\_%' and c.relname <> 'watchtower_migrations')::float8 as bytes,
             (select count(*) from watchtower_events)::float8 as stored`;
    return {
      eps, bytes: bytes / stored, instanceUs: ((cpu.user + cpu.system) / events), dbUs: (dbCpu * 1e6) / events,
      read: (read1.all - read0.all) / events, idsRead: (read1.ids - read0.ids) / events,
    };
  } finally {
    await stats.end();
    await store.close();
    await db.drop();
  }
}

const results: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, contender] of round % 2 ? Object.entries(contenders) : Object.entries(contenders).reverse()) {
      const { eps, bytes, instanceUs, dbUs, read, idsRead } = await run(contender);
      results[name].push(eps);
      console.log(`round ${round} ${name}: ${Math.round(eps).toLocaleString('en-US')} events/s, CPU per event ${instanceUs.toFixed(0)} µs in process, ` +
        `${dbUs.toFixed(0)} µs in PostgreSQL; blocks read from outside shared buffers per event ${read.toFixed(2)} (ids table ${idsRead.toFixed(2)}); ` +
        `${Math.round(bytes)} B per event`);
    }
  }
  for (const [name, eps] of Object.entries(results)) console.log(`${name} (${contenders[name].label}): median ${Math.round(median(eps)).toLocaleString('en-US')} events/s`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
