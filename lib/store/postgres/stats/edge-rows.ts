// The events of a range's edges (its partial hours), read after the statistics statement through
// a cursor, EDGE_PAGE rows at a time, so that a busy edge (a burst of 300,000 events in one minute)
// never arrives as one string of hundreds of megabytes, nor is parsed at once. One statement over
// the rows and the blocks that reach the edges: one snapshot, so that a compaction moving rows into
// blocks meanwhile is seen either before or after, never half.
import type postgres from 'postgres';
import type { StoredEvent } from '../../../event.ts';
import { blockEvents } from '../reads/owner.ts';
import { pgArray } from '../sql.ts';
import { MINUTE_MS, type EdgeEvent, type HeldMinute } from './edge-minutes.ts';
import type { StatsQuery } from './plan.ts';

/** Events a page: about 3 MB of JSON. */
export const EDGE_PAGE = 5000;


/**
 * The spans minus the whole minutes in `skip` (those whose rollup the caller holds), as the
 * intervals left: the statement reads those ranges of the receive-time index, not every row of
 * the edge only to filter the held minutes' out.
 */
export function spansWithout(spans: readonly [number, number][], skip: readonly number[]): [number, number][] {
  const held = [...skip].sort((a, b) => a - b);
  const out: [number, number][] = [];
  for (const [a, b] of spans) {
    let start = a;
    for (const m of held) {
      const m0 = m * MINUTE_MS, m1 = m0 + MINUTE_MS;
      if (m1 <= start || m0 >= b) continue;
      if (m0 > start) out.push([start, m0]);
      start = Math.max(start, m1);
    }
    if (start < b) out.push([start, b]);
  }
  return out;
}

/**
 * The held minutes as runs of contiguous minutes of one horizon: [start, end) in ms and the
 * horizon, so that the statement asks a few spans for the events above their horizon.
 */
export function heldRuns(held: ReadonlyMap<number, HeldMinute>): [number, number, number][] {
  const runs: [number, number, number][] = [];
  for (const [minute, { h }] of [...held].sort((a, b) => a[0] - b[0])) {
    const last = runs[runs.length - 1];
    if (last && last[1] === minute * MINUTE_MS && last[2] === h) last[1] += MINUTE_MS;
    else runs.push([minute * MINUTE_MS, (minute + 1) * MINUTE_MS, h]);
  }
  return runs;
}

/**
 * Calls `take` with the edges' events, EDGE_PAGE at a time: those outside the `held` minutes
 * (whole minutes whose rollup the caller holds up to a horizon) and outside the blocks
 * `rolledBlocks` (`day:first_seq`, those whose rollups the statement answered), and those of the
 * held minutes above each one's horizon. The latter are found from the owner's rows above the
 * lowest horizon, by the (user, seq) index, ordered by seq so that the planner keeps to that
 * index (the rows inserted since, not every row of the minutes), and in the blocks that reach
 * them, from their last seq.
 */
export async function readEdgeEvents(q: StatsQuery, held: ReadonlyMap<number, HeldMinute>, rolledBlocks: readonly string[],
  take: (page: EdgeEvent[]) => void): Promise<void> {
  const { sql, user, ofProject, received, reaching } = q;
  const spans = spansWithout(q.plan.rawSpans, [...held.keys()]);
  const runs = heldRuns(held);
  if (!spans.length && !runs.length) return;
  const any = (list: [number, number][], span: (a: number, b: number) => postgres.PendingQuery<postgres.Row[]>) =>
    list.length ? list.map(([a, b]) => span(a, b)).reduce((x, y) => sql`${x} or ${y}`) : sql`false`;
  const low = runs.length ? Math.min(...runs.map(([, , h]) => h)) : 0;
  const [lo, hi] = runs.length ? [runs[0][0], runs[runs.length - 1][1]] : [0, 0];
  const above = runs.length
    ? runs.map(([a, b, h]) => sql`(${received(a, b)} and seq > ${String(h)}::int8)`).reduce((x, y) => sql`${x} or ${y}`)
    : sql`false`;
  const rows = sql<{ seq: string; event: string }[]>`
    select seq::text, event from watchtower_events
    where user_id = ${user} ${ofProject} and (${any(spans, received)})
    union all
    select seq::text, event from (
      select seq, event, received_at from watchtower_events
      where ${runs.length > 0}::boolean and user_id = ${user} ${ofProject} and seq > ${String(low)}::int8
        and ${received(lo, hi)}
      order by seq) fresh
    where ${above}
    union all
    select seq::text, event from ${blockEvents(sql)}
    where b.user_id = ${user} ${ofProject} and (${any(spans, reaching)}) and (${any(spans, received)})
      and not (b.day || ':' || b.first_seq = any(${pgArray(rolledBlocks)}::text[]))
    union all
    select seq::text, event from ${blockEvents(sql)}
    where ${runs.length > 0}::boolean and b.user_id = ${user} ${ofProject} and ${reaching(lo, hi)} and b.last_seq > ${String(low)}::int8
      and (${above})
      and not (b.day || ':' || b.first_seq = any(${pgArray(rolledBlocks)}::text[]))`;
  await rows.cursor(EDGE_PAGE, (page) => {
    take(page.map(({ seq, event }) => ({ event: JSON.parse(event) as StoredEvent, seq: BigInt(seq) })));
  });
}
