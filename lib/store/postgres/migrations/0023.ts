// Schema version 23. Never edited once released.
import type { Migration } from './runner.ts';

export const MIGRATIONS_23_ON: readonly Migration[] = [
  {
    version: 23,
    name: 'receive times of kept points',
    // The receive time of each latest point a closed day keeps (watchtower_day_points, migration
    // 16), in the order of its seqs: a range that starts or ends inside the day then takes the
    // kept points inside it (lib/store/postgres/stats/cut-days.ts) instead of reading the day's
    // blocks. Written by blockDay; rows written before this version have none (null), nor does a
    // row that merges them with later points, and such days are read from their blocks as before.
    sql: `
      alter table watchtower_day_points add column received timestamptz[];
    `,
  },
];
