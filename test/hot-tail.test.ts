// The sqlite store's tail of rows not yet written: a segment read as its database plus those rows
// (SegmentView) answers exactly as the database holding every row does, for every filter and
// order, wherever the split between written and pending falls, and a reader that stops early stops
// at the same row.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { HotTail, SegmentView } from '../lib/store/sqlite/hot-tail.ts';
import { ROW_FORMAT, tailRow, type TailRow } from '../lib/store/sqlite/row.ts';
import { SCHEMA, SegmentDb, type TrackQuery } from '../lib/store/sqlite/segment.ts';
import type { RowsQuery } from '../lib/store/sqlite/protocol.ts';
import { loadSqlJs } from '../lib/store/sqlite/sqljs.ts';

const T0 = Date.parse('2026-05-16T10:00:00.000Z');
const TYPES = ['pageload', 'error', 'click', 'custom'];
const OWNERS = ['u', 'w', null];
const events: StoredEvent[] = Array.from({ length: 240 }, (_, i) => {
  const raw = {
    id: `t-${i}`, type: TYPES[i % 4], sessionId: i % 5 ? `s${i % 7}` : undefined, deployVersion: i % 3 ? `v${i % 2}` : undefined,
    route: `/r${i % 3}`, data: { duration: (i * 37) % 500, ttfb: i % 9 },
  } as RawEvent;
  // Receive times repeat (a batch shares one) and are not always in insertion order.
  const e = normalise(raw, { now: T0 + Math.floor(i / 4) * 60_000 - (i % 11 === 0 ? 3_600_000 : 0), owner: OWNERS[i % 3] });
  return i % 4 === 1 ? { ...e, projectId: String(1 + (i % 2)) } : e;
});
const rows: TailRow[] = events.map((e, i) => tailRow(e, 7, ROW_FORMAT, i + 1).tail);

const { SQL } = await loadSqlJs();
const dbWith = (part: TailRow[]) => {
  const sql = new SQL.Database();
  sql.exec(SCHEMA);
  const db = new SegmentDb(sql);
  db.insert(part);
  return db;
};
const whole = dbWith(rows);
const splits = [0, 1, 60, 200, 240].map((k) => new SegmentView(dbWith(rows.slice(0, k)), rows.slice(k)));

const rowQueries: Omit<RowsQuery, 'order' | 'limit'>[] = [
  { userId: 'u' }, { userId: 'w' }, { userId: '' }, { userId: 'nobody' },
  { userId: 'u', type: 'error' }, { userId: 'w', version: 'v1' }, { userId: 'u', projectId: '2' }, { userId: 'w', projectId: '9' },
  { userId: 'u', since: T0 + 10 * 60_000, until: T0 + 40 * 60_000 }, { userId: 'u', until: T0 },
  { userId: 'w', beforeSeq: 150 }, { userId: 'u', afterSeq: 100, maxSeq: 200 }, { userId: 'w', type: 'pageload', since: T0 + 30 * 60_000, beforeSeq: 230 },
];

test('rows: the database and the pending rows read as the database with every row', () => {
  for (const q of rowQueries) {
    for (const order of ['newest', 'oldest'] as const) {
      for (const limit of [1, 7, 30, 1000]) {
        const query = { ...q, order, limit };
        const want = whole.rows(query, limit);
        for (const view of splits) assert.equal(view.rows(query, limit), want, JSON.stringify(query));
      }
    }
  }
});

test('track: the same rows in the same order, and a reader that stops stops at the same row', () => {
  const spans: [number, number][] = [[-Infinity, Infinity], [T0 - 3_600_000, T0 + 5 * 60_000], [T0 + 20 * 60_000, T0 + 21 * 60_000 + 1]];
  for (const userId of ['u', 'w', '']) {
    for (const [start, end] of spans) {
      for (const extra of [{}, { type: 'pageload' }, { projectId: '1' }, { via: 'seq' as const }]) {
        for (const order of ['ASC', 'DESC'] as const) {
          for (const stopAfter of [Infinity, 3]) {
            const q: TrackQuery = { userId, start, end, order, ...extra };
            const read = (from: { track: SegmentDb['track'] }) => {
              const seen: unknown[] = [];
              from.track(q, (r) => {
                seen.push(r);
                return seen.length < stopAfter;
              });
              return seen;
            };
            const want = read(whole);
            for (const view of splits) assert.equal(read(view), want, `${JSON.stringify(q)} stop after ${stopAfter}`);
          }
        }
      }
    }
  }
});

test('the tail: rows leave from the front, a segment at a time, and waits settle once written', async () => {
  const tail = new HotTail();
  assert.is(await tail.drained(), undefined, 'nothing to wait for');
  for (const r of rows.slice(0, 5)) tail.push(r);
  for (const r of rows.slice(5, 8)) tail.push({ ...r, segment: 8 });
  let settled = false;
  const waiting = tail.drained().then(() => (settled = true));
  assert.equal(tail.front(10, 7).map((r) => r.seq), [1, 2, 3, 4, 5], 'stops at the next segment');
  assert.equal(tail.of(8).map((r) => r.seq), [6, 7, 8]);
  tail.advance(5);
  await Promise.resolve();
  assert.is(settled, false);
  assert.equal(tail.front(2, 8).map((r) => r.seq), [6, 7]);
  tail.advance(3);
  await waiting;
  assert.is(tail.size, 0);
  tail.push(rows[9]);
  const failing = tail.drained();
  tail.fail(new Error('disk full'));
  const reason = (p: Promise<void>) => p.then(() => 'settled', (err: Error) => err.message);
  assert.is(await reason(failing), 'disk full');
  assert.is(await reason(tail.drained()), 'disk full', 'and every later wait');
});

test.run();
