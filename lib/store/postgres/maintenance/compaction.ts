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
// inside a busy closed hour; blocks moved before funnel indexes existed get theirs (indexBlocks).
//
// The hour and day session sets stay where they are (and the session counters, which are a few
// rows per hour): they are what keeps an insert's session counts exact, and an insert that
// arrived after its day was compacted still finds them and counts only sessions new to them.
// See docs/architecture.md#postgresql-store.
import type postgres from 'postgres';
import { counterPart, DAY_SESSIONS, HOUR_SESSIONS, type Counter } from '../../../rollup/counters.ts';
import { pgArray } from '../sql.ts';
import { blockDay, PACKED_INDEX_BYTES, packEvents, rollupBlocks, unlessGone } from './blocks.ts';
import { indexBlocks } from './funnel-backfill.ts';
import { encodeDay, hex } from '../day-codec.ts';

/**
 * A day is compacted once it ended this long ago. Receive times are set by the instance when the
 * request arrives and an insert gives up after its operation timeout (15 s by default), so an hour
 * leaves ample room for a slow insert and for clocks that disagree by minutes.
 */
export const COMPACT_AFTER_MS = 3_600_000;

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
 * blocks up (rollupBlocks), and indexes blocks moved before funnel indexes (indexBlocks). Resolves
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
  await indexBlocks(sql, stop);
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
