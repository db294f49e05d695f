// A funnel on PostgreSQL counted in the process (./funnel.ts has the SQL of the tuples): the
// range's blocks that have a funnel index (../funnel-index.ts) are decoded here, and their events
// merged by seq with the tuples (rows, and blocks without an index), so that FunnelCounter sees
// each session's events in insertion order as the rule asks (lib/funnels/count.ts).
//
// Blocks are read in first_seq order. The blocks of one owner and day hold disjoint runs of seqs,
// but a block of rows inserted late into a closed day can hold seqs that a later day's block also
// spans: blocks whose seq ranges overlap are merged (their events sorted by seq), the others read
// one after the other. The tuples come in seq order and are merged in as the blocks' events pass.
//
// Bounds: only events that match a step are held (at most MAX_HELD tuples, one block group's
// events), besides the counter's few numbers per session; and the read gives up with
// FunnelTooLargeError once it has taken longer than the query's budgetMs, as on sqlite (the time
// spent waiting for the database counted too).
import type postgres from 'postgres';
import { FunnelCounter, FunnelTooLargeError, type FunnelCounts, type FunnelQuery } from '../../../funnels/count.ts';
import { stepMatcher } from '../../../funnels/steps.ts';
import { DAY_MS } from '../../../stats.ts';
import { decodeFunnelIndex, fieldsOfKey } from '../funnel-index.ts';
import { col, type Guard } from '../sql.ts';

/** A tuple of the range: a row, or an event of a block without a funnel index. */
export interface FunnelTuple { s: string; seq: number; t: number; type: string; key: string | null }

/** Most tuples that match a step held at once (~21 bytes each): beyond, the funnel is too large. */
export const MAX_HELD = 2_000_000;
/** Blocks per cursor batch (each ~16 bytes per pageload or custom event with a session). */
const BLOCK_BATCH = 50;
// Distinct step keys whose masks are remembered: a range of unique keys cannot grow memory.
const REMEMBERED = 50_000;

/** Events held in seq order: seq, session number, receive time, step mask. */
class Held {
  n = 0;
  seq = new Float64Array(1024);
  id = new Int32Array(1024);
  t = new Float64Array(1024);
  mask = new Uint8Array(1024);

  push(seq: number, id: number, t: number, mask: number): void {
    if (this.n === this.seq.length) {
      const grow = <T extends Float64Array | Int32Array | Uint8Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.seq = grow(this.seq), this.id = grow(this.id), this.t = grow(this.t), this.mask = grow(this.mask);
    }
    const i = this.n++;
    this.seq[i] = seq, this.id[i] = id, this.t[i] = t, this.mask[i] = mask;
  }
}

/**
 * Counts the funnel: `tuples` calls back with each tuple in seq order; the blocks with an index are
 * read here.
 */
export async function countFunnel(sql: postgres.Sql, guard: Guard, q: FunnelQuery,
  tuples: (each: (r: FunnelTuple) => void) => Promise<void>): Promise<FunnelCounts> {
  const counter = new FunnelCounter(q.steps.length, q.windowMs);
  if (q.userId === '') return counter.counts();
  const started = performance.now();
  const inBudget = () => {
    if (q.budgetMs !== undefined && performance.now() - started > q.budgetMs) throw new FunnelTooLargeError(q.budgetMs);
  };
  const matchFields = stepMatcher(q.steps);
  const known = new Map<string, number>();
  const maskOf = (key: string) => {
    let mask = known.get(key);
    if (mask === undefined) {
      mask = matchFields(fieldsOfKey(key));
      if (known.size < REMEMBERED) known.set(key, mask);
    }
    return mask;
  };

  // The tuples that match a step, in seq order.
  const rows = new Held();
  await tuples((r) => {
    const mask = maskOf(r.type === 'pageload' ? 'p' + r.key : r.key ? 'c' + r.key : 'n');
    if (mask === 0) return;
    if (rows.n >= MAX_HELD) throw new FunnelTooLargeError(q.budgetMs ?? 0);
    rows.push(r.seq, counter.sessionId(r.s), r.t, mask);
  });
  inBudget();

  // The blocks' events, a group of overlapping blocks at a time, merged with the rows.
  let next = 0;
  const group = new Held();
  let groupBlocks = 0, groupEnd = -Infinity;
  const flush = () => {
    let order: number[] | null = null;
    if (groupBlocks > 1) {
      order = Array.from({ length: group.n }, (_, i) => i);
      order.sort((a, b) => group.seq[a] - group.seq[b]);
    }
    for (let j = 0; j < group.n; j++) {
      const i = order ? order[j] : j;
      for (; next < rows.n && rows.seq[next] < group.seq[i]; next++) counter.addId(rows.id[next], rows.t[next], rows.mask[next]);
      counter.addId(group.id[i], group.t[i], group.mask[i]);
    }
    group.n = 0;
    groupBlocks = 0;
  };
  const project = col(q.projectId);
  const block = (first: number, last: number, bytes: Uint8Array) => {
    if (first > groupEnd) flush();
    groupBlocks++;
    groupEnd = Math.max(groupEnd, last);
    for (const g of decodeFunnelIndex(bytes, project)) {
      const masks = g.keys.map(maskOf);
      const ids = new Int32Array(g.sessions.length).fill(-1);
      for (let i = 0; i < g.times.length; i++) {
        const mask = masks[g.keyOf[i]];
        const t = g.times[i];
        if (mask === 0 || !(t >= q.from && t < q.to)) continue;
        const s = g.sessionOf[i];
        if (ids[s] < 0) ids[s] = counter.sessionId(g.sessions[s]);
        group.push(g.seqs[i], ids[s], t, mask);
      }
    }
  };
  await guard('funnel', () => sql.unsafe<{ first: number; last: number; funnel: Uint8Array }[]>(`
    select first_seq::float8 as first, last_seq::float8 as last, funnel from watchtower_event_blocks
    where user_id = $1 and day >= $2 and day <= $3 and funnel is not null
      and first_received < $5::timestamptz and last_received >= $4::timestamptz
    order by first_seq`,
  [col(q.userId)!, Math.floor(q.from / DAY_MS), Math.floor((q.to - 1) / DAY_MS), new Date(q.from).toISOString(), new Date(q.to).toISOString()])
    .cursor(BLOCK_BATCH, (batch) => {
      for (const b of batch) block(b.first, b.last, b.funnel);
      inBudget();
    }));
  flush();
  for (; next < rows.n; next++) counter.addId(rows.id[next], rows.t[next], rows.mask[next]);
  inBudget();
  return counter.counts();
}
