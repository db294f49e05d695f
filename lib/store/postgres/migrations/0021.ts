// Schema version 21 (the earlier ones are in the files beside this one, the later in 0022.ts). Never edited once released.
import type { Migration } from './runner.ts';

export const MIGRATIONS_21_ON: readonly Migration[] = [
  {
    version: 21,
    name: 'funnel step keys',
    // What a funnel step matches, stored beside each event by the insert (lib/store/postgres/insert/
    // columns.ts) so that funnels read neither the JSON texts nor URLs (lib/store/postgres/reads/
    // funnel.ts): a pageload's route key (routeKey, for every pageload, where route_key has it only
    // for those with a duration), a custom event's name ('' when it has none), null for other
    // types. Blocks carry them as one more array, or none (blockDay). Rows and blocks stored before
    // this version have none and are read from their texts as before: no backfill, which would
    // need the URL parser of lib/event-keys.ts, and adding a column without a default rewrites nothing.
    sql: `
      alter table watchtower_events add column step_key text;
      alter table watchtower_event_blocks add column step_keys text[];
    `,
  },
];
