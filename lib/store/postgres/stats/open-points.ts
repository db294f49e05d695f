// The latest points of days still in rows (the open day, and a closed day before its move into
// blocks), kept by the instance between statistics requests. Without them every request read each
// route's latest points of today's rows again, one index scan per route.
//
// What is kept, per owner, scope and day: for each route, its latest LATENCY_POINTS points among
// the day's rows whose seq is at or below a horizon of the route. The horizon is the store's safe
// horizon of positions (lib/store/postgres/issue-feed.ts, safeHorizon): every row with a seq at or
// below it that will ever be committed, by any instance, was committed when it resolved, so a
// statement started after that sees them all, and no row can join them later. A request reads only
// the route's rows above the route's horizon (a few, by the (user, route, seq) index), merges them
// with what is kept, and moves the horizon up to the one resolved before its statement.
//
// Rows leave a day's partition only when a compaction moves the day into blocks (retention drops
// days long closed): the same statement says whether the day has blocks, and then the entry is
// dropped and the caller reads the day as before. A late event (an old event time, received now)
// is a row of today like any other: points are ordered by seq and kept by receive day.
import { DAY_MS, LATENCY_POINTS } from '../../../stats.ts';
import { pgArray } from '../sql.ts';
import type { StatsQuery } from './plan.ts';

/** A latency point as read for statistics, with its seq (see readByDays). */
export interface PointRow { seq: string; duration: number; ttfb: number | null; ts: string }

/** A point of a day's rows, with its receive time (to tell whether it is in a range). */
export interface OpenPoint extends PointRow { at: number }

/**
 * Rows above a route's horizon read per request: more than LATENCY_POINTS, so that the few
 * received after a range's end while the request runs (then left out) still leave enough.
 */
const FRESH_LIMIT = LATENCY_POINTS + LATENCY_POINTS / 2;
/**
 * Points kept per owner at most (~1.6 MB): today and yesterday of 40 routes in one scope. A route
 * holds at most LATENCY_POINTS.
 */
export const POINTS_PER_USER = 2 * 40 * LATENCY_POINTS;
/** What a kept point takes, roughly: the object, its seq and time strings, the map's share. */
export const POINT_BYTES = 200;

/** A route's latest points among the day's rows with seq at or below `h`, newest first. */
interface Held { h: number; points: OpenPoint[] }
interface Entry { user: string; routes: Map<string, Held>; points: number }

/**
 * The kept points, least recently used entry (owner, scope, day) first out, within a byte budget
 * and POINTS_PER_USER points per owner, so that one tenant cannot push out everyone else's.
 */
export class OpenPointsCache {
  private readonly entries = new Map<string, Entry>();
  private points = 0;
  /** The probe in flight, shared by requests that start meanwhile. */
  private probing: Promise<number> | null = null;
  /** Routes answered from kept points and rows above their horizon. */
  private hits = 0;
  constructor(private readonly budget: number, private readonly probe: () => Promise<number>) {}

  figures(): { entries: number; points: number; bytes: number; budgetBytes: number; hits: number } {
    return { entries: this.entries.size, points: this.points, bytes: this.points * POINT_BYTES, budgetBytes: this.budget, hits: this.hits };
  }

  /** The safe horizon, resolved before the caller's statement starts (one probe at a time). */
  horizon(): Promise<number> {
    const p = (this.probing ??= this.probe().finally(() => {
      if (this.probing === p) this.probing = null;
    }));
    return p;
  }

  get(user: string, scope: string, day: number): ReadonlyMap<string, Held> | undefined {
    const k = `${user}\u0000${scope}\u0000${day}`;
    const entry = this.entries.get(k);
    if (!entry) return undefined;
    this.entries.delete(k);
    this.entries.set(k, entry);
    return entry.routes;
  }

  drop(user: string, scope: string, day: number): void {
    const k = `${user}\u0000${scope}\u0000${day}`;
    const entry = this.entries.get(k);
    if (!entry) return;
    this.points -= entry.points;
    this.entries.delete(k);
  }

  served(routes: number): void {
    this.hits += routes;
  }

