// The package as others install it (README "Use as a library").
//
// On Node: `npm pack`, then the tarball installed into a fresh project that has no tsx, where plain
// `node` imports the compiled entry points, serves requests on 127.0.0.1 with the memory store and
// with a real sqlite store in a temporary directory (ingest, reopen, read back), and Bun runs the
// same script on the same install. The consumer's TypeScript type-checks against the shipped
// declarations, and a module-resolution log shows that the root entry loads neither postgres.js nor
// worker_threads. On Deno: a fresh Deno project links this repository as the JSR package that
// deno.json names and imports it through deno.json's exports; `deno publish --dry-run` accepts it.
// Each runtime checks the way it consumes the package; packing twice would add nothing.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from './helpers/server.ts';

declare const Deno: { execPath(): string } | undefined;

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const denoJson = JSON.parse(readFileSync(join(ROOT, 'deno.json'), 'utf8'));
/** Entry points every runtime offers (package.json's exports minus ./package.json). */
const ENTRY_POINTS = ['.', './sqlite', './postgres', './node', './deno', './bun', './sdk', './sdk/vitals'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`), capturing its output. */
function run(cmd: string, args: string[], options: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function succeeded(result: Run, what: string): string {
  assert.is(result.code, 0, `${what} failed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/**
 * What a consumer checks once the package is imported (the script's last line, as JSON): a memory
 * store served over HTTP (an event in and back, the SDK, a page), then a sqlite store in `dir`:
 * an event in, the store closed and reopened, the event read back from disk. `serve(handler, fn)`
 * is each runtime's own server, defined before this text.
 */
const CHECKS = `
// A browser's user agent: the runtime's own fetch is a bot, whose events are not stored by default.
const post = { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' },
  body: JSON.stringify({ type: 'custom', userId: 'user_1', data: { name: 'packaged' } }) };
const asUser = { headers: { 'x-idp-user-id': 'user_1' } };
const json = (base, path, init) => fetch(base + path, init).then(async (r) => ({ status: r.status, body: await r.json() }));
const text = (base, path) => fetch(base + path).then(async (r) => ({ status: r.status, type: r.headers.get('content-type'), text: await r.text() }));

const memory = await serve(createHandler({ store: createMemoryStore(), files }), async (base) => ({
  ingest: await json(base, '/api/events', post),
  read: await json(base, '/api/events', asUser),
  sdk: await text(base, '/sdk/watchtower.js'),
  page: await text(base, '/landing/'),
}));

const path = dir + '/db/watchtower.sqlite';
let store = await openSqliteStore({ path });
const ingest = await serve(createHandler({ store }), (base) => json(base, '/api/events', post));
await store.close();
store = await openSqliteStore({ path });
const read = await serve(createHandler({ store }), (base) => json(base, '/api/events', asUser));
await store.close();
console.log(JSON.stringify({ memory, sqlite: { ingest, read } }));
`;

const NODE_CONSUMER = `
import { createServer } from 'node:http';
import { createHandler, createMemoryStore } from 'watchtower';
import { nodeFiles as files, toNodeListener } from 'watchtower/node';
import { openSqliteStore } from 'watchtower/sqlite';

const dir = process.argv[2];
async function serve(handler, fn) {
  const server = createServer(toNodeListener(handler));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await fn('http://127.0.0.1:' + server.address().port);
  } finally {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
}
${CHECKS}`;

const DENO_CONSUMER = `
import { createHandler, createMemoryStore } from '${denoJson.name}';
import { openSqliteStore } from '${denoJson.name}/sqlite';
import { denoFiles as files } from '${denoJson.name}/deno';

const dir = Deno.args[0];
async function serve(handler, fn) {
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, handler);
  try {
    return await fn('http://127.0.0.1:' + server.addr.port);
  } finally {
    await server.shutdown();
  }
}
${CHECKS}`;

interface Answer {
  status: number;
  body: { accepted?: number; events?: { id: string; data: { name?: string } }[] };
}
interface Checked {
  memory: { ingest: Answer; read: Answer; sdk: { status: number; type: string; text: string }; page: { status: number; type: string; text: string } };
  sqlite: { ingest: Answer; read: Answer };
}

function assertConsumer(stdout: string, runtime: string) {
  const result = JSON.parse(stdout.trim().split('\n').pop()!) as Checked;
  const { memory, sqlite } = result;
  assert.is(memory.ingest.status, 200, `${runtime}: memory ingest`);
  assert.is(memory.ingest.body.accepted, 1);
  assert.is(memory.read.body.events?.length, 1, `${runtime}: memory read back`);
  assert.is(memory.read.body.events![0].data.name, 'packaged');
  // The SDK and the pages ship in the package, where the handler's default roots find them, read
  // through the file access of the runtime's adapter.
  assert.is(memory.sdk.status, 200, `${runtime}: /sdk/watchtower.js`);
  assert.match(memory.sdk.type, /javascript/);
  assert.match(memory.sdk.text, /Watchtower/);
  assert.is(memory.page.status, 200, `${runtime}: /landing/`);
  assert.match(memory.page.text, /<html/i);
  assert.is(sqlite.ingest.status, 200, `${runtime}: sqlite ingest`);
  assert.is(sqlite.ingest.body.accepted, 1);
  // Read after a reopen: the worker started and sql.js's .wasm loaded from the installed files.
  assert.is(sqlite.read.body.events?.length, 1, `${runtime}: sqlite read back after reopen`);
  assert.is(sqlite.read.body.events![0].id, sqlite.ingest.body.events![0].id);
}

test('deno.json names the same version and entry points as package.json', () => {
  assert.match(denoJson.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/, 'a JSR name is @scope/name');
  assert.is(denoJson.version, pkg.version);
  assert.equal(Object.keys(denoJson.exports).sort(), [...ENTRY_POINTS].sort());
  assert.equal(Object.keys(pkg.exports).filter((k) => k !== './package.json').sort(), [...ENTRY_POINTS].sort());
  for (const [key, target] of Object.entries(denoJson.exports as Record<string, string>)) {
    assert.ok(target.endsWith('.ts') && existsSync(join(ROOT, target)), `deno.json ${key} → ${target}`);
  }
});

if (typeof Deno === 'undefined') registerNode();
else registerDeno();

function registerNode() {
  const BUN = join(ROOT, 'node_modules/.bin/bun');
  let project = '';

  test.before(async () => {
    project = mkdtempSync(join(tmpdir(), 'watchtower-package-'));
    const packs = join(project, 'packs');
    mkdirSync(packs);
    succeeded(await run('npm', ['pack', '--pack-destination', packs], { cwd: ROOT }), 'npm pack');
    const tarball = readdirSync(packs).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const app = join(project, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    // The local npm cache holds every dependency already; the registry is asked only for what it lacks.
    succeeded(
      await run('npm', ['install', join(packs, tarball!), '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app }),
      'npm install of the tarball',
    );
  });
  test.after(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  const app = () => join(project, 'app');
  const installed = () => join(app(), 'node_modules', 'watchtower');

  test('the packed package holds compiled entry points, the SDK and the pages, and no install script', () => {
    assert.not.ok(existsSync(join(app(), 'node_modules', 'tsx')), 'the consumer project has no tsx');
    const manifest = JSON.parse(readFileSync(join(installed(), 'package.json'), 'utf8'));
    for (const script of ['preinstall', 'install', 'postinstall']) assert.not.ok(manifest.scripts?.[script], `no ${script} script`);
    for (const key of ENTRY_POINTS) {
      const entry = manifest.exports[key];
      assert.match(entry.default, /\.js$/, `${key} is JavaScript`);
      assert.match(entry.types, /\.d\.ts$/, `${key} has declarations`);
      assert.ok(existsSync(join(installed(), entry.default)), `${key}: ${entry.default} is in the package`);
      assert.ok(existsSync(join(installed(), entry.types)), `${key}: ${entry.types} is in the package`);
    }
    // The store's worker is compiled beside the store that spawns it.
    assert.ok(existsSync(join(installed(), 'build/store/sqlite/worker.js')));
    assert.ok(existsSync(join(installed(), 'pages/landing/index.html')));
    assert.ok(existsSync(join(installed(), 'dist/sdk/watchtower.js')));
    assert.ok(existsSync(join(installed(), 'dist/assets/dashboard.js')));
    // Sources, build scripts and the environment-generated client configuration stay out.
    for (const absent of ['lib', 'sdk', 'scripts', 'test', 'pages/src', 'dist/assets/config.js']) {
      assert.not.ok(existsSync(join(installed(), absent)), `${absent} is not shipped`);
    }
    // Runtime dependencies only: nothing that builds or runs TypeScript.
    for (const dev of ['tsx', 'esbuild', 'typescript', 'uplot', 'oauth4webapi']) {
      assert.not.ok(manifest.dependencies?.[dev], `${dev} is not a runtime dependency`);
    }
  });

  test('the installed package has the watchtower command (npx watchtower)', async () => {
    const bin = join(app(), 'node_modules', '.bin', 'watchtower');
    assert.ok(existsSync(bin), 'npm linked the bin');
    const help = succeeded(await run(bin, ['--help'], { cwd: app() }), 'watchtower --help');
    assert.match(help, /watchtower sourcemaps upload --url/);
    const missing = await run(bin, ['sourcemaps', 'upload', '--url', 'http://127.0.0.1:9', '--project', '7', '--release', '1', 'nowhere'], { cwd: app(), env: { WATCHTOWER_TOKEN: 't' } });
    assert.is(missing.code, 1);
    assert.match(missing.stderr, /cannot read nowhere/);
  });

  test('plain node imports the installed package: memory and sqlite stores serve and persist', async () => {
    writeFileSync(join(app(), 'consumer.mjs'), NODE_CONSUMER);
    const out = succeeded(await run(process.execPath, ['consumer.mjs', app()], { cwd: app() }), 'node consumer.mjs');
    assertConsumer(out, 'node');
  });

  test("the root entry loads neither postgres.js nor worker_threads (sqlite's and postgres's entries do)", async () => {
    // A resolve hook logs every module each entry's import graph resolves.
    writeFileSync(
      join(app(), 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(log, result.url + '\\n');
  return result;
}`,
    );
    writeFileSync(
      join(app(), 'register.mjs'),
      `import { register } from 'node:module';
register('./hooks.mjs', import.meta.url, { data: { log: process.env.IMPORT_LOG } });`,
    );
    const loaded = async (entry: string) => {
      const log = join(project, `imports-${entry.replace(/\W/g, '_')}.log`);
      const result = await run(process.execPath, ['--import', './register.mjs', '--input-type=module', '-e', `await import(${JSON.stringify(entry)});`], {
        cwd: app(),
        env: { IMPORT_LOG: log },
      });
      succeeded(result, `import ${entry}`);
      return readFileSync(log, 'utf8').split('\n').filter(Boolean);
    };
    const postgresJs = (url: string) => url.includes('/node_modules/postgres/');
    const workers = (url: string) => url === 'node:worker_threads';

    const root = await loaded('watchtower');
    assert.ok(root.some((url) => url.endsWith('/watchtower/build/handler.js')), 'the log holds the root graph');
    assert.equal(root.filter(postgresJs), [], 'root loads postgres.js');
    assert.equal(root.filter(workers), [], 'root loads worker_threads');
    assert.equal(root.filter((url) => url.includes('/node_modules/sql.js/')), [], 'root loads sql.js');
    assert.ok((await loaded('watchtower/sqlite')).some(workers), 'watchtower/sqlite loads worker_threads');
    assert.ok((await loaded('watchtower/postgres')).some(postgresJs), 'watchtower/postgres loads postgres.js');
  });

  test("a consumer's TypeScript type-checks against the shipped declarations", async () => {
    writeFileSync(
      join(app(), 'typed.ts'),
      `import { createHandler, createMemoryStore, type Store } from 'watchtower';
import { openSqliteStore, type SqliteStoreOptions } from 'watchtower/sqlite';
import { openPostgresStore } from 'watchtower/postgres';
import { toNodeListener } from 'watchtower/node';
import { init, track } from 'watchtower/sdk';
import { startVitals } from 'watchtower/sdk/vitals';

const store: Store = createMemoryStore();
const handler = createHandler({ store });
const options: SqliteStoreOptions = { path: 'events.sqlite', retentionDays: 30 };
export const uses = [openSqliteStore(options), openPostgresStore, toNodeListener(handler), startVitals];
init({ appName: 'typed' });
track('typed');
// Deliberately wrong: the one error expected proves the declarations carry real types, not any.
export const wrong: number = handler;
`,
    );
    writeFileSync(
      join(app(), 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true,
          lib: ['ES2023', 'DOM'], types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['typed.ts'],
      }),
    );
    const result = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: app() });
    const errors = result.stdout.split('\n').filter((line) => line.includes('error TS'));
    assert.is(errors.length, 1, `expected only the deliberate error:\n${result.stdout}`);
    assert.match(errors[0], /^typed\.ts\(\d+,\d+\): error TS2322: Type 'FetchHandler(<Response>)?' is not assignable to type 'number'/);
  });

  if (existsSync(BUN)) {
    test('Bun runs the same installed package', async () => {
      rmSync(join(app(), 'db'), { recursive: true, force: true });
      const out = succeeded(await run(BUN, ['consumer.mjs', app()], { cwd: app() }), 'bun consumer.mjs');
      assertConsumer(out, 'bun');
    });
  } else {
    console.log('Bun package test not run: node_modules/.bin/bun is not installed.');
  }
}

function registerDeno() {
  const deno = Deno!.execPath();
  let project = '';
  test.before(() => {
    project = mkdtempSync(join(tmpdir(), 'watchtower-deno-package-'));
  });
  test.after(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  test("a Deno project imports the package by deno.json's name and exports (JSR layout, linked locally)", async () => {
    // `links` stands this repository in for the JSR package of that name, as it would be published;
    // its npm dependencies come from the repository's node_modules.
    writeFileSync(
      join(project, 'deno.json'),
      JSON.stringify({ links: [ROOT], nodeModulesDir: 'manual', imports: { [denoJson.name]: `jsr:${denoJson.name}@^${denoJson.version}` } }),
    );
    writeFileSync(join(project, 'consumer.js'), DENO_CONSUMER);
    const out = succeeded(await run(deno, ['run', '--allow-all', '--no-prompt', 'consumer.js', project], { cwd: project }), 'deno run consumer.js');
    assertConsumer(out, 'deno');
  });

  test('deno publish --dry-run accepts deno.json and publishes the sources, not the tests', async () => {
    // --allow-slow-types: a few exports (the valibot schemas among them) have inferred types, which
    // JSR accepts with this flag at the cost of generated documentation and Node declarations.
    const result = await run(deno, ['publish', '--dry-run', '--allow-dirty', '--allow-slow-types'], { cwd: ROOT, env: { NO_COLOR: '1' } });
    const out = result.stdout + result.stderr;
    assert.is(result.code, 0, out);
    assert.match(out, /lib\/mod\.ts/);
    assert.match(out, /lib\/store\/sqlite\/worker\.ts/);
    for (const dir of ['test/', 'bench/', 'scripts/', 'pages/src/']) assert.not.ok(out.includes(ROOT + dir), `${dir} is not published`);
  });
}

test.run();
