// The steps (WITH queries) the two insert statements (./statements.ts) are built of. Each
// statement is one transaction without a reserved connection: the ids claimed, the rows, the
// rollups and the NOTIFYs commit together.
import type postgres from 'postgres';
import { DAY_SESSIONS, HOUR_SESSIONS } from '../../../rollup/counters.ts';
import type { EventColumns } from './columns.ts';

/** Sequence numbers per NOTIFY: 300 × (≤ 19 digits + comma) stays under the 8000-byte payload limit. */
const NOTIFY_CHUNK = 300;

export type Step = postgres.PendingQuery<postgres.Row[]>;

export function insertSteps(sql: postgres.Sql, channel: string, instance: string) {
  /** `input`: one row per event of the batch (eventColumns), with its dedupe key. */
  const inputStep = (c: EventColumns): Step => sql`input as (
        select t.*, watchtower_event_key(coalesce(t.user_id, ''), t.id) as key, e.event
        from unnest(${c.id}::text[], ${c.user_id}::text[], ${c.project_id}::text[], ${c.type}::text[], ${c.received_at}::timestamptz[],
                    ${c.day}::int4[], ${c.hour}::int4[], ${c.session_id}::text[], ${c.app_version}::text[], ${c.route_key}::text[],
                    ${c.duration}::float8[], ${c.ttfb}::float8[], ${c.ts}::text[], ${c.step_key}::text[])
          with ordinality as t(id, user_id, project_id, type, received_at, day, hour, session_id, app_version, route_key, duration, ttfb, ts, step_key, ord)
        join string_to_table(${c.texts}::text, E'\\n') with ordinality as e(event, ord) on e.ord = t.ord
      )`;
  /**
   * `ins`: the rows of `from` (input or the part of it newly claimed) stored, in batch order; and
   * `seen`: their sessions' latest receive times.
   */
  const insStep = (from: Step): Step => sql`ins as (
        insert into watchtower_events
          (user_id, project_id, type, received_at, session_id, app_version, route_key, duration, ttfb, ts, step_key, event)
        select user_id, project_id, type, received_at, session_id, app_version, route_key, duration, ttfb, ts, step_key, event
        from ${from} order by ord
        returning seq, user_id, received_at, session_id, project_id
      ), seen as (
        -- The sessions' latest receive times (watchtower_sessions_seen), in key order (see below).
        insert into watchtower_sessions_seen as s (user_id, project_id, session_id, last_received)
        select user_id, coalesce(project_id, ''), session_id, max(received_at) from ins
        where user_id is not null and session_id is not null
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (user_id, project_id, session_id) do update set last_received = greatest(s.last_received, excluded.last_received)
      )`;
  /** Counts the rows of `ins` in watchtower_event_days, which bounds every read to its days. */
  const eventDaysStep = (): Step => sql`event_days as (
        insert into watchtower_event_days as d (user_id, day, first_seq, last_seq, events)
        select coalesce(user_id, ''), floor(extract(epoch from received_at) / 86400)::integer, min(seq), max(seq), count(*)
        from ins
        group by 1, 2
        order by 1, 2
        on conflict (user_id, day) do update
          set first_seq = least(d.first_seq, excluded.first_seq), last_seq = greatest(d.last_seq, excluded.last_seq),
              events = d.events + excluded.events
        returning 1
      )`;
  /**
   * The steps both statements end with: the session sets take the sessions of their sources (a
   * row a set already holds is skipped), the counter rows are upserted with the counters of
   * `counters` (user_id, scope, hour, kind, key, ms, n, micros) and a session count of 1 for each
   * session a set newly took, adding to what other instances added, and the stored rows are
   * announced by NOTIFY, in chunks that keep each payload under the 8000-byte limit. Rows are
   * written in key order, so that two statements upserting the same rows do not deadlock.
   */
  const rollupSteps = (s: { hourSessions: Step; daySessions: Step; breakdownSessions: Step; counters: Step }): Step => sql`hour_sessions as (
        insert into watchtower_rollup_sessions (user_id, scope, hour, session)
        ${s.hourSessions}
        order by 1, 2, 3, 4
        on conflict do nothing
        returning user_id, scope, hour
      ), day_sessions as (
        insert into watchtower_day_sessions (user_id, scope, day, session)
        ${s.daySessions}
        order by 1, 2, 3, 4
        on conflict do nothing
        returning user_id, scope, day
      ), breakdown_sessions as (
        insert into watchtower_breakdown_sessions (user_id, scope, hour, kind, key, session)
        ${s.breakdownSessions}
        order by 1, 2, 3, 4, 5, 6
        on conflict do nothing
      ), rolled as (
        insert into watchtower_rollups as r (user_id, scope, hour, kind, key, ms, n, micros)
        select user_id, scope, hour, kind::"char", key, ms, sum(n)::int8, sum(micros) from (
          ${s.counters}
          union all select user_id, scope, hour, ${HOUR_SESSIONS}::text, '', 0, 1, 0 from hour_sessions
          union all select user_id, scope, day * 24, ${DAY_SESSIONS}::text, '', 0, 1, 0 from day_sessions
        ) x
        group by 1, 2, 3, 4, 5, 6
        order by 1, 2, 3, 4, 5, 6
        on conflict (user_id, scope, hour, kind, key, ms)
          do update set n = r.n + excluded.n, micros = r.micros + excluded.micros
        returning 1
      ), notified as (
        select pg_notify(${channel}, ${instance} || ' ' || string_agg(seq::text, ',' order by seq))
        from (select seq, (row_number() over (order by seq) - 1) / ${NOTIFY_CHUNK} as chunk from ins) c
        group by chunk
      )`;
  /** What both statements answer beside their own columns; it makes `notified` run (a plain select step runs only if read). */
  const doneColumns = sql`(select count(*) from notified) as notifications, (select count(*) from rolled) as counters,
             (select count(*) from event_days) as days`;
  return { inputStep, insStep, eventDaysStep, rollupSteps, doneColumns };
}
