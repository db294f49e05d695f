// Schema versions 18 and 19 (the earlier ones are in the files beside this one). Never edited once released.
import type { Migration } from './runner.ts';

export const MIGRATIONS_18_TO_19: readonly Migration[] = [
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
  {
    version: 19,
    name: 'environment scopes',
    // Statistics scopes of environments (lib/environment-scopes.ts): at most `bound` (10) names per
    // owner, the first ones sent, given by watchtower_admit_environments before an insert counts them.
    // watchtower_environment_owners holds, per owner, whether a name was refused ("full", never
    // unset here: a conservative answer, the name is read from its events) and the end of the
    // last day with events stored before this version (legacy_until): those were counted in no
    // environment's scope, so a range starting earlier is not answered from the scopes. The
    // owner's row is locked while names are admitted, so that instances admitting at once never
    // give more than the bound (each statement of the function sees what was committed before it).
    sql: `
      create table watchtower_environment_owners (
        user_id text primary key, "full" boolean not null default false, legacy_until timestamptz);
      insert into watchtower_environment_owners (user_id, legacy_until)
        select user_id, to_timestamp((max(day) + 1) * 86400.0) from watchtower_event_days where user_id <> '' group by user_id;
      create table watchtower_environment_scopes (
        user_id text not null, name text not null, since timestamptz not null, primary key (user_id, name));
      create function watchtower_admit_environments(owners text[], names text[], sent timestamptz[], bound integer)
        returns table (owner text, name text)
        language plpgsql as $fn$
        declare u text; n text; s timestamptz; refused boolean; held integer;
        begin
          -- Owners in one order (no two calls wait on each other's locks), names as sent.
          for u, n, s in select t.u, t.n, t.s from unnest(owners, names, sent) with ordinality as t(u, n, s, i) order by t.u, t.i loop
            insert into watchtower_environment_owners (user_id) values (u) on conflict do nothing;
            select o."full" into refused from watchtower_environment_owners o where o.user_id = u for update;
            if exists (select 1 from watchtower_environment_scopes e where e.user_id = u and e.name = n) then
              owner := u; name := n; return next;
            elsif not refused then
              select count(*) into held from watchtower_environment_scopes e where e.user_id = u;
              if held < bound then
                insert into watchtower_environment_scopes (user_id, name, since) values (u, n, s);
                owner := u; name := n; return next;
              else
                update watchtower_environment_owners o set "full" = true where o.user_id = u;
              end if;
            end if;
          end loop;
        end
        $fn$;
    `,
  },
];
