// The events of a range's edges (its partial hours), read after the statistics statement through
// a cursor, EDGE_PAGE rows at a time, so that a busy edge (a burst of 300,000 events in one minute)
// never arrives as one string of hundreds of megabytes, nor is parsed at once. One statement over
// the rows and the blocks that reach the edges: one snapshot, so that a compaction moving rows into
// blocks meanwhile is seen either before or after, never half.
import type postgres from 'postgres';
import type { StoredEvent } from '../../../event.ts';
import { blockEvents } from '../reads/owner.ts';
import { pgArray } from '../sql.ts';
import { MINUTE_MS, type EdgeEvent } from './edge-minutes.ts';
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
 * Calls `take` with the edges' events, EDGE_PAGE at a time, leaving out those of `skip` (whole
 * minutes whose rollup the caller holds) and of the blocks `rolledBlocks` (`day:first_seq`, those
 * whose rollups the statement answered).
 */
export async function readEdgeEvents(q: StatsQuery, skip: readonly number[], rolledBlocks: readonly string[],
  take: (page: EdgeEvent[]) => void): Promise<void> {
  const { sql, user, ofProject, received, reaching } = q;
  const spans = spansWithout(q.plan.rawSpans, skip);
  if (!spans.length) return;
  const any = (span: (a: number, b: number) => postgres.PendingQuery<postgres.Row[]>) =>
    spans.map(([a, b]) => span(a, b)).reduce((x, y) => sql`${x} or ${y}`);
  const rows = sql<{ seq: string; event: string; r: boolean }[]>`
    select seq::text, event, true as r from watchtower_events
    where user_id = ${user} ${ofProject} and (${any(received)})
    union all
    select seq::text, event, false as r from ${blockEvents(sql)}
    where b.user_id = ${user} ${ofProject} and (${any(reaching)}) and (${any(received)})
      and not (b.day || ':' || b.first_seq = any(${pgArray(rolledBlocks)}::text[]))`;
  await rows.cursor(EDGE_PAGE, (page) => {
    take(page.map(({ seq, event, r }) => ({ event: JSON.parse(event) as StoredEvent, seq: BigInt(seq), row: r })));
  });
}
