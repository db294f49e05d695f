// The sqlite store's time segments on real files: sealing by size and at a UTC day change, reads
// and statistics across sealed segments, paging with `before` across them, dedupe of a sealed
// event (also after a restart), restart with a journal, a crash copy taken mid-flight, retention
// dropping a whole segment, the dedupe window, the cache closing segments past its budget, and a
// hot segment past its bound sealed at start-up and at close.
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats } from '../lib/stats.ts';
import { nodeFs } from '../lib/store/fs.ts';
import { decodeManifest, encodeManifest, readManifest, readSegment, type Manifest } from '../lib/store/sqlite/manifest.ts';
import { loadSqlJs } from '../lib/store/sqlite/sqljs.ts';
import { openSqliteStore, type SqliteStoreOptions } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import { RenameHook } from './helpers/hooked-fs.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T0 = Date.parse('2026-05-10T06:00:00.000Z');
const dirs: string[] = [];
const stores: Store[] = [];
test.after(async () => {
  await Promise.all(stores.map((s) => s.close().catch(() => {})));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'watchtower-segments-'));
  dirs.push(d);
  return d;
};

let n = 0;
const TYPES = ['pageload', 'error', 'click', 'feedback', 'custom'];
const ev = (at: number, owner = 'u', i = n): StoredEvent =>
  normalise({
    id: `g-${++n}`, type: TYPES[i % 5], route: `/r${i % 3}`, sessionId: `s${i % 6}`, deployVersion: `v${i % 2}`,
    data: { duration: (i * 13) % 400, rating: (i % 5) + 1 },
  } as RawEvent, { now: at, owner });

async function open(path: string, clock: () => number, extra: Partial<SqliteStoreOptions> = {}) {
  const logs: string[] = [];
  const store = await openSqliteStore({
    path, retentionDays: 0, now: clock, quietSnapshotMs: 3_600_000, gapSnapshotMs: 3_600_000, log: (m) => logs.push(m), ...extra,
  });
  stores.push(store);
  return { store, logs };
}

