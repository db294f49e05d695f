// Planner statistics of the partitions that are filling up. A day's partitions are created empty
// (ahead of midnight), so until something analyzes them the planner believes they hold a handful
// of rows. After a burst of 300,000 events that belief picked a scan of the whole busy hour for
// every route's latest points, 38 times over, and statistics took seconds (BENCHMARKS.md,
// "PostgreSQL statistics on busy days"). Autovacuum would analyze them within a minute or so, but
// it may be off, slow to get round to it, or configured by someone else: the store does not leave
// its query plans to it, and analyzes the partitions that changed most since their last analyze.
import type postgres from 'postgres';

/** The partitioned tables whose daily partitions are analyzed (their partitions are `<table>_p<day>`). */
const TABLES = ['watchtower_events', 'watchtower_rollups', 'watchtower_rollup_sessions', 'watchtower_day_sessions', 'watchtower_breakdown_sessions'];
/** Tables that are not partitioned, which compaction and folds fill. */
const PLAIN = ['watchtower_event_blocks', 'watchtower_rollup_days', 'watchtower_event_days', 'watchtower_day_points', 'watchtower_sessions_seen'];

/**
 * A partition is analyzed once the rows changed since its last analyze exceed this many plus
 * GROWTH times the rows it had then: after a burst its figures are at most about half out of
 * date, and a partition that grows steadily is analyzed a logarithmic number of times.
 */
export const ANALYZE_MIN_ROWS = 1000;
export const ANALYZE_GROWTH = 0.5;

/**
 * Analyzes the partitions of `days` (and the tables that are not partitioned) that changed enough since their last analyze (by any
 * instance: PostgreSQL's own counters, which every backend reports). Resolves to the partitions
 * analyzed. The names are built from integers and the fixed table names, nothing from a client.
 */
export async function analyzeChangedPartitions(sql: postgres.Sql, days: readonly number[]): Promise<string[]> {
  const names = [...PLAIN, ...days.flatMap((day) => TABLES.map((t) => `${t}_p${Math.trunc(day)}`))];
  const due = await sql<{ name: string }[]>`
    select s.relname as name
    from pg_stat_user_tables s join pg_class c on c.oid = s.relid
    where s.relname = any(string_to_array(${names.join(',')}::text, ','))
      and s.n_mod_since_analyze > ${ANALYZE_MIN_ROWS} + ${ANALYZE_GROWTH} * greatest(c.reltuples, 0)`;
  for (const { name } of due) {
    // One at a time: ANALYZE samples at most 30,000 rows of a partition, a fraction of a second.
    await sql.unsafe(`analyze ${name}`).catch((err: { code?: string }) => {
      if (err.code !== '42P01') throw err; // dropped by retention meanwhile
    });
  }
  return due.map((d) => d.name);
}
