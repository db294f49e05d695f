// The shared store: PostgreSQL, for several stateless instances behind a load balancer.
// Acknowledged = committed. Other instances' inserts reach this one through LISTEN/NOTIFY.
// See docs/architecture.md#postgresql-store.
//
// Every operation is a single statement on a pooled connection, never a transaction: a reserved
// connection (which sql.begin uses) whose backend dies makes postgres.js 3.4.9 write to a null
// socket from a setImmediate and crash the process (porsager/postgres#1208), while single
// statements fail cleanly. So an insert, with its ids, rows, rollups and NOTIFYs, is one statement.
//
// This file only wires the parts, one concern each: sql.ts (helpers, guard), migrations/,
// insert/ (the write path and group commit), reads/ (pages, exports), stats/ (plan, counters,
// assembly), notify.ts (live delivery), issue-feed.ts, users.ts, health.ts, and maintenance/ (partitions and
// retention, compaction, blocks, planner statistics, and when they run).
import postgres from 'postgres';
import type { Store } from '../types.ts';
import { DayPartCache } from './day-cache.ts';
import { health } from './health.ts';
import { insertPath } from './insert/index.ts';
import { issueLease, safeHorizon, scanErrors } from './issue-feed.ts';
import { partitionsOf } from './maintenance/partitions.ts';
import { startUpkeep } from './maintenance/upkeep.ts';
import { migrate } from './migrations/index.ts';
import { DEFAULT_CHANNEL, notifications } from './notify.ts';
import { eventPages } from './reads/events.ts';
import { funnelReader } from './reads/funnel.ts';
import { ownerReads } from './reads/owner.ts';
import { col, guardWith } from './sql.ts';
import { EdgeMinuteCache } from './stats/edge-minutes.ts';
import { environmentStatsReader } from './stats/environment.ts';
import { OpenPointsCache } from './stats/open-points.ts';
import { statsReader } from './stats/index.ts';
import { users } from './users.ts';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:5432/database */
  url: string;
  log?: (msg: string) => void;
  /** Connections in the pool (default 10); LISTEN uses one more. */
  max?: number;
  /** Seconds to wait for a connection before a request fails with 503 (default 5). */
  connectTimeout?: number;
  /** A database operation unanswered after this long fails with 503 (default 15 s). */
  operationTimeoutMs?: number;
  /** NOTIFY channel shared by the instances of one deployment. */
  channel?: string;
  /**
   * Days of events kept (0, the default: all). Retention is by whole UTC days: a day's partitions
   * are dropped once the whole day is more than this many days old.
   */
  retentionDays?: number;
  /** How often an instance checks for days to drop and partitions to create (default 1 hour). */
  maintenanceIntervalMs?: number;
  /**
   * Bytes of decoded fold rows (compacted days, folds of busy open days) kept in memory for stats,
   * least recently used dropped first (default 64 MiB; the server passes SERVICE_CACHE_MB).
   */
  rollupCacheBytes?: number;
  /**
   * How long the issue-grouping lease (Store.issueLease) lasts unless renewed (default 20 s): an
   * instance that dies is taken over within this long.
   */
  issueLeaseMs?: number;
  /**
   * How often the instance folds the rows of busy open days (foldOpenDays) and renews the planner
   * statistics of the partitions that changed enough since they were taken (analyzeChangedPartitions);
   * default 10 s.
   */
  upkeepIntervalMs?: number;
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const log = options.log ?? (() => {});
  const channel = options.channel ?? DEFAULT_CHANNEL;
  const instance = crypto.randomUUID();
  const operationTimeoutMs = options.operationTimeoutMs ?? 15_000;
  const sql = postgres(options.url, {
    max: options.max ?? 10,
    connect_timeout: options.connectTimeout ?? 5,
    onnotice: () => {},
    // The array-type lookup postgres.js runs on each new connection is an un-awaited promise: a
    // connection killed during it surfaces as an unhandled rejection. Every array this store sends
    // carries an explicit cast (::text[], ::float8[]), so the lookup is not needed.
    fetch_types: false,
    connection: { application_name: 'watchtower' },
  });
  const guard = guardWith(operationTimeoutMs);

  try {
    await migrate(sql, log);
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw err;
  }

  let closed = false;
  const isClosed = () => closed;
  const partitions = partitionsOf(sql, guard, log, options.retentionDays ?? 0);
  const upkeep = startUpkeep(sql, { log, maintain: partitions.maintain, isClosed,
    maintenanceIntervalMs: options.maintenanceIntervalMs, upkeepIntervalMs: options.upkeepIntervalMs });
  const live = notifications(sql, guard, { url: options.url, connectTimeout: options.connectTimeout, channel, instance, log, isClosed });

  // Issue processing's feed (./issue-feed.ts).
  const horizon = safeHorizon(sql);
  const lease = issueLease(sql, instance, options.issueLeaseMs ?? 20_000, log);

  const owner = ownerReads(sql);
  const cacheBytes = options.rollupCacheBytes ?? 64 * 1024 * 1024;
  // Edge minutes take an eighth of the budget: two edges of an hour a range, per dashboard in use.
  // The open days' latest points a sixteenth (stats/open-points.ts): at the default 64 MiB, 4 MiB,
  // two or three owners' today and yesterday of 40 routes.
  const dayCache = new DayPartCache(cacheBytes - Math.floor(cacheBytes / 8) - Math.floor(cacheBytes / 16));
  const openPoints = new OpenPointsCache(Math.floor(cacheBytes / 16), horizon);
  // Both resolve the horizon through the open points' single probe in flight.
  const edgeMinutes = new EdgeMinuteCache(Math.floor(cacheBytes / 8), () => openPoints.horizon());

  const stats = statsReader(sql, guard, dayCache, edgeMinutes, openPoints, owner);
  const store: Store = {
    persisted: true,
    insert: insertPath(sql, guard, partitions, { channel, instance, log, stored: upkeep.stored }),
    ...eventPages(sql, guard, owner),

    async scanErrors(q) {
      return guard('scanErrors', () => scanErrors(sql, horizon, q.userId === undefined ? q : { ...q, userId: col(q.userId)! }));
    },

    async issueLease() {
      return !closed && (await lease.held());
    },

    stats,
    statsOfEnvironment: environmentStatsReader(sql, guard, stats),
    funnel: funnelReader(sql, guard),
    ...users(sql, guard),
    health: health(sql, guard, instance, edgeMinutes, openPoints),
    watch: live.watch,

    async flush() {},

    async close() {
      closed = true;
      upkeep.stop();
      await lease.release();
      await upkeep.settled();
      await live.close();
      await sql.end({ timeout: 5 });
    },
  };
  try {
    await partitions.maintain();
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  upkeep.compact();
  return store;
}
