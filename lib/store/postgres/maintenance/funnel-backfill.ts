// Funnel indexes for the blocks written before them (migration 22): blockDay writes a block's index
// with the block, but blocks moved by an earlier version have none, and a funnel reads those by
// unnesting their columns in SQL, about four times the time per event (BENCHMARKS.md, PostgreSQL
// funnels). indexBlocks gives them one from the block's own arrays, with the statement blockDay
// uses (FUNNEL_INDEX), so an index backfilled is the same bytes as one written with its block.
// Run by compactClosedDays after the blocks' rollups.
import type postgres from 'postgres';
import { EMPTY_FUNNEL_INDEX, FUNNEL_INDEX } from '../funnel-index.ts';

/** Blocks indexed per statement: ~1,000 events each. */
const INDEX_BLOCKS = 20;

/**
 * Indexes the blocks that have every step key (migration 21) but no funnel index, a few at a time,
 * until none is left or `stop` says so. A block whose seqs span 2^31 or more gets none from
 * blockDay either, and is skipped; blocks without step keys are read from their texts and have
 * nothing to index. A block never changes, so two instances indexing the same one write the same
 * bytes. Resolves to the number of blocks indexed.
 */
export async function indexBlocks(sql: postgres.Sql, stop = () => false): Promise<number> {
  let done = 0;
  while (!stop()) {
    const [{ indexed }] = await sql.unsafe<{ indexed: number }[]>(`
      with picked as (
        select user_id, day, first_seq from watchtower_event_blocks
        where funnel is null and step_keys is not null and last_seq - first_seq < 2147483647
        limit $1::integer
      ), chunked as (
        -- The block's events as blockDay's rows, its first seq standing for its chunk.
        select b.user_id, b.first_seq as chunk, x.seq, x.received_at, x.type, x.session_id, x.project_id, x.step_key
        from picked p join watchtower_event_blocks b using (user_id, day, first_seq)
        cross join lateral unnest(b.seqs, b.received, b.types, b.sessions, b.projects, b.step_keys)
          as x(seq, received_at, type, session_id, project_id, step_key)
      ), ${FUNNEL_INDEX}, indexed as (
        update watchtower_event_blocks b set funnel = coalesce(f.funnel, ${EMPTY_FUNNEL_INDEX})
        from picked p left join funnels f on f.user_id = p.user_id and f.chunk = p.first_seq
        where b.user_id = p.user_id and b.day = p.day and b.first_seq = p.first_seq and b.funnel is null
        returning 1
      )
      select count(*)::integer as indexed from indexed`, [INDEX_BLOCKS]);
    // None left, or another instance indexed the ones picked: the next pass picks again.
    if (!indexed) break;
    done += indexed;
  }
  return done;
}
