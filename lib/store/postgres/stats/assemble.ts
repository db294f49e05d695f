// Statistics, step 3: the answer assembled from what the statement read (./counters.ts), the
// fold rows this instance cached, the edges' events and blocks, and the latest events and points,
// by assembleStats as every store answers them (lib/rollup/assemble.ts).
import type { Recents } from '../../../live-window.ts';
import { assembleStats } from '../../../rollup/assemble.ts';
import { encodePart, FrozenHour } from '../../../rollup/codec.ts';
import { CounterRollups, counterPart, HOUR_SESSIONS, type Counter } from '../../../rollup/counters.ts';
import { asHour, HourRollup, type RollupPart } from '../../../rollup/hour.ts';
import { DAY_MS, type LatencyPoint, type Stats } from '../../../stats.ts';
import type { DayPartCache, SessionCount } from '../day-cache.ts';
import { decodeDay } from '../day-codec.ts';
import { toEvent, type SeqRow } from '../sql.ts';
import type { CountersRow } from './counters.ts';
import { edgeBlockParts, type EdgeBlock } from './edge-runs.ts';
import { edgeParts, MINUTE_MS, type HeldMinute } from './edge-minutes.ts';
import { readEdgeEvents } from './edge-rows.ts';
import { BLOCKS, type StatsQuery } from './plan.ts';
import type { PointReads, PointRow } from './points.ts';

/** The counters, sessions and fold rows read, as the rollups of the plan's whole hours. */
function rollupsOf(q: StatsQuery, row: CountersRow): { parts: RollupPart[]; rollups: CounterRollups } {
  const { cache, plan, user, scope, r, h0, h1, perBucket, s0, s1, cut, sessionDays, cachedSessions, cached } = q;
  // Counters summed per bucket (types: the bucket's parts) or over the whole hours (the rest).
  const byBucket = new Map<number, Counter[]>();
  const whole: Counter[] = [];
  for (const [kind, key, ms, bucket, n, micros] of row.counters) {
    const c = { kind, key, ms, n, micros };
    if (bucket === null) whole.push(c);
    else {
      let list = byBucket.get(bucket);
      if (!list) byBucket.set(bucket, (list = []));
      list.push(c);
    }
  }
  const parts: RollupPart[] = [...byBucket].map(([bucket, counters]) => counterPart(bucket * perBucket, counters));
  parts.push(counterPart(Number.isFinite(h0) ? h0 : 0, whole));
  const readSessions = new Map<number, SessionCount[]>();
  for (const count of row.session_counts) {
    const day = Math.floor(count[1] / 24);
    let rows = readSessions.get(day);
    if (!rows) readSessions.set(day, (rows = []));
    rows.push(count);
  }
  for (const d of sessionDays) {
    if (!d.counters && !cachedSessions.has(d.day)) cache.setSessions(user, scope, d.day, readSessions.get(d.day) ?? []);
  }
  const hourCounts = new Map<number, number>(), dayCounts = new Map<number, number>();
  for (const rows of [...cachedSessions.values(), ...readSessions.values()]) {
    for (const [kind, hour, n] of rows) {
      if (hour < s0 || hour >= s1) continue;
      if (kind === HOUR_SESSIONS) hourCounts.set(hour, n);
      else dayCounts.set(hour / 24, n);
    }
  }
  const sessions = new Map<number, string[]>();
  for (const [hour, session] of row.sessions) {
    let list = sessions.get(hour);
    if (!list) sessions.set(hour, (list = []));
    list.push(session);
  }
  // Closed days: their hour parts within the whole hours (their sessions are counted above). A
  // day wholly in range whose buckets are whole UTC days is one part, its hours merged.
  const daysWhole = r === null || r.bucketMs % DAY_MS === 0;
  const foldsOf = new Map<number, { folds: number[]; hours: RollupPart[] }>();
  for (const [day, fold, base64] of row.days) {
    let hours = cached.get(day)?.folds.get(fold);
    if (!hours) cache.set(user, scope, day, fold, (hours = decodeDay(fromBase64(base64!))));
    let folds = foldsOf.get(day);
    if (!folds) foldsOf.set(day, (folds = { folds: [], hours: [] }));
    folds.folds.push(fold);
    folds.hours.push(...hours);
  }
  for (const [day, { folds, hours }] of foldsOf) {
    if (daysWhole && day * 24 >= h0 && day * 24 + 24 <= h1) parts.push(dayPart(cache, user, scope, day, folds, hours));
    else for (const part of hours) if (part.hour >= h0 && part.hour < h1) parts.push(part);
  }
  // The sessions of every breakdown name over the whole hours still in rows (the counters carry
  // the events).
  if (row.breakdown_sessions.length) parts.push(counterPart(Number.isFinite(h0) ? h0 : 0, [], row.breakdown_sessions));
  const rollups = new CounterRollups(plan.fullHours, parts, hourCounts, dayCounts, sessions, cut, cache.mergedOf(user, scope));
  return { parts, rollups };
}

