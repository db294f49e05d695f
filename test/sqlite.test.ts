// The sqlite store's durability on real files: restart, journal replay after a crash (the files as
// a crash leaves them), a torn last line, replay idempotency, a snapshot interrupted before its
// rename, a corrupt database file, snapshots by journal size and quiet period, retention, ingestion
// during a snapshot, and a database worker that dies.
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats } from '../lib/stats.ts';
import { openSqliteStore, type SqliteStoreOptions } from '../lib/store/sqlite/store.ts';
import type { ThreadMemory } from '../lib/store/sqlite/protocol.ts';
import { databaseFile, growFile, loadSqlJs, readDatabaseFile } from '../lib/store/sqlite/sqljs.ts';
import type { Store } from '../lib/store/types.ts';
import type { Worker } from 'node:worker_threads';
import { RenameHook, SIMULATED_CRASH } from './helpers/hooked-fs.ts';
import { runServerToExit } from './helpers/server.ts';

const dirs: string[] = [];
const stores: Store[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'watchtower-sqlite-'));
  dirs.push(d);
  return d;
};
test.after(async () => {
  await Promise.all(stores.map((s) => s.close().catch(() => {})));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
let n = 0;
const ev = (raw: Partial<RawEvent>, owner: string | null = 'u', at = NOW): StoredEvent =>
  normalise({ type: 'custom', ...raw } as RawEvent, { now: at, owner, newId: () => `s-${++n}` });
const mixed = (count: number, owner = 'u', at = NOW) =>
  Array.from({ length: count }, (_, i) =>
    ev({ type: ['pageload', 'error', 'click', 'feedback'][i % 4], route: `/r${i % 3}`, sessionId: `s${i % 5}`, deployVersion: `v${i % 2}`, data: { duration: i * 7 % 300, rating: (i % 5) + 1 } }, owner, at - i * 60_000));

async function open(path: string, extra: Partial<SqliteStoreOptions> = {}) {
  const logs: string[] = [];
  // A quiet-period snapshot must not run behind a test's back unless the test asks for it.
  const store = await openSqliteStore({ path, retentionDays: 0, quietSnapshotMs: 3_600_000, log: (m) => logs.push(m), ...extra });
  stores.push(store);
  return { store, logs };
}

/** The directory as a crash would leave it: a copy taken while the store is still open. */
function crashCopy(dir: string): string {
  const copy = tempDir();
  cpSync(dir, copy, { recursive: true });
  return copy;
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (const end = Date.now() + timeoutMs; !check(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > end) throw new Error(`not within ${timeoutMs} ms`);
  }
}
const segments = (dir: string) => readdirSync(dir).filter((f) => f.includes('.journal.')).sort();
const all = async (s: Store, userId = 'u') => (await s.list({ userId, limit: 100_000 })).events;

// A table of 4,000-byte blobs, each filled with its row number mod 251: large enough for the file to
// pass 1 MiB and grow in place, and checkable row by row after any copy.
type SqlJs = Awaited<ReturnType<typeof loadSqlJs>>['SQL'];
type Db = InstanceType<SqlJs['Database']>;
const BLOB = 4000;
function fillBlobs(db: Db, from: number, to: number) {
  db.exec('CREATE TABLE IF NOT EXISTS t (i INTEGER PRIMARY KEY, b BLOB); BEGIN');
  const put = db.prepare('INSERT INTO t VALUES (?, ?)');
  for (let i = from; i < to; i++) put.run([i, new Uint8Array(BLOB).fill(i % 251)]);
  put.free();
  db.exec('COMMIT');
}
/** [rows, rows whose blob is intact, integrity_check] of a database's bytes, opened as a new database. */
function checkBlobs(SQL: SqlJs, bytes: Uint8Array): unknown[] {
  const copy = new SQL.Database(bytes.slice());
  try {
    const [[rows, intact]] = copy.exec(`SELECT count(*), sum(length(b) = ${BLOB} AND hex(substr(b, ${BLOB}, 1)) = printf('%02X', i % 251)) FROM t`)[0].values;
    return [rows, intact, copy.exec('PRAGMA integrity_check')[0].values[0][0]];
  } finally {
    copy.close();
  }
}

test('sql.js loads with in-place file growth, and a database grown through it reads back whole', async () => {
  const { SQL, fileGrowth } = await loadSqlJs();
  assert.is(fileGrowth, 'in place', 'the pinned sql.js takes the change; a different version loads stock');
  const db = new SQL.Database();
  // ~12 MiB, so the file crosses 1 MiB and then grows in place many times.
  for (let i = 0; i < 3000; i += 100) fillBlobs(db, i, i + 100);
  assert.equal(checkBlobs(SQL, db.export()), [3000, 3000, 'ok']);
  db.close();
});

test('a database file read by readDatabaseFile becomes the database without a copy and grows in place', async () => {
  const { SQL } = await loadSqlJs();
  const source = new SQL.Database();
  fillBlobs(source, 0, 600);
  const dir = tempDir();
  writeFileSync(join(dir, 'db'), source.export());
  source.close();
  assert.is(await readDatabaseFile(join(dir, 'missing')), null);

  const bytes = (await readDatabaseFile(join(dir, 'db')))!;
  const size = bytes.length;
  assert.ok(size > 2_000_000);
  const db = new SQL.Database(bytes);
  // More rows than the file holds: the buffer read from disk is the one that grew.
  fillBlobs(db, 600, 1200);
  assert.ok(bytes.buffer.byteLength > size * 1.5, `the database's file is the buffer that was read (${bytes.buffer.byteLength} bytes, read ${size})`);
  assert.equal(checkBlobs(SQL, db.export()), [1200, 1200, 'ok']);
  db.close();
});

test('databaseFile: between transactions the file sql.js holds is the whole database, and follows later writes', async () => {
  const { SQL } = await loadSqlJs();
  const db = new SQL.Database();
  db.exec('PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF');
  fillBlobs(db, 0, 500);
  db.exec('DELETE FROM t WHERE i < 100');
  const file = databaseFile(db)!;
  assert.ok(file, 'the pinned sql.js gives its file');
  assert.is(file.length, db.export().length);
  assert.equal(checkBlobs(SQL, file), [400, 400, 'ok']);
  fillBlobs(db, 500, 1500);
  const grown = databaseFile(db)!;
  assert.ok(grown.length > file.length * 2);
  assert.equal(checkBlobs(SQL, grown), [1400, 1400, 'ok']);
  db.close();
});

test('snapshots write the database file itself, not an exported copy, for a new store and for one reopened from a snapshot', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const direct = /^snapshot \(flush\): \d+ events, [\d.]+ MiB, database held \d+ ms, \d+ ms in all$/;
  const { store, logs } = await open(path, { snapshotCopyBytes: 0 });
  await store.insert(mixed(20));
  await store.flush();
  assert.ok(logs.some((l) => direct.test(l)), logs.join('\n'));
  await store.close();
  const { store: again, logs: logsAgain } = await open(path, { snapshotCopyBytes: 0 });
  await again.insert([ev({ id: 'after-reopen' })]);
  await again.flush();
  assert.ok(logsAgain.some((l) => direct.test(l)), logsAgain.join('\n'));
  assert.is((await again.health()).eventCount, 21);
  await again.close();
  // By default a database this small is copied, and reads go on while the copy is written.
  const { store: third, logs: logsThird } = await open(path);
  await third.insert([ev({ id: 'copied' })]);
  const flushed = third.flush();
  const read = third.list({ userId: 'u', limit: 100 });
  await flushed;
  assert.is((await read).events.length, 22);
  assert.ok(logsThird.some((l) => /^snapshot \(flush\): \d+ events, [\d.]+ MiB, a copy written, \d+ ms in all$/.test(l)), logsThird.join('\n'));
  await third.close();
  const { store: last } = await open(path);
  assert.is((await last.health()).eventCount, 22);
});

test('growFile: a large file grows in place, keeping its bytes; a small one is copied', () => {
  const small = growFile(new Uint8Array([1, 2, 3]), 3, 10);
  assert.equal([...small.subarray(0, 3)], [1, 2, 3]);
  assert.ok(small.length >= 10);
  const big = growFile(small, 3, 2 << 20);
  assert.ok(big.length >= 2 << 20);
  assert.equal([...big.subarray(0, 3)], [1, 2, 3]);
  big[big.length - 1] = 9;
  const again = growFile(big, big.length, big.length + 4096);
  assert.is(again, big, 'the same view, now longer: nothing was copied');
  assert.ok(again.length >= big.length && again.length > (2 << 20));
  assert.equal([again[0], again[(2 << 20) - 1]], [1, 9]);
});

test('restart: events, users, counts and stats survive a graceful close; the journal is compacted', async () => {
  const dir = tempDir();
  const path = join(dir, 'nested', 'watchtower.sqlite');
  const { store } = await open(path);
  const events = mixed(40);
  await store.insert(events.slice(0, 25));
  await store.insert(events.slice(25));
  await store.insert([ev({ type: 'click' }, 'someone-else'), ev({ type: 'error' }, null)]);
  await store.upsertUser({ idpUserId: 'u', email: 'u@x.test', displayName: 'U' }, NOW);
  const before = { list: await all(store), stats: await store.stats('u', NOW), health: await store.health() };
  assert.is(before.health.eventCount, 42);
  assert.is(before.health.storage, 'sqlite');
  assert.is(before.health.databasePath, path);
  assert.ok((before.health.databaseBytes as number) > 0);
  assert.ok((before.health.journalBytes as number) > 0, 'everything is in the journal so far');
  await store.close();
  assert.ok(existsSync(path), 'the database file is written (directory created)');
  assert.equal(segments(join(dir, 'nested')).length <= 1, true);

  const { store: again } = await open(path);
  assert.equal(await all(again), before.list);
  assert.equal(await again.stats('u', NOW), before.stats);
  assert.equal(await again.stats('u', NOW), computeStats(events, NOW));
  assert.is((await again.health()).eventCount, 42);
  assert.equal(await again.getUser('u'), { idp_user_id: 'u', email: 'u@x.test', display_name: 'U', last_seen_at: new Date(NOW).toISOString() });
  assert.equal(await again.insert([events[0]]), [], 'still idempotent after a restart');
  await again.close();
});

test('crash: acknowledged events are in the journal and replayed (no snapshot was ever written)', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const { store } = await open(path);
  const events = mixed(30);
  for (let i = 0; i < 30; i += 3) await store.insert(events.slice(i, i + 3));
  await store.upsertUser({ idpUserId: 'u', email: 'a@x.test', displayName: 'A' }, NOW);
  const copy = crashCopy(dir);
  assert.not.ok(existsSync(join(copy, 'watchtower.sqlite')), 'nothing but the journal on disk yet');
  const replayed = segments(copy);
  const { store: after, logs } = await open(join(copy, 'watchtower.sqlite'));
  assert.equal((await all(after)).map((e) => e.id), events.map((e) => e.id).reverse());
  assert.equal(await after.stats('u', NOW), computeStats(events, NOW));
  assert.is((await after.getUser('u'))!.email, 'a@x.test');
  assert.ok(logs.some((l) => /replayed 31 entries/.test(l)), logs.join('\n'));
  // Start-up compacts in the background: the snapshot is written, the segments replayed are gone.
  await until(() => existsSync(join(copy, 'watchtower.sqlite')) && !segments(copy).some((f) => replayed.includes(f)));
  assert.is((await after.health()).journalBytes, 0);
});