const until = async (cond: () => Promise<boolean> | boolean, what: string, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const segmentsOf = async (store: Store) => (await store.health()).segments as { sealed: number; cacheOpen: number; hotEvents: number };

async function allPages(store: Store, userId: string, limit: number, filter: { since?: number; until?: number } = {}) {
  const out: StoredEvent[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await store.list({ userId, limit, before, ...filter });
    out.push(...page.events);
    if (!page.nextCursor) return out;
    before = page.nextCursor;
  }
}

/**
 * A manifest in the first layout: "WTSEG1\n", the JSON length, the JSON with the windows inside and
 * the parts in base64, the filter. It predates projects: their parts and windows are left out.
 */
function firstLayout(m: Manifest): Uint8Array {
  const { filter, owners, projectWindows: _w, projectsKnown: _k, ...json } = m;
  const v1Owners = Object.fromEntries(Object.entries(owners).map(([o, { count, parts }]) => [o, { count, parts: parts.map((p) => Buffer.from(p).toString('base64')) }]));
  const text = new TextEncoder().encode(JSON.stringify({ ...json, owners: v1Owners }));
  const v1 = new Uint8Array(7 + 4 + text.length + filter.byteLength);
  v1.set(new TextEncoder().encode('WTSEG1\n'));
  new DataView(v1.buffer).setUint32(7, text.length, true);
  v1.set(text, 11);
  v1.set(new Uint8Array(filter.buffer, filter.byteOffset, filter.byteLength), 11 + text.length);
  return v1;
}

/** A manifest in the third layout: "WTSEG3\n", four lengths, JSON, parts, windows, filter; no projects. */
function thirdLayout(m: Manifest): Uint8Array {
  const { filter, owners, windows, projectWindows: _w, projectsKnown: _k, ...rest } = m;
  const parts = Object.values(owners).flatMap((o) => o.parts);
  const json = new TextEncoder().encode(JSON.stringify({ ...rest, owners: Object.fromEntries(Object.entries(owners).map(([o, e]) => [o, { count: e.count, parts: e.parts.map((p) => p.byteLength) }])) }));
  const sections = [json, Buffer.concat(parts), gzipSync(JSON.stringify(windows)), new Uint8Array(filter.buffer, filter.byteOffset, filter.byteLength)];
  const out = new Uint8Array(7 + 16 + sections.reduce((n, b) => n + b.byteLength, 0));
  out.set(new TextEncoder().encode('WTSEG3\n'));
  let at = 23;
  sections.forEach((b, i) => {
    new DataView(out.buffer).setUint32(7 + 4 * i, b.byteLength, true);
    out.set(b, at);
    at += b.byteLength;
  });
  return out;
}

async function checkAll(store: Store, given: StoredEvent[], now: number, label: string) {
  for (const owner of ['u', 'w']) {
    const mine = given.filter((e) => e.user_id === owner);
    assert.equal((await store.list({ userId: owner, limit: 100_000 })).events, [...mine].reverse(), `${label}: ${owner} list`);
    assert.equal(await allPages(store, owner, 7), [...mine].reverse(), `${label}: ${owner} pages of 7`);
    const exported: StoredEvent[] = [];
    for await (const batch of store.export({ userId: owner, batchSize: 9 })) exported.push(...batch);
    assert.equal(exported, mine, `${label}: ${owner} export`);
    const got = await store.stats(owner, now), want = computeStats(mine, now);
    for (const k of Object.keys(want) as (keyof typeof want)[]) assert.equal(got[k], want[k], `${label}: ${owner} stats ${k}`);
    for (const range of [
      { from: T0 + 90 * 60_000 + 12_345, to: T0 + 26 * HOUR + 999 },
      { from: T0 - DAY, to: now + 1 },
      { from: T0 + 20 * HOUR, to: T0 + 30 * HOUR, interval: 'hour' as const },
    ]) {
      assert.equal(await store.stats(owner, now, range), computeStats(mine, now, range), `${label}: ${owner} stats in ${JSON.stringify(range)}`);
      const since = range.from, untilT = range.to;
      assert.equal(await allPages(store, owner, 5, { since, until: untilT }),
        mine.filter((e) => Date.parse(e.receivedAt) >= since && Date.parse(e.receivedAt) < untilT).reverse(), `${label}: ${owner} range pages`);
    }
  }
}

test('seals by size and at a day change; reads, pages, exports and stats cross sealed segments exactly; a restart keeps them', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const { store } = await open(path, () => clock, { sealEvents: 40 });
  const given: StoredEvent[] = [];
  // Two days, an event every 12 minutes, for two owners.
  for (let i = 0; i < 240; i++) {
    clock = T0 + i * 12 * 60_000;
    const batch = [ev(clock, i % 3 ? 'u' : 'w', i)];
    given.push(...batch);
    assert.equal(await store.insert(batch), batch);
    // Seals run in the background; one at a time, so a fast writer can outpace them.
    if (i % 40 === 39) await until(async () => (await segmentsOf(store)).sealed >= 3 || (await segmentsOf(store)).hotEvents < 40, `seal ${i}`);
  }
  await until(async () => (await segmentsOf(store)).sealed >= 3, 'three seals');
  const names = readdirSync(dir);
  assert.ok(names.some((f) => /\.seg-1\.sqlite\.gz$/.test(f)) && names.some((f) => /\.seg-1\.manifest$/.test(f)), names.join(' '));
  const now = clock + 60_000;
  await checkAll(store, given, now, 'live');

  // A sealed event sent again is recognised, now and after a restart.
  assert.is((await store.insert([given[3]])).length, 0, 'a retry of a sealed event');
  // A crash copy taken while the store is open: the journal and whatever is on disk.
  const crashed = tempDir();
  cpSync(dir, crashed, { recursive: true });
  rmSync(join(crashed, 'watchtower.sqlite.lock'), { force: true });
  await store.close();
  for (const p of [path, join(crashed, 'watchtower.sqlite')]) {
    const { store: again } = await open(p, () => now, { sealEvents: 40 });
    await checkAll(again, given, now, `reopened ${p === path ? 'after close' : 'from a crash copy'}`);
    assert.is((await again.insert([given[5], given[200]])).length, 0, 'retries after a restart');
    assert.is((await again.health()).eventCount, given.length);
    await again.close();
  }
});

