// How the sqlite store's rows keep a page load's campaign (lib/store/sqlite/row.ts, RowFormat):
// every event reads back as it was stored, key order included, in either format; a segment made
// before format 2 keeps format 1, so that its page loads stored without a campaign do not gain one
// from their URLs, in its database, in its tail, after a seal and after a restart.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats } from '../lib/stats.ts';
import { nodeFs } from '../lib/store/fs.ts';
import { readSegment } from '../lib/store/sqlite/manifest.ts';
import { eventOfTail, ROW_FORMAT, tailRow, type RowFormat } from '../lib/store/sqlite/row.ts';
import { SCHEMA, SegmentDb } from '../lib/store/sqlite/segment.ts';
import { loadSqlJs } from '../lib/store/sqlite/sqljs.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';

const T0 = Date.parse('2026-05-10T06:00:00.000Z');
const CAMPAIGN = 'https://shop.example/p?utm_source=News&utm_campaign=%C3%A9t%C3%A9&utm_source=dup&x=1';
const { SQL } = await loadSqlJs();
const dirs: string[] = [];
test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let n = 0;
const ev = (raw: Partial<RawEvent>, at = T0 + n * 1000): StoredEvent => {
  const e = normalise({ type: 'pageload', sessionId: 's1', ...raw } as RawEvent, { now: at, owner: 'u', newId: () => `f-${++n}` });
  e.client = { browser: 'Firefox', os: 'Linux', device: 'desktop', country: 'DE' };
  return e;
};
/** An event as a journal line of an earlier version gives it: its own `utm`, or none where its URL has one. */
const earlier = (utm: unknown, raw: Partial<RawEvent> = { url: CAMPAIGN }): StoredEvent => {
  const e = ev(raw);
  delete e.utm;
  if (utm !== undefined) {
    // Where a client's own field sat: before the server's fields (client).
    const { client, ...rest } = e;
    return { ...rest, utm, client } as StoredEvent;
  }
  return e;
};

/** Every shape of campaign a row meets. */
const shapes = (): StoredEvent[] => [
  ev({ url: CAMPAIGN }),
  ev({ pageUrl: CAMPAIGN }),
  ev({ url: 'https://shop.example/p' }),
  ev({ type: 'click', url: CAMPAIGN }),
  earlier(undefined),
  earlier({ source: 'other' }),
  earlier({ campaign: 'été', source: 'news' }),
  earlier(true),
  earlier([1]),
  earlier(null),
  earlier('news', { type: 'custom', url: null } as Partial<RawEvent>),
  earlier({ source: 'news', campaign: 'été' }, { type: 'click', url: CAMPAIGN }),
];

test('every shape reads back as stored, in its key order, in either format', () => {
  const given = shapes();
  assert.ok(given[0].utm && given[1].utm && !given[2].utm && !given[3].utm, 'normalise reads page loads\' campaigns only');
  for (const format of [1, 2] as RowFormat[]) {
    for (const [i, e] of given.entries()) {
      // As the worker takes it: a journal line parsed.
      const { tail } = tailRow(JSON.parse(JSON.stringify(e)) as StoredEvent, 1, format, i + 1);
      assert.is(JSON.stringify(eventOfTail(tail, format)), JSON.stringify(e), `format ${format}, shape ${i}`);
    }
  }
});

test('format 2 marks a campaign its URL gives, and keeps any other', () => {
  const meta = (e: StoredEvent) => tailRow(JSON.parse(JSON.stringify(e)) as StoredEvent, 1, 2, 1).tail.metadata;
  const [derived, , none, , missing, other, reordered] = shapes();
  assert.ok(meta(derived).includes('"utm":true'), meta(derived));
  assert.not.ok(meta(derived).includes('news'), 'the campaign itself is not in the row');
  assert.ok(meta(other).includes('"utm":[{"source":"other"}]'), meta(other));
  assert.ok(meta(reordered).includes('"utm":[{"campaign"'), 'another key order is another object');
  assert.not.ok(meta(none).includes('utm"'));
  assert.not.ok(meta(missing).includes('utm"'), 'no campaign stays none');
  assert.ok(meta(derived).length < tailRow(JSON.parse(JSON.stringify(derived)) as StoredEvent, 1, 1, 1).tail.metadata.length - 25);
});

