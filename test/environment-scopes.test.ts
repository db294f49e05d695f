// Rollups per environment (lib/environment-scopes.ts): statistics of one environment come from
// them, equal computeStats over its events over random ranges across sealed segments and the hot
// one, after a restart and after kill -9; an owner keeps at most MAX_ENVIRONMENT_SCOPES names and a
// name beyond them is still answered exactly (from its events); a store sealed before environments
// had scopes answers exactly too, from rollups for ranges after its old segments.
// The same file is the child of the kill -9 test when WATCHTOWER_ENV_KILL_CHILD names a database.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isEnvironmentKey, MAX_ENVIRONMENT_SCOPES } from '../lib/environment-scopes.ts';
import { normalise, type StoredEvent } from '../lib/event.ts';
import { computeStats, type StatsRange } from '../lib/stats.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { decodeManifest, writeManifest } from '../lib/store/sqlite/manifest.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { nodeFs } from '../lib/store/fs.ts';
import type { Store } from '../lib/store/types.ts';
import { app } from './helpers/app.ts';
import { randomRanges } from './helpers/ranges.ts';

declare const Deno: { execPath(): string; env: { get(name: string): string | undefined } } | undefined;
const env = (name: string) => (typeof Deno !== 'undefined' ? Deno.env.get(name) : process.env[name]);

const HOUR = 3_600_000;
const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const ENVS = ['production', 'production', 'staging', 'qa', undefined];

/** Seeded events over the `hours` before `end`, most with an environment, some in project `p1`. */
function events(n: number, end: number, hours: number, seed: number, envs: (string | undefined)[] = ENVS, idPrefix = 'e'): StoredEvent[] {
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x80000000);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const out: StoredEvent[] = [];
  for (let i = 0; i < n; i++) {
    const type = pick(['pageload', 'pageload', 'error', 'click', 'custom']);
    const at = end - hours * HOUR + Math.floor(((i + 1) / n) * hours * HOUR) - 1;
    const e = normalise({
      type, sessionId: `s${Math.floor(rand() * 40)}`, environment: pick(envs), route: pick(['/', '/a', '/b']),
      name: type === 'custom' ? 'buy' : undefined, data: type === 'pageload' ? { duration: Math.floor(rand() * 900) } : {},
    }, { now: at, owner: rand() < 0.9 ? 'alice' : 'bob', newId: () => `${idPrefix}-${i}` });
    if (rand() < 0.5) e.projectId = 'p1';
    out.push(e);
  }
  return out;
}

const json = (x: unknown) => JSON.parse(JSON.stringify(x));

/** Each environment's statistics from rollups (never null here) against computeStats over its events. */
async function checkFromRollups(store: Store, all: StoredEvent[], now: number, rs: (StatsRange | undefined)[], label: string) {
  for (const range of rs) {
    for (const projectId of [undefined, 'p1']) {
      for (const environment of ['production', 'staging', 'qa', 'nowhere']) {
        const mine = all.filter((e) => e.user_id === 'alice' && e.environment === environment && (projectId === undefined || e.projectId === projectId));
        const got = await store.statsOfEnvironment!('alice', now, range, projectId, environment);
        assert.ok(got, `${label}: ${environment} ${projectId} ${JSON.stringify(range)} from rollups`);
        assert.equal(json(got), json(computeStats(mine, now, range)), `${label}: ${environment} ${projectId} ${JSON.stringify(range)}`);
      }
    }
  }
}

/** Inserts in batches; with `sealEvents`, waiting for the background seals a fast writer would outpace. */
async function insertAll(store: Store, all: StoredEvent[], batch: number, sealEvents?: number) {
  for (let i = 0; i < all.length; i += batch) {
    await store.insert(all.slice(i, i + batch));
    if (sealEvents === undefined) continue;
    const hot = async () => ((await store.health()).segments as { hotEvents: number }).hotEvents;
    for (const end = Date.now() + 10_000; (await hot()) >= sealEvents && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  }
}

const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `watchtower-${name}-`));
const sealedCount = async (store: Store) => ((await store.health()).segments as { sealed: number }).sealed;

