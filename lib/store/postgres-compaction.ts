// Compaction of the PostgreSQL store's rollups. While a day takes events, its rollups are additive
// counter rows (lib/rollup/counters.ts), which stay exact under concurrent inserts but cost one row
// per (hour, route, distinct duration): a busy user's 90 days are over a million rows to add up
// per stats request. Once a day is closed (no insert receives it any more), its counters of each
// user and scope are merged into one immutable row of watchtower_rollup_days: the day's hour parts
// in the binary form of lib/rollup/codec.ts. Stats read closed days as decoded parts (cached per
// instance: they never change) and open days as counters. The compaction also marks, per owner,
// the day's event count it saw (watchtower_event_days.compacted): while the count has not moved,
// the day has no counters of that owner left, and stats do not read its counter partition.
//
// The same pass then moves the closed day's event rows into compressed blocks of each owner's
// events (blockDay), and gives the partition's space back (packEvents).
//
// Distinct sessions stay where they are (the session sets, and the session counters, which are a
// few rows per hour): they are what keeps an insert's session counts exact, and an insert that
// arrived after its day was compacted still finds them and counts only sessions new to them.
// See docs/architecture.md#postgresql-store.
import type postgres from 'postgres';
import { encodePart, FrozenHour } from '../rollup/codec.ts';
import { counterPart, DAY_SESSIONS, HOUR_SESSIONS, type Counter } from '../rollup/counters.ts';
import type { RollupPart } from '../rollup/hour.ts';
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

interface Group { user: string; scope: string; counters: Map<number, Counter[]> }

/**
 * compactDay's statement. $1–$3: the day rows (user, scope, hex parts); $4: the day; $5–$12: the
 * counter rows read (user, scope, hour, kind, key, ms, n, micros); $13, $14: each owner's event
 * count of the day; $15, $16: the day's hours [h0, h1).
 *
 * It is sent unprepared: a prepared statement gets a generic plan from its sixth run on a
 * connection, and the generic plan, guessing ten rows for each unnest, joined the counter rows to
 * every daily partition by user alone. At 10M events that made one day's compaction run for over
 * ten minutes on the sixth day. The update is also bounded to the day's hours, so that even a
 * generic plan prunes the other partitions before it runs (a test holds this).
 */
export const COMPACT_DAY = `
    with input as (
      select * from unnest($1::text[], $2::text[], $3::text[])
        as t(user_id, scope, parts)
    ), stored as (
      insert into watchtower_rollup_days (user_id, scope, day, parts)
      select user_id, scope, $4::integer, decode(parts, 'hex') from input
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
    ), marked as (
      -- Owners with a day row stored here: the day holds no counters of theirs beyond what this
      -- snapshot saw, unless another compaction's older snapshot says less (least of the two).
      update watchtower_event_days d set compacted = least(coalesce(d.compacted, m.events), m.events)
      from unnest($13::text[], $14::int8[]) as m(user_id, events)
      where d.user_id = m.user_id and d.day = $4::integer and m.user_id in (select user_id from stored)
      returning 1
    )
    select (select count(*) from stored)::int as stored, (select count(*) from subtracted) as subtracted,
           (select count(*) from marked) as marked`;

/**
 * Compacts one day: reads its counter rows, encodes each user and scope's hours, and in one
 * statement stores the day rows and subtracts what was read from the counter rows they replace;
 * a second statement deletes the rows left at zero. A day row is stored only if none exists yet,
 * and only then is anything subtracted, so instances compacting the same day at once do the work
 * once. Subtracting (rather than deleting) is what makes an insert racing the compaction safe:
 * an insert that added to a counter after it was read leaves its own count behind, beside the day
 * row (stats add both), and a counter at zero that an insert raises again is not deleted.
 * Resolves to the number of (user, scope) rows stored.
 */