test('retention while running: a pruned event sent again is stored again (the worker tells the main thread which keys went)', async () => {
  const { store } = await open(join(tempDir(), 'watchtower.sqlite'), { maxEvents: 20, now: () => NOW });
  const events = mixed(30).reverse();
  for (let i = 0; i < 30; i += 5) await store.insert(events.slice(i, i + 5));
  // A read is answered after the prune that followed the inserts, and after the keys it removed.
  assert.is((await store.health()).eventCount, 20);
  assert.is((await store.insert([events[29], events[0]])).length, 1, 'a kept event is a duplicate, a pruned one is new');
  await store.close();
});

test('start-up applies retention, by count and by age, to the events it replays (their rows are written after it), and its dedupe holds them', async () => {
  const dir = tempDir();
  const { store } = await open(join(dir, 'watchtower.sqlite'));
  // 30 events one minute apart, the newest at NOW, inserted oldest first; all of them only in the journal.
  const events = mixed(30).reverse();
  for (let i = 0; i < 30; i += 5) await store.insert(events.slice(i, i + 5));
  const ids = (list: StoredEvent[]) => list.map((e) => e.id).reverse();

  const byCount = (await open(join(crashCopy(dir), 'watchtower.sqlite'), { maxEvents: 20, now: () => NOW })).store;
  const newest20 = events.slice(10);
  assert.equal(ids(await all(byCount)), newest20.map((e) => e.id));
  assert.equal(await byCount.stats('u', NOW), computeStats(newest20, NOW));
  assert.is((await byCount.health()).eventCount, 20);
  assert.is((await byCount.insert([events[29], events[0]])).length, 1, 'a kept event is a duplicate, a pruned one is new');

  // A day later, less ten minutes: the events received in the last ten minutes before NOW are kept.
  const later = NOW + 86_400_000 - 10 * 60_000 + 30_000;
  const byAge = (await open(join(crashCopy(dir), 'watchtower.sqlite'), { retentionDays: 1, now: () => later })).store;
  const recent = events.filter((e) => Date.parse(e.receivedAt) >= later - 86_400_000);
  assert.is(recent.length, 10);
  assert.equal(ids(await all(byAge)), recent.map((e) => e.id));
  assert.equal(await byAge.stats('u', later), computeStats(recent, later));
  assert.is((await byAge.insert(recent)).length, 0);
});