test('a hot segment past its bound is sealed, not snapshotted whole, by a start-up that replayed it and by close()', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  const now = T0 + HOUR;
  const given = Array.from({ length: 300 }, (_, i) => ev(T0 + i * 1000, 'u', i));
  // The first process never reaches its bound: the events stay hot, and in the journal.
  const { store: first } = await open(path, () => now, { sealEvents: 1_000_000 });
  assert.equal(await first.insert(given), given);
  // As a crash leaves it; its replay takes the hot segment past a bound of 100.
  const crashed = tempDir();
  cpSync(dir, crashed, { recursive: true });
  const { store: replayed, logs } = await open(join(crashed, 'watchtower.sqlite'), () => now, { sealEvents: 100 });
  await until(() => logs.some((l) => /^sealed segment \d+ \(start-up\): 300 events/.test(l)), 'the start-up seal');
  const afterReplay = await segmentsOf(replayed);
  assert.is(afterReplay.sealed, 1);
  assert.is(afterReplay.hotEvents, 0);
  await checkAll(replayed, given, now, 'sealed at start-up');
  await replayed.close();

  // Closed with its 300 events hot; reopened with a bound of 100 and closed at once (no journal to
  // replay, and before the first timer's seal): close() seals them.
  await first.close();
  const { store: bounded, logs: closing } = await open(path, () => now, { sealEvents: 100 });
  assert.is((await segmentsOf(bounded)).hotEvents, 300);
  await bounded.close();
  assert.ok(closing.some((l) => /^sealed segment \d+ \(shutdown\): 300 events/.test(l)), closing.join('\n'));
  const { store: again } = await open(path, () => now, { sealEvents: 100 });
  const afterClose = await segmentsOf(again);
  assert.is(afterClose.sealed, 1);
  assert.is(afterClose.hotEvents, 0);
  await checkAll(again, given, now, 'sealed at shutdown');
  await again.close();
});

test('manifests: parts in binary, windows and filter read only when needed; the first layout still opens', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const { store } = await open(path, () => clock, { sealEvents: 30 });
  const given: StoredEvent[] = [];
  for (let i = 0; i < 100; i++) {
    clock = T0 + i * 25 * 60_000;
    const batch = [ev(clock, i % 3 ? 'u' : 'w', i)];
    given.push(...batch);
    await store.insert(batch);
    if (i % 30 === 29) await until(async () => (await segmentsOf(store)).hotEvents < 30, `seal ${i}`);
  }
  await until(async () => (await segmentsOf(store)).sealed >= 2, 'two seals');
  const now = clock + 60_000;
  await store.close();

  const manifests = readdirSync(dir).filter((f) => f.endsWith('.manifest')).map((f) => join(dir, f));
  assert.ok(manifests.length >= 2, manifests.join(' '));
  const { SQL } = await loadSqlJs();
  for (const file of manifests) {
    const bytes = new Uint8Array(readFileSync(file));
    const full = await decodeManifest(bytes, file);
    assert.ok(Object.keys(full.windows).length > 0, 'a manifest holds its windows');
    assert.ok(full.filter.length > 0, 'and its key filter');
    assert.equal(await encodeManifest(full), bytes, 'encodes back to the same bytes');
    const id = Number(/seg-(\d+)\./.exec(file)![1]);
    // The bounds a seal takes from what inserts tracked are those of the rows it wrote.
    const db = new SQL.Database(await readSegment(nodeFs, path, id));
    const [minSeq, maxSeq, minReceived, maxReceived, count] = db.exec('SELECT MIN(seq), MAX(seq), MIN(received_at), MAX(received_at), COUNT(*) FROM events')[0].values[0];
    db.close();
    assert.equal(
      [full.minSeq, full.maxSeq, full.minReceived, full.maxReceived, full.count, full.bytes > 0],
      [minSeq, maxSeq, Date.parse(minReceived as string), Date.parse(maxReceived as string), count, true],
      `bounds of segment ${id}`,
    );
    const lean = await readManifest(nodeFs, path, id, { windows: false, filter: () => false });
    assert.equal(lean, { ...full, windows: {}, projectWindows: null, filter: new Float64Array(0) }, 'windows and filter skipped');
    const withFilter = await readManifest(nodeFs, path, id, { windows: false, filter: (m) => m.id === id });
    assert.equal(withFilter, { ...full, windows: {}, projectWindows: null }, 'the filter asked for by the bounds');
    assert.equal(await readManifest(nodeFs, path, id, { windows: true, filter: () => true }), full);
    const v1 = firstLayout(full);
    writeFileSync(file, v1);
    const withoutProjects = { ...full, owners: Object.fromEntries(Object.entries(full.owners).map(([o, e]) => [o, { ...e, projects: {} }])), projectWindows: null, projectsKnown: false };
    assert.equal(await decodeManifest(v1, file), withoutProjects, 'the first layout decodes the same, without projects');
    assert.equal(await readManifest(nodeFs, path, id, { windows: false, filter: () => false }), { ...withoutProjects, windows: {}, filter: new Float64Array(0) }, 'and reads the same');
  }
  const { store: again } = await open(path, () => now, { sealEvents: 30 });
  await checkAll(again, given, now, 'reopened from first-layout manifests');
  assert.is((await again.insert([given[2], given[70]])).length, 0, 'retries after the restart');
  await again.close();
});

