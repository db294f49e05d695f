// Property: readByDays (lib/store/postgres/reads/by-days.ts), which picks the daily partitions a read by seq
// needs, answers what a read of every day would, for random rows whose days are only nearly in
// seq order (clocks stepping back, instances stamping before they take a seq), both orders,
// several keys; and on rows in seq order it reads only the days near the start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { readByDays, readEvents, type EventBlock, type EventDay } from '../lib/store/postgres/reads/by-days.ts';

const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);

interface Row { seq: string; day: number; key: string }

/**
 * Rows with seq 1..n, keyed (c rarer than a and b): mostly on the previous row's day or the next,
 * sometimes a day back (a clock stepped back across midnight), now and then any day of the span
 * (events inserted out of receive order, as a migration or a test may).
 */
const rowsOf = (minLength: number) => fc.array(fc.tuple(fc.nat(99), fc.nat(30), fc.constantFrom('a', 'a', 'b', 'b', 'c')), { minLength, maxLength: 300 })
  .map((steps) => {
    let day = 100;
    return steps.map(([p, any, key], i): Row => {
      if (p < 5) return { seq: String(i + 1), day: 90 + any, key };
      day += p < 25 ? 1 : p < 30 ? -1 : 0;
      return { seq: String(i + 1), day, key };
    });
  });
const rowsArb = rowsOf(0);

function daysOf(rows: readonly Row[]): EventDay[] {
  const days = new Map<number, EventDay>();
  for (const r of rows) {
    const s = Number(r.seq);
    const d = days.get(r.day);
    if (!d) days.set(r.day, { day: r.day, first: s, last: s, events: 1 });
    else Object.assign(d, { first: Math.min(d.first, s), last: Math.max(d.last, s), events: d.events + 1 });
  }
  return [...days.values()];
}

/** What a query bounded to days d0..d1 answers: per key, the first `want` rows past the cursor. */
const reader = (rows: readonly Row[], order: 'asc' | 'desc', want: number, cursor: number, spans: [number, number][]) =>
  async (d0: number, d1: number, keys: string[]) => {
    spans.push([d0, d1]);
    const out = new Map<string, Row[]>();
    for (const key of keys) {
      const got = rows.filter((r) => r.key === key && r.day >= d0 && r.day <= d1 && (order === 'desc' ? Number(r.seq) < cursor : Number(r.seq) > cursor));
      got.sort((a, b) => (order === 'desc' ? Number(b.seq) - Number(a.seq) : Number(a.seq) - Number(b.seq)));
      out.set(key, got.slice(0, want));
    }
    return out;
  };

test('readByDays answers what a read of every day answers, whatever the order of days and seqs', async () => {
  await fc.assert(fc.asyncProperty(rowsArb, fc.constantFrom<'asc' | 'desc'>('asc', 'desc'), fc.integer({ min: 1, max: 40 }),
    fc.integer({ min: 0, max: 320 }), async (rows, order, want, cursor) => {
      const keys = ['a', 'b', 'c'];
      const candidates = daysOf(rows).filter((d) => (order === 'desc' ? d.first < cursor : d.last > cursor));
      const got = await readByDays(candidates, order, want, keys, reader(rows, order, want, cursor, []));
      const all = await reader(rows, order, want, cursor, [])(-Infinity, Infinity, keys);
      for (const key of keys) {
        assert.equal((got.get(key) ?? []).map((r) => r.seq), (all.get(key) ?? []).map((r) => r.seq), `${order} ${key}`);
      }
    }), { numRuns: RUNS });
});

test('readEvents answers what a read of every event answers, with some days\' rows moved into blocks', async () => {
  // Small pages and a single common key too, so that the rows often answer every key in full and
  // only days of blocks newer than them (older, ascending) can still change an answer.
  await fc.assert(fc.asyncProperty(rowsOf(40), fc.constantFrom<'asc' | 'desc'>('asc', 'desc'), fc.integer({ min: 1, max: 12 }),
    fc.integer({ min: 0, max: 320 }), fc.integer({ min: 1, max: 12 }), fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    fc.constantFrom<string[]>(['a'], ['a', 'b', 'c']), async (rows, order, want, cursor, blockSize, bits, keys) => {
      // A day is moved (its rows as they were then, in blocks of blockSize by seq) if its bit is
      // set; a moved day's last row stays a row when the next bit is set too (inserted late).
      const moved = (day: number) => bits[day % 30];
      const late = (day: number) => bits[(day + 1) % 30];
      const lastOf = new Map<number, number>();
      for (const r of rows) lastOf.set(r.day, Math.max(lastOf.get(r.day) ?? 0, Number(r.seq)));
      const inBlock = (r: Row) => moved(r.day) && !(late(r.day) && lastOf.get(r.day) === Number(r.seq));
      const blocks: (EventBlock & { rows: Row[] })[] = [];
      for (const day of new Set(rows.map((r) => r.day))) {
        const mine = rows.filter((r) => r.day === day && inBlock(r));
        for (let i = 0; i < mine.length; i += blockSize) {
          const part = mine.slice(i, i + blockSize);
          blocks.push({ day, first: Number(part[0].seq), last: Number(part[part.length - 1].seq), events: part.length, rows: part });
        }
      }
      // Every day is a candidate: readEvents leaves out those past the cursor, and blocks too.
      const days = daysOf(rows).map((d) => ({ ...d, moved: rows.filter((r) => r.day === d.day && inBlock(r)).length }));
      const asRows = rows.filter((r) => !inBlock(r));
      const got = await readEvents(days, order, want, keys, {
        rows: reader(asRows, order, want, cursor, []),
        blocksOf: async (d0, d1) => blocks.filter((b) => b.day >= d0 && b.day <= d1),
        blocks: async (chosen, keys) => {
          for (const b of chosen) assert.ok(order === 'desc' ? b.first < cursor : b.last > cursor, `a block wholly past the cursor was read: ${JSON.stringify(b)}`);
          const held = chosen.flatMap((b) => (b as (typeof blocks)[number]).rows);
          return reader(held, order, want, cursor, [])(-Infinity, Infinity, keys);
        },
      }, { cursor });
      const all = await reader(rows, order, want, cursor, [])(-Infinity, Infinity, keys);
      for (const key of keys) {
        assert.equal((got.get(key) ?? []).map((r) => r.seq), (all.get(key) ?? []).map((r) => r.seq), `${order} ${key}`);
      }
    }), { numRuns: RUNS });
});

