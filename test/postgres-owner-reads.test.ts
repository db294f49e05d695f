// An owner's events read while compaction moves closed days' rows into blocks (reads/owner.ts):
// a read must see each event once whatever days move between its statements. Compaction moves days
// one after another, so the reads here move a different day before each of their row reads, the
// way a running compaction can; the answer must still be every event, in order.
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent } from '../lib/event.ts';
import { blockDay } from '../lib/store/postgres/maintenance/blocks.ts';
import { blockEvents, ownerReads } from '../lib/store/postgres/reads/owner.ts';
import type { SeqRow } from '../lib/store/postgres/sql.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';

const DAY = 86_400_000;
if (await postgresAvailable('PostgreSQL owner-read tests')) {
  let db: TestDatabase;
  let sql: postgres.Sql;
  const ids: string[] = [];
  const today = Math.floor(Date.now() / DAY);
  const closedDays = [5, 4, 3, 2, 1].map((back) => today - back);
  test.before(async () => {
    db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, connectTimeout: 3 });
    try {
      // Six events on each of five closed days, in receive order, so seq follows the days.
      for (const day of closedDays) {
        const events = Array.from({ length: 6 }, (_, i) => normalise({ type: 'click' } as RawEvent,
          { now: day * DAY + 3_600_000 * (i + 1), owner: 'racer', newId: () => `r-${day}-${i}` }));
        await store.insert(events);
        ids.push(...events.map((e) => e.id));
      }
    } finally {
      await store.close();
    }
    sql = postgres(db.url, { max: 2, onnotice: () => {}, fetch_types: false });
  });
  test.after(async () => {
    await sql?.end({ timeout: 1 }).catch(() => {});
    await db?.drop();
  });

  test('a read sees every event once while compaction moves one closed day after another under it', async () => {
    const { daysOf, filterSql, receivedIn, readOwner } = ownerReads(sql);
    const filter = { userId: 'racer' };
    const days = await daysOf(filter);
    assert.is(days.length, closedDays.length);
    assert.ok(days.every((d) => (d.moved ?? 0) === 0), 'no day is blocks yet');
    // Before each read of rows, the next closed day (newest first) moves into blocks.
    const toMove = [...closedDays].reverse();
    const moves: number[] = [];
    const found = await readOwner('racer', days, 'desc', 100, [''], async (d0, d1) => {
      const day = toMove.shift();
      if (day !== undefined) {
        assert.is(await blockDay(sql, day), 6, `day ${day} moved`);
        moves.push(day);
      }
      const rows = await sql<SeqRow[]>`select seq, event from watchtower_events
        where ${filterSql(filter)} and ${receivedIn(d0, d1)} order by seq desc limit 100`;
      return new Map([['', rows]]);
    }, async (chosen) => {
      const rows = await sql<SeqRow[]>`select seq, event from ${blockEvents(sql)}
        where ${chosen} and ${filterSql(filter)} order by seq desc limit 100`;
      return new Map([['', rows]]);
    });
    assert.ok(moves.length >= 2, `days moved during the read: ${moves.length}`);
    const got = (found.get('') ?? []).map((r) => (JSON.parse(r.event) as { id: string }).id);
    assert.equal(got, [...ids].reverse(), 'every event once, newest first');
  });

  test.run();
}
