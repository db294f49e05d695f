// A database written by the earlier single-file sqlite store (fixtures/legacy-sqlite: its file, made
// by that code, and the events it was given, one retried) opens with every event exactly once, its
// user record, and the statistics computeStats gives over those events.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { StoredEvent } from '../lib/event.ts';
import { computeStats } from '../lib/stats.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';

const fixture = new URL('../fixtures/legacy-sqlite/', import.meta.url);
const given = readFileSync(new URL('events.ndjson', fixture), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StoredEvent);
const dirs: string[] = [];
test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a database of the single-file store opens with every event once, its users and exact stats; restarts and sealing it keep them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-legacy-'));
  dirs.push(dir);
  cpSync(new URL('watchtower.sqlite', fixture), join(dir, 'watchtower.sqlite'));
  const now = Date.parse(given[given.length - 1].receivedAt) + 3_600_000;
  // Rounds: as it is (it becomes the hot segment), again, then with a small seal size so that the
  // migrated events are sealed into a segment (waited for), and once more reading them from there.
  for (let round = 0; round < 4; round++) {
    const sealEvents = round >= 2 ? 50 : undefined;
    const store = await openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0, now: () => now, quietSnapshotMs: 3_600_000, gapSnapshotMs: 100, sealEvents });
    if (round === 2) {
      const sealed = () => store.health().then((h) => (h.segments as { sealed: number }).sealed);
      for (const end = Date.now() + 15_000; (await sealed()) === 0 && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
      assert.is(await sealed(), 1, 'the migrated hot segment was sealed');
    }
    try {
      for (const owner of ['alice', 'bob', 'carol']) {
        const mine = given.filter((e) => e.user_id === owner);
        assert.ok(mine.length > 50);
        const page = await store.list({ userId: owner, limit: 1000 });
        assert.equal(page.events, [...mine].reverse(), `${owner}: every event once, newest first (round ${round})`);
        assert.equal(await store.stats(owner, now), computeStats(mine, now), `${owner}: stats`);
        const range = { from: now - 2 * 86_400_000 - 1_234_567, to: now - 86_400_000 + 777 };
        assert.equal(await store.stats(owner, now, range), computeStats(mine, now, range), `${owner}: stats in a range`);
      }
      assert.is((await store.health()).eventCount, given.length);
      assert.is((await store.getUser('alice'))?.email, 'alice@example.com');
      // A retry of a stored event is still recognised.
      assert.is((await store.insert([given[7]])).length, 0);
    } finally {
      await store.close();
    }
  }
});

test.run();
