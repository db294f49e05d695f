// The latest points of the closed days a range cuts (it starts or ends inside them), from the
// points each keeps (watchtower_day_points) with their receive times (migration 23). Without them
// such a day was read from its blocks: at the start of a range of 30 days, a busy day's blocks.
//
// A day keeps, per route, its latest LATENCY_POINTS points by seq (or all of them, when it has
// fewer). Those inside the range are then the route's latest in the range and the day when there
// are LATENCY_POINTS of them (any other point of the day in range is older than each), or when
// the day kept all its points. Otherwise, or when the kept points have no receive times (kept
// before migration 23), the route reads the day as before.
import { LATENCY_POINTS } from '../../../stats.ts';
import { pgArray } from '../sql.ts';
import type { EventDay } from '../reads/by-days.ts';
import type { PointRow } from './open-points.ts';
import type { StatsQuery } from './plan.ts';

/** Whether the day's events are all in blocks, with their latest points kept. */
export const pointedDay = (d: EventDay) => d.pointed === d.events && d.moved === d.events;

/**
 * Per cut day, the routes whose latest points in the range its kept points answer, with those
 * points, newest first. A route the day has no point of is answered with none: every event of a
 * pointed day has its points kept.
 */
export async function cutDayPoints(q: StatsQuery, days: readonly EventDay[], routes: readonly string[]): Promise<Map<number, Map<string, PointRow[]>>> {
  const { sql, user, scope, inRange } = q;
  const out = new Map(days.map((d) => [d.day, new Map<string, PointRow[]>(routes.map((route) => [route, []]))]));
  if (!days.length || !routes.length) return out;
  const [{ rows }] = await sql<{ rows: [number, string, number, boolean, [string, number, string, number | null][]][] }[]>`
    select coalesce(json_agg(json_build_array(p.day, p.route, p.n, p.received is null, (
      select coalesce(json_agg(json_build_array(u.seq::text, u.duration, u.ts, u.ttfb) order by u.seq desc), '[]')
      from unnest(p.seqs, p.durations, p.timestamps, p.ttfbs, p.received) u(seq, duration, ts, ttfb, received_at)
      where p.received is not null ${inRange}))), '[]') as rows
    from watchtower_day_points p
    where p.user_id = ${user} and p.scope = ${scope} and p.day = any(${pgArray(days.map((d) => d.day))}::int4[])
      and p.route = any(${pgArray(routes)}::text[])`;
  for (const [day, route, n, untimed, points] of rows) {
    const answered = out.get(day)!;
    if (untimed || (n >= LATENCY_POINTS && points.length < LATENCY_POINTS)) answered.delete(route);
    else answered.set(route, points.map(([seq, duration, ts, ttfb]) => ({ seq, duration, ts, ttfb })));
  }
  return out;
}
