// Statistics, step 2: the one statement that reads the counters. One snapshot holds the fold rows
// of the days in range (only those this instance has not cached), the counters of the whole hours
// summed per series bucket, the session counters and sessions, the breakdown sessions still in
// rows, the rollups of blocks wholly inside the edges, and the active sessions of the last minutes.
import { TYPE, DAY_SESSIONS, HOUR_SESSIONS, PROPERTY } from '../../../rollup/counters.ts';
import { ACTIVE_WINDOW_MS } from '../../../stats.ts';
import { blockSessions } from '../reads/owner.ts';
import { pgArray } from '../sql.ts';
import { daySpans, type StatsQuery } from './plan.ts';

/** What the statement answers, each part as JSON (see assemble.ts for how each is used). */
export interface CountersRow {
  days: [number, number, string | null][];
  counters: [string, string, number, number | null, number, number][];
  session_counts: [string, number, number][];
  sessions: [number, string][];
  breakdown_sessions: [string, string, string[]][];
  edge_blocks: [number, string, string | null][];
  active: number;
}

export async function readCounters(q: StatsQuery): Promise<CountersRow> {
  const { sql, plan, user, scope, project, now, iso, h0, h1, breakdowns, properties, notRead, perBucket, anyOf, reaching, active, seenCounts, seenAfter,
    cut, rolled, cachedBlocks, inSpans, counterDays, sessionRowDays, sessionSpans, ofProject, inRange, cachedFolds } = q;
  const [row] = await sql<CountersRow[]>`
    select
      (select coalesce(json_agg(json_build_array(day, fold, case when day || ':' || fold = any(${pgArray(cachedFolds)}::text[]) then null
                                                            else encode(parts, 'base64') end) order by day, fold), '[]')
         from watchtower_rollup_days
         where user_id = ${user} and scope = ${scope}
           ${Number.isFinite(h0) ? sql`and day >= ${Math.floor(h0 / 24)}` : sql``}
           ${Number.isFinite(h1) ? sql`and day < ${Math.ceil(h1 / 24)}` : sql``}) as days,
      (select coalesce(json_agg(json_build_array(kind, key, ms, bucket, n, micros)), '[]') from (
         select kind, key, ms, case when kind = ${TYPE}::text then floor(hour::float8 / ${perBucket}) end as bucket,
                sum(n)::float8 as n, sum(micros) as micros
         from watchtower_rollups
         where user_id = ${user} and scope = ${scope} and kind <> all(${pgArray(notRead)}::"char"[]) and (${inSpans(daySpans(counterDays, h0, h1))})
           and n > 0 -- a counter a compaction emptied, not yet deleted
         group by 1, 2, 3, 4) t) as counters,
      (select coalesce(json_agg(json_build_array(kind, hour, n)), '[]') from watchtower_rollups
         where user_id = ${user} and scope = ${scope} and kind in (${HOUR_SESSIONS}::text, ${DAY_SESSIONS}::text)
           and (${inSpans(sessionSpans)})) as session_counts,
      -- One scan of the (user, scope, hour) index per cut bucket: as one condition with OR, the
      -- scan took every session row of the user's partition and filtered them (a busy day's
      -- thousands for a bucket of a few hours).
      (select coalesce(json_agg(json_build_array(hour, session)), '[]') from (${cut.length === 0 ? sql`select null::integer as hour, null::text as session where false`
        : cut.map(([a, b]) => sql`select hour, session from watchtower_rollup_sessions where user_id = ${user} and scope = ${scope} and hour >= ${a} and hour < ${b}`)
          .reduce((x, y) => sql`${x} union all ${y}`)}) t) as sessions,
      (select coalesce(json_agg(json_build_array(kind, key, sessions)), '[]') from (
         select kind::text, key, array_agg(distinct session) as sessions from watchtower_breakdown_sessions
         where ${breakdowns && h0 < h1}::boolean and user_id = ${user} and scope = ${scope} and (${inSpans(daySpans(sessionRowDays, h0, h1))})
           and (${properties}::boolean or kind <> ${PROPERTY}::"char")
         group by kind, key) t) as breakdown_sessions,
      -- Blocks wholly inside an edge's span, as their rollups (the bytes of those not cached).
      (select coalesce(json_agg(json_build_array(b.day, b.first_seq::text, case when b.day || ':' || b.first_seq = any(${pgArray(cachedBlocks)}::text[])
                                                                            then null else encode(b.rollup, 'base64') end)), '[]')
         from watchtower_event_blocks b where b.user_id = ${user} and ${anyOf(plan.rawSpans, reaching)} and ${rolled}) as edge_blocks,
      -- The sessions seen in the window, when no event was received after it (then a session's
      -- latest receive time tells whether it had one in the window) and the range holds it
      -- (a session seen at or after its end, for a range that ends at now, is seen after it).
      -- Otherwise from the events; blocks only for a "now" in a closed day (a past now, as tests
      -- and benchmarks ask).
      case when ${seenCounts}::boolean and not exists (
          select 1 from watchtower_sessions_seen where user_id = ${user} and ${seenAfter})
        then (select count(distinct session_id)::int from watchtower_sessions_seen
              where user_id = ${user} ${project === null ? sql`` : sql`and project_id = ${project}`}
                and last_received >= ${iso(now - ACTIVE_WINDOW_MS)}::timestamptz)
      else (select count(distinct session_id)::int from (
         select session_id from watchtower_events
         where user_id = ${user} ${ofProject} ${inRange} and ${active}
         union all
         select session_id from ${blockSessions(sql, q.environment !== null)}
         where b.user_id = ${user} ${ofProject} ${inRange} and ${reaching(now - ACTIVE_WINDOW_MS, now + 1)} and ${active}) s
       where session_id is not null) end as active`;
  return row;
}
