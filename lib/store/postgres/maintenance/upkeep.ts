// When the background work of an instance runs: partitions and retention hourly, compaction of
// closed days (one run at a time), and the upkeep of busy open days after inserts.
import type postgres from 'postgres';
import { DAY_MS } from '../../../stats.ts';
import { isUnavailable } from '../sql.ts';
import { analyzeChangedPartitions } from './analyze.ts';
import { compactClosedDays, foldOpenDays } from './compaction.ts';

/** Events an instance stores before it next folds busy open days and renews planner statistics. */
const UPKEEP_EVENTS = 1000;

export interface UpkeepOptions {
  log: (msg: string) => void;
  /** Retention and partitions ahead (partitionsOf), run with compaction on maintenanceIntervalMs. */
  maintain: () => Promise<number>;
  /** Whether the store is closing: runs stop between days. */
  isClosed: () => boolean;
  /** PostgresStoreOptions' intervals (default: 1 hour, 10 s). */
  maintenanceIntervalMs?: number;
  upkeepIntervalMs?: number;
}

export function startUpkeep(sql: postgres.Sql, options: UpkeepOptions) {
  const { log, maintain, isClosed } = options;
  // Compaction of closed days runs in the background (at start it may have a migrated history to
  // go through), one run at a time per instance; instances running it at once are safe (see
  // compactDay), only wasteful, and each run finds little left after the first.
  let compacting: Promise<void> | null = null;
  const compact = () => {
    compacting ??= compactClosedDays(sql, Date.now(), isClosed)
      .then((days) => void (days && log(`compacted the rollups of ${days} closed day(s)`)))
      .catch((err: unknown) => log(`rollup compaction failed: ${err instanceof Error ? err.message : err}`))
      .finally(() => (compacting = null));
  };
  const maintenance = setInterval(() => {
    maintain().catch((err: unknown) => log(`partition maintenance failed: ${err instanceof Error ? err.message : err}`));
    compact();
    keepUp(true);
  }, options.maintenanceIntervalMs ?? 3_600_000);
  (maintenance as { unref?: () => void }).unref?.();
  // Busy open days: their rows folded as they grow (foldOpenDays), then the planner statistics
  // of today's and yesterday's partitions renewed as they fill (./analyze.ts).
  // Each instance keeps up after its own inserts, once it has stored UPKEEP_EVENTS since it last
  // did (fewer can neither need a fold nor change a partition's statistics much), and hourly
  // whatever it stored; an idle instance leaves it to those that insert.
  // PostgreSQL publishes a backend's row counts when it goes idle, up to ~10 s after its commit
  // when it published others just before, so a run after a burst may not see its last inserts:
  // runs go on for 15 s after the last one that inserts called for.
  let upkeep: Promise<void> | null = null;
  let written = 0, trailing = 0;
  const keepUp = (hourly = false) => {
    const now = Date.now(), today = Math.floor(now / DAY_MS);
    if (upkeep) return;
    if (written >= (hourly ? 1 : UPKEEP_EVENTS)) trailing = now + 15_000;
    else if (now >= trailing) return;
    written = 0;
    upkeep = foldOpenDays(sql, now, isClosed)
      .then(() => (isClosed() ? undefined : analyzeChangedPartitions(sql, [today - 1, today])))
      .then(() => {})
      .catch((err: unknown) => void (isUnavailable(err) || log(`open-day upkeep failed: ${err instanceof Error ? err.message : err}`)))
      .finally(() => (upkeep = null));
  };
  const upkeeper = setInterval(() => keepUp(), options.upkeepIntervalMs ?? 10_000);
  (upkeeper as { unref?: () => void }).unref?.();
  return {
    compact,
    /** Counts events an insert newly stored, towards the next upkeep. */
    stored: (n: number) => void (written += n),
    /** Stops the timers; `settled` then waits for runs under way. */
    stop() {
      clearInterval(maintenance);
      clearInterval(upkeeper);
    },
    async settled() {
      await compacting;
      await upkeep;
    },
  };
}
