// Compaction of the PostgreSQL store's rollups. While a day takes events, its rollups are additive
// counter rows (lib/rollup/counters.ts), which stay exact under concurrent inserts but cost one row
// per (hour, route, distinct duration), and its breakdown sessions a row per name and session: a
// busy hour makes tens of thousands, and a busy user's 90 days over a million rows to add up per
// stats request. So a user's rows of a day are folded into immutable rows of
// watchtower_rollup_days (the day's hour parts in the binary form of lib/rollup/codec.ts, the
// breakdown sessions included): while the day is open, whenever they have grown (foldOpenDays),
// and once more when it is closed (compactClosedDays). Stats read those rows as decoded parts
// (cached per instance: they never change) and what is left as counters. The closing compaction
// also marks, per owner, the day's event count it saw (watchtower_event_days.compacted): while the
// count has not moved, the day has no counters of that owner left, and stats do not read its
// counter partition.
//
// The same pass then moves the closed day's event rows into compressed blocks of each owner's
// events (blockDay, which keeps each route's latest points of the day), gives the partition's
// space back (packEvents), and rolls the blocks up (rollupBlocks), for ranges whose edge falls
// inside a busy closed hour.
//
// The hour and day session sets stay where they are (and the session counters, which are a few
// rows per hour): they are what keeps an insert's session counts exact, and an insert that
// arrived after its day was compacted still finds them and counts only sessions new to them.
// See docs/architecture.md#postgresql-store.
import type postgres from 'postgres';
import { encodePart, FrozenHour } from '../rollup/codec.ts';
import { counterPart, DAY_SESSIONS, HOUR_SESSIONS, type Counter } from '../rollup/counters.ts';
import { HourRollup, rollupRow, type RollupPart } from '../rollup/hour.ts';
import type { StoredEvent } from '../event.ts';
import { LATENCY_POINTS } from '../stats.ts';
// A cycle (postgres.ts uses this module), harmless: pgArray is only called, never read at load.
import { pgArray } from './postgres.ts';

/**
 * A day is compacted once it ended this long ago. Receive times are set by the instance when the
 * request arrives and an insert gives up after its operation timeout (15 s by default), so an hour
 * leaves ample room for a slow insert and for clocks that disagree by minutes.
 */
export const COMPACT_AFTER_MS = 3_600_000;

// --- The bytes of a day: u32 part count, then per part a u32 length and the part, padded to 8 ---

/** The hour parts of a day in one buffer. */
export function encodeDay(parts: readonly RollupPart[]): Uint8Array {
  const encoded = parts.map(encodePart);
  let size = 8;
  for (const p of encoded) size += 8 + ((p.byteLength + 7) & ~7);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, encoded.length, true);
  let at = 8;
  for (const p of encoded) {
    view.setUint32(at, p.byteLength, true);
    out.set(p, at + 8);
    at += 8 + ((p.byteLength + 7) & ~7);
  }
  return out;
}

/** The hour parts of a day's buffer, each copied into a buffer of its own (see FrozenHour.decode). */
export function decodeDay(bytes: Uint8Array): FrozenHour[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = () => new RangeError('not a compacted rollup day');
  if (bytes.byteLength < 8) throw bad();
  const count = view.getUint32(0, true);
  const out: FrozenHour[] = [];
  let at = 8;
  for (let i = 0; i < count; i++) {
    if (at + 8 > bytes.byteLength) throw bad();
    const length = view.getUint32(at, true);
    if (at + 8 + length > bytes.byteLength) throw bad();
    // A copy made by the Uint8Array constructor: a Buffer's slice() would be a view.
    out.push(FrozenHour.decode(new Uint8Array(bytes.subarray(at + 8, at + 8 + length))));
    at += 8 + ((length + 7) & ~7);
  }
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const hex = (bytes: Uint8Array) => {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]];
  return s;
};

// --- Compaction ---------------------------------------------------------------------------------

interface Group { user: string; scope: string; fold: number; counters: Map<number, Counter[]>; sessions: Map<number, Map<string, string[]>> }