test('health says where memory goes: the process, each thread\'s heap, and what the worker holds outside its heap, the hot database among it', async () => {
  const dir = tempDir();
  const { store } = await open(join(dir, 'watchtower.sqlite'));
  await store.insert(mixed(200));
  const h = await store.health();
  const { rssBytes, main, worker } = h.memory as { rssBytes: number; main: ThreadMemory; worker: ThreadMemory };
  for (const t of [main, worker]) assert.ok(t.heapUsedBytes > 0 && t.heapUsedBytes <= t.heapTotalBytes, JSON.stringify(t));
  assert.ok(worker.externalBytes >= (h.databaseBytes as number), `${worker.externalBytes} < ${h.databaseBytes}`);
  assert.ok(rssBytes > main.heapUsedBytes + worker.heapUsedBytes);
});

test('torn journal: an unparseable last line is skipped and reported; everything before it is kept', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const { store } = await open(path);
  const events = mixed(10);
  await store.insert(events);
  const copy = crashCopy(dir);
  const [segment] = segments(copy);
  appendFileSync(join(copy, segment), '{"e":{"id":"torn","type":"cli');
  const { store: after, logs } = await open(join(copy, 'watchtower.sqlite'));
  assert.is((await all(after)).length, 10);
  assert.ok(!(await all(after)).some((e) => e.id === 'torn'));
  assert.ok(logs.some((l) => /skipped an unreadable last line 11 .*torn by a crash/.test(l)), logs.join('\n'));
  assert.is(((await after.health()).startup as { tornLinesSkipped: number }).tornLinesSkipped, 1);
});

