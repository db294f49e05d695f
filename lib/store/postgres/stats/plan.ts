// Statistics, step 1: the plan of what to read. From the range's plan (lib/rollup/assemble.ts) and
// the user's days, it decides which days' counters, session rows and fold rows the statement reads
// (./counters.ts), what this instance has cached already, and the SQL conditions both share.
import type postgres from 'postgres';
import { dayBucketWhole, type StatsPlan } from '../../../rollup/assemble.ts';
import { DIMENSIONS, LEGACY_DIMENSIONS, PART_DIMENSIONS } from '../../../breakdowns.ts';
import { DAY_SESSIONS, DIM_KINDS, HOUR_SESSIONS, PROPERTY, VITAL_KINDS } from '../../../rollup/counters.ts';
import { ACTIVE_WINDOW_MS, DAY_MS, HOUR_MS, SERIES_DAYS } from '../../../stats.ts';
import { isoBounds } from '../../filter.ts';
import type { EventFilter } from '../../types.ts';
import type { DayPartCache, SessionCount } from '../day-cache.ts';
import { wholeMinutes, type EdgeMinuteCache } from './edge-minutes.ts';
import { daysWithin, type EventDay } from '../reads/by-days.ts';
import { environmentIs } from '../reads/owner.ts';

/**
 * How long watchtower_sessions_seen keeps a session after its latest event. Statistics count
 * active sessions from it for a `now` within SEEN_TRUSTED_MS of the instance's clock (as good as
 * every request), and from the events themselves for an older one.
 */
export const SEEN_KEPT_MS = 2 * DAY_MS;
const SEEN_TRUSTED_MS = DAY_MS;

/**
 * The DayPartCache scope of blocks' rollups: no rollup scope starts with U+0002 (an environment's
 * of the owner starts with U+0001, see scopeOf).
 */
export const BLOCKS = '\u0002blocks';

/** What the steps of statsOf share: the plan, what to read, and the conditions to read it by. */
export type StatsQuery = ReturnType<typeof planQuery>;