/** A database's bytes: the schema, then `edit`. */
const databaseOf = (edit: (db: InstanceType<typeof SQL.Database>) => void) => {
  const db = new SQL.Database();
  db.exec(SCHEMA);
  edit(db);
  const bytes = db.export();
  db.close();
  return bytes;
};
/** Rows written by a version before format 2: no record of a format, campaigns in metadata. */
const formatOneDatabase = (events: StoredEvent[]) => databaseOf((db) => {
  db.exec("DELETE FROM meta WHERE key = 'rowFormat'");
  new SegmentDb(db).insert(events.map((e, i) => tailRow(JSON.parse(JSON.stringify(e)) as StoredEvent, 1, 1, i + 1).tail));
});

test('a new database takes the current format; one with rows and no record, or no meta table, is format 1', () => {
  assert.is(ROW_FORMAT, 2);
  assert.is(new SegmentDb(new SQL.Database(databaseOf(() => {}))).format, 2);
  assert.is(new SegmentDb(new SQL.Database(formatOneDatabase(shapes()))).format, 1);
  const legacy = new SQL.Database(new Uint8Array(readFileSync(new URL('../fixtures/legacy-sqlite/watchtower.sqlite', import.meta.url))));
  assert.is(legacy.exec("SELECT 1 FROM sqlite_master WHERE name = 'meta'").length, 0, 'the fixture predates the meta table');
  assert.is(new SegmentDb(legacy).format, 1);
  // Written by this version, a database with rows keeps its record.
  const db = new SQL.Database(databaseOf((d) => new SegmentDb(d).insert(shapes().map((e, i) => tailRow(e, 1, 2, i + 1).tail))));
  assert.is(new SegmentDb(db).format, 2);
  // And the schema, run again on it (a start-up), changes neither.
  db.exec(SCHEMA);
  assert.is(new SegmentDb(db).format, 2);
});

test('a store whose hot segment predates format 2 reads it as format 1, seals it so, and writes the next in format 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-row-format-'));
  dirs.push(dir);
  const path = join(dir, 'watchtower.sqlite');
  const old = shapes();
  writeFileSync(path, formatOneDatabase(old));
  const all = [...old];
  const now = T0 + 3_600_000;
  const range = { from: T0 - 3_600_000, to: now };
  const open = () => openSqliteStore({ path, retentionDays: 0, now: () => now, sealEvents: 40 });
  const check = async (store: Store, what: string) => {
    const page = await store.list({ userId: 'u', limit: 1000 });
    assert.is(JSON.stringify(page.events), JSON.stringify([...all].reverse()), `${what}: every event as stored`);
    assert.equal(await store.stats('u', now, range), computeStats(all, now, range), `${what}: stats`);
  };
  let store = await open();
  try {
    await check(store, 'opened');
    // Into the format 1 hot segment, past its bound: it is sealed, and a fresh one takes the rest.
    for (let i = 0; i < 4; i++) {
      const batch = [...shapes(), ...shapes()].slice(0, 10);
      all.push(...batch);
      await store.insert(batch);
      await check(store, `batch ${i}`);
    }
    const sealed = async () => ((await store.health()).segments as { sealed: number }).sealed;
    for (const end = Date.now() + 15_000; (await sealed()) === 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
    assert.ok((await sealed()) >= 1, 'the old hot segment was sealed');
    const batch = shapes();
    all.push(...batch);
    await store.insert(batch);
    await check(store, 'after the seal');
  } finally {
    await store.close();
  }
  store = await open();
  try {
    await check(store, 'after a restart');
    assert.ok((await store.stats('u', now, range)).breakdowns?.utmSources?.length, 'campaigns are counted');
  } finally {
    await store.close();
  }
  // On disk: the sealed segment as the old version's rows left it, the hot one in format 2.
  const ids = readdirSync(dir).map((f) => /\.seg-(\d+)\.manifest$/.exec(f)?.[1]).filter((id) => id !== undefined).map(Number);
  const sealedDb = new SegmentDb(new SQL.Database(await readSegment(nodeFs, path, Math.min(...ids))));
  assert.is(sealedDb.format, 1);
  const campaignRows = (db: SegmentDb) => db.db.exec(`SELECT COUNT(*) FROM events WHERE metadata LIKE '%"utm":{%'`)[0].values[0][0];
  assert.ok((campaignRows(sealedDb) as number) > 0, 'the sealed segment keeps its campaigns in full');
  const hot = new SegmentDb(new SQL.Database(new Uint8Array(readFileSync(path))));
  assert.is(hot.format, 2);
  assert.is(campaignRows(hot), 0, 'the hot segment keeps no campaign its URL gives');
  assert.ok((hot.db.exec(`SELECT COUNT(*) FROM events WHERE metadata LIKE '%"utm":true%'`)[0].values[0][0] as number) > 0);
});

test.run();