test('replay is idempotent: a journal replayed twice over a snapshot that already holds it stores each event once', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const { store } = await open(path);
  const events = mixed(12);
  await store.insert(events.slice(0, 6));
  await store.flush();
  await store.insert(events.slice(6));
  const copy = crashCopy(dir);
  // Make the journal hold everything twice, including what the snapshot already has.
  const [segment] = segments(copy);
  const lines = events.map((e) => JSON.stringify({ e }) + '\n').join('');
  writeFileSync(join(copy, segment), lines + lines);
  const { store: after } = await open(join(copy, 'watchtower.sqlite'));
  assert.equal((await all(after)).map((e) => e.id), events.map((e) => e.id).reverse());
  assert.is((await after.health()).eventCount, 12);
  assert.equal(await after.stats('u', NOW), computeStats(events, NOW));
});

test('snapshot interrupted before the rename: the old snapshot is intact, the temp file is ignored and removed', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const hook = new RenameHook(path);
  const { store } = await open(path, { testing: { fs: hook.module() } });
  const events = mixed(8);
  await store.insert(events.slice(0, 4));
  await store.flush();
  const snapshotBefore = readFileSync(path);
  await store.insert(events.slice(4));
  // The snapshot's temp file is written and synced; the rename onto the database file is held.
  hook.arm();
  const flushing = store.flush().then(() => null, (err: Error) => err);
  await hook.held();
  const crashed = crashCopy(dir);
  hook.release('fail');
  const failure = await flushing;
  assert.ok(failure?.message.includes(SIMULATED_CRASH), String(failure));
  assert.equal(readFileSync(path), snapshotBefore, 'the live snapshot was not touched');
  const left = readdirSync(crashed).filter((f) => f.includes('.tmp-'));
  assert.is(left.length, 1, 'the crash left a temp file');
  assert.equal(readFileSync(join(crashed, 'watchtower.sqlite')), snapshotBefore);
  const { store: after, logs } = await open(join(crashed, 'watchtower.sqlite'));
  assert.equal((await all(after)).map((e) => e.id), events.map((e) => e.id).reverse());
  assert.ok(logs.some((l) => /removed an unfinished snapshot/.test(l)), logs.join('\n'));
  // (The reopened store compacts in the background, which may have a temp file of its own.)
  assert.not.ok(existsSync(join(crashed, left[0])));
  // The original store is still usable after a failed snapshot, and its journal was kept.
  await store.insert([ev({ id: 'after-failure' })]);
  const { store: reopened } = await open(join(crashCopy(dir), 'watchtower.sqlite'));
  assert.is((await all(reopened)).length, 9);
});

