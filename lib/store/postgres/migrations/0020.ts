// Schema version 20 (the others are in the files beside this one). Never edited once released.
import type { Migration } from './runner.ts';

export const MIGRATIONS_20: readonly Migration[] = [
  {
    version: 20,
    name: 'custom event properties from',
    // Custom event properties (lib/properties.ts) are breakdown counters of kind 'Q' (the last of
    // DIM_KINDS in lib/rollup/counters.ts) with their sessions in watchtower_breakdown_sessions,
    // as every breakdown. Events stored before this version have none: watchtower_properties_from
    // holds the first hour after the newest of them, and a range starting earlier is answered
    // without properties rather than with partial ones (docs/api.md#properties).
    sql: `
      create table watchtower_properties_from (hour integer not null);
      insert into watchtower_properties_from
        select coalesce(floor(extract(epoch from max(received_at)) / 3600)::integer + 1, -2147483648) from watchtower_events;
    `,
  },
];
