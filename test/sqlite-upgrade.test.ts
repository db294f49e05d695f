// A sqlite store written before the newer breakdown dimensions (environments, campaigns,
// countries, custom events): its sealed segments' manifests hold rollup parts of six dimensions.
// Here such a store is made the way that version left it: a store sealed by this version, whose
// manifests' parts are then re-encoded with the first six dimensions only, byte for byte what the
// earlier encoder wrote (the same layout; test/rollups.test.ts decodes a part that version wrote).
// Opened again, it answers exactly computeStats, the newer lists left out until the idle backfill
// has rebuilt those parts from the segments' rows, and complete from then on and after a restart.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DIMENSIONS, LEGACY_DIMENSIONS, type Breakdowns } from '../lib/breakdowns.ts';
import { normalise, type StoredEvent } from '../lib/event.ts';
import { encodePart, FrozenHour } from '../lib/rollup/codec.ts';
import type { PartColumns, RollupPart } from '../lib/rollup/hour.ts';
import { computeStats, type Stats, type StatsRange } from '../lib/stats.ts';
import { decodeManifest, withProjects, type ScopeParts } from '../lib/store/sqlite/manifest.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const dirs: string[] = [];
test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A part as an earlier version encoded it: its first `kept` dimensions only. */
const firstDimensions = (kept: number) => (bytes: Uint8Array): Uint8Array => {
  const part = FrozenHour.decode(bytes);
  const c = part.columns();
  const names = c.dimEnds[kept - 1];
  const sessions = names ? c.dimSessionEnds[names - 1] : 0;
  const columns: PartColumns = {
    ...c,
    dimNames: c.dimNames.slice(0, names),
    dimEnds: Array.from(c.dimEnds).slice(0, kept),
    dimCounts: Array.from(c.dimCounts).slice(0, names),
    dimSessionEnds: Array.from(c.dimSessionEnds).slice(0, names),
    dimSessions: Array.from(c.dimSessions).slice(0, sessions),
  };
  const old: RollupPart = { hour: part.hour, total: part.total, sessionCount: part.sessionCount, forEachSession: (fn) => part.forEachSession(fn), columns: () => columns };
  return encodePart(old);
};
const sixDimensions = firstDimensions(LEGACY_DIMENSIONS);

function events(): StoredEvent[] {
  let seed = 7, n = 0;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  return Array.from({ length: 400 }, (_, i) => {
    const at = NOW - 3 * 24 * HOUR + Math.floor((i / 400) * 3 * 24 * HOUR);
    const type = pick(['pageload', 'pageload', 'custom', 'click', 'error']);
    // Through JSON, as events arrive over HTTP (no undefined values).
    const e = normalise(JSON.parse(JSON.stringify({
      type, sessionId: pick(['a', 'b', 'c', 'd', undefined]), userId: 'x',
      url: pick(['https://x.example/?utm_source=News&utm_campaign=spring', 'https://x.example/p', '/l?utm_medium=cpc&utm_source=ads']),
      environment: pick(['production', 'staging', undefined]), name: pick(['signup', 'share', undefined]),
      data: type === 'custom' ? { plan: pick(['free', 'pro', 'team']), n: pick([1, 2]) } : {},
    })), { now: at, owner: pick(['alice', 'alice', 'bob']), newId: () => `u${++n}` });
    e.client = { browser: pick(['Chrome', 'Firefox']), os: 'Linux', device: 'desktop', country: pick(['DE', 'JP', null]) };
    if (rnd() < 0.4) e.projectId = 'p1';
    return e;
  });
}

const NEWER = DIMENSIONS.slice(LEGACY_DIMENSIONS);
const withoutNewer = (s: Stats): Stats => {
  const b = { ...s.breakdowns } as Record<string, unknown>;
  for (const d of NEWER) delete b[d];
  return { ...s, breakdowns: b as unknown as Breakdowns };
};

/** A store sealed by this version, its manifests' parts then re-encoded by `old`, reopened by `open`. */
async function oldStore(old: (bytes: Uint8Array) => Uint8Array) {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-upgrade-'));
  dirs.push(dir);
  const path = join(dir, 'watchtower.sqlite');
  const open = () => openSqliteStore({ path, retentionDays: 0, now: () => NOW, sealEvents: 60 });
  const all = events();
  let store: Store = await open();
  const segments = async () => (await store.health()).segments as { sealed: number; hotEvents: number };
  const sealed = async () => (await segments()).sealed;
  for (let i = 0; i < all.length; i += 20) {
    await store.insert(all.slice(i, i + 20));
    // Seals run in the background, one at a time: a fast writer would outpace them.
    for (const end = Date.now() + 10_000; (await segments()).hotEvents >= 60 && Date.now() < end;) await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok((await sealed()) >= 5, 'segments were sealed');
  await store.close();

  // The earlier version's manifests: every part with six dimensions.
  let rewritten = 0;
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.manifest'))) {
    const file = join(dir, name);
    const bytes = new Uint8Array(readFileSync(file));
    const m = await decodeManifest(bytes, file);
    const own: Record<string, Uint8Array[]> = {};
    const projects: Record<string, Record<string, ScopeParts>> = {};
    for (const [owner, entry] of Object.entries(m.owners)) {
      own[owner] = entry.parts.map(old);
      projects[owner] = Object.fromEntries(Object.entries(entry.projects).map(([p, s]) => [p, { count: s.count, parts: s.parts.map(old) }]));
    }
    writeFileSync(file, await withProjects(bytes, file, projects, own));
    rewritten++;
  }
  assert.ok(rewritten >= 5);
  return { open, all };
}

