// Statistics, beside the counters: the latest points of each route, from the whole closed days
// whose points are kept (watchtower_day_points) and, for the other days, from rows and blocks,
// read by days (readByDays) like pages.
import type postgres from 'postgres';
import { DAY_MS, LATENCY_POINTS } from '../../../stats.ts';
import type { EventDay } from '../reads/by-days.ts';
import { blockPoints, type OwnerRead } from '../reads/owner.ts';
import { pgArray } from '../sql.ts';
import { cutDayPoints, pointedDay } from './cut-days.ts';
import { openDayPoints, type PointRow, type OpenPointsCache } from './open-points.ts';
import type { StatsQuery } from './plan.ts';

export type { PointRow } from './open-points.ts';

/** How the latest points are read: those of the routes guessed early, then of any other route. */
export interface PointReads {
  /** The routes of the compacted days this instance holds for the range, with their counts. */
  guessed: Map<string, number>;
  /** Their points, read beside the main statement (null: none guessed). */
  pointsEarly: Promise<Map<string, PointRow[]>> | null;
  pointsOf: (counts: ReadonlyMap<string, number>) => Promise<Map<string, PointRow[]>>;
}

/** Starts reading the points of the routes guessed from the cached days (see PointReads). */
export function readLatestPoints(q: StatsQuery, read: OwnerRead, open: OpenPointsCache): PointReads {
  const { sql, user, scope, r, days, ofProject, inRange, iso, cached, cache, h0, h1, environment } = q;
  /**
   * The latest points of routes (route → its count in range), newest first, from the days that
   * hold them: as many of the newest days as the rarest route's share of the user's events says
   * hold its points (readByDays reads more if not).
   */
  // Whole days in range whose events are all blocks with their latest points kept
  // (watchtower_day_points): their points are read there; the other days' from rows and blocks.
  const wholeDay = (d: EventDay) => r === null || (d.day * DAY_MS >= r.from && (d.day + 1) * DAY_MS <= r.to);
  // Kept per owner and project, not per environment: an environment's are read from the blocks.
  const pointed = environment !== null ? [] : days.filter((d) => wholeDay(d) && pointedDay(d));
  const unpointed = days.filter((d) => !pointed.includes(d));
  const windowEvents = unpointed.reduce((n, d) => n + d.events, 0);
  // Days still all in rows, of today and yesterday (before its move into blocks): their points
  // are kept by the instance up to a horizon (./open-points.ts). Only for the routes whose answer
  // is exact from them; the others read such a day as any other.
  const today = Math.floor(Date.now() / DAY_MS);
  const openDays = unpointed.filter((d) => !d.moved && d.day >= today - 1 && d.day <= today);
  // Closed days the range cuts, all in blocks with their points kept: those points inside the
  // range answer the routes they can (./cut-days.ts); the others read such a day as any other.
  const cutDays = environment !== null ? [] : unpointed.filter((d) => !wholeDay(d) && pointedDay(d));
  const pointsOf = async (counts: ReadonlyMap<string, number>) => {
    const keys = [...counts.keys()];
    // Whole closed days' kept points change only when a late event moves into one (its pointed count).
    const key = `${scope}\u0000${pointed.map((d) => `${d.day}:${d.pointed}`).join(',')}\u0000${[...keys].sort().join('\u0000')}`;
    const keptRead = pointed.length
      ? cache.keptPoints(user, key, () => keptPoints(sql, user, scope, pointed.map((d) => d.day), keys))
      : Promise.resolve(new Map<string, PointRow[]>());
    const cutRead = cutDayPoints(q, cutDays, keys);
    const opened = await Promise.all(openDays.map((d) => openDayPoints(q, open, d.day, keys)));
    const [kept, cut] = await Promise.all([keptRead, cutRead]);
    // What each open or cut day answers (null: nothing, the day read as any other).
    const answers = new Map<EventDay, ReadonlyMap<string, PointRow[]> | null>([
      ...openDays.map((d, i) => [d, opened[i]] as const), ...cutDays.map((d) => [d, cut.get(d.day)!] as const)]);
    const answered = [...answers.values()].filter((a): a is ReadonlyMap<string, PointRow[]> => a !== null);
    const known = latestPoints(kept, ...answered);
    // The routes by the days left to read for them (those no open or cut day answers).
    const groups = new Map<string, { routes: string[]; days: EventDay[] }>();
    for (const route of keys) {
      const left = unpointed.filter((d) => !answers.get(d)?.has(route));
      const k = left.map((d) => d.day).join(',');
      let group = groups.get(k);
      if (!group) groups.set(k, (group = { routes: [], days: left }));
      group.routes.push(route);
    }
    // The known points first: a day left whose newest seq is older than every route's 100th known
    // point cannot hold a latest point (a range's first day, partial, is often such a day), and
    // is not read. Each answer is of points in range only, so extra ones change no latest 100.
    const readOthers = async (routes: string[], candidates: readonly EventDay[]) => {
      let oldest = Infinity;
      for (const route of routes) oldest = Math.min(oldest, (known.get(route) ?? []).length < LATENCY_POINTS ? -Infinity : Number(known.get(route)![LATENCY_POINTS - 1].seq));
      const days = candidates.filter((d) => d.last > oldest);
      return days.length ? readPoints(new Map(routes.map((route) => [route, counts.get(route)!])), days) : new Map<string, PointRow[]>();
    };
    const read = await Promise.all([...groups.values()].map((g) => readOthers(g.routes, g.days)));
    return latestPoints(known, ...read);
  };
  const readPoints = (counts: ReadonlyMap<string, number>, days: readonly EventDay[]) => read<PointRow>(user, days, 'desc', LATENCY_POINTS, [...counts.keys()], async (d0, d1, keys) => {
    // One row per route, its points as one JSON array: 20 routes' 100 points would otherwise be
    // 2,000 rows for the driver to decode one by one.
    const rows = await sql<{ route: string; points: [string, number, string, number | null][] }[]>`
      select r.route, (
        select coalesce(json_agg(json_build_array(seq::text, duration, ts, ttfb) order by seq desc), '[]')
        from (
          select seq, duration, ts, ttfb
          from watchtower_events
          where user_id = ${user} and route_key = r.route ${ofProject} ${inRange}
            and received_at >= ${iso(d0 * DAY_MS)}::timestamptz and received_at < ${iso((d1 + 1) * DAY_MS)}::timestamptz
          order by seq desc limit ${LATENCY_POINTS}) last) as points
      from unnest(${pgArray(keys)}::text[]) as r(route)`;
    const byRoute = new Map<string, PointRow[]>();
    for (const { route, points } of rows) byRoute.set(route, points.map(([seq, duration, ts, ttfb]) => ({ seq, duration, ts, ttfb })));
    return byRoute;
  }, async (chosen, keys) => {
    // The blocks' points of every route asked for, newest first, kept up to LATENCY_POINTS a route.
    const rows = await sql<{ route: string; seq: string; duration: number; ts: string; ttfb: number | null }[]>`
      select route_key as route, seq, duration, ts, ttfb from ${blockPoints(sql, environment !== null)}
      where ${chosen} and route_key = any(${pgArray(keys)}::text[]) and duration is not null ${ofProject} ${inRange}
      order by seq desc`;
    const byRoute = new Map<string, PointRow[]>();
    for (const { route, ...point } of rows) {
      let list = byRoute.get(route);
      if (!list) byRoute.set(route, (list = []));
      if (list.length < LATENCY_POINTS) list.push(point);
    }
    return byRoute;
  }, { target: Math.max(LATENCY_POINTS * 2, Math.ceil((LATENCY_POINTS * 1.25 * windowEvents) / Math.min(...counts.values()))), since: r?.from, until: r?.to });
  // The routes of the compacted days this instance holds for the range (counted over whole days):
  // nearly always every route in range, so their points are read beside the main statement
  // rather than after it. A route they miss is read after it; one not in range is left out.
  const guessed = new Map<string, number>();
  for (const [day, { folds }] of cached) {
    if (day * 24 + 24 <= h0 || day * 24 >= h1) continue;
    for (const part of [...folds.values()].flat()) {
      const { routes, routeCounts } = part.columns();
      routes.forEach((route, i) => guessed.set(route, (guessed.get(route) ?? 0) + routeCounts[i]));
    }
  }
  const pointsEarly = guessed.size ? pointsOf(guessed) : null;
  pointsEarly?.catch(() => {});
  return { guessed, pointsEarly, pointsOf };
}