/**
 * compactDay's statement. $1–$3: the fold rows (user, scope, hex parts); $4: the day; $5–$12: the
 * counter rows read (user, scope, hour, kind, key, ms, n, micros); $13, $14: each owner's event
 * count of the day; $15, $16: the day's hours [h0, h1); $17: each fold row's number; $18–$23: the
 * breakdown session rows read (user, scope, hour, kind, key, session); $24: the day is closing
 * (mark its owners compacted); $25: owners with nothing left to fold, marked as well.
 *
 * It is sent unprepared: a prepared statement gets a generic plan from its sixth run on a
 * connection, and the generic plan, guessing ten rows for each unnest, joined the counter rows to
 * every daily partition by user alone. At 10M events that made one day's compaction run for over
 * ten minutes on the sixth day. The update and the delete are also bounded to the day's hours, so
 * that even a generic plan prunes the other partitions before it runs (a test holds this).
 */
export const COMPACT_DAY = `
    with input as (
      select * from unnest($1::text[], $2::text[], $3::text[], $17::int4[])
        as t(user_id, scope, parts, fold)
    ), stored as (
      insert into watchtower_rollup_days (user_id, scope, day, fold, parts)
      select user_id, scope, $4::integer, fold, decode(parts, 'hex') from input
      on conflict do nothing
      returning user_id, scope
    ), counted as (
      select * from unnest($5::text[], $6::text[], $7::int4[], $8::text[], $9::text[], $10::float8[], $11::int8[], $12::float8[])
        as c(user_id, scope, hour, kind, key, ms, n, micros)
    ), subtracted as (
      update watchtower_rollups r set n = r.n - c.n, micros = r.micros - c.micros
      from counted c join stored s on s.user_id = c.user_id and s.scope = c.scope
      where r.hour >= $15::int4 and r.hour < $16::int4
        and r.user_id = c.user_id and r.scope = c.scope and r.hour = c.hour and r.kind = c.kind::"char" and r.key = c.key and r.ms = c.ms
      returning 1
    ), listed as (
      select * from unnest($18::text[], $19::text[], $20::int4[], $21::text[], $22::text[], $23::text[])
        as l(user_id, scope, hour, kind, key, session)
    ), unlisted as (
      -- The sessions now in the stored rows. One an insert adds again after this is a row again,
      -- and counts once: statistics take the union of rows and folds.
      delete from watchtower_breakdown_sessions b
      using listed l join stored s on s.user_id = l.user_id and s.scope = l.scope
      where b.hour >= $15::int4 and b.hour < $16::int4
        and b.user_id = l.user_id and b.scope = l.scope and b.hour = l.hour and b.kind = l.kind::"char" and b.key = l.key and b.session = l.session
      returning 1
    ), marked as (
      -- Owners with a day row stored here: the day holds no counters of theirs beyond what this
      -- snapshot saw, unless another compaction's older snapshot says less (least of the two).
      update watchtower_event_days d set compacted = least(coalesce(d.compacted, m.events), m.events), folded = true
      from unnest($13::text[], $14::int8[]) as m(user_id, events)
      where $24::boolean and d.user_id = m.user_id and d.day = $4::integer
        and (m.user_id in (select user_id from stored) or m.user_id = any($25::text[]))
      returning 1
    )
    select (select count(*) from stored)::int as stored, (select count(*) from subtracted) as subtracted,
           (select count(*) from unlisted) as unlisted, (select count(*) from marked) as marked`;

type ReadRow = {
  what: 'c' | 's' | 'e' | 'f'; user_id: string; scope: string | null; hour: number | null; kind: string | null; key: string | null;
  ms: number | null; n: string | null; micros: number | null; session: string | null;
};