/**
 * The partial hours at the range's edges: the rollups of blocks wholly inside them (answered by
 * the statement), and the rest of their events, held whole minutes aside (./edge-minutes.ts).
 */
async function edgesOf(q: StatsQuery, row: CountersRow): Promise<RollupPart[]> {
  const { cache, user, blocksCached } = q;
  // Each block's rollup decoded only when no merged run holds it (./edge-runs.ts).
  const blocks: EdgeBlock[] = row.edge_blocks.map(([day, firstSeq, base64]) => ({ day, firstSeq, hours: () => {
    const key = Number(firstSeq);
    let hours = blocksCached.get(day)?.folds.get(key);
    if (!hours) cache.set(user, BLOCKS, day, key, (hours = decodeDay(fromBase64(base64!))));
    return hours;
  } }));
  const edges = edgeBlockParts(cache, user, blocks);
  const rolled = row.edge_blocks.map(([day, firstSeq]) => `${day}:${firstSeq}`);
  // Held minutes are used, and minutes kept, only when no block's rollup stood for some of the
  // edges' events (those events are not read), and for days the owner still has (retention drops
  // a day's rows with its partition). No horizon: the edges have no whole minute.
  const h = q.horizon === null ? 0 : await q.horizon;
  const keep = rolled.length === 0 && q.horizon !== null;
  const days = new Set(q.userDays.map((d) => d.day));
  const held = keep ? q.minutes.held(user, q.scope, q.minuteSpans, h) : new Map<number, HeldMinute>();
  for (const minute of held.keys()) if (!days.has(Math.floor((minute * MINUTE_MS) / DAY_MS))) held.delete(minute);
  // Whole events, not their columns: the breakdowns read the client, the referrer and vitals.
  edges.push(...await edgeParts(q.minutes, user, q.scope, q.minuteSpans, held, h, keep, (minutes, take) => readEdgeEvents(q, minutes, rolled, take)));
  return edges;
}

export async function assemble(q: StatsQuery, row: CountersRow, latest: Promise<[SeqRow[], SeqRow[]]>,
  { guessed, pointsEarly, pointsOf }: PointReads): Promise<Stats> {
  const { plan, breakdowns, dimensions } = q;
  const { parts, rollups } = rollupsOf(q, row);
  const edges = await edgesOf(q, row);

  // Each route's count in range. Its points: those read beside the main statement for the routes
  // of the cached days, and those of any other route now.
  const routeCounts = new Map<string, number>();
  for (const p of [...parts, ...edges]) {
    const { routes, routeCounts: counts } = p.columns();
    routes.forEach((route, i) => routeCounts.set(route, (routeCounts.get(route) ?? 0) + counts[i]));
  }
  const others = new Map([...routeCounts].filter(([route]) => !guessed.has(route)));
  const [errors, activity] = await latest;
  const [early, late] = await Promise.all([pointsEarly ?? new Map<string, PointRow[]>(), others.size ? pointsOf(others) : new Map<string, PointRow[]>()]);
  const points = new Map<string, LatencyPoint[]>();
  for (const route of routeCounts.keys()) {
    const pts = early.get(route) ?? late.get(route) ?? [];
    if (pts.length) points.set(route, pts.reverse().map(({ duration, ttfb, ts }) => ({ duration, ttfb, timestamp: ts })));
  }
  const recents: Recents = { activeUsers: row.active, errors: errors.map(toEvent), activity: activity.map(toEvent), points };
  return assembleStats({ plan, rollups, edges, recents, breakdowns, dimensions });
}

/**
 * Base64 into bytes by a plain loop: Uint8Array.from over the decoded string iterated it one
 * character string at a time, the largest transient garbage of a first all-time answer.
 */
function fromBase64(base64: string): Uint8Array {
  const binary = atob(base64);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * A day's fold rows' hour parts merged into one part (of the day's first hour), kept by the cache
 * as long as the day's folds are. For buckets of whole days only: then every hour of the day adds
 * to the same bucket, and assembleStats adds up the same counts and durations from one part as
 * from all of them, at a fraction of the work (an all-time answer adds every day kept).
 */
function dayPart(cache: DayPartCache, user: string, scope: string, day: number, folds: readonly number[], hours: readonly RollupPart[]): FrozenHour {
  return cache.mergedDay(user, scope, day, folds, () => {
    const merged = new HourRollup(day * 24);
    for (const p of hours) merged.merge(asHour(p, day * 24));
    // Kept frozen: a merged day's maps and session sets took several times the bytes of its
    // columns, for every day an all-time answer adds.
    return FrozenHour.decode(encodePart(merged));
  });
}