test('retention drops whole sealed segments past SERVICE_RETENTION_DAYS, their files, rollups and keys', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const { store } = await open(path, () => clock, { retentionDays: 2, retentionIntervalMs: 20 });
  const given: StoredEvent[] = [];
  for (let day = 0; day < 3; day++) {
    for (let i = 0; i < 30; i++) {
      clock = T0 + day * DAY + i * 20 * 60_000;
      const batch = [ev(clock, i % 4 ? 'u' : 'w', i)];
      given.push(...batch);
      await store.insert(batch);
    }
    // Each new day seals the previous one; `sealed` counts a seal once it has begun, `lastSeal` once
    // its manifest is written (on a loaded machine the two are seconds apart).
    await until(async () => ((await store.health()).segments as { lastSeal: { segment: number } | null }).lastSeal?.segment === day || day === 0, `seal of day ${day - 1}`);
  }
  assert.ok(existsSync(`${path}.seg-1.manifest`));
  // Day 0 falls out of the 2-day window once its last event is 2 days old.
  clock = T0 + 2 * DAY + 12 * HOUR;
  await until(() => !existsSync(`${path}.seg-1.manifest`) && !existsSync(`${path}.seg-1.sqlite.gz`), 'segment 1 and its file dropped');
  assert.ok(existsSync(`${path}.seg-2.manifest`), 'segment 2 stays');
  const kept = given.filter((e) => Date.parse(e.receivedAt) >= T0 + DAY);
  const now = clock;
  for (const owner of ['u', 'w']) {
    const mine = kept.filter((e) => e.user_id === owner);
    assert.equal((await store.list({ userId: owner, limit: 1000 })).events, [...mine].reverse(), `${owner}: list after the drop`);
    assert.equal(await store.stats(owner, now), computeStats(mine, now), `${owner}: stats after the drop`);
  }
  assert.is((await store.health()).eventCount, kept.length);
  // A dropped event sent again is stored again (its key went with the segment).
  const resent = { ...given[0], receivedAt: new Date(clock).toISOString(), received_at: new Date(clock).toISOString() };
  assert.is((await store.insert([resent])).length, 1);
  await store.close();
  const { store: again } = await open(path, () => now, { retentionDays: 2 });
  assert.is((await again.health()).eventCount, kept.length + 1, 'the drop survives a restart');
  assert.not.ok(existsSync(`${path}.seg-1.manifest`));
  await again.close();
});

test('a retry is caught for the whole dedupe window, across sealed segments and a restart, and stored again past it', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const at = (t: number, e: StoredEvent): StoredEvent => ({ ...e, receivedAt: new Date(t).toISOString(), received_at: new Date(t).toISOString() });
  const options = { dedupeDays: 3, retentionIntervalMs: 20 };
  const { store } = await open(path, () => clock, options);
  const first = Array.from({ length: 20 }, (_, i) => ev(T0 + i * 1000, 'u', i));
  assert.is((await store.insert(first)).length, 20);
  // One event a day afterwards: each day change seals the day before.
  for (let day = 1; day <= 2; day++) {
    clock = T0 + day * DAY;
    await store.insert([ev(clock, 'u', day)]);
    await until(async () => (await segmentsOf(store)).sealed >= day, `seal of day ${day - 1}`);
  }
  const filterBytes = async (s: Store) => ((await s.health()).segments as { dedupeFilterBytes: number }).dedupeFilterBytes;
  assert.ok((await filterBytes(store)) >= 8 * 20, 'sealed keys are held as 8-byte hashes');
  // 2.5 days after the first events, inside the 3-day window: retries of sealed events are refused,
  // events never sent are not.
  clock = T0 + 2 * DAY + 12 * HOUR;
  assert.is((await store.insert(first.slice(0, 5).map((e) => at(clock, e)))).length, 0, 'retries within the window');
  assert.is((await store.insert([ev(clock, 'u', 99), ev(clock, 'w', 98)])).length, 2, 'new events');
  await store.close();
  const { store: again } = await open(path, () => clock, options);
  assert.is((await again.insert(first.slice(5, 10).map((e) => at(clock, e)))).length, 0, 'retries within the window, after a restart');
  // Past the window (3 days after the first day's last event), its keys are no longer checked: the
  // documented limit. The other days' keys still are.
  clock = T0 + 3 * DAY + 2 * HOUR;
  await until(async () => (await filterBytes(again)) < 8 * 20, 'the first day\'s filter leaves the window');
  assert.is((await again.insert([at(clock, first[10])])).length, 1, 'a retry past the window is stored again');
  await again.close();
});

