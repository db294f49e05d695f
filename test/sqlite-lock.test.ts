// One process per database (lib/store/lock.ts): a second store or server on the same database is
// refused, naming the holder's pid, and touches no file; a lock whose holder is gone (exited, kill -9,
// a reused pid, another boot, a copied directory, an unreadable file) is taken over. With real
// processes: two servers on one SERVICE_P1_DB; four started together on a stale lock; and processes
// released at the same instant on a stale lock, many times over, of which exactly one may win.
// The same file is such a process when WATCHTOWER_LOCK_CHILD names a database path.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { normalise, type RawEvent } from '../lib/event.ts';
import { nodeFs } from '../lib/store/fs.ts';
import { lockDatabase } from '../lib/store/sqlite/lock.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { runServerToExit, startServer, type RunningServer } from './helpers/server.ts';

declare const Deno: { execPath(): string; env: { get(name: string): string | undefined } } | undefined;
const childPath = typeof Deno !== 'undefined' ? Deno.env.get('WATCHTOWER_LOCK_CHILD') : process.env.WATCHTOWER_LOCK_CHILD;

if (childPath) {
  // Takes orders on stdin: `go <database path>` tries the lock and says what happened; `release`
  // lets go of it. The test sends `go` to every such process at once.
  const input = (async function* () {
    let buffered = '';
    for await (const chunk of process.stdin) {
      buffered += chunk;
      for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
        yield buffered.slice(0, i);
        buffered = buffered.slice(i + 1);
      }
    }
  })();
  console.log('ready');
  let lock: Awaited<ReturnType<typeof lockDatabase>> | null = null;
  for await (const order of input) {
    if (order.startsWith('go ')) {
      lock = await lockDatabase(nodeFs, order.slice(3)).catch((err: Error & { pid?: number }) => {
        console.log(`refused ${err.pid} ${err.message}`);
        return null;
      });
      if (lock) console.log('held');
    } else {
      await lock?.release();
      lock = null;
      console.log('released');
    }
  }
  process.exit(0);
}

const dirs: string[] = [];
const tempDb = () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-lock-'));
  dirs.push(dir);
  return join(dir, 'watchtower.sqlite');
};
const running: ChildProcess[] = [];
test.after(() => {
  for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const open = (path: string, log: (m: string) => void = () => {}) => openSqliteStore({ path, retentionDays: 0, quietSnapshotMs: 3_600_000, log });
const ev = (id: string) => normalise({ id, type: 'click' } as RawEvent, { now: Date.now(), owner: 'u' });
const hasProc = existsSync('/proc/self/stat');
const procStart = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[19];
};
const bootId = () => (hasProc ? readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() : null);
const writeLock = (path: string, fields: Record<string, unknown>) =>
  writeFileSync(`${path}.lock`, JSON.stringify({ host: hostname(), boot: bootId(), start: null, since: '2026-05-16T12:00:00.000Z', token: 'planted', ...fields }) + '\n');

/** A process that stays alive until killed. */
function sleeper(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  running.push(child);
  return child;
}
const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
/**
 * Until the kernel no longer runs `pid` (gone, or a zombie not reaped yet): on a loaded machine the
 * child's exit event can come before its process is torn down, and a lock naming a running process
 * is rightly refused.
 */
async function gone(pid: number) {
  for (const until = Date.now() + 5000; Date.now() < until; await new Promise((r) => setTimeout(r, 20))) {
    try {
      process.kill(pid, 0);
      const state = hasProc ? readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] : undefined;
      if (state === 'Z' || state === 'X') return;
    } catch {
      return;
    }
  }
}

test('a second store on the same database is refused while the first is open, and opens once it is closed', async () => {
  const path = tempDb();
  const first = await open(path);
  await first.insert([ev('a')]);
  const refused = await open(path).then(() => null, (err: Error) => err);
  assert.is(refused?.name, 'DatabaseLockedError');
  assert.match(refused!.message, new RegExp(`${path} is already open in this process \\(pid ${process.pid}\\)`));
  await first.close();
  assert.not.ok(existsSync(`${path}.lock`), 'close removes the lock file');
  const second = await open(path);
  assert.equal((await second.list({ userId: 'u', limit: 10 })).events.map((e) => e.id), ['a']);
  await second.close();
});

test('a live holder is refused with its pid, and nothing else is touched; once it is gone its lock is taken over', async () => {
  const path = tempDb();
  const holder = sleeper();
  await new Promise((r) => holder.once('spawn', r));
  writeLock(path, { pid: holder.pid, start: hasProc ? procStart(holder.pid!) : null });
  // What the holder might be writing: start-up would remove it as an unfinished snapshot.
  const inTheMaking = `${path}.tmp-123-abc`;
  writeFileSync(inTheMaking, 'a snapshot being written');
  const refused = await open(path).then(() => null, (err: Error) => err);
  assert.is(refused?.name, 'DatabaseLockedError');
  assert.match(refused!.message, new RegExp(`is in use by process ${holder.pid} \\(since 2026-05-16T12:00:00.000Z\\)`));
  assert.not.match(refused!.message, /\n/, 'one line');
  assert.equal(readdirSync(join(path, '..')).sort(), ['watchtower.sqlite.lock', 'watchtower.sqlite.tmp-123-abc'], 'no other file made or removed');

  holder.kill('SIGKILL');
  await exited(holder);
  await gone(holder.pid!);
  const logs: string[] = [];
  const store = await open(path, (m) => logs.push(m));
  assert.ok(logs.some((l) => l.includes(`took over ${path}.lock from process ${holder.pid}, which is not running`)), logs.join('\n'));
  assert.not.ok(existsSync(inTheMaking), 'with the lock held, start-up removes the unfinished snapshot');
  assert.is(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).pid, process.pid);
  await store.close();
});

