// The two insert statements: the batch statement, which stores a whole batch and its rollups
// summed in the instance, and the exact one, which skips the events stored before. Both are one
// statement of the same steps (./steps.ts).
import type postgres from 'postgres';
import { DIM_KINDS, TYPE } from '../../../rollup/counters.ts';
import { pgArray, type Guard } from '../sql.ts';
import type { batchColumns, counterColumns, EventColumns } from './columns.ts';
import { insertSteps } from './steps.ts';

export function insertStatements(sql: postgres.Sql, guard: Guard, channel: string, instance: string) {
  const { inputStep, insStep, eventDaysStep, rollupSteps, doneColumns } = insertSteps(sql, channel, instance);
  /**
   * The batch insert: one statement claiming every id, storing every event and adding the
   * batch's rollups as they were summed in the instance (batchColumns), far less work for the
   * database than the exact statement's counter row per event and scope. It fails whole
   * (watchtower_all_new raises BATCH_HAD_STORED_IDS) when an id was stored before, as then its
   * sums count events that are not new.
   */
  const batchStatement = async (e: EventColumns, c: ReturnType<typeof batchColumns>, sent: number): Promise<void> => {
    await guard('insert', () => sql`
      with ${inputStep(e)}, claimed as (
        insert into watchtower_event_ids (key, day)
        select key, day from input order by ord
        on conflict do nothing
        returning 1
      ), ${insStep(sql`input`)}, ${eventDaysStep()}, ${rollupSteps({
        hourSessions: sql`select * from unnest(${c.hs[0]}::text[], ${c.hs[1]}::text[], ${c.hs[2]}::int4[], ${c.hs[3]}::text[])`,
        daySessions: sql`select * from unnest(${c.ds[0]}::text[], ${c.ds[1]}::text[], ${c.ds[2]}::int4[], ${c.ds[3]}::text[])`,
        breakdownSessions: sql`select user_id, scope, hour, kind::"char", key, session
          from unnest(${c.bs[0]}::text[], ${c.bs[1]}::text[], ${c.bs[2]}::int4[], ${c.bs[3]}::text[], ${c.bs[4]}::text[], ${c.bs[5]}::text[])
            as b(user_id, scope, hour, kind, key, session)`,
        counters: sql`select * from unnest(${c.c_user}::text[], ${c.c_scope}::text[], ${c.c_hour}::int4[], ${c.c_kind}::text[],
                               ${c.c_key}::text[], ${c.c_ms}::float8[], ${c.c_n}::int8[], ${c.c_micros}::float8[])
            as k(user_id, scope, hour, kind, key, ms, n, micros)`,
      })}
      select watchtower_all_new((select count(*) from claimed), ${sent}::int8) as claimed, ${doneColumns}`);
  };
  /**
   * The exact insert: only events not stored before (an id already claimed by the same owner is
   * skipped, and neither stored nor counted). Rollups come from a counter row per event and scope
   * (counterColumns), joined to the events newly claimed.
   */
  const insertStatement = async (e: EventColumns, k: ReturnType<typeof counterColumns>): Promise<Set<string>> => {
    const rows = await guard('insert', () => sql<{ owner: string; id: string }[]>`
      with ${inputStep(e)}, claimed as (
        insert into watchtower_event_ids (key, day)
        select key, day from input order by ord
        on conflict do nothing
        returning key
      ), fresh as (
        select i.* from input i join claimed c on c.key = i.key
      ), ${insStep(sql`fresh`)}, ${eventDaysStep()}, counters as (
        select f.user_id, k.scope, f.hour, f.day, f.session_id, k.kind, k.key, k.ms, k.micros
        from unnest(${k.ord}::int8[], ${k.scope}::text[], ${k.kind}::text[], ${k.key}::text[], ${k.ms}::float8[], ${k.micros}::float8[])
          as k(ord, scope, kind, key, ms, micros)
        join fresh f on f.ord = k.ord
      ), ${rollupSteps({
        hourSessions: sql`select distinct user_id, scope, hour, session_id from counters where kind = ${TYPE}::text and session_id is not null`,
        daySessions: sql`select distinct user_id, scope, day, session_id from counters where kind = ${TYPE}::text and session_id is not null`,
        breakdownSessions: sql`select distinct user_id, scope, hour, kind::"char", key, session_id from counters
          where kind = any(${pgArray([...DIM_KINDS])}::text[]) and session_id is not null`,
        counters: sql`select user_id, scope, hour, kind, key, ms, 1::int8 as n, micros from counters`,
      })}
      select coalesce(user_id, '') as owner, id, ${doneColumns} from fresh`);
    return new Set(rows.map((r) => `${r.owner}\u0000${r.id}`));
  };
  return { batchStatement, insertStatement };
}
