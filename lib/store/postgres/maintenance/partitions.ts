// The daily partitions: those this instance knows exist, the days created ahead, and retention
// (whole days dropped, with their ids, folds, kept points and blocks).
import type postgres from 'postgres';
import { DAY_MS } from '../../../stats.ts';
import { pgArray, type Guard } from '../sql.ts';
import { SEEN_KEPT_MS } from '../stats/plan.ts';

/** Partitions are created this many days ahead of today. */
export const DAYS_AHEAD = 2;

export type Partitions = ReturnType<typeof partitionsOf>;

export function partitionsOf(sql: postgres.Sql, guard: Guard, log: (msg: string) => void, retentionDays: number) {
  // Days whose partitions this instance knows exist. An insert into a day it does not know asks
  // for its partitions first (and the next days', so that midnight needs no DDL); an insert that
  // still finds none (retention dropped a day it knew) forgets what it knew and asks again.
  const knownDays = new Set<number>();
  const ensurePartitions = async (first: number, last: number) => {
    await guard('create partitions', () => sql`select watchtower_ensure_partitions(${first}::integer, ${last}::integer)`);
    for (let d = first; d <= last; d++) knownDays.add(d);
  };

  /**
   * Retention and partitions ahead, on every instance, under the partition lock (whichever instance
   * comes first does the work; the others find it done). Dropping a day drops its events, its
   * rollups and its sessions; the ids of its events are deleted, so that an event retried after
   * its day was dropped is stored again (once).
   */
  const maintain = async (now = Date.now()) => {
    const today = Math.floor(now / DAY_MS);
    await ensurePartitions(today - 1, today + DAYS_AHEAD);
    await guard('sessions seen', () => sql`
      delete from watchtower_sessions_seen where last_received < ${new Date(now - SEEN_KEPT_MS).toISOString()}::timestamptz`);
    if (retentionDays <= 0) return 0;
    const cutoff = today - retentionDays;
    const dropped = await guard('retention', () => dropDaysBefore(sql, cutoff));
    await guard('retention', () => sql`delete from watchtower_event_ids where day < ${cutoff}::integer`);
    await guard('retention', () => sql`delete from watchtower_rollup_days where day < ${cutoff}::integer`);
    await guard('retention', () => sql`delete from watchtower_day_points where day < ${cutoff}::integer`);
    await guard('retention', () => sql`delete from watchtower_event_days where day < ${cutoff}::integer`);
    for (const d of knownDays) if (d < cutoff) knownDays.delete(d);
    if (dropped) log(`retention dropped ${dropped} day(s) of events received before ${new Date(cutoff * DAY_MS).toISOString()}`);
    return dropped;
  };
  return { knownDays, ensurePartitions, maintain };
}

/** The partitioned tables, each with one partition per day named <table>_p<day number>. */
const PARTITIONED = ['watchtower_events', 'watchtower_rollup_sessions', 'watchtower_day_sessions', 'watchtower_rollups', 'watchtower_breakdown_sessions'];

/**
 * Drops every day before `cutoff` (day number): its partition of each table is detached
 * CONCURRENTLY, which does not block inserts into the other partitions (a plain DROP would lock
 * the parent table until every running insert finished, and make new ones wait behind it), then
 * dropped. Several instances may do this at once: one that finds a partition gone already, or
 * being detached by another, leaves it to that one. Then deletes the days' blocks of events.
 * Resolves to the number of days dropped.
 */
export async function dropDaysBefore(sql: postgres.Sql, cutoff: number): Promise<number> {
  const days = (await sql<{ day: number }[]>`
    select distinct substr(c.relname, length(p.relname) + 3)::integer as day
    from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = any(${pgArray(PARTITIONED)}::text[]) and c.relname ~ '_p[0-9]+$'`).map((r) => r.day).filter((d) => d < cutoff);
  let dropped = 0;
  for (const day of days.sort((a, b) => a - b)) {
    try {
      for (const table of PARTITIONED) {
        // Identifiers made of constant names and an integer: nothing from a client.
        const partition = `${table}_p${Math.trunc(day)}`;
        await sql.unsafe(`alter table ${table} detach partition ${partition} concurrently`).catch((err: { code?: string }) => {
          // 42P01: gone already; 42P16 / 55000: not a partition or being detached (another instance).
          if (!['42P01', '42P16', '55000'].includes(err.code ?? '')) throw err;
        });
        await sql.unsafe(`drop table if exists ${partition}`);
      }
      dropped++;
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03' && (err as { code?: string }).code !== '40P01') throw err;
    }
  }
  // The blocks the closed days' rows were moved into (one row per thousand events of an owner).
  await sql`delete from watchtower_event_blocks where day < ${cutoff}::integer`;
  return dropped;
}