/**
 * The latest points of `routes` over whole days whose points are kept (watchtower_day_points):
 * per route, the days by their newest point, as many as hold LATENCY_POINTS points, and any other
 * day whose newest point is newer than the oldest of those (it may hold some of the latest; days
 * rarely overlap so). Each route's points newest first, at most LATENCY_POINTS.
 */
async function keptPoints(sql: postgres.Sql, user: string, scope: string, days: readonly number[], routes: readonly string[]): Promise<Map<string, PointRow[]>> {
  const [{ rows }] = await sql<{ rows: [string, string[], number[], string[], (number | null)[]][] }[]>`
    with m as (
      select day, route, first_seq, last_seq, sum(n) over (partition by route order by last_seq desc) - n as before
      from watchtower_day_points
      where user_id = ${user} and scope = ${scope} and day = any(${pgArray(days)}::int4[]) and route = any(${pgArray(routes)}::text[])
    ), low as (
      select route, min(first_seq) as low from m where before < ${LATENCY_POINTS} group by route
    )
    -- The points of the rows chosen only, each looked up by its key (sorting the rows with their
    -- arrays spilled megabytes to disk).
    select coalesce(json_agg(json_build_array(p.route, p.seqs::text[], p.durations, p.timestamps, p.ttfbs)), '[]') as rows
    from m join low on low.route = m.route
      cross join lateral (select route, seqs, durations, timestamps, ttfbs from watchtower_day_points p
                          where p.user_id = ${user} and p.scope = ${scope} and p.day = m.day and p.route = m.route) p
    where m.before < ${LATENCY_POINTS} or m.last_seq > low.low`;
  const byRoute = new Map<string, PointRow[]>();
  for (const [route, seqs, durations, timestamps, ttfbs] of rows) {
    let list = byRoute.get(route);
    if (!list) byRoute.set(route, (list = []));
    seqs.forEach((seq, i) => list.push({ seq, duration: durations[i], ts: timestamps[i], ttfb: ttfbs[i] }));
  }
  return latestPoints(byRoute);
}

/** Seqs as decimal strings, newest first. */
const bySeqDesc = (a: PointRow, b: PointRow) => b.seq.length - a.seq.length || (a.seq < b.seq ? 1 : a.seq > b.seq ? -1 : 0);

/**
 * Each route's latest LATENCY_POINTS points of those in `sources`, newest first, each once (the
 * reads of days by spans may reach into kept days and read some of their points again).
 */
function latestPoints(...sources: ReadonlyMap<string, PointRow[]>[]): Map<string, PointRow[]> {
  const out = new Map<string, PointRow[]>();
  for (const source of sources) {
    for (const [route, points] of source) out.set(route, [...(out.get(route) ?? []), ...points]);
  }
  for (const [route, points] of out) {
    const sorted = points.sort(bySeqDesc).filter((p, i) => i === 0 || p.seq !== points[i - 1].seq);
    out.set(route, sorted.slice(0, LATENCY_POINTS));
  }
  return out;
}
