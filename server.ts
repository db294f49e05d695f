// Entry point: environment → dependencies → serve, with Deno.serve on Deno and node:http on Node.
import { fileURLToPath } from 'node:url';
import { createAuthenticator } from './lib/auth.ts';
import { ConfigError, loadConfig, type Config } from './lib/config.ts';
import { loadAlertConfig, type AlertConfig } from './lib/alerts/config.ts';
import { resolveHost } from './lib/adapter/resolve.ts';
import { createHandler } from './lib/handler.ts';
import { createMemoryStore } from './lib/store/memory.ts';
import { createMemoryRecords } from './lib/records/memory.ts';
import type { RecordStore } from './lib/records/types.ts';
import type { BunServer } from './lib/adapter/bun.ts';
import type { FileAccess } from './lib/static.ts';
import type { Store } from './lib/store/types.ts';

declare const Deno: {
  env: { toObject(): Record<string, string> };
  serve(options: { port: number; hostname: string; onListen?: (addr: { port: number }) => void }, handler: (r: Request) => Promise<Response>): { shutdown(): Promise<void>; finished: Promise<void> };
  addSignalListener(signal: string, fn: () => void): void;
  exit(code: number): never;
} | undefined;

declare const Bun: {
  serve(options: { port: number; hostname: string; fetch: (request: Request, server: BunServer) => Promise<Response> }): { port: number; stop(closeActive?: boolean): Promise<void> };
} | undefined;

const isDeno = typeof Deno !== 'undefined';
const isBun = typeof Bun !== 'undefined';
const root = fileURLToPath(new URL('.', import.meta.url));
const log = (msg: string) => console.log(`[watchtower] ${msg}`);
// Deno's process.exit inside a signal listener does not set the exit code; Deno.exit does.
const exit: (code: number) => never = (code) => (isDeno ? Deno!.exit(code) : process.exit(code));

let config: Config;
let alertConfig: AlertConfig;
try {
  const env = isDeno ? Deno!.env.toObject() : process.env;
  config = loadConfig(env, root);
  alertConfig = loadAlertConfig(env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(`[watchtower] invalid configuration: ${err.message}`);
  exit(1);
}

async function openStore(config: Config): Promise<Store> {
  if (config.storage === 'memory') return createMemoryStore({ capacity: config.bufferSize });
  if (config.storage === 'postgres') {
    const { openPostgresStore } = await import('./lib/store/postgres/store.ts');
    return openPostgresStore({ url: config.databaseUrl!, retentionDays: config.retentionDays, rollupCacheBytes: config.cacheMb * 2 ** 20, log });
  }
  const { openSqliteStore } = await import('./lib/store/sqlite/store.ts');
  return openSqliteStore({
    path: config.dbPath, retentionDays: config.retentionDays, maxEvents: config.maxEvents, cacheMb: config.cacheMb,
    dedupeDays: config.dedupeDays, log,
  });
}

/** The event store's companion for projects, issues, alert rules and source maps (README, "Storage"). */
async function openRecords(config: Config): Promise<RecordStore> {
  if (config.storage === 'memory') return createMemoryRecords();
  if (config.storage === 'postgres') {
    const { openPostgresRecords } = await import('./lib/records/postgres.ts');
    return openPostgresRecords({ url: config.databaseUrl! });
  }
  const { openSqliteRecords } = await import('./lib/records/file.ts');
  return openSqliteRecords({ path: config.dbPath });
}

let store: Store;
let records: RecordStore;
try {
  store = await openStore(config);
  // After the store: the sqlite store's lock on its database also guards the records beside it.
  records = await openRecords(config);
} catch (err) {
  console.error(`[watchtower] cannot open storage: ${err instanceof Error ? err.message : String(err)}`);
  exit(1);
}

const auth = createAuthenticator({
  trustHeader: config.trustHeader,
  issuer: config.issuer,
  jwksUrl: config.jwksUrl,
  authorizedParties: config.authorizedParties,
});
// Each runtime reads the served pages and SDK with its own file API.
const files: FileAccess = isBun
  ? (await import('./lib/adapter/bun.ts')).bunFiles
  : isDeno
    ? (await import('./lib/adapter/deno.ts')).denoFiles
    : (await import('./lib/adapter/node.ts')).nodeFiles;
const handler = createHandler({
  store,
  records,
  files,
  auth,
  defaultOwner: config.defaultOwner,
  rateLimit: { rate: config.rateLimit, burst: config.rateBurst },
  trustProxy: config.trustProxy,
  keepBots: config.keepBots,
  geo: config.geo,
  monitoring: {
    alerts: alertConfig,
    // node:dns on all three runtimes: webhook destinations are checked on what their host names resolve to.
    resolveHost,
    retentionDays: config.storage === 'memory' ? 0 : config.retentionDays,
    sourceMapQuotaBytes: config.sourceMapMaxMb * 1024 * 1024,
  },
  log: (msg) => console.error(`[watchtower] ${msg}`),
});

let stopping = false;
async function shutdown(stopServer: () => Promise<void>) {
  if (stopping) return;
  stopping = true;
  log('shutting down');
  handler.hub.close();
  const force = setTimeout(() => {
    console.error('[watchtower] shutdown timed out');
    exit(1);
  }, 10_000);
  await stopServer();
  // Queued errors become issues and alerts under way are delivered (or given up) before the store closes.
  await handler.close();
  await store.close();
  await records.close();
  clearTimeout(force);
  log('stopped');
  exit(0);
}

const describe = (port: number) =>
  `listening on http://${config.host}:${port} (storage: ${config.storage}${config.storage === 'sqlite' ? ` at ${config.dbPath}` : ''}; ` +
  `identity: ${config.issuer ? `tokens from ${config.issuer}${config.trustHeader ? ' + trusted header' : ''}` : 'development header X-IdP-User-Id, never expose this to the internet'})`;

if (isBun) {
  const { toBunFetch } = await import('./lib/adapter/bun.ts');
  const server = Bun!.serve({ port: config.port, hostname: config.host, fetch: toBunFetch(handler) });
  log(describe(server.port));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => shutdown(() => server.stop()));
} else if (isDeno) {
  const server = Deno!.serve({ port: config.port, hostname: config.host, onListen: ({ port }) => log(describe(port)) }, handler);
  for (const signal of ['SIGTERM', 'SIGINT']) Deno!.addSignalListener(signal, () => shutdown(() => server.shutdown()));
} else {
  const { createServer } = await import('node:http');
  const { toNodeListener } = await import('./lib/adapter/node.ts');
  const server = createServer(toNodeListener(handler, { onError: (err) => console.error('[watchtower]', err) }));
  server.keepAliveTimeout = 65_000;
  server.listen(config.port, config.host, () => {
    const address = server.address();
    log(describe(typeof address === 'object' && address ? address.port : config.port));
  });
  // In-flight requests finish; connections are closed as soon as they fall idle (streams just ended).
  const stop = () =>
    new Promise<void>((resolve) => {
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      server.close(() => {
        clearInterval(idle);
        resolve();
      });
      server.closeIdleConnections();
    });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => shutdown(stop));
}