/**
 * Folds a day's counter rows and breakdown sessions into the next fold row of each user and
 * scope: reads them, encodes each user and scope's hours (their breakdown sessions included), and
 * in one statement stores the rows and subtracts what was read from the counter rows they replace
 * and deletes the session rows read; a second statement deletes the counters left at zero.
 *
 * While the day takes events (`close` false) this keeps a busy day's rows few (foldOpenDays);
 * once it is closed (`close` true) it also marks each owner's day compacted. Fold rows are
 * immutable: a fold row is stored only if none with its number exists yet, and only then is
 * anything subtracted or deleted, so instances folding the same day at once do the work once.
 * Subtracting (rather than deleting) is what makes an insert racing the fold safe: an insert that
 * added to a counter after it was read leaves its own count behind, beside the fold (stats add
 * both), and a counter at zero that an insert raises again is not deleted. Resolves to the number
 * of (user, scope) rows stored.
 */
export async function compactDay(sql: postgres.Sql, day: number, close = true, users?: readonly string[]): Promise<number> {
  const h0 = day * 24, h1 = h0 + 24;
  const only = users ? sql`and user_id = any(${pgArray(users)}::text[])` : sql``;
  // In one snapshot: the counters, the breakdown sessions, each owner's event count of the day
  // (what the rows stored below will be known to hold; see watchtower_event_days.compacted), and
  // each user and scope's last fold number.
  const read = await sql<ReadRow[]>`
    select 'c' as what, user_id, scope, hour, kind::text as kind, key, ms, n, micros, null as session from watchtower_rollups
    where hour >= ${h0} and hour < ${h1} and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n > 0 ${only}
    union all
    select 's', user_id, scope, hour, kind::text, key, null, null, null, session from watchtower_breakdown_sessions
    where hour >= ${h0} and hour < ${h1} ${only}
    union all
    select 'e', user_id, null, null, null, null, null, events, null, null from watchtower_event_days where day = ${day} ${only}
    union all
    select 'f', user_id, scope, null, null, null, null, max(fold), null, null from watchtower_rollup_days where day = ${day} ${only}
    group by user_id, scope`;
  const groups = new Map<string, Group>();
  const groupOf = (user: string, scope: string) => {
    const k = `${user}\u0000${scope}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { user, scope, fold: 0, counters: new Map(), sessions: new Map() }));
    return g;
  };
  const counters: ReadRow[] = [], sessions: ReadRow[] = [], seen: ReadRow[] = [];
  const folds = new Map<string, number>();
  for (const r of read) {
    if (r.what === 'e') seen.push(r);
    else if (r.what === 'f') folds.set(`${r.user_id}\u0000${r.scope}`, Number(r.n) + 1);
    else if (r.what === 'c') {
      counters.push(r);
      const hours = groupOf(r.user_id, r.scope!).counters;
      let list = hours.get(r.hour!);
      if (!list) hours.set(r.hour!, (list = []));
      list.push({ kind: r.kind!, key: r.key!, ms: r.ms!, n: Number(r.n), micros: r.micros! });
    } else {
      sessions.push(r);
      const hours = groupOf(r.user_id, r.scope!).sessions;
      let names = hours.get(r.hour!);
      if (!names) hours.set(r.hour!, (names = new Map()));
      const k = `${r.kind}\u0000${r.key}`;
      let list = names.get(k);
      if (!list) names.set(k, (list = []));
      list.push(r.session!);
    }
  }
  // Owners with nothing to fold: a closing day is marked for them too (their events are all in
  // fold rows already), unless they have session rows left (a day compacted by an earlier version).
  const busy = new Set([...groups.values()].map((g) => g.user));
  const idle = seen.filter((r) => !busy.has(r.user_id)).map((r) => r.user_id);
  if (!groups.size && !(close && idle.length)) return 0;
  const cols = { user: [] as string[], scope: [] as string[], parts: [] as string[], fold: [] as number[] };
  for (const g of groups.values()) {
    const hours = [...new Set([...g.counters.keys(), ...g.sessions.keys()])].sort((a, b) => a - b);
    cols.user.push(g.user);
    cols.scope.push(g.scope);
    cols.fold.push(folds.get(`${g.user}\u0000${g.scope}`) ?? 0);
    cols.parts.push(hex(encodeDay(hours.map((hour) => {
      const names = [...(g.sessions.get(hour) ?? [])].map(([k, list]) => {
        const i = k.indexOf('\u0000');
        return [k.slice(0, i), k.slice(i + 1), list] as const;
      });
      return counterPart(hour, g.counters.get(hour) ?? [], names);
    }))));
  }
  const column = (rows: ReadRow[], f: (r: ReadRow) => string | number | null) => pgArray(rows.map(f));
  // Unprepared (sql.unsafe), so planned for these arrays every time: see COMPACT_DAY.
  const [{ stored }] = await sql.unsafe<{ stored: number }[]>(COMPACT_DAY, [
    pgArray(cols.user), pgArray(cols.scope), pgArray(cols.parts), day,
    column(counters, (r) => r.user_id), column(counters, (r) => r.scope), column(counters, (r) => r.hour), column(counters, (r) => r.kind),
    column(counters, (r) => r.key), column(counters, (r) => r.ms), column(counters, (r) => r.n), column(counters, (r) => r.micros),
    pgArray(seen.map((r) => r.user_id)), pgArray(seen.map((r) => r.n)), h0, h1, pgArray(cols.fold),
    column(sessions, (r) => r.user_id), column(sessions, (r) => r.scope), column(sessions, (r) => r.hour), column(sessions, (r) => r.kind),
    column(sessions, (r) => r.key), column(sessions, (r) => r.session), close, pgArray(idle),
  ]);
  await sql`
    delete from watchtower_rollups
    where hour >= ${h0} and hour < ${h1} and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n = 0`;
  return stored;
}

/**
 * Compacts every day that still has counters to merge (session counters aside) and ended at least
 * COMPACT_AFTER_MS before `now`, moves those days' event rows into blocks (blockDay) and rolls the
 * blocks up (rollupBlocks). Resolves
 * to the number of days that had something to compact. `stop` is asked between days (a store
 * closing stops after the day in hand).
 */
export async function compactClosedDays(sql: postgres.Sql, now: number, stop = () => false): Promise<number> {
  const before = Math.floor((now - COMPACT_AFTER_MS) / 86_400_000);
  const days = (await sql<{ day: number }[]>`
    select substr(c.relname, length('watchtower_rollups') + 3)::integer as day
    from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = 'watchtower_rollups' and c.relname ~ '_p[0-9]+$'`).map((r) => r.day).filter((d) => d < before);
  let compacted = 0;
  for (const day of days.sort((a, b) => a - b)) {
    if (stop()) break;
    // Counters to fold, or owners not yet marked (their counters may all be in folds already).
    const [{ any }] = await sql<{ any: boolean }[]>`
      select exists (select 1 from watchtower_rollups where hour >= ${day * 24} and hour < ${day * 24 + 24}
                     and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n > 0)
          or exists (select 1 from watchtower_event_days where day = ${day} and compacted is null and user_id <> '') as any`;
    if (any && (await compactDay(sql, day)) > 0) compacted++;
  }
  // Closed days with rows not yet in blocks: each day once after its close, and again only for
  // rows inserted late.
  const unmoved = await sql<{ day: number }[]>`
    select day from watchtower_event_days where day < ${before} group by day having sum(events) > sum(moved) order by day`;
  for (const { day } of unmoved) {
    if (stop()) break;
    if ((await blockDay(sql, day)) > 0) await packEvents(sql, day);
  }
  // Days whose rows are all blocks but whose partition still has pages, or indexes larger than
  // empty ones (five indexes rebuilt empty take 80 KB). VACUUM frees a deleted row only once no
  // running statement's snapshot can still see it (another instance's compaction, a long export),
  // and cuts the emptied pages off only if it gets the table to itself for a moment; the rebuild
  // after it then copies the rows it could not free, and a later VACUUM (autovacuum's) empties
  // the table but leaves the indexes their size. A later pass packs such a day again.
  const uncut = await sql<{ day: number }[]>`
    select day from (select day from watchtower_event_days where day < ${before} group by day having sum(events) = sum(moved)) d
    where coalesce(pg_relation_size(to_regclass('watchtower_events_p' || day)), 0) > 0
       or coalesce(pg_indexes_size(to_regclass('watchtower_events_p' || day)), 0) > ${PACKED_INDEX_BYTES}`;
  for (const { day } of uncut) {
    if (stop()) break;
    await packEvents(sql, day);
  }
  await rollupBlocks(sql, stop);
  return compacted;
}

/**
 * An owner's open day is folded once it has this many counter and breakdown session rows: a
 * statistics request then reads at most about this many of them, the rest as cached fold rows.
 */
export const FOLD_ROWS = 4000;

/**
 * Folds the days not yet closed (compactClosedDays takes the others) of the owners whose rows
 * there reached `minRows`, each into its next fold row (compactDay). Resolves to the number of
 * rows stored. Counting the rows reads the day's counters and session rows, which folding keeps
 * few.
 */
export async function foldOpenDays(sql: postgres.Sql, now: number, stop = () => false, minRows = FOLD_ROWS): Promise<number> {
  const first = Math.floor((now - COMPACT_AFTER_MS) / 86_400_000), today = Math.floor(now / 86_400_000);
  let stored = 0;
  for (let day = first; day <= today && !stop(); day++) {
    const h0 = day * 24, h1 = h0 + 24;
    const due = await sql<{ user_id: string }[]>`
      select user_id from (
        select user_id from watchtower_rollups
        where hour >= ${h0} and hour < ${h1} and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n > 0
        union all
        select user_id from watchtower_breakdown_sessions where hour >= ${h0} and hour < ${h1}) r
      group by user_id having count(*) >= ${minRows}`;
    const folded = due.length ? await compactDay(sql, day, false, due.map((r) => r.user_id)) : 0;
    // The rows a fold deleted would otherwise stay in the partitions' indexes, which every read
    // of the day walks, until a VACUUM (autovacuum may be off).
    if (folded) await sql.unsafe(`vacuum watchtower_rollups_p${Math.trunc(day)}, watchtower_breakdown_sessions_p${Math.trunc(day)}`).catch(unlessGone);
    stored += folded;
  }
  return stored;
}

/** Blocks rolled up per statement by rollupBlocks: ~1,000 events each. */
const ROLLUP_BLOCKS = 20;

/**
 * Rolls up the owned blocks that are not yet (watchtower_event_blocks.rollup, migration 17), a
 * few at a time, until none is left or `stop` says so: each block's events as the hour parts of
 * one frozen day (encodeDay). A block never changes, so its rollup never does; two instances
 * doing the same block write the same bytes. Resolves to the number of blocks rolled up.
 */
export async function rollupBlocks(sql: postgres.Sql, stop = () => false): Promise<number> {
  let done = 0;
  while (!stop()) {
    const blocks = await sql<{ user_id: string; day: number; first_seq: string; texts: string }[]>`
      select user_id, day, first_seq::text, array_to_json(texts)::text as texts from watchtower_event_blocks
      where rollup is null and user_id <> '' limit ${ROLLUP_BLOCKS}`;
    if (!blocks.length) break;
    const parts = blocks.map((b) => hex(encodeDay(HourRollup.fromRows((JSON.parse(b.texts) as string[]).map((t) => rollupRow(JSON.parse(t) as StoredEvent))))));
    await sql`
      update watchtower_event_blocks b set rollup = decode(r.parts, 'hex')
      from unnest(${pgArray(blocks.map((b) => b.user_id))}::text[], ${pgArray(blocks.map((b) => b.day))}::int4[],
                  ${pgArray(blocks.map((b) => b.first_seq))}::int8[], ${pgArray(parts)}::text[]) as r(user_id, day, first_seq, parts)
      where b.user_id = r.user_id and b.day = r.day and b.first_seq = r.first_seq`;
    done += blocks.length;
  }
  return done;
}

/** Above this, the indexes of an emptied events partition hold pages a rebuild would give back. */
const PACKED_INDEX_BYTES = 128 * 1024;

/** The events partition of a day: an identifier built from an integer, nothing from a client. */
const partitionOf = (day: number) => `watchtower_events_p${Math.trunc(day)}`;
/** Rethrows all but 42P01: the partition is gone (retention dropped the day meanwhile). */
const unlessGone = (err: { code?: string }) => {
  if (err.code !== '42P01') throw err;
};

/** The most events of one owner in one block: a page of a past day reads one or two blocks. */
export const BLOCK_EVENTS = 1000;

/**
 * Moves the rows of a closed day's partition into blocks (watchtower_event_blocks, migration 11):
 * per owner, in seq order, up to BLOCK_EVENTS events a block, each column an array, which
 * PostgreSQL compresses (a row is never compressed, being under ~2 KB). One statement, so a read
 * sees the day's events either as rows or as blocks, never both or neither; the day's `moved`
 * count says how many are blocks (lib/store/postgres.ts, readEvents). It deletes the rows its
 * snapshot sees: rows inserted meanwhile stay rows, and two instances moving the same day at once
 * each move what the other did not (a deleted row is skipped). The same statement keeps each
 * owner, scope and route's latest points of the day (watchtower_day_points, migration 16), from
 * the rows moved and the points kept before. Sent unprepared, on the day's own partition.
 * Resolves to the number of events moved.
 */
export async function blockDay(sql: postgres.Sql, day: number): Promise<number> {
  const column = (name: string) => `array_agg(${name} order by seq)`;
  const [{ moved }] = await sql.unsafe<{ moved: number }[]>(`
    with moved as (
      delete from ${partitionOf(day)}
      returning seq, coalesce(user_id, '') as user_id, received_at, type, session_id, app_version, project_id, route_key, duration, ts, ttfb, event
    ), chunked as (
      select *, (row_number() over (partition by user_id order by seq) - 1) / $1::integer as chunk from moved
    ), blocks as (
      insert into watchtower_event_blocks
        (user_id, day, first_seq, last_seq, first_received, last_received, events,
         seqs, received, types, sessions, versions, projects, routes, durations, timestamps, ttfbs, texts)
      select user_id, $2::integer, min(seq), max(seq), min(received_at), max(received_at), count(*)::integer,
             ${['seq', 'received_at', 'type', 'session_id', 'app_version', 'project_id', 'route_key', 'duration', 'ts', 'ttfb', 'event'].map(column).join(', ')}
      from chunked group by user_id, chunk
      returning user_id, events
    ), candidates as (
      -- The latency points moved, per owner, scope and route.
      select m.user_id, s.scope, m.route_key as route, m.seq, m.duration, m.ts, m.ttfb
      from moved m cross join lateral (values (''), ('#' || m.project_id)) as s(scope)
      where m.user_id <> '' and m.route_key is not null and m.duration is not null and s.scope is not null
    ), pointed as (
      -- The latest of them, merged with those kept before (the row as committed: another
      -- instance moving rows of the same day at once adds its own, never overwrites them).
      insert into watchtower_day_points as p (user_id, scope, day, route, n, first_seq, last_seq, seqs, durations, timestamps, ttfbs)
      select user_id, scope, $2::integer, route, count(*), min(seq), max(seq),
             array_agg(seq order by seq desc), array_agg(duration order by seq desc), array_agg(ts order by seq desc), array_agg(ttfb order by seq desc)
      from (select *, row_number() over (partition by user_id, scope, route order by seq desc) as rank from candidates) c
      where rank <= $3::integer
      group by user_id, scope, route
      on conflict (user_id, scope, day, route) do update
        set (n, first_seq, last_seq, seqs, durations, timestamps, ttfbs) = (
          select count(*), min(seq), max(seq), array_agg(seq order by seq desc), array_agg(duration order by seq desc),
                 array_agg(ts order by seq desc), array_agg(ttfb order by seq desc)
          from (select * from (select * from unnest(p.seqs, p.durations, p.timestamps, p.ttfbs)
                               union select * from unnest(excluded.seqs, excluded.durations, excluded.timestamps, excluded.ttfbs)) u(seq, duration, ts, ttfb)
                order by seq desc limit $3::integer) t)
      returning 1
    ), counted as (
      -- Pointed: the moved count the day's points cover, if they covered every event moved before.
      update watchtower_event_days e set moved = e.moved + m.n,
        pointed = case when coalesce(e.pointed, 0) = e.moved then e.moved + m.n else e.pointed end
      from (select user_id, sum(events) as n from blocks group by 1) m
      where e.user_id = m.user_id and e.day = $2::integer
      returning m.n
    )
    select coalesce(sum(n), 0)::float8 as moved, (select count(*) from pointed) as points
    from counted`, [BLOCK_EVENTS, Math.trunc(day), LATENCY_POINTS]).catch((err: { code?: string }) => {
    unlessGone(err);
    return [{ moved: 0 }];
  });
  return moved;
}

/**
 * Gives back a closed day's partition's space once its rows are blocks, by the instance that moved
 * them, or by a later pass if that could not (see compactClosedDays): VACUUM frees the dead rows
 * and cuts the emptied pages off the table's end, and the indexes, which VACUUM leaves their size,
 * are rebuilt, CONCURRENTLY so that the day's inserts and reads go on meanwhile. Rows inserted
 * late are packed too.
 *
 * Two rebuilds of one table at once deadlock, and an interrupted REINDEX CONCURRENTLY leaves an
 * invalid copy of each index behind, which every insert into the day would keep up to date. So a
 * partition that another instance is vacuuming or indexing is left to it (autovacuum, which
 * rebuilds no index, gives way to this VACUUM), such copies are dropped
 * first, and a rebuild that fails on a lock (another instance got there in the same instant)
 * leaves the day to a later pass. A partition dropped meanwhile is left alone.
 */
export async function packEvents(sql: postgres.Sql, day: number): Promise<void> {
  const partition = partitionOf(day);
  const [{ busy, invalid }] = await sql<{ busy: boolean; invalid: string[] | null }[]>`
    select exists (select 1 from pg_stat_progress_vacuum v join pg_class c on c.oid = v.relid
                   join pg_stat_activity a on a.pid = v.pid where c.relname = ${partition} and a.backend_type = 'client backend')
        or exists (select 1 from pg_stat_progress_create_index i join pg_class c on c.oid = i.relid where c.relname = ${partition}) as busy,
           (select array_agg(x.relname::text) from pg_index ix join pg_class t on t.oid = ix.indrelid join pg_class x on x.oid = ix.indexrelid
            where t.relname = ${partition} and not ix.indisvalid) as invalid`;
  if (busy) return;
  const later = (err: { code?: string }) => {
    // 40P01 deadlock, 55P03 lock not available: another instance is packing the same day.
    if (err.code !== '40P01' && err.code !== '55P03') unlessGone(err);
  };
  // Index names from the catalog, quoted as identifiers.
  for (const index of invalid ?? []) await sql.unsafe(`drop index concurrently if exists "${index.replaceAll('"', '""')}"`).catch(later);
  // INDEX_CLEANUP ON: when dead line pointers are left on under 2% of the pages (the rest freed
  // by pruning), VACUUM by default leaves them and the indexes alone, and the pages holding them
  // can then never be cut off (16 of 90 days at 10M kept ~78 MB each).
  await sql.unsafe(`vacuum (index_cleanup on) ${partition}`).catch(later);
  await sql.unsafe(`reindex table concurrently ${partition}`).catch(later);
}

// --- Reading ------------------------------------------------------------------------------------

/** A session counter row: kind (HOUR_SESSIONS or DAY_SESSIONS), hour, count. */
export type SessionCount = [string, number, number];
/** Days of session counters kept per instance (a day is ~25 rows per user and scope). */
const SESSION_DAYS = 100_000;

/** A day's cached fold rows (fold → its hour parts), and their parts merged into one, if built. */
export interface CachedDay { folds: Map<number, FrozenHour[]>; merged: { folds: string; part: RollupPart } | null }

/**
 * Decoded fold rows of this instance, least recently used first, within a byte budget. A fold row
 * never changes, so an entry is never stale: retention deletes the row, and a request simply
 * stops asking for it.
 */
export class DayPartCache {
  /** user + scope → day → its folds; `order` holds one entry per fold, least recently used first. */
  private readonly groups = new Map<string, Map<number, CachedDay>>();
  private readonly order = new Map<string, { group: string; day: number; fold: number; bytes: number }>();
  private bytes = 0;
  private readonly sessions = new Map<string, readonly SessionCount[]>();
  constructor(private readonly budget: number) {}

  /** The cached days of a user and scope (marked as just used). */
  daysOf(user: string, scope: string): ReadonlyMap<number, CachedDay> {
    const group = `${user}\u0000${scope}`;
    const days = this.groups.get(group) ?? new Map<number, CachedDay>();
    for (const [day, { folds }] of days) {
      for (const fold of folds.keys()) {
        const k = `${group}\u0000${day}\u0000${fold}`;
        const entry = this.order.get(k);
        if (!entry) continue;
        this.order.delete(k);
        this.order.set(k, entry);
      }
    }
    return days;
  }

  /**
   * The parts of a day's folds merged into one (for buckets of whole days: assembleStats adds up
   * the same counts from one part as from all of them), built once per set of folds.
   */
  mergedDay(user: string, scope: string, day: number, folds: readonly number[], build: () => RollupPart): RollupPart {
    const cached = this.groups.get(`${user}\u0000${scope}`)?.get(day);
    const key = folds.join(',');
    if (cached?.merged?.folds === key) return cached.merged.part;
    const part = build();
    if (cached) cached.merged = { folds: key, part };
    return part;
  }

  /**
   * Session counters (kind, hour, n) of a compacted day that took no insert since its compaction
   * (see watchtower_event_days.compacted), which no longer change. The caller asks only for such
   * days; a day that takes a late insert is never such a day again. At most SESSION_DAYS entries,
   * the least recently used dropped first.
   */
  sessionsOf(user: string, scope: string, day: number): readonly SessionCount[] | undefined {
    const k = `${user}\u0000${scope}\u0000${day}`;
    const rows = this.sessions.get(k);
    if (rows) {
      this.sessions.delete(k);
      this.sessions.set(k, rows);
    }
    return rows;
  }

  setSessions(user: string, scope: string, day: number, rows: readonly SessionCount[]): void {
    this.sessions.set(`${user}\u0000${scope}\u0000${day}`, rows);
    for (const k of this.sessions.keys()) {
      if (this.sessions.size <= SESSION_DAYS) break;
      this.sessions.delete(k);
    }
  }

  set(user: string, scope: string, day: number, fold: number, parts: FrozenHour[]): void {
    const group = `${user}\u0000${scope}`;
    const bytes = parts.reduce((n, p) => n + p.encode().byteLength, 0);
    if (bytes > this.budget || this.groups.get(group)?.get(day)?.folds.has(fold)) return;
    let days = this.groups.get(group);
    if (!days) this.groups.set(group, (days = new Map()));
    let cached = days.get(day);
    if (!cached) days.set(day, (cached = { folds: new Map(), merged: null }));
    cached.folds.set(fold, parts);
    this.order.set(`${group}\u0000${day}\u0000${fold}`, { group, day, fold, bytes });
    this.bytes += bytes;
    for (const [k, entry] of this.order) {
      if (this.bytes <= this.budget) break;
      this.order.delete(k);
      this.bytes -= entry.bytes;
      const g = this.groups.get(entry.group)!;
      const d = g.get(entry.day)!;
      d.folds.delete(entry.fold);
      d.merged = null;
      if (!d.folds.size) g.delete(entry.day);
      if (!g.size) this.groups.delete(entry.group);
    }
  }
}