test('sealed segments open on demand and close past the cache budget', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const { store } = await open(path, () => clock, { sealEvents: 30, cacheMb: 0.2 });
  const given: StoredEvent[] = [];
  for (let i = 0; i < 300; i++) {
    clock = T0 + i * 60_000;
    const batch = [ev(clock, 'u', i)];
    given.push(...batch);
    await store.insert(batch);
    if (i % 30 === 29) await until(async () => (await segmentsOf(store)).hotEvents < 30, `seal ${i}`);
  }
  await until(async () => (await segmentsOf(store)).sealed >= 6, 'six seals');
  await store.close();
  const { store: again } = await open(path, () => clock, { cacheMb: 0.2 });
  assert.is((await segmentsOf(again)).cacheOpen, 0, 'nothing open at start');
  assert.equal(await allPages(again, 'u', 11), [...given].reverse());
  const s = await segmentsOf(again);
  assert.ok(s.cacheOpen >= 1 && s.cacheOpen < s.sealed, `some open, not all: ${JSON.stringify(s)}`);
  await again.close();
});

test('stats over ranges that end in the past: recents from the rows newest first, equal to computeStats across segments', async () => {
  // The live window cannot answer a range that ends before the newest event; the recents then come
  // from rows, each list read until it holds what the range has. Lists full (more than 20 events,
  // 50 errors and 100 pageloads of a route in range), a rare route short of 100, sealed segments.
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const { store } = await open(path, () => clock, { sealEvents: 300 });
  const given: StoredEvent[] = [];
  for (let i = 0; i < 2400; i += 100) {
    const batch = Array.from({ length: 100 }, (_, k) => {
      const j = i + k;
      const raw = j % 4 === 0 ? { type: 'error', message: `boom ${j % 7}` }
        : j % 4 === 1 ? { type: 'pageload', route: j % 37 === 1 ? '/rare' : `/r${j % 3}`, data: { duration: (j * 7) % 900, ttfb: j % 50 } }
        : { type: j % 2 ? 'click' : 'custom' };
      return normalise({ id: `past-${j}`, sessionId: `s${j % 11}`, deployVersion: `v${j % 2}`, ...raw } as RawEvent, { now: T0 + j * 60_000, owner: 'u' });
    });
    clock = T0 + (i + 99) * 60_000;
    assert.equal(await store.insert(batch), batch);
    given.push(...batch);
    await until(async () => (await segmentsOf(store)).hotEvents < 300, `seal after ${i}`);
  }
  await until(async () => (await segmentsOf(store)).sealed >= 6, 'six seals');
  const now = clock + 60_000;
  for (const range of [
    { from: T0, to: T0 + 30 * HOUR },
    { from: T0 + 3 * HOUR + 17_000, to: T0 + 30 * HOUR + 1234 },
    { from: T0 + 10 * HOUR, to: T0 + 11 * HOUR, interval: 'hour' as const },
    { from: T0 - DAY, to: now - 10 * 60_000 },
    { from: T0 + 38 * HOUR, to: now - 60_000 },
  ]) {
    const got = await store.stats('u', now, range), want = computeStats(given, now, range);
    assert.equal(got, want, JSON.stringify(range));
  }
  // What the first range exercises: every list full but the rare route's points.
  const first = computeStats(given, now, { from: T0, to: T0 + 30 * HOUR });
  assert.is(first.recentErrors.length, 50);
  assert.is(first.latencyByRoute['/r0'].points.length, 100);
  const rare = first.latencyByRoute['/rare'];
  assert.ok(rare.count > 0 && rare.count < 100 && rare.points.length === rare.count, JSON.stringify(rare.count));
  await store.close();
});

