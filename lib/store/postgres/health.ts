// Store.health: counts from the tables that keep them (not every partition's rows), the database's
// size, the schema version, this instance's id, its edge minutes and its open days' points.
import type postgres from 'postgres';
import type { Store, StoreHealth } from '../types.ts';
import { MIGRATIONS } from './migrations/index.ts';
import type { Guard } from './sql.ts';
import type { EdgeMinuteCache } from './stats/edge-minutes.ts';
import type { OpenPointsCache } from './stats/open-points.ts';

export function health(sql: postgres.Sql, guard: Guard, instance: string, edgeMinutes: EdgeMinuteCache, openPoints: OpenPointsCache): Store['health'] {
  return async (): Promise<StoreHealth> => {
    const [row] = await guard('health', () => sql<{ events: number; users: number; database: string; bytes: number }[]>`
      select (select coalesce(sum(events), 0) from watchtower_event_days) as events,
             (select count(*) from watchtower_users) as users,
             current_database() as database,
             pg_database_size(current_database()) as bytes`);
    return {
      storage: 'postgres',
      eventCount: Number(row.events),
      userCount: Number(row.users),
      database: row.database,
      databaseBytes: Number(row.bytes),
      schemaVersion: MIGRATIONS[MIGRATIONS.length - 1].version,
      instance,
      edgeMinutes: edgeMinutes.figures(),
      openPoints: openPoints.figures(),
    };
  };
}