test('corrupt database file: a clear error naming the file, and the file is not overwritten', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const garbage = new TextEncoder().encode('this is not a sqlite database, it is a shopping list\n'.repeat(200));
  writeFileSync(path, garbage);
  let error: Error | null = null;
  try {
    await openSqliteStore({ path, log: () => {} });
  } catch (err) {
    error = err as Error;
  }
  assert.ok(error, 'opening fails');
  assert.ok(error!.message.includes(path), error!.message);
  assert.match(error!.message, /not a readable SQLite database/);
  assert.equal(new Uint8Array(readFileSync(path)), garbage, 'untouched');
  assert.equal(segments(dir), []);

  // The real server refuses to start on it, naming the file, with a non-zero exit.
  const { code, output } = await runServerToExit({ SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: path, PORT: '0' });
  assert.is(code, 1, output);
  assert.ok(output.includes(path), output);
  assert.equal(new Uint8Array(readFileSync(path)), garbage, 'untouched by the server either');
});

test('snapshots: by journal size (at a pause in writes; at once past 4×) and after a quiet period', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const events = mixed(60);
  // Writes never pause long enough: the hard limit (4× the size) takes the snapshot anyway.
  const hard = await open(join(dir, 'hard', 'watchtower.sqlite'), { journalMaxBytes: 2000, gapSnapshotMs: 3_600_000 });
  for (let i = 0; i < 40; i += 4) await hard.store.insert(events.slice(i, i + 4));
  await hard.store.close(); // the snapshot is logged once its file is in place
  assert.ok(hard.logs.some((l) => /snapshot \(journal size, hard limit\)/.test(l)), hard.logs.join('\n'));

  const { store, logs } = await open(path, { journalMaxBytes: 2000, gapSnapshotMs: 100, quietSnapshotMs: 600 });
  // Past the soft size but under the hard one: the snapshot waits for the pause that follows.
  let k = 0;
  while (((await store.health()).journalBytes as number) < 2000) await store.insert([events[k++]]);
  assert.ok(((await store.health()).journalBytes as number) < 8000);
  await new Promise((r) => setTimeout(r, 400));
  assert.ok(logs.some((l) => /snapshot \(journal size\)/.test(l)), logs.join('\n'));
  await store.insert([events[k++], events[k++]]);
  await new Promise((r) => setTimeout(r, 1200));
  assert.ok(logs.some((l) => /snapshot \(quiet period\)/.test(l)), logs.join('\n'));
  const h = await store.health();
  assert.is(h.journalBytes, 0);
  assert.ok((h.snapshotBytes as number) > 0);
  assert.ok(segments(dir).length <= 1);
  const { store: after } = await open(join(crashCopy(dir), 'watchtower.sqlite'));
  assert.is((await all(after)).length, k);
});

