// Store.funnel on PostgreSQL (docs/architecture.md#funnels): the project's pageload and custom
// events of the range, counted in the process by FunnelCounter (lib/funnels/count.ts) in seq order.
// Blocks that have a funnel index (migration 22, ../funnel-index.ts) are read as that index
// (./funnel-blocks.ts); the rows of open days (and rows inserted late into closed ones) and blocks
// without an index come from SQL as (session, seq, receive time, type, step key) tuples, here.
//
// What a step matches is stored beside each event (step_key, migration 21): a pageload's route
// key, a custom event's name. Rows and blocks stored before that version have none, and their
// keys are taken from their texts as follows.
//
// A pageload's route key (lib/event-keys.ts: routeKey) needs the path of its URL as the WHATWG URL
// parser gives it. SQL takes it with a regular expression from URLs whose shape leaves the path as
// written (http(s), a plain host name, printable path characters, no dot segments: what browsers
// send); the few other distinct URLs of the range are parsed here first and passed in as a table.
import type postgres from 'postgres';
import { routeKey } from '../../../event-keys.ts';
import type { FunnelCounts, FunnelQuery } from '../../../funnels/count.ts';
import { stepTypes } from '../../../funnels/steps.ts';
import { countFunnel, type FunnelTuple } from './funnel-blocks.ts';
import { DAY_MS } from '../../../stats.ts';
import { col, pgArray, type Guard } from '../sql.ts';

// Where the URL's path is what it reads: optional http(s) origin with a host name whose last label
// starts with a letter (no IP address, no punycode to decode) and a short port, then the path.
const SAFE_URL = String.raw`^(https?://([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*(:[0-9]{1,4})?)?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?([?#].*)?$`;
const SAFE = `(u ~ '${SAFE_URL.replaceAll("'", "''")}' and left(u, 2) <> '//' and strpos(lower(u), 'xn--') = 0
  and strpos(u, '/.') = 0 and strpos(lower(u), '/%2e') = 0)`;
const PATH = `coalesce(nullif(substring(u from '^(?:https?://[^/?#]*)?([^?#]*)'), ''), '/')`;

// JSON.stringify writes NUL and unpaired surrogates as \u escapes, which jsonb refuses: read as U+FFFD
// (patterns cannot hold either, lib/funnels/query.ts, so what they match does not change).
const JSONB = String.raw`(case when strpos(event, '\u') > 0 then regexp_replace(event, '\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})', '\\ufffd', 'g') else event end)::jsonb`;
// customEventName: the first of name, eventName, data.name that is a non-empty string.
const NAME = ['name', 'eventName'].map((f) => `when jsonb_typeof(j->'${f}') = 'string' and j->>'${f}' <> '' then j->>'${f}'`).join(' ') +
  ` when jsonb_typeof(j->'data'->'name') = 'string' and j->'data'->>'name' <> '' then j->'data'->>'name'`;

/**
 * The project's events of the range that a step can match ($1 owner, $2 project, $3/$4 range, $5/$6
 * days, $7 types). Keyed: those with a step key (key). Else those stored before migration 21,
 * with the route key stored beside pageloads that have a duration (key) and the text (event).
 */
function source(keyed: boolean): string {
  const range = (t: string) => `${t}received_at >= $3::timestamptz and ${t}received_at < $4::timestamptz and ${t}type = any($7::text[]) and ${t}session_id is not null`;
  const rows = `
  select seq, received_at, session_id, type, ${keyed ? 'step_key' : `case when type = 'pageload' then route_key end`} as key${keyed ? '' : ', event'}
  from watchtower_events where user_id = $1 and project_id = $2 and ${range('')} and step_key is ${keyed ? 'not ' : ''}null`;
  // A block has every step key or none (blockDay): without them, its texts are read. One with its
  // funnel index is not read here.
  const blocks = `
  select x.seq, x.received_at, x.session_id, x.type, x.key${keyed ? '' : ', x.event'} from watchtower_event_blocks b
    cross join lateral unnest(b.seqs, b.received, b.types, b.sessions, b.projects, ${keyed ? 'b.step_keys' : 'b.routes, b.texts'})
      as x(seq, received_at, type, session_id, project_id, key${keyed ? '' : ', event'})
  where b.user_id = $1 and b.day >= $5 and b.day <= $6 and b.step_keys is ${keyed ? 'not null and b.funnel is ' : ''}null and x.project_id = $2 and ${range('x.')}`;
  return `${rows} union all ${blocks}`;
}

