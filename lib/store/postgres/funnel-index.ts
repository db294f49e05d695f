// A block's funnel index (watchtower_event_blocks.funnel, migration 22): what a funnel reads of the
// block, and nothing else, so that a funnel decodes a few typed arrays in the process instead of
// unnesting the block's columns in SQL (BENCHMARKS.md, PostgreSQL funnels: a funnel index per block).
//
// Written by blockDay in the statement that makes the block (FUNNEL_INDEX, below), from the rows it
// moves: the block's pageload and custom events that have a session, grouped by project, each group
// in seq order. Bytes: a header length (u32), the header (JSON: `base`, the receive time in ms the
// times are offsets from; `seq`, the seq the seqs are offsets from; `groups`, per project its id,
// its number of events `n` and its lists of distinct `sessions` and step `keys`), then per group in
// the header's order four arrays of n u32: receive time offset, seq offset, session index, key
// index. Integers are big-endian, as PostgreSQL's int4send writes them.
//
// Keys as the sqlite store's index has them (lib/store/sqlite/funnel-index.ts): 'p' + a pageload's
// route key, 'c' + a custom event's name, 'n' for a custom event without a name.
import type { FunnelEventFields } from '../../funnels/steps.ts';

/** The rows of one project in a block's index. */
export interface FunnelIndexGroup {
  /** Null: events sent without a project. */
  project: string | null;
  sessions: string[];
  keys: string[];
  /** Per event, in seq order. */
  times: Float64Array;
  seqs: Float64Array;
  sessionOf: Uint32Array;
  keyOf: Uint32Array;
}

/**
 * The CTEs (funnel_rows, funnel_groups, funnels) that give each (user_id, chunk) of blockDay's
 * `chunked` rows that has such events its index. One whose seqs span 2^31 or more (billions of
 * events in a day) gets a null one, and its block is read in SQL.
 */
export const FUNNEL_INDEX = `
    funnel_rows as (
      select user_id, chunk, seq, received_at, session_id, project_id,
             case when type = 'pageload' then 'p' || step_key when step_key = '' then 'n' else 'c' || step_key end as k,
             min(received_at) over b as base, min(seq) over b as seq0, max(seq) over b - min(seq) over b as span
      from chunked where type in ('pageload', 'custom') and session_id is not null
      window b as (partition by user_id, chunk)
    ), funnel_groups as (
      select user_id, chunk, project_id, min(base) as base, min(seq0) as seq0, max(span) as span,
             json_build_object('project', project_id, 'n', count(*),
               'sessions', array_agg(distinct session_id order by session_id), 'keys', array_agg(distinct k order by k)) as head,
             string_agg(int4send((extract(epoch from received_at - base) * 1000)::int4), ''::bytea order by seq)
             || string_agg(int4send((case when span < 2147483647 then seq - seq0 else 0 end)::int4), ''::bytea order by seq)
             || string_agg(int4send(si::int4), ''::bytea order by seq)
             || string_agg(int4send(ki::int4), ''::bytea order by seq) as body
      from (select *, dense_rank() over (partition by user_id, chunk, project_id order by session_id) - 1 as si,
                      dense_rank() over (partition by user_id, chunk, project_id order by k) - 1 as ki
            from funnel_rows) r
      group by user_id, chunk, project_id
    ), funnels as (
      select user_id, chunk, case when span < 2147483647 then int4send(length(h)) || h || body end as funnel
      from (select user_id, chunk, max(span) as span,
                   convert_to(json_build_object('base', extract(epoch from min(base)) * 1000, 'seq', min(seq0),
                     'groups', json_agg(head order by project_id nulls first))::text, 'UTF8') as h,
                   string_agg(body, ''::bytea order by project_id nulls first) as body
            from funnel_groups group by user_id, chunk) x
    )`;

/** The index of a block none of whose events a funnel reads. */
export const EMPTY_FUNNEL_INDEX = `int4send(length(convert_to('{"base":0,"seq":0,"groups":[]}', 'UTF8'))) || convert_to('{"base":0,"seq":0,"groups":[]}', 'UTF8')`;

/** The step fields of a key (what stepMatcher tests). */
export function fieldsOfKey(key: string): FunnelEventFields {
  if (key[0] === 'p') return { type: 'pageload', page: key.slice(1), name: null };
  if (key[0] === 'c') return { type: 'custom', page: null, name: key.slice(1) };
  return { type: 'none', page: null, name: null };
}

interface Header {
  base: number;
  seq: number;
  groups: { project: string | null; n: number; sessions: string[]; keys: string[] }[];
}

/**
 * The groups of an index's bytes, only those of `project` (undefined: all). Throws on bytes that
 * are not a whole index: they come from this store's own statement, so that is a bug to report.
 */
export function decodeFunnelIndex(bytes: Uint8Array, project?: string | null): FunnelIndexGroup[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = view.getUint32(0);
  const h = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + len))) as Header;
  const out: FunnelIndexGroup[] = [];
  let at = 4 + len;
  for (const g of h.groups) {
    const n = g.n;
    if (!(Number.isInteger(n) && n >= 0 && at + n * 16 <= bytes.length)) throw new Error('a block\'s funnel index is torn');
    if (project === undefined || g.project === project) {
      const x: FunnelIndexGroup = {
        project: g.project, sessions: g.sessions, keys: g.keys,
        times: new Float64Array(n), seqs: new Float64Array(n), sessionOf: new Uint32Array(n), keyOf: new Uint32Array(n),
      };
      for (let i = 0, p = at; i < n; i++, p += 4) {
        x.times[i] = h.base + view.getUint32(p);
        x.seqs[i] = h.seq + view.getUint32(p + 4 * n);
        const s = view.getUint32(p + 8 * n), k = view.getUint32(p + 12 * n);
        if (s >= g.sessions.length || k >= g.keys.length) throw new Error('a block\'s funnel index is torn');
        x.sessionOf[i] = s;
        x.keyOf[i] = k;
      }
      out.push(x);
    }
    at += n * 16;
  }
  if (at !== bytes.length) throw new Error('a block\'s funnel index is torn');
  return out;
}