test('retention: oldest pruned first by count and by age, logged, stats still equal computeStats, figures in health', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = NOW;
  const { store, logs } = await open(path, { maxEvents: 20, retentionDays: 2, now: () => clock, retentionIntervalMs: 50 });
  // 30 events one minute apart, inserted oldest first.
  const events = mixed(30).reverse();
  await store.insert(events.slice(0, 15));
  await store.insert(events.slice(15));
  const kept = events.slice(10);
  assert.equal((await all(store)).map((e) => e.id), kept.map((e) => e.id).reverse());
  assert.ok(logs.some((l) => /pruned 10 oldest events beyond SERVICE_MAX_EVENTS=20/.test(l)), logs.join('\n'));
  assert.equal(await store.stats('u', NOW), computeStats(kept, NOW));
  const h = await store.health();
  assert.equal([h.eventCount, h.maxEvents, h.retentionDays, h.prunedEvents], [20, 20, 2, 10]);

  // Two days later: the 10 oldest (received more than 2 days before) go on the next retention run.
  clock = NOW + 2 * 86_400_000 - 10 * 60_000 + 30_000;
  const survivors = kept.filter((e) => Date.parse(e.receivedAt) >= clock - 2 * 86_400_000);
  assert.ok(survivors.length > 0 && survivors.length < kept.length, `survivors ${survivors.length}`);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await all(store)).map((e) => e.id), survivors.map((e) => e.id).reverse());
  assert.ok(logs.some((l) => /received more than 2 days ago/.test(l)), logs.join('\n'));
  assert.equal(await store.stats('u', clock), computeStats(survivors, clock));
  await store.close();
  const { store: after } = await open(path, { maxEvents: 20, retentionDays: 2, now: () => clock });
  assert.equal((await all(after)).map((e) => e.id), survivors.map((e) => e.id).reverse());
  await after.close();

  // The clock's jump was a UTC day change: the survivors were sealed into a segment, which
  // retention drops whole. Two days after the last of them, at start-up, it goes: the stats and the
  // dedupe follow, so a dropped event sent again is stored again.
  clock = Math.max(...survivors.map((e) => Date.parse(e.receivedAt))) + 2 * 86_400_000 + 60_000;
  const { store: restarted, logs: restartLogs } = await open(path, { maxEvents: 20, retentionDays: 2, now: () => clock });
  assert.equal(await all(restarted), []);
  assert.equal(await restarted.stats('u', clock), computeStats([], clock));
  assert.is((await restarted.health()).eventCount, 0);
  assert.ok(restartLogs.some((l) => /received more than 2 days ago/.test(l)), restartLogs.join('\n'));
  assert.is((await restarted.insert([survivors[0]])).length, 1, 'a dropped event is new again');
});

