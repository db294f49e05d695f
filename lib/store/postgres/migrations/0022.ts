// Schema version 22. Never edited once released.
import type { Migration } from './runner.ts';

export const MIGRATIONS_22_ON: readonly Migration[] = [
  {
    version: 22,
    name: 'funnel index per block',
    // What a funnel reads of a block, and nothing else (lib/store/postgres/funnel-index.ts): its
    // pageload and custom events that have a session, per project in seq order, as binary arrays
    // (receive time, seq, session and step key, the last two as indexes into lists of the block's
    // distinct ones). Written by blockDay with the block when it has every step key (migration 21);
    // funnels count these in the process instead of unnesting the block in SQL. A block written
    // before this version has none and is read as before: no backfill, and adding a column without
    // a default rewrites nothing. Stored uncompressed (external): typed arrays of small integers
    // compress little, and reading them then costs no decompression (BENCHMARKS.md).
    sql: `
      alter table watchtower_event_blocks add column funnel bytea;
      alter table watchtower_event_blocks alter column funnel set storage external;
    `,
  },
];