const childPath = env('WATCHTOWER_ENV_KILL_CHILD');
if (childPath) {
  // The kill -9 child: inserts batches of environments' events, sealing every 50, until killed.
  const store = await openSqliteStore({ path: childPath, retentionDays: 0, journalMaxBytes: 4000, gapSnapshotMs: 5, quietSnapshotMs: 20, sealEvents: 50 });
  console.log('ready');
  for (let i = 0; ; i++) {
    await store.insert(events(7, Date.now(), 0.01, i + 1, ENVS, `k${i}`));
    console.log(`ack ${i}`);
    // The parent kills only once seals happened: they run behind the acknowledgements.
    if (i % 10 === 9) console.log(`sealed ${await sealedCount(store)}`);
    if (i % 20 === 19) await new Promise((r) => setTimeout(r, 15));
  }
} else {
  test('sqlite: environments from rollups over random ranges across sealed segments and the hot one, and after a restart', async () => {
    const dir = tempDir('env-seal');
    const path = join(dir, 'watchtower.sqlite');
    const open = () => openSqliteStore({ path, retentionDays: 0, now: () => NOW, sealEvents: 90 });
    let store = await open();
    try {
      const all = events(1400, NOW, 72, 11);
      await insertAll(store, all, 30, 90);
      await store.flush();
      assert.ok((await sealedCount(store)) >= 10, 'segments were sealed');
      const rs = randomRanges(5, 14, [NOW - 74 * HOUR, NOW]);
      await checkFromRollups(store, all, NOW, rs, 'sealed and hot');
      await store.close();
      store = await open();
      await checkFromRollups(store, all, NOW, rs, 'reopened');
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [name, open] of [
    ['memory', async () => ({ store: createMemoryStore({ capacity: 100_000 }), reopen: null })],
    ['sqlite', async () => {
      const dir = tempDir('env-bound');
      const path = join(dir, 'watchtower.sqlite');
      const opened = () => openSqliteStore({ path, retentionDays: 0, now: () => NOW, sealEvents: 100 });
      return { store: await opened(), reopen: opened, dir };
    }],
  ] as const) {
    test(`${name}: at most ${MAX_ENVIRONMENT_SCOPES} environments per owner have rollups; the others are answered exactly from their events`, async () => {
      const names = Array.from({ length: MAX_ENVIRONMENT_SCOPES + 4 }, (_, i) => `env-${i}`);
      // The names' first events in order, then a mix: env-0…9 get scopes, env-10… are refused.
      const firsts = names.map((n, i) => normalise({ type: 'click', environment: n }, { now: NOW - 30 * HOUR + i, owner: 'alice', newId: () => `first-${i}` }));
      const all = [...firsts, ...events(600, NOW, 29, 3, names).filter((e) => e.user_id === 'alice')];
      const opened = await open();
      let store: Store = opened.store;
      try {
        await insertAll(store, all, 40, opened.reopen ? 100 : undefined);
        // Bob's names are his own: alice's bound does not refuse them.
        await store.insert([normalise({ type: 'click', environment: 'env-13' }, { now: NOW - HOUR, owner: 'bob', newId: () => 'bob-1' })]);
        const check = async (label: string) => {
          for (const [i, environment] of names.entries()) {
            const got = await store.statsOfEnvironment!('alice', NOW, undefined, undefined, environment);
            assert.is(got === null, i >= MAX_ENVIRONMENT_SCOPES, `${label}: ${environment} has rollups iff among the first ${MAX_ENVIRONMENT_SCOPES}`);
          }
          assert.ok(await store.statsOfEnvironment!('bob', NOW, undefined, undefined, 'env-13'), `${label}: another owner's names are not refused`);
          // Through the route, every name equals computeStats over its events.
          const { send, as } = app({ store, now: () => NOW });
          for (const environment of names) {
            for (const range of [undefined, { from: NOW - 20 * HOUR + 777, to: NOW - HOUR }]) {
              const q = new URLSearchParams({ environment });
              if (range) [q.set('from', new Date(range.from).toISOString()), q.set('to', new Date(range.to).toISOString())];
              const res = await send('GET', `/api/stats?${q}`, { headers: as('alice') });
              assert.is(res.status, 200);
              const mine = all.filter((e) => e.user_id === 'alice' && e.environment === environment);
              assert.equal(await res.json(), json(computeStats(mine, NOW, range)), `${label}: ${environment}`);
            }
          }
        };
        await check('fresh');
        if (opened.reopen) {
          await store.flush();
          assert.ok((await sealedCount(store)) >= 3, 'segments were sealed');
          await store.close();
          store = await opened.reopen();
          // A refused name stays refused after a restart (the newest manifest says so), even one
          // whose events were all in the hot segment.
          await store.insert([normalise({ type: 'click', environment: 'env-new' }, { now: NOW - 1000, owner: 'alice', newId: () => 'late' })]);
          all.push(...(await exportAll(store)).filter((e) => e.id === 'late'));
          assert.is(await store.statsOfEnvironment!('alice', NOW, undefined, undefined, 'env-new'), null);
          await check('reopened');
        }
      } finally {
        await store.close();
        if ('dir' in opened) rmSync(opened.dir, { recursive: true, force: true });
      }
    });
  }

  test('sqlite: a store sealed before environments had rollups answers exactly, from rollups for ranges after its old segments', async () => {
    const dir = tempDir('env-upgrade');
    const path = join(dir, 'watchtower.sqlite');
    const open = () => openSqliteStore({ path, retentionDays: 0, now: () => NOW, sealEvents: 60 });
    let store = await open();
    try {
      const old = events(600, NOW - 30 * HOUR, 40, 21);
      await insertAll(store, old, 30, 60);
      await store.flush();
      await store.close();
      // As the previous version sealed them: no environments' parts, windows or marks.
      const manifests = readdirSync(dir).filter((f) => f.endsWith('.manifest'));
      assert.ok(manifests.length >= 5, 'segments were sealed');
      for (const f of manifests) {
        const m = await decodeManifest(new Uint8Array(readFileSync(join(dir, f))), f);
        for (const entry of Object.values(m.owners)) entry.projects = Object.fromEntries(Object.entries(entry.projects).filter(([k]) => !isEnvironmentKey(k)));
        for (const [owner, w] of Object.entries(m.projectWindows ?? {})) m.projectWindows![owner] = Object.fromEntries(Object.entries(w).filter(([k]) => !isEnvironmentKey(k)));
        delete m.environmentsKnown;
        delete m.environmentsFull;
        await writeManifest(nodeFs, path, m);
      }
      store = await open();
      const lastOld = Math.max(...old.map((e) => Date.parse(e.receivedAt)));
      const fresh = events(500, NOW, 29, 22, ENVS, 'n');
      await insertAll(store, fresh, 30, 60);
      const all = [...old, ...fresh];
      // Ranges reaching into the old segments are not from rollups; the route reads their events.
      assert.is(await store.statsOfEnvironment!('alice', NOW, undefined, undefined, 'production'), null);
      assert.is(await store.statsOfEnvironment!('alice', NOW, { from: lastOld - HOUR }, undefined, 'staging'), null);
      const { send, as } = app({ store, now: () => NOW });
      for (const range of [undefined, ...randomRanges(9, 6, [NOW - 72 * HOUR, NOW])]) {
        for (const environment of ['production', 'qa']) {
          // p1 is no project of alice's here (the route takes projects by id): the store is asked.
          const ofP1 = all.filter((e) => e.user_id === 'alice' && e.environment === environment && e.projectId === 'p1');
          const fromRollups = await store.statsOfEnvironment!('alice', NOW, range, 'p1', environment);
          if (fromRollups) assert.equal(json(fromRollups), json(computeStats(ofP1, NOW, range)));
          // The route: from rollups or, reaching into the old segments, from the events.
          const q = new URLSearchParams({ environment });
          if (range?.from !== undefined) q.set('from', new Date(range.from).toISOString());
          if (range?.to !== undefined) q.set('to', new Date(range.to).toISOString());
          if (range?.interval) q.set('interval', range.interval);
          const res = await send('GET', `/api/stats?${q}`, { headers: as('alice') });
          const mine = all.filter((e) => e.user_id === 'alice' && e.environment === environment);
          assert.equal(await res.json(), json(computeStats(mine, NOW, range)), `upgraded ${environment} ${JSON.stringify(range)}`);
        }
      }
      // After the old segments: from rollups, and exact.
      await checkFromRollups(store, all, NOW, [{ from: lastOld + 1 }, ...randomRanges(4, 6, [lastOld + 1, NOW])].filter((r) => r !== undefined), 'after the old segments');
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('sqlite: kill -9 while sealing; reopened, environments come from rollups and equal computeStats over the events kept', async () => {
    const dir = tempDir('env-kill');
    const path = join(dir, 'watchtower.sqlite');
    try {
      const acked = await runChild(path, 150);
      assert.ok(acked > 20, `the child acknowledged batches (${acked})`);
      const now = Date.now() + 1000;
      const store = await openSqliteStore({ path, retentionDays: 0, now: () => now });
      try {
        const all = await exportAll(store);
        assert.ok(all.length >= acked * 7, 'every acknowledged event is there');
        assert.ok((await sealedCount(store)) >= 2, 'segments were sealed before the kill');
        const t0 = Math.min(...all.map((e) => Date.parse(e.receivedAt)));
        await checkFromRollups(store, all, now, [undefined, { from: t0 + 200 }, { from: t0 - HOUR, to: now, interval: 'hour' }], 'after kill -9');
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

async function exportAll(store: Store): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (const owner of ['alice', 'bob']) for await (const b of store.export({ userId: owner })) out.push(...b);
  return out;
}

/** Runs the child on `path`, kills it `killAfterMs` after its 60th batch and second seal; the batches it acknowledged. */
function runChild(path: string, killAfterMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const self = fileURLToPath(import.meta.url);
    const [cmd, args] = typeof Deno !== 'undefined'
      ? [Deno.execPath(), ['run', '--allow-all', '--no-prompt', self]]
      : [process.execPath, ['--import', 'tsx', self]];
    const child = spawn(cmd, args, { env: { ...process.env, WATCHTOWER_ENV_KILL_CHILD: path }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    child.stdout!.on('data', (c) => {
      out += c;
      // Counted from the 60th acknowledged batch, not from start-up: a loaded machine may take
      // seconds to get there, and the kill must fall after several seals.
      // and only once the child saw two seals, which a loaded machine runs behind the batches.
      if (!timer && out.includes('ack 60\n') && /^sealed ([2-9]|\d{2,})$/m.test(out)) timer = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), killAfterMs);
    });
    child.stderr!.on('data', (c) => (err += c));
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL' && code !== 137) return reject(new Error(`child exited ${code} ${signal}: ${err}`));
      resolve(out.split('\n').slice(0, -1).filter((l) => l.startsWith('ack ')).length);
    });
  });
}

test.run();