test('a snapshot does not hold up acknowledgements: inserts sent while the worker exports are acknowledged before a read queued behind the export is answered', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const { store } = await open(path);
  // ~40 MB of database, so the export takes far longer than a few journal appends.
  const pad = 'x'.repeat(2000);
  for (let b = 0; b < 20; b++) {
    await store.insert(Array.from({ length: 1000 }, (_, i) => ev({ id: `big-${b}-${i}`, data: { pad } })));
  }
  const order: string[] = [];
  const journals = segments(dir).length;
  const flushing = store.flush().then(() => void order.push('snapshot written'));
  // The snapshot first has the worker write the rows it has counted, then rotates the journal.
  // This insert, sent once the rotation began, is journaled after it, so the worker receives it
  // after the snapshot request.
  await until(() => segments(dir).length > journals);
  await store.insert([ev({ id: 'after-rotation' })]);
  // Sent after that acknowledgement: the worker answers it only once the export is done.
  let answered = false;
  const read = store.list({ userId: 'u', limit: 1 }).then((r) => {
    answered = true;
    order.push('read answered');
    return r.events;
  });
  const during: StoredEvent[] = [];
  while (!answered && during.length < 10_000) {
    const e = ev({ id: `during-${during.length}` });
    assert.is((await store.insert([e])).length, 1);
    during.push(e);
    order.push('ack');
  }
  await flushing;
  const readAt = order.indexOf('read answered');
  assert.ok(readAt >= 3, `inserts were acknowledged while the export ran: ${order.slice(0, 8).join(', ')}`);
  assert.ok(order.indexOf('snapshot written') > readAt, 'the file is written after the export');
  // The read reflects what was acknowledged before it was sent, not the inserts behind it.
  assert.equal((await read).map((e) => e.id), ['after-rotation']);
  assert.equal((await store.list({ userId: 'u', limit: 1 })).events.map((e) => e.id), [during[during.length - 1].id]);
  const { store: after } = await open(join(crashCopy(dir), 'watchtower.sqlite'));
  assert.is((await after.health()).eventCount, 20_001 + during.length);
});

test('a database worker that dies: operations answer StoreUnavailableError instead of hanging; a restart has every acknowledged event', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let worker: Worker | null = null;
  const hook = new RenameHook(path);
  const { store, logs } = await open(path, { testing: { onWorker: (w) => (worker = w), fs: hook.module() } });
  const events = mixed(10);
  await store.insert(events.slice(0, 5));
  // Stop the worker in the middle of a snapshot: its temp file written, the rename held.
  hook.arm();
  const flushing = store.flush().then(() => null, (err: Error) => err);
  await hook.held();
  await worker!.terminate();
  const flushError = await flushing;
  assert.is(flushError?.name, 'StoreUnavailableError', String(flushError));
  const outcomes = await Promise.all([
    store.insert(events.slice(5)),
    store.list({ userId: 'u', limit: 10 }),
    store.stats('u', NOW),
    store.getUser('u'),
    store.upsertUser({ idpUserId: 'u', email: 'u@x.test', displayName: 'U' }, NOW),
    store.health(),
    store.flush(),
  ].map((p) => p.then(() => 'answered', (err: Error) => err.name)));
  assert.equal(outcomes, Array(7).fill('StoreUnavailableError'));
  assert.ok(logs.some((l) => /database worker stopped/.test(l)), logs.join('\n'));
  await store.close();
  const { store: after } = await open(path);
  assert.equal((await all(after)).map((e) => e.id), events.slice(0, 5).map((e) => e.id).reverse());
});

test.run();