export function planQuery(sql: postgres.Sql, cache: DayPartCache, minutes: EdgeMinuteCache, plan: StatsPlan, user: string, scope: string, project: string | null,
  environment: string | null, userDays: readonly EventDay[], breakdownsFrom: number, dimensionsFrom: number, propertiesFrom = -Infinity) {
  const { now, range: r } = plan;
  const [h0, h1] = plan.fullHours;
  // Breakdowns with a range that starts where every event has their counters (see migration 5);
  // without them their counters are not even read.
  const breakdowns = r !== null && r.from >= breakdownsFrom * HOUR_MS;
  // The newer dimensions likewise, from migration 18 (their counters are read all the same).
  // Properties likewise from migration 20; their counters and sessions are read only when asked.
  const dimensions = r === null || r.from < dimensionsFrom * HOUR_MS ? LEGACY_DIMENSIONS : r.from < propertiesFrom * HOUR_MS ? DIMENSIONS.length : PART_DIMENSIONS;
  const properties = breakdowns && plan.property !== null;
  const notRead = [HOUR_SESSIONS, DAY_SESSIONS, ...(breakdowns ? (properties ? [] : [PROPERTY]) : [...DIM_KINDS, ...VITAL_KINDS])];
  const perBucket = r ? r.bucketMs / HOUR_MS : 24;
  const today = Math.floor(now / DAY_MS);
  // Session counters: of the range's whole hours, or of the days of the series without a range.
  const [s0, s1] = r ? [h0, h1] : [(today - SERIES_DAYS + 1) * 24, (today + 1) * 24];
  const iso = (ms: number) => new Date(ms).toISOString();
  const anyOf = (spans: [number, number][], span: (a: number, b: number) => postgres.PendingQuery<postgres.Row[]>) =>
    spans.length === 0 ? sql`false` : spans.length === 1 ? span(...spans[0]) : sql`(${span(...spans[0])} or ${span(...spans[1])})`;
  const received = (a: number, b: number) => sql`(received_at >= ${iso(a)}::timestamptz and received_at < ${iso(b)}::timestamptz)`;
  // Blocks with events received in [a, b): their days, for the blocks' index, and their receive times.
  const reaching = (a: number, b: number) => sql`(b.day >= ${Math.floor(a / DAY_MS)} and b.day <= ${Math.floor((b - 1) / DAY_MS)}
    and b.first_received < ${iso(b)}::timestamptz and b.last_received >= ${iso(a)}::timestamptz)`;
  const active = sql`received_at >= ${iso(now - ACTIVE_WINDOW_MS)}::timestamptz and received_at <= ${iso(now)}::timestamptz`;
  // Active sessions from watchtower_sessions_seen: for a recent `now` (its rows are complete from
  // a day back) and a range that holds the whole window.
  // A range ending at `now` (as one without `to` does) leaves out what was received at `now`.
  // Not for an environment: the sessions seen are kept per project only.
  const seenCounts = environment === null && now >= Date.now() - SEEN_TRUSTED_MS && (r === null || (r.from <= now - ACTIVE_WINDOW_MS && r.to >= now));
  const seenAfter = r !== null && r.to === now ? sql`last_received >= ${iso(now)}::timestamptz` : sql`last_received > ${iso(now)}::timestamptz`;
  const cut = cutBucketHours(plan);
  // Blocks wholly inside an edge's span: their rollups stand for their events (all the owner's,
  // so not for a project's or an environment's statistics). Cached like fold rows, under a scope of their own.
  const inside = (a: number, b: number) => sql`(b.first_received >= ${iso(a)}::timestamptz and b.last_received < ${iso(b)}::timestamptz)`;
  const rolled = project === null && environment === null ? sql`(b.rollup is not null and ${anyOf(plan.rawSpans, inside)})` : sql`false`;
  const blocksCached = cache.daysOf(user, BLOCKS);
  const cachedBlocks = [...blocksCached].flatMap(([day, { folds }]) => [...folds.keys()].map((seq) => `${day}:${seq}`));
  // Counter rows of the whole hours: only the days that may still have some of this user's
  // (watchtower_event_days.counters; the others are compacted whole), as spans of whole days,
  // so that the planner reads only their partitions.
  const inSpans = (spans: [number, number][]) => spans.length === 0 ? sql`false`
    : spans.map(([a, b]) => sql`(hour >= ${a} and hour < ${b})`).reduce((x, y) => sql`${x} or ${y}`);
  const counterDays = userDays.filter((d) => d.counters).map((d) => d.day);
  // Breakdown session rows: of the days with counters, and of days compacted before fold rows
  // took the sessions (watchtower_event_days.folded); the others' are in their fold rows.
  const sessionRowDays = userDays.filter((d) => d.counters || !d.folded).map((d) => d.day);
  // Session counters of the series' hours: those of compacted days that took no insert since
  // come from this instance's cache (they no longer change), the others' from the database,
  // whole days, so that a closed day read once is cached.
  const sessionDays = userDays.filter((d) => d.day * 24 + 24 > s0 && d.day * 24 < s1);
  const cachedSessions = new Map<number, readonly SessionCount[]>();
  for (const d of sessionDays) {
    const rows = d.counters ? undefined : cache.sessionsOf(user, scope, d.day);
    if (rows) cachedSessions.set(d.day, rows);
  }
  const sessionSpans = daySpans(sessionDays.map((d) => d.day).filter((d) => !cachedSessions.has(d)), -Infinity, Infinity);
  // The rows of the scope: of its project, and of its environment (a field of the event's text).
  const ofProject = sql`${project === null ? sql`` : sql`and project_id = ${project}`} ${environment === null ? sql`` : environmentIs(sql, environment)}`;
  const { since, until } = r ? isoBounds({ since: r.from, until: r.to }) : {};
  const inRange = sql`${since !== undefined ? sql`and received_at >= ${since}::timestamptz` : sql``}
    ${until !== undefined ? sql`and received_at < ${until}::timestamptz` : sql``}`;

  // Compacted days are read in the same statement as the counters: one snapshot, so a compaction
  // committing meanwhile is seen either whole (day rows, no counters) or not at all.
  const cached = cache.daysOf(user, scope);
  const cachedFolds = [...cached].flatMap(([day, { folds }]) => [...folds.keys()].map((fold) => `${day}:${fold}`));
  // The window of the latest errors and events, and its days (see readByDays).
  const window: EventFilter = { userId: user, ...(project === null ? {} : { projectId: project }), ...(environment === null ? {} : { environment }),
    ...(r ? { since: r.from, until: r.to } : {}) };
  const days = daysWithin(userDays, window);
  // Whole minutes of the edges: those this instance holds rollups of are read only above their
  // horizon (see ./edge-minutes.ts), which is resolved beside the statement.
  const minuteSpans = wholeMinutes(plan.rawSpans);
  const horizon = minuteSpans.length ? minutes.horizon() : null;
  horizon?.catch(() => {});
  return { minutes, minuteSpans, horizon, sql, cache, plan, user, scope, project, environment, userDays, now, r, h0, h1, breakdowns, dimensions, properties, notRead, perBucket, s0, s1, iso, anyOf, received, reaching, active, seenCounts, seenAfter, cut, rolled, blocksCached, cachedBlocks, inSpans, counterDays, sessionRowDays, sessionDays, cachedSessions, ofProject, inRange, cached, cachedFolds, window, days, sessionSpans };
}

/**
 * Whole UTC days as spans of hours [from, to) clipped to [h0, h1), contiguous days merged: a
 * condition on `hour` the planner prunes partitions by.
 */
export function daySpans(days: readonly number[], h0: number, h1: number): [number, number][] {
  const spans: [number, number][] = [];
  for (const day of [...days].sort((a, b) => a - b)) {
    const a = Math.max(day * 24, h0), b = Math.min(day * 24 + 24, h1);
    if (a >= b) continue;
    const last = spans[spans.length - 1];
    if (last && last[1] === a) last[1] = b;
    else spans.push([a, b]);
  }
  return spans;
}

/**
 * Hours of the series buckets that the range's edges cut: assembleStats unions their sessions
 * (but for a day it counts whole, dayBucketWhole).
 */
function cutBucketHours(plan: StatsPlan): [number, number][] {
  const { range: r, fullHours: [h0, h1] } = plan;
  if (r === null) return [];
  const per = r.bucketMs / HOUR_MS;
  const out: [number, number][] = [];
  for (const i of new Set([0, r.buckets - 1])) {
    const start = (r.firstBucket + i) * per, end = start + per;
    if ((start >= h0 && end <= h1) || dayBucketWhole(plan, start, end)) continue;
    const a = Math.max(start, h0), b = Math.min(end, h1);
    if (a < b) out.push([a, b]);
  }
  return out;
}
