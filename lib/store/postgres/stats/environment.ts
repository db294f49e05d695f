// Store.statsOfEnvironment on the PostgreSQL store: an environment's statistics from its scopes
// (lib/environment-scopes.ts; admitted at insert, lib/store/postgres/insert/environments.ts), read
// like a project's (./index.ts), or null when its scope cannot tell and the caller reads the
// events (lib/environment-stats.ts).
import type postgres from 'postgres';
import { resolveRange, type Stats } from '../../../stats.ts';
import type { Store } from '../../types.ts';
import { col, type Guard } from '../sql.ts';
import type { StatsReader } from './index.ts';

export function environmentStatsReader(sql: postgres.Sql, guard: Guard, stats: StatsReader): NonNullable<Store['statsOfEnvironment']> {
  return async (userId, now, range, projectId, environment): Promise<Stats | null> => {
    // A bad range is a RangeError before any query.
    const r = resolveRange(range, now);
    if (userId === '') return null;
    const user = col(userId)!;
    const [state] = await guard('stats', () => sql<{ full: boolean | null; legacy: Date | null; scoped: boolean }[]>`
      select o."full" as full, o.legacy_until as legacy,
             exists (select 1 from watchtower_environment_scopes where user_id = ${user} and name = ${col(environment)}) as scoped
      from (select 1) one left join watchtower_environment_owners o on o.user_id = ${user}`);
    // A name refused a scope may have events no scope counted.
    if (!state.scoped && state.full === true) return null;
    // Events stored before environments had scopes (migration 19) are counted in none: a range
    // reaching back to them (no range reaches back to the first event) is read from the events.
    if (state.legacy !== null && (r === null || r.from < state.legacy.getTime())) return null;
    return stats(userId, now, range, projectId, environment);
  };
}