  /** Keeps a route's points up to a horizon, unless what is kept already reaches further. */
  set(user: string, scope: string, day: number, route: string, held: Held): void {
    const k = `${user}\u0000${scope}\u0000${day}`;
    let entry = this.entries.get(k);
    if (!entry) this.entries.set(k, (entry = { user, routes: new Map(), points: 0 }));
    const before = entry.routes.get(route);
    if (before && before.h >= held.h) return;
    const delta = held.points.length - (before?.points.length ?? 0);
    entry.routes.set(route, held);
    entry.points += delta;
    this.points += delta;
    let mine = 0;
    for (const e of this.entries.values()) if (e.user === user) mine += e.points;
    // The owner's least recently used first while over its share, then anyone's over the budget
    // (the entry just written last of all).
    for (const [key, e] of this.entries) {
      if (mine <= POINTS_PER_USER || key === k) break;
      if (e.user !== user) continue;
      mine -= e.points;
      this.points -= e.points;
      this.entries.delete(key);
    }
    for (const [key, e] of this.entries) {
      if (this.points * POINT_BYTES <= this.budget || key === k) break;
      this.points -= e.points;
      this.entries.delete(key);
    }
    if (mine > POINTS_PER_USER || this.points * POINT_BYTES > this.budget) this.drop(user, scope, day);
  }
}

/**
 * Each route's latest points within the range among the rows of `day` (a day all in rows), for
 * the routes whose answer is exact: those the kept points and the rows above their horizon hold
 * enough of (a range that starts inside the day can leave too few, and a route kept only up to its
 * horizon never had them). Null when the day has blocks: then nothing is kept of it and the caller
 * reads it as before.
 */
export async function openDayPoints(q: StatsQuery, cache: OpenPointsCache, day: number, routes: readonly string[]): Promise<Map<string, PointRow[]> | null> {
  const { sql, user, scope, ofProject, iso, r } = q;
  const h = await cache.horizon();
  // What is kept now, per route: a request running beside this one may move it on meanwhile.
  const kept = cache.get(user, scope, day);
  const heldOf = new Map(routes.map((route) => [route, kept?.get(route)]));
  const lows = routes.map((route) => heldOf.get(route)?.h ?? -1);
  // One row per route, its points above the route's horizon as one JSON array, and whether the
  // day has blocks, in one snapshot: a move into blocks committing meanwhile is seen whole or not.
  const [{ moved, rows }] = await sql<{ moved: boolean; rows: [string, [string, number, string, number | null, number][]][] }[]>`
    select exists (select 1 from watchtower_event_blocks where user_id = ${user} and day = ${day}) as moved,
      (select coalesce(json_agg(json_build_array(r.route, (
        select coalesce(json_agg(json_build_array(seq::text, duration, ts, ttfb, extract(epoch from received_at) * 1000) order by seq desc), '[]')
        from (
          select seq, duration, ts, ttfb, received_at
          from watchtower_events
          where user_id = ${user} and route_key = r.route ${ofProject} and seq > r.low
            and received_at >= ${iso(day * DAY_MS)}::timestamptz and received_at < ${iso((day + 1) * DAY_MS)}::timestamptz
          order by seq desc limit ${FRESH_LIMIT}) last))), '[]')
       from unnest(${pgArray(routes)}::text[], ${pgArray(lows)}::int8[]) as r(route, low)) as rows`;
  if (moved) {
    cache.drop(user, scope, day);
    return null;
  }
  const out = new Map<string, PointRow[]>();
  for (const [route, list] of rows) {
    const fresh: OpenPoint[] = list.map(([seq, duration, ts, ttfb, at]) => ({ seq, duration, ts, ttfb, at }));
    const before = heldOf.get(route);
    const low = before?.h ?? -1;
    const held = before?.points ?? [];
    // The day's latest points as far as they are known for sure: every row above the horizon
    // when fewer than the limit came, then the kept ones below it; else the rows read alone.
    const whole = fresh.length < FRESH_LIMIT;
    const known = whole ? [...fresh, ...held] : fresh;
    // Complete: every point of the route in the day is among them.
    const complete = whole && held.length < LATENCY_POINTS;
    const inRange = r === null ? known : known.filter((p) => p.at >= r.from && p.at < r.to);
    if (inRange.length >= LATENCY_POINTS || complete) {
      out.set(route, inRange.slice(0, LATENCY_POINTS));
      if (low >= 0) cache.served(1);
    }
    // Up to the new horizon: the rows read at or below it and the kept ones, when they are all
    // the rows between the two horizons, or LATENCY_POINTS of them (the latest below it).
    if (h > low) {
      const below = fresh.filter((p) => Number(p.seq) <= h);
      if (whole || below.length >= LATENCY_POINTS) {
        // Below the old horizon, every row the new one covers; newest first either way.
        const merged = whole ? [...below, ...held] : below;
        cache.set(user, scope, day, route, { h, points: merged.slice(0, LATENCY_POINTS) });
      }
    }
  }
  return out;
}
