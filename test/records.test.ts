// Record stores (lib/records/): the contract on memory, the file store and PostgreSQL; the file
// store across a restart, a kill -9 mid-write and every state a power loss could leave.
import { spawn } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { CorruptRecordsError, openFileRecords, openSqliteRecords } from '../lib/records/file.ts';
import { openPostgresRecords, RECORDS_MIGRATIONS } from '../lib/records/postgres.ts';
import { nodeFs } from '../lib/store/fs.ts';
import { creationTime, type RecordStore } from '../lib/records/types.ts';
import { recordsContract } from './records-contract.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';
import { enumerateCrashStates } from './helpers/crash-states.ts';
import { createLog, createStoreFs, mark, readLog, type LogEntry } from './helpers/recording-fs.ts';
import { ROOT } from './helpers/server.ts';

declare const Deno: unknown;

const root = mkdtempSync(join(tmpdir(), 'watchtower-records-'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => join(root, `d${++n}`);

recordsContract('memory', async () => createMemoryRecords());
// A tiny compaction threshold, so the contract also runs across rewrites of the log.
recordsContract('file', async () => openFileRecords({ dir: freshDir(), fs: nodeFs, compactAtBytes: 200 }));

const pgReason = await unavailableReason();
if (pgReason === null) {
  recordsContract('postgres', async () => {
    const db = await createTestDatabase();
    const store = await openPostgresRecords({ url: db.url, connectTimeout: 3 });
    const close = store.close.bind(store);
    return Object.assign(store, { close: async () => { await close(); await db.drop(); } });
  });
  test('postgres records: migrations are applied once, by concurrent openers too', async () => {
    const db = await createTestDatabase();
    try {
      const stores = await Promise.all([1, 2, 3].map(() => openPostgresRecords({ url: db.url })));
      await stores[0].put([{ kind: 'project', id: '7', userId: 'a', body: { name: 'x' } }]);
      assert.equal((await stores[2].get('project', '7', 'a'))?.body, { name: 'x' });
      await Promise.all(stores.map((s) => s.close()));
      const versions = await db.query((sql) => sql`select version from watchtower_records_migrations order by version`);
      assert.equal(versions.map((r) => r.version), RECORDS_MIGRATIONS.map((m) => m.version));
      const again = await openPostgresRecords({ url: db.url });
      assert.equal((await again.find('project', '7'))?.userId, 'a', 'reopened: the records are there');
      await again.close();
    } finally {
      await db.drop();
    }
  });
} else if (REQUIRE_POSTGRES) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(pgReason));
} else {
  console.log(`PostgreSQL record store tests skipped: ${pgReason}`);
}

test('creationTime: a millisecond after the newest existing record; records without a readable time do not count (no 500)', () => {
  assert.is(creationTime(1000, []), new Date(1000).toISOString());
  assert.is(creationTime(1000, [new Date(5000).toISOString()]), new Date(5001).toISOString());
  assert.is(creationTime(1000, [undefined, 'not a time', new Date(2000).toISOString()]), new Date(2001).toISOString());
});

test('file records survive a restart; a torn last line is cut off; damage before valid lines fails loudly', async () => {
  const path = join(freshDir(), 'watchtower.sqlite');
  mkdirSync(join(path, '..'), { recursive: true });
  let s: RecordStore = await openSqliteRecords({ path });
  await s.put([{ kind: 'project', id: '1', userId: 'a', body: { name: 'one' } }, { kind: 'project', id: '2', userId: 'a', body: { name: 'two' } }]);
  await s.put([{ kind: 'project', id: '1', userId: 'a', body: { name: 'uno' } }]);
  assert.ok(await s.delete('project', '2', 'a'));
  await s.putBlob('map/1', new Uint8Array([1, 2, 3]));
  await s.close();

  const log = join(path + '.records', 'records.log');
  writeFileSync(log, readFileSync(log, 'utf8') + '{"put":[["project","3","a",{"name":"thr');
  s = await openSqliteRecords({ path });
  assert.equal((await s.list('project', 'a')).map((r) => [r.id, r.body]), [['1', { name: 'uno' }]]);
  assert.equal(await s.getBlob('map/1'), new Uint8Array([1, 2, 3]));
  await s.put([{ kind: 'project', id: '4', userId: 'a', body: { name: 'four' } }]);
  await s.close();
  s = await openSqliteRecords({ path });
  assert.equal((await s.list('project', 'a')).map((r) => r.id).sort(), ['1', '4'], 'the torn line was cut off before the next append');
  await s.close();

  writeFileSync(log, 'not json\n' + readFileSync(log, 'utf8'));
  try {
    await openSqliteRecords({ path });
    assert.unreachable('a damaged log must not open');
  } catch (err) {
    assert.instance(err, CorruptRecordsError);
  }
});