test('a store sealed before the newer dimensions answers exactly, and completely once its parts are rebuilt from its rows', async () => {
  const { open, all } = await oldStore(sixDimensions);
  let store: Store;

  const ranges: StatsRange[] = [{ from: NOW - 4 * 24 * HOUR }, { from: NOW - 50 * HOUR - 1234, to: NOW - 20 * HOUR + 99, interval: 'hour' }];
  const scopes = [['alice', undefined], ['bob', undefined], ['alice', 'p1']] as const;
  const mine = (owner: string, project?: string) => all.filter((e) => e.user_id === owner && (project === undefined || e.projectId === project));
  store = await open();
  try {
    // While the backfill runs, every answer is exact: with the newer lists, or without them.
    let partial = 0, complete = 0;
    for (let round = 0; round < 200; round++) {
      const pending = ((await store.health()).segments as { projectsPending: number }).projectsPending;
      for (const [owner, project] of scopes) {
        for (const range of ranges) {
          const got = await store.stats(owner, NOW, range, project);
          const want = computeStats(mine(owner, project), NOW, range);
          if (NEWER.some((d) => d in got.breakdowns!)) {
            assert.equal(got, want, `${owner}/${project}: complete`);
            complete++;
          } else {
            assert.equal(got, withoutNewer(want), `${owner}/${project}: the newer lists left out, the rest exact`);
            partial++;
          }
        }
      }
      if (pending === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(partial > 0, 'the old parts were seen (the first read comes before the backfill is done)');
    assert.is(((await store.health()).segments as { projectsPending: number }).projectsPending, 0, 'the backfill finished');
    for (const [owner, project] of scopes) {
      for (const range of ranges) assert.equal(await store.stats(owner, NOW, range, project), computeStats(mine(owner, project), NOW, range));
    }
  } finally {
    await store.close();
  }
  // The rebuilt parts were written back: after a restart everything is complete at once.
  store = await open();
  try {
    assert.is(((await store.health()).segments as { projectsPending: number }).projectsPending, 0);
    for (const [owner, project] of scopes) {
      for (const range of ranges) assert.equal(await store.stats(owner, NOW, range, project), computeStats(mine(owner, project), NOW, range));
    }
  } finally {
    await store.close();
  }
});

test('a store sealed before custom event properties answers without them, and with them once its parts are rebuilt', async () => {
  const { open, all } = await oldStore(firstDimensions(DIMENSIONS.length));
  const ranges: StatsRange[] = [
    { from: NOW - 4 * 24 * HOUR, property: { key: 'plan', keys: true } },
    { from: NOW - 50 * HOUR - 1234, to: NOW - 20 * HOUR + 99, interval: 'hour', property: { key: 'n', event: 'signup' } },
  ];
  const mine = (owner: string, project?: string) => all.filter((e) => e.user_id === owner && (project === undefined || e.projectId === project));
  const withoutProperties = ({ properties: _p, propertyKeys: _k, ...rest }: Stats): Stats => rest;
  let store = await open();
  try {
    let partial = 0;
    for (let round = 0; round < 200; round++) {
      const pending = ((await store.health()).segments as { projectsPending: number }).projectsPending;
      for (const [owner, project] of [['alice', undefined], ['alice', 'p1']] as const) {
        for (const range of ranges) {
          const got = await store.stats(owner, NOW, range, project);
          const want = computeStats(mine(owner, project), NOW, range);
          if ('properties' in got) assert.equal(got, want, `${owner}/${project}: complete`);
          else {
            assert.equal(got, withoutProperties(want), `${owner}/${project}: properties left out, the rest exact`);
            partial++;
          }
        }
      }
      if (pending === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(partial > 0, 'the old parts were seen');
    const wide = await store.stats('alice', NOW, ranges[0]);
    assert.equal(wide, computeStats(mine('alice'), NOW, ranges[0]));
    assert.ok(wide.properties!.plan.length === 3 && wide.propertyKeys!.length === 2, 'the rebuilt parts count the properties');
  } finally {
    await store.close();
  }
});

test.run();
