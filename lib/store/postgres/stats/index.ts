// Statistics of the PostgreSQL store, in three steps: plan what to read (./plan.ts), read the
// counters in one statement (./counters.ts) while the latest events and points are read by days
// (./points.ts), and assemble the answer (./assemble.ts).
import type postgres from 'postgres';
import { planStats, type StatsPlan } from '../../../rollup/assemble.ts';
import { HOUR_MS, RECENT_ACTIVITY, RECENT_ERRORS, resolveRange, type Stats } from '../../../stats.ts';
import type { EventFilter, Store } from '../../types.ts';
import type { DayPartCache } from '../day-cache.ts';
import type { EdgeMinuteCache } from './edge-minutes.ts';
import type { OpenPointsCache } from './open-points.ts';
import type { EventDay } from '../reads/by-days.ts';
import type { OwnerReads, OwnerRead } from '../reads/owner.ts';
import { col, scopeOf, type Guard, type SeqRow } from '../sql.ts';
import { assemble } from './assemble.ts';
import { readCounters } from './counters.ts';
import { planQuery } from './plan.ts';
import { readLatestPoints } from './points.ts';

/** How statsOf reads the latest events of a user: by days (those given), as pages are read. */
type NewestOf = (f: EventFilter, want: number, days: readonly EventDay[]) => Promise<SeqRow[]>;

/** Store.stats, and with `environment` the statistics of its scope (see ./environment.ts). */
export type StatsReader = (...args: [...Parameters<Store['stats']>, environment?: string]) => Promise<Stats>;

/** Store.stats over the store's connection pool, its reads of owners' events and its cache of fold rows. */
export function statsReader(sql: postgres.Sql, guard: Guard, dayCache: DayPartCache, edgeMinutes: EdgeMinuteCache, openPoints: OpenPointsCache,
  { daysOf, newest, readOwner }: OwnerReads): StatsReader {
  // The first hour whose events all have breakdown counters (migration 5): fixed once migrated.
  let breakdownsFromHour: number | undefined;
  const breakdownsFrom = async () =>
    (breakdownsFromHour ??= (await sql<{ hour: number }[]>`select hour from watchtower_breakdowns_from`)[0]?.hour ?? -Infinity);
  // The first hour whose events all have counters of the newer dimensions (migration 18).
  let dimensionsFromHour: number | undefined;
  const dimensionsFrom = async () =>
    (dimensionsFromHour ??= (await sql<{ hour: number }[]>`select hour from watchtower_dimensions_from`)[0]?.hour ?? -Infinity);
  // The first hour whose events all have property counters (migration 20).
  let propertiesFromHour: number | undefined;
  const propertiesFrom = async () =>
    (propertiesFromHour ??= (await sql<{ hour: number }[]>`select hour from watchtower_properties_from`)[0]?.hour ?? -Infinity);
  return async (userId, now, range, projectId, environment): Promise<Stats> => {
    const user = col(userId)!, scope = col(scopeOf(projectId, environment))!;
    // A bad range is a RangeError before any query.
    planStats(now, range);
    return guard('stats', async () => {
      // Whether the user has events at or after the range's end: if not (a range ending now, as
      // most do), its last hour is taken whole from rollups rather than from raw rows (see
      // planStats). The latest receive time from the end's hour on, exactly: rows by the
      // (user, received_at) index of the partitions from the end's day on, and the blocks of
      // closed days. Only the user's: any project's event there is the conservative answer.
      let latest = Infinity;
      const to = range === undefined ? undefined : resolveRange(range, now)?.to;
      // The user's days (the counters to read, and where the latest events are), beside it.
      const days = daysOf({ userId });
      days.catch(() => {});
      if (to !== undefined) {
        const endHour = Math.floor(to / HOUR_MS);
        const from = new Date(endHour * HOUR_MS).toISOString();
        const [{ at }] = await sql<{ at: Date | null }[]>`
          select greatest(
            (select max(received_at) from watchtower_events where user_id = ${user} and received_at >= ${from}::timestamptz),
            (select max(last_received) from watchtower_event_blocks
              where user_id = ${user} and day >= ${Math.floor(endHour / 24)} and last_received >= ${from}::timestamptz)) as at`;
        latest = at === null ? endHour * HOUR_MS - 1 : at.getTime();
      }
      const plan = planStats(now, range, latest);
      return statsOf(sql, dayCache, edgeMinutes, openPoints, plan, user, scope, projectId === undefined ? null : col(projectId), environment ?? null,
        await days, (f, want, known) => newest(f, want, undefined, known), readOwner, [await breakdownsFrom(), await dimensionsFrom(), await propertiesFrom()]);
    });
  };
}

/**
 * Statistics from rollups, as every store answers them (lib/rollup/assemble.ts): one statement
 * reads the fold rows of the days in range (only the bytes of folds this instance has not cached;
 * see lib/store/postgres/maintenance/compaction.ts), the counters of the plan's whole hours summed per series
 * bucket, the breakdown sessions still in rows, the session counters and sessions the series
 * needs, the partial hours at the range's edges (blocks wholly inside them as their rollups, the
 * rest as raw rows), and the active sessions of the last minutes (from the sessions seen, when
 * they can tell). Beside it, the latest errors and activity, then the latest points of each route
 * (of whole closed days from watchtower_day_points), are read by days (readByDays), so that no
 * read of raw rows goes through every daily partition. Single statements on pooled connections,
 * never a transaction (see guard).
 */
async function statsOf(sql: postgres.Sql, cache: DayPartCache, minutes: EdgeMinuteCache, open: OpenPointsCache, plan: StatsPlan, user: string, scope: string, project: string | null,
  environment: string | null, userDays: readonly EventDay[], newest: NewestOf, read: OwnerRead, [breakdownsFrom, dimensionsFrom, propertiesFrom]: [number, number, number]): Promise<Stats> {
  const q = planQuery(sql, cache, minutes, plan, user, scope, project, environment, userDays, breakdownsFrom, dimensionsFrom, propertiesFrom);
  const { window, days } = q;
  const latest = Promise.all([newest({ ...window, type: 'error' }, RECENT_ERRORS, days), newest(window, RECENT_ACTIVITY, days)]);
  // Settled even if the main statement fails first, so that no rejection goes unhandled.
  latest.catch(() => {});
  const points = readLatestPoints(q, read, open);
  const row = await readCounters(q);
  return assemble(q, row, latest, points);
}