test('file records: kill -9 while writing keeps every acknowledged put', async () => {
  const dir = freshDir();
  const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
  const child = spawn(node, ['--import', 'tsx', 'test/helpers/records-writer.ts', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise((resolve) => child.on('close', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the writer acknowledged too little in 30 s: ${out.slice(-200)} ${err}`)), 30_000);
    child.stdout.on('data', (c) => {
      out += c;
      if ((out.match(/\n/g)?.length ?? 0) >= 300) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  child.kill('SIGKILL');
  await exited;
  const acked = Math.max(...[...out.matchAll(/acked (\d+)\n/g)].map((m) => Number(m[1])));
  const s = await openFileRecords({ dir, fs: nodeFs, compactAtBytes: 4096 });
  try {
    for (let i = 1; i <= acked; i++) {
      const body = (await s.get<{ i: number; again?: boolean }>('k', `r${i}`, 'u'))?.body;
      assert.is(body?.i, i, `record r${i} (acknowledged) is there`);
      if (i % 2 === 1 && i < acked) assert.ok(body?.again, `r${i} holds its acknowledged replacement`);
    }
  } finally {
    await s.close();
  }
});

test('file records: every state a power loss could leave opens with every acknowledged change', async () => {
  const recorded = freshDir();
  mkdirSync(recorded);
  const log = createLog(8 << 20);
  const fs = createStoreFs({ log });
  // Every change in order, with what each record or blob holds after it (null: gone).
  const history: { target: string; value: unknown }[] = [];
  const change = async (target: string, value: unknown, op: () => Promise<unknown>) => {
    history.push({ target, value });
    await op();
    mark(log, { acked: history.length - 1 });
  };
  const put = (s: RecordStore, id: string, body: unknown) => change(`r:${id}`, body, () => s.put([{ kind: 'k', id, userId: 'u', body }]));
  const blob = (s: RecordStore, key: string, bytes: number[] | null) =>
    change(`b:${key}`, bytes, () => (bytes ? s.putBlob(key, new Uint8Array(bytes)) : s.deleteBlob(key)));

  let s = await openFileRecords({ dir: recorded, fs, compactAtBytes: 300 });
  await put(s, 'a', { v: 1 });
  await change('r:b', { v: 1 }, () => s.put([{ kind: 'k', id: 'b', userId: 'u', body: { v: 1 } }, { kind: 'k', id: 'c', userId: 'u', body: { v: 1 } }]).then(() => history.push({ target: 'r:c', value: { v: 1 } })));
  await blob(s, 'm1', [1, 2, 3]);
  await put(s, 'a', { v: 2 });
  await change('r:b', null, () => s.delete('k', 'b', 'u'));
  for (let i = 3; i < 9; i++) await put(s, 'a', { v: i, pad: 'p'.repeat(40) }); // past 300 bytes: compactions
  await blob(s, 'm1', [4, 5]);
  await blob(s, 'm2', [6]);
  await blob(s, 'm2', null);
  await s.close();
  s = await openFileRecords({ dir: recorded, fs, compactAtBytes: 300 });
  await put(s, 'd', { v: 1 });
  await s.close();
  const trace: LogEntry[] = readLog(log);
  assert.ok(trace.some((e) => e.op === 'rename'), 'the workload compacted the log');

  const { states } = enumerateCrashStates(trace, { samples: 2, seed: 7 });
  const failures: string[] = [];
  for (const [k, state] of states.entries()) {
    let lastAcked = -1;
    for (let i = 0; i <= state.after; i++) {
      const e = trace[i];
      if (e.op === 'mark') lastAcked = (e.mark as { acked: number }).acked;
    }
    const dir = join(root, `state-${k}`);
    mkdirSync(dir);
    for (const [name, file] of state.files) {
      if (file.linkOf) linkSync(join(dir, file.linkOf), join(dir, name));
      else writeFileSync(join(dir, name), file.bytes);
    }
    try {
      const opened = await openFileRecords({ dir, fs: nodeFs, compactAtBytes: 300 });
      for (const target of new Set(history.map((h) => h.target))) {
        // The value of the last acknowledged change, or of a change made after it (in flight at the crash).
        const indexes = history.map((h, i) => (h.target === target ? i : -1)).filter((i) => i >= 0);
        const acked = indexes.filter((i) => i <= lastAcked).pop();
        const allowed = indexes.filter((i) => acked === undefined || i >= acked).map((i) => history[i].value);
        if (acked === undefined) allowed.push(null);
        const [kind, id] = target.split(':');
        const got = kind === 'r' ? (await opened.get('k', id, 'u'))?.body ?? null : ((b) => (b ? [...b] : null))(await opened.getBlob(id));
        if (!allowed.some((v) => JSON.stringify(v) === JSON.stringify(got))) {
          failures.push(`after entry ${state.after}, ${state.variant}: ${target} is ${JSON.stringify(got)}, expected one of ${JSON.stringify(allowed)}`);
        }
      }
      await opened.close();
    } catch (err) {
      failures.push(`after entry ${state.after}, ${state.variant}: open failed: ${(err as Error).message}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(`  records power loss: ${trace.length} trace entries, ${states.length} distinct crash states checked`);
  assert.equal(failures.slice(0, 5), [], `${failures.length} of ${states.length} states failed`);
});

test('file records: a write that fails half-way is cut off, so the next change and a reopen are whole; one that cannot be cut off stops changes', async () => {
  // A disk that fills up: the chosen append writes half its bytes, then fails (ENOSPC), as write(2) can.
  let failAppends = 0, failTruncates = 0;
  const full = Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
  const fs: typeof nodeFs = {
    ...nodeFs,
    async open(path, how) {
      const file = await nodeFs.open(path, how);
      return {
        get size() { return file.size; },
        async append(bytes) {
          if (failAppends > 0) {
            failAppends--;
            await file.append(bytes.subarray(0, bytes.length >> 1));
            throw full;
          }
          return file.append(bytes);
        },
        async truncate(size) {
          if (failTruncates > 0) {
            failTruncates--;
            throw full;
          }
          return file.truncate(size);
        },
        sync: () => file.sync(),
        close: () => file.close(),
      };
    },
  };
  const dir = freshDir();
  const store = await openFileRecords({ dir, fs });
  await store.put([{ kind: 'k', id: 'a', userId: 'u', body: { n: 1 } }]);
  failAppends = 1;
  await rejects(() => store.put([{ kind: 'k', id: 'b', userId: 'u', body: { n: 2 } }]));
  assert.is(await store.get('k', 'b', 'u'), null, 'a failed put is not visible');
  await store.put([{ kind: 'k', id: 'c', userId: 'u', body: { n: 3 } }]);
  await store.close();

  const reopened = await openFileRecords({ dir, fs: nodeFs });
  assert.equal((await reopened.get<{ n: number }>('k', 'a', 'u'))?.body, { n: 1 });
  assert.is(await reopened.get('k', 'b', 'u'), null);
  assert.equal((await reopened.get<{ n: number }>('k', 'c', 'u'))?.body, { n: 3 }, 'the change after the failure was not lost behind half a line');
  await reopened.close();

  // The failed bytes cannot be cut off either: the log's end is unknown, so no change is taken.
  const broken = await openFileRecords({ dir, fs });
  failAppends = 1;
  failTruncates = 1;
  await rejects(() => broken.put([{ kind: 'k', id: 'd', userId: 'u', body: null }]));
  await rejects(() => broken.put([{ kind: 'k', id: 'e', userId: 'u', body: null }]), /could not be undone/);
  await broken.close();
});

/** Fails unless `op` rejects, with a message matching `pattern` when one is given. */
async function rejects(op: () => Promise<unknown>, pattern?: RegExp) {
  let error: unknown = null;
  try {
    await op();
  } catch (err) {
    error = err;
  }
  assert.ok(error, 'expected a rejection');
  if (pattern) assert.match((error as Error).message, pattern);
}

test.run();