test('segments sealed before project statistics: a project\'s stats read their rows until idle time rolls up their parts, then the parts', async () => {
  const dir = tempDir();
  const path = join(dir, 'watchtower.sqlite');
  let clock = T0;
  const { store } = await open(path, () => clock, { sealEvents: 60 });
  const given: StoredEvent[] = [];
  for (let i = 0; i < 420; i += 20) {
    const batch = Array.from({ length: 20 }, (_, k) => {
      const e = ev(T0 + (i + k) * 7 * 60_000, (i + k) % 5 ? 'u' : 'w', i + k);
      return (i + k) % 3 ? { ...e, projectId: String(1 + ((i + k) % 2)) } : e;
    });
    clock = T0 + (i + 19) * 7 * 60_000;
    assert.equal(await store.insert(batch), batch);
    given.push(...batch);
    await until(async () => (await segmentsOf(store)).hotEvents < 60, `seal after ${i}`);
  }
  await until(async () => (await segmentsOf(store)).sealed >= 6, 'six seals');
  const now = clock + 60_000;
  await store.close();
  // As stores from before project statistics left them: manifests in the third and first layouts.
  const manifests = readdirSync(dir).filter((f) => f.endsWith('.manifest')).map((f) => join(dir, f)).sort();
  const originals = new Map<string, Manifest>();
  for (const [i, file] of manifests.entries()) {
    const m = await decodeManifest(new Uint8Array(readFileSync(file)), file);
    assert.ok(Object.values(m.owners).some((o) => Object.keys(o.projects).length > 0), 'sealed with its projects\' parts');
    originals.set(file, m);
    writeFileSync(file, i % 2 ? thirdLayout(m) : firstLayout(m));
  }

  const check = async (s: Store, label: string) => {
    for (const owner of ['u', 'w']) {
      for (const projectId of ['1', '2', '3']) {
        const mine = given.filter((e) => e.user_id === owner && e.projectId === projectId);
        const stats = await s.stats(owner, now, undefined, projectId);
        assert.equal(stats, computeStats(mine, now), `${label}: ${owner} project ${projectId}`);
        for (const range of [{ from: T0 + 5 * HOUR + 1234, to: T0 + 30 * HOUR }, { from: T0 - DAY, to: now - 3 * HOUR, interval: 'hour' as const }]) {
          assert.equal(await s.stats(owner, now, range, projectId), computeStats(mine, now, range), `${label}: ${owner} project ${projectId} ${JSON.stringify(range)}`);
        }
        assert.equal((await s.list({ userId: owner, projectId, limit: 1000 })).events, [...mine].reverse(), `${label}: list`);
      }
    }
  };
  // The backfill starts with the newest segment; its manifest's rename is held, so every sealed
  // segment is still without its projects' parts while the first checks run.
  const newestManifest = manifests.reduce((a, b) => (Number(/seg-(\d+)\./.exec(a)![1]) > Number(/seg-(\d+)\./.exec(b)![1]) ? a : b));
  const hook = new RenameHook(newestManifest);
  hook.arm();
  const { store: upgraded, logs } = await open(path, () => now, { sealEvents: 60, testing: { fs: hook.module() } });
  await hook.held();
  assert.is(((await upgraded.health()).segments as { projectsPending: number }).projectsPending, (await segmentsOf(upgraded)).sealed);
  await check(upgraded, 'read from rows');
  hook.release();
  await until(async () => ((await upgraded.health()).segments as { projectsPending: number }).projectsPending === 0, 'the backfill');
  assert.ok(logs.some((l) => /projects' statistics rolled up from its rows \(\d+ events in 4 projects\)/.test(l)), logs.join('\n'));
  await check(upgraded, 'backfilled');
  await upgraded.close();
  for (const file of manifests) {
    // The same parts as the seal wrote, rolled up again from the rows; windows and filter kept.
    const m = await decodeManifest(new Uint8Array(readFileSync(file)), file);
    const original = originals.get(file)!;
    assert.equal({ ...m, projectWindows: null }, { ...original, projectWindows: null }, `${file}: the projects' parts, the rest unchanged`);
    assert.is(m.projectWindows, null);
  }
  const { store: again } = await open(path, () => now, { sealEvents: 60 });
  assert.is(((await again.health()).segments as { projectsPending: number }).projectsPending, 0);
  await check(again, 'reopened');
  await again.close();
});

test.run();
