// Schema versions from 18 on (a new file: the earlier ones are full). Never edited once released.
import type { Migration } from './runner.ts';

export const MIGRATIONS_18_ON: readonly Migration[] = [
  {
    version: 18,
    name: 'breakdown dimensions from',
    // Environments, UTM sources, mediums and campaigns, countries and custom events are breakdown
    // counters of kinds added to DIM_KINDS (lib/rollup/counters.ts) with their sessions in
    // watchtower_breakdown_sessions, as the first six are. Events stored before this version have
    // none: watchtower_dimensions_from holds the first hour after the newest of them, and a range
    // starting earlier is answered without those six lists rather than with partial ones.
    sql: `
      create table watchtower_dimensions_from (hour integer not null);
      insert into watchtower_dimensions_from
        select coalesce(floor(extract(epoch from max(received_at)) / 3600)::integer + 1, -2147483648) from watchtower_events;
    `,
  },
];