export async function compactDay(sql: postgres.Sql, day: number): Promise<number> {
  const h0 = day * 24, h1 = h0 + 24;
  // The counters, and in the same snapshot each owner's event count of the day (scope null):
  // what the day rows stored below will be known to hold (see watchtower_event_days.compacted).
  const read = await sql<{ user_id: string; scope: string | null; hour: number; kind: string; key: string; ms: number; n: string; micros: number }[]>`
    select user_id, scope, hour, kind::text as kind, key, ms, n, micros from watchtower_rollups
    where hour >= ${h0} and hour < ${h1} and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n > 0
    union all
    select user_id, null, null, null, null, null, events, null from watchtower_event_days where day = ${day}`;
  const rows = read.filter((r) => r.scope !== null) as (Omit<(typeof read)[number], 'scope'> & { scope: string })[];
  const seen = read.filter((r) => r.scope === null);
  if (!rows.length) return 0;
  const groups = new Map<string, Group>();
  for (const r of rows) {
    const k = `${r.user_id}\u0000${r.scope}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { user: r.user_id, scope: r.scope, counters: new Map() }));
    let list = g.counters.get(r.hour);
    if (!list) g.counters.set(r.hour, (list = []));
    list.push({ kind: r.kind, key: r.key, ms: r.ms, n: Number(r.n), micros: r.micros });
  }
  const cols = { user: [] as string[], scope: [] as string[], parts: [] as string[] };
  for (const g of groups.values()) {
    const hours = [...g.counters.keys()].sort((a, b) => a - b);
    cols.user.push(g.user);
    cols.scope.push(g.scope);
    cols.parts.push(hex(encodeDay(hours.map((hour) => counterPart(hour, g.counters.get(hour)!)))));
  }
  const column = (f: (r: (typeof rows)[number]) => string | number) => pgArray(rows.map(f));
  // Unprepared (sql.unsafe), so planned for these arrays every time: see COMPACT_DAY.
  const [{ stored }] = await sql.unsafe<{ stored: number }[]>(COMPACT_DAY, [
    pgArray(cols.user), pgArray(cols.scope), pgArray(cols.parts), day,
    column((r) => r.user_id), column((r) => r.scope), column((r) => r.hour), column((r) => r.kind), column((r) => r.key),
    column((r) => r.ms), column((r) => r.n), column((r) => r.micros),
    pgArray(seen.map((r) => r.user_id)), pgArray(seen.map((r) => r.n)), h0, h1,
  ]);
  await sql`
    delete from watchtower_rollups
    where hour >= ${h0} and hour < ${h1} and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n = 0`;
  return stored;
}

/**
 * Compacts every day that still has counters to merge (session counters aside) and ended at least
 * COMPACT_AFTER_MS before `now`, and moves those days' event rows into blocks (blockDay). Resolves
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
    const [{ any }] = await sql<{ any: boolean }[]>`
      select exists (select 1 from watchtower_rollups where hour >= ${day * 24} and hour < ${day * 24 + 24}
                     and kind not in (${HOUR_SESSIONS}::"char", ${DAY_SESSIONS}::"char") and n > 0) as any`;
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
  return compacted;
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
 * each move what the other did not (a deleted row is skipped). Sent unprepared, on the day's own
 * partition. Resolves to the number of events moved.
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
    ), counted as (
      update watchtower_event_days e set moved = e.moved + m.n
      from (select user_id, sum(events) as n from blocks group by 1) m
      where e.user_id = m.user_id and e.day = $2::integer
      returning m.n
    )
    select coalesce(sum(n), 0)::float8 as moved from counted`, [BLOCK_EVENTS, Math.trunc(day)]).catch((err: { code?: string }) => {
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

/**
 * Decoded days of this instance, least recently used first, within a byte budget. A compacted
 * day never changes, so an entry is never stale: retention deletes the row, and a request simply
 * stops asking for it.
 */
export class DayPartCache {
  /** user + scope → day → parts; `order` holds the same entries, least recently used first. */
  private readonly groups = new Map<string, Map<number, FrozenHour[]>>();
  private readonly order = new Map<string, { group: string; day: number; bytes: number }>();
  private bytes = 0;
  private readonly sessions = new Map<string, readonly SessionCount[]>();
  constructor(private readonly budget: number) {}

  private touch(group: string, day: number): void {
    const k = `${group}\u0000${day}`;
    const entry = this.order.get(k);
    if (!entry) return;
    this.order.delete(k);
    this.order.set(k, entry);
  }

  /** The cached days of a user and scope, day → parts (marked as just used). */
  daysOf(user: string, scope: string): ReadonlyMap<number, FrozenHour[]> {
    const group = `${user}\u0000${scope}`;
    const days = this.groups.get(group) ?? new Map<number, FrozenHour[]>();
    for (const day of days.keys()) this.touch(group, day);
    return days;
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

  set(user: string, scope: string, day: number, parts: FrozenHour[]): void {
    const group = `${user}\u0000${scope}`;
    const bytes = parts.reduce((n, p) => n + p.encode().byteLength, 0);
    if (bytes > this.budget || this.groups.get(group)?.has(day)) return;
    let days = this.groups.get(group);
    if (!days) this.groups.set(group, (days = new Map()));
    days.set(day, parts);
    this.order.set(`${group}\u0000${day}`, { group, day, bytes });
    this.bytes += bytes;
    for (const [k, entry] of this.order) {
      if (this.bytes <= this.budget) break;
      this.order.delete(k);
      this.bytes -= entry.bytes;
      const g = this.groups.get(entry.group)!;
      g.delete(entry.day);
      if (!g.size) this.groups.delete(entry.group);
    }
  }
}