test('readByDays reads only the days near the start when days follow seq order', async () => {
  // 60 days of 100 rows each, in seq order; 50 rows wanted: one day, read once.
  const rows: Row[] = Array.from({ length: 6000 }, (_, i) => ({ seq: String(i + 1), day: 1000 + Math.floor(i / 100), key: 'a' }));
  for (const order of ['desc', 'asc'] as const) {
    const spans: [number, number][] = [];
    const cursor = order === 'desc' ? 6001 : 0;
    const got = await readByDays(daysOf(rows), order, 50, ['a'], reader(rows, order, 50, cursor, spans));
    assert.is(got.get('a')!.length, 50);
    assert.equal(spans, [order === 'desc' ? [1059, 1059] : [1000, 1000]], order);
  }
  // A key that is rare is read again over more days, not over all of them at once.
  const rare = rows.map((r, i) => ({ ...r, key: i % 50 === 0 ? 'b' : 'a' }));
  const spans: [number, number][] = [];
  const got = await readByDays(daysOf(rare), 'desc', 10, ['b'], reader(rare, 'desc', 10, 6001, spans));
  assert.is(got.get('b')!.length, 10);
  assert.ok(spans.length >= 2 && spans.at(-1)![0] > 1000, JSON.stringify(spans));
});

test('readEvents reads a page deep in a moved day from the blocks at its cursor only', async () => {
  // One closed day of 6,000 events in 60 blocks of 100; a page of 51 before seq 3,050, and after
  // it. The day after it (rows, seqs past 6,000) is past the cursor of the first page; the day
  // before it (seqs below 1) is past the second's.
  const rows: Row[] = Array.from({ length: 6000 }, (_, i) => ({ seq: String(i + 1), day: 1000, key: 'a' }));
  const blocks = Array.from({ length: 60 }, (_, i) => ({ day: 1000, first: i * 100 + 1, last: i * 100 + 100, events: 100 }));
  const days: EventDay[] = [{ day: 999, first: -99, last: 0, events: 100 }, { day: 1000, first: 1, last: 6000, events: 6000, moved: 6000 },
    { day: 1001, first: 6001, last: 6100, events: 100 }];
  for (const [order, cursor, expect] of [['desc', 3050, [3001, 2901]], ['asc', 3050, [3001, 3101]]] as const) {
    const read: number[][] = [];
    const spans: [number, number][] = [];
    const asRows = [...Array.from({ length: 100 }, (_, i) => ({ seq: String(i - 99), day: 999, key: 'a' })),
      ...Array.from({ length: 100 }, (_, i) => ({ seq: String(6001 + i), day: 1001, key: 'a' }))];
    const got = await readEvents(days, order, 51, ['a'], {
      rows: reader(asRows, order, 51, cursor, spans),
      blocksOf: async () => blocks,
      blocks: async (chosen, keys) => {
        read.push(chosen.map((b) => b.first));
        return reader(rows.filter((r) => chosen.some((b) => Number(r.seq) >= b.first && Number(r.seq) <= b.last)), order, 51, cursor, [])(-Infinity, Infinity, keys);
      },
    }, { cursor });
    assert.equal(got.get('a')!.map((r) => Number(r.seq)).slice(0, 2), order === 'desc' ? [3049, 3048] : [3051, 3052], order);
    assert.equal(read, [[...expect]], order);
    assert.equal(spans, order === 'desc' ? [[999, 999]] : [[1001, 1001]], order);
  }
});

test('readByDays without candidate days reads nothing', async () => {
  let reads = 0;
  const got = await readByDays<Row>([], 'desc', 10, ['a'], async () => (reads++, new Map()));
  assert.is(got.size, 0);
  assert.is(reads, 0);
});

test.run();