test('stale locks: a reused pid, another boot, this very pid (a copied directory), an unreadable file', async () => {
  const alive = sleeper();
  await new Promise((r) => alive.once('spawn', r));
  const stale: [string, Record<string, unknown> | string][] = [
    ['this very pid, not held here (a copied directory)', { pid: process.pid }],
    ['an unreadable lock file (a power loss)', '{"pid":12'],
    ['an empty lock file', ''],
  ];
  if (hasProc) {
    stale.push(['a live pid that started at another time (reused)', { pid: alive.pid, start: '1' }]);
    stale.push(['a live pid of another boot', { pid: alive.pid, start: procStart(alive.pid!), boot: 'another-boot' }]);
  }
  for (const [name, fields] of stale) {
    const path = tempDb();
    if (typeof fields === 'string') writeFileSync(`${path}.lock`, fields);
    else writeLock(path, fields);
    const store = await open(path).catch((err: Error) => assert.unreachable(`${name}: ${err.message}`));
    await store!.close();
  }
});

test('a held lock refuses a real second server with one line naming its pid; after SIGTERM, and after kill -9, the next one starts', async () => {
  const path = tempDb();
  const env = { SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: path, SERVICE_RATE_LIMIT: '0' };
  const post = async (s: RunningServer, id: string) => {
    const res = await fetch(`${s.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-idp-user-id': 'u' }, body: JSON.stringify({ id, type: 'click' }) });
    assert.is(res.status, 200);
  };
  const ids = async (s: RunningServer) =>
    ((await (await fetch(`${s.url}/api/events`, { headers: { 'x-idp-user-id': 'u' } })).json()) as { events: { id: string }[] }).events.map((e) => e.id).sort();

  const first = await startServer(env);
  await post(first, 'one');
  const second = await runServerToExit(env);
  assert.is(second.code, 1, second.output);
  const lines = second.output.trim().split('\n');
  assert.is(lines.length, 1, second.output);
  assert.match(lines[0], new RegExp(`cannot open storage: ${path} is in use by process ${first.child.pid} `));

  assert.is(await first.stop('SIGTERM'), 0);
  const third = await startServer(env);
  assert.equal(await ids(third), ['one']);
  await post(third, 'two');
  await third.stop('SIGKILL');
  assert.ok(existsSync(`${path}.lock`), 'kill -9 leaves the lock file');
  const fourth = await startServer(env);
  assert.match(fourth.output(), new RegExp(`took over ${path}.lock from process ${third.child.pid}`));
  assert.equal(await ids(fourth), ['one', 'two']);
  await fourth.stop('SIGKILL');

  // Four started together on that stale lock: one opens the database, the others name it.
  const runs = await Promise.all([0, 1, 2, 3].map(() => startServer(env).then((s) => ({ s }), (err: Error) => ({ err }))));
  const winners = runs.flatMap((r) => ('s' in r ? [r.s] : []));
  assert.is(winners.length, 1, runs.map((r) => ('err' in r ? r.err.message : 'listening')).join('\n---\n'));
  for (const r of runs) if ('err' in r) assert.match(r.err.message, new RegExp(`(in use by|being opened by) process ${winners[0].child.pid} `));
  assert.equal(await ids(winners[0]), ['one', 'two']);
  assert.is(await winners[0].stop('SIGTERM'), 0);
});

/** Runs this file as a lock-taking process. */
function lockChild() {
  const self = fileURLToPath(import.meta.url);
  const [cmd, args] = typeof Deno !== 'undefined' ? [Deno.execPath(), ['run', '--allow-all', '--no-prompt', self]] : [process.execPath, ['--import', 'tsx', self]];
  const child = spawn(cmd, args, { env: { ...process.env, WATCHTOWER_LOCK_CHILD: '1' }, stdio: ['pipe', 'pipe', 'inherit'] });
  running.push(child);
  let out = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (c) => {
    out += c;
    for (const w of waiters.splice(0)) w();
  });
  const line = async (n: number) => {
    while (out.split('\n').length <= n + 1) await new Promise<void>((r) => waiters.push(r));
    return out.split('\n')[n];
  };
  return { child, line };
}

test('processes released at the same instant on a stale lock: exactly one holds it, every other names it, round after round', async () => {
  const ROUNDS = 30, PROCESSES = 4;
  const children = Array.from({ length: PROCESSES }, () => lockChild());
  try {
    for (const c of children) assert.is(await c.line(0), 'ready');
    for (let round = 0, line = 1; round < ROUNDS; round++, line += 2) {
      const path = tempDb();
      writeLock(path, { pid: 999_999_999 });
      for (const c of children) c.child.stdin!.write(`go ${path}\n`);
      const outcomes = await Promise.all(children.map((c) => c.line(line)));
      const holders = children.filter((_, i) => outcomes[i] === 'held');
      assert.is(holders.length, 1, `round ${round}: ${outcomes.join(' | ')}`);
      for (const o of outcomes) if (o !== 'held') assert.ok(o.startsWith(`refused ${holders[0].child.pid} `), `round ${round}: ${o}`);
      for (const c of children) c.child.stdin!.write('release\n');
      await Promise.all(children.map((c) => c.line(line + 1)));
    }
  } finally {
    for (const c of children) c.child.stdin!.end();
    await Promise.all(children.map((c) => exited(c.child)));
  }
});

test.run();