/** The URL a pageload's route key comes from when it has no route (routeKey: `e.url ?? e.page_url`). */
const URL_OF = `coalesce(j->>'url', j->>'page_url')`;

/**
 * The statement of the tuples: $8/$9 the URLs SQL cannot take the path of and their route keys,
 * $10 the names of the event steps and $11 the same as JSON strings. Custom events of other names
 * are left out.
 */
function tuplesSql(): string {
  // A custom event can have a step's name only if its text holds the name as JSON writes it: the
  // others are not parsed.
  const parse = `(type = 'pageload' and key is null) or (type = 'custom' and exists (select 1 from unnest($11::text[]) n
    where strpos(event, n) > 0))`;
  return `
    with src as (${source(false)}),
    u as (select session_id as s, seq, received_at as t, type, key as known, j, j->>'route' as r, ${URL_OF} as u from src
      cross join lateral (select case when ${parse} then ${JSONB} end as j offset 0) jj),
    k as (select session_id as s, seq, received_at as t, type, case when type = 'pageload' then key end as key,
      case when type = 'custom' then key end as name from (${source(true)}) kk
    union all select s, seq, t, type,
      case when type = 'pageload' then coalesce(known,
        case when coalesce(r, '') <> '' then r
             when coalesce(u, '') = '' then 'unknown'
             when ${SAFE} then ${PATH}
             else (select m.key from unnest($8::text[], $9::text[]) as m(raw, key) where m.raw = u limit 1) end)
      end as key,
      case when type = 'custom' and j is not null then case ${NAME} end end as name from u)
    select s, seq::float8 as seq, (extract(epoch from t) * 1000)::float8 as t, type, coalesce(key, name) as key from k
    where type = 'pageload' or name = any($10::text[])
    order by seq`;
}

/** Tuples per cursor batch. */
const BATCH = 2000;

export function funnelReader(sql: postgres.Sql, guard: Guard) {
  return (q: FunnelQuery): Promise<FunnelCounts> => countFunnel(sql, guard, q, async (each) => {
    const base = [col(q.userId)!, col(q.projectId)!, new Date(q.from).toISOString(), new Date(q.to).toISOString(),
      String(Math.floor(q.from / DAY_MS)), String(Math.floor((q.to - 1) / DAY_MS)), pgArray(stepTypes(q.steps))];
    // The distinct URLs SQL cannot take the path of, parsed as routeKey parses them.
    const raws = q.steps.some((s) => 'page' in s) ? await guard('funnel', () => sql.unsafe<{ u: string }[]>(`
      select distinct u from (select ${URL_OF} as u, j from (select ${JSONB} as j from (${source(false)}) src where type = 'pageload' and key is null) j) x
      where coalesce(j->>'route', '') = '' and u is not null and u <> '' and not ${SAFE}`, base)) : [];
    const keys = raws.map((r) => routeKey({ route: null, url: r.u, page_url: null }));
    const names = q.steps.flatMap((s) => ('event' in s ? [s.event] : []));
    await guard('funnel', () => sql.unsafe<FunnelTuple[]>(tuplesSql(), [...base, pgArray(raws.map((r) => r.u)), pgArray(keys), pgArray(names), pgArray(names.map((n) => JSON.stringify(n)))])
      .cursor(BATCH, (rows) => {
        for (const r of rows) each(r);
      }));
  });
}
