// Store.funnel on PostgreSQL, in SQL (docs/architecture.md#funnels): the project's pageload and
// custom events of the range, from the rows of open days and the blocks of closed ones, each given
// its step matches, then one window pass per step over each session's events in seq order: an
// event ends a chain of k steps when it matches step k and the latest event ending a chain of
// k - 1 steps before it was received at most the window earlier (the rule of lib/funnels/count.ts).
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
import { patternRegex, stepTypes } from '../../../funnels/steps.ts';
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
  // A block has every step key or none (blockDay): without them, its texts are read.
  const blocks = `
  select x.seq, x.received_at, x.session_id, x.type, x.key${keyed ? '' : ', x.event'} from watchtower_event_blocks b
    cross join lateral unnest(b.seqs, b.received, b.types, b.sessions, b.projects, ${keyed ? 'b.step_keys' : 'b.routes, b.texts'})
      as x(seq, received_at, type, session_id, project_id, key${keyed ? '' : ', event'})
  where b.user_id = $1 and b.day >= $5 and b.day <= $6 and b.step_keys is ${keyed ? 'not ' : ''}null and x.project_id = $2 and ${range('x.')}`;
  return `${rows} union all ${blocks}`;
}

/** The URL a pageload's route key comes from when it has no route (routeKey: `e.url ?? e.page_url`). */
const URL_OF = `coalesce(j->>'url', j->>'page_url')`;

function funnelSql(q: FunnelQuery, first: number): { text: string; params: string[] } {
  const params: string[] = [];
  const param = (v: string) => `$${first + params.push(v) - 1}`;
  // Page patterns are matched once per distinct route key of the range (ks), not once per event.
  const pages = q.steps.flatMap((s, i) => ('page' in s ? [`key ~ ${param(patternRegex(s.page, '.*'))} as pm${i + 1}`] : []));
  const matches = q.steps.map((s, i) => ('page' in s ? `coalesce(ks.pm${i + 1}, false)` : `(k.type = 'custom' and k.name is not distinct from ${param(s.event)})`));
  const n = matches.length;
  // A custom event can have a step's name only if its text holds the name as JSON writes it: the
  // others are not parsed.
  const names = q.steps.flatMap((s) => ('event' in s ? [`strpos(event, ${param(JSON.stringify(s.event))}) > 0`] : []));
  const parse = `(type = 'pageload' and key is null) or (type = 'custom' and (${names.join(' or ') || 'false'}))`;
  const win = `${param(String(q.windowMs))}::float8 * interval '1 millisecond'`;
  const w = 'window w as (partition by s order by seq rows between unbounded preceding and 1 preceding)';
  let layers = `l1 as (select *, max(case when ok1 then t end) over w as p1 from (select *, m1 as ok1 from l0) x ${w})`;
  for (let k = 2; k <= n; k++) {
    layers += `, l${k} as (select *, max(case when ok${k} then t end) over w as p${k}
      from (select *, coalesce(m${k} and t <= p${k - 1} + ${win}, false) as ok${k} from l${k - 1}) x ${w})`;
  }
  const depth = `case ${Array.from({ length: n }, (_, i) => `when ok${n - i} then ${n - i}`).join(' ')} else 0 end`;
  const text = `
    with src as (${source(false)}),
    u as (select session_id as s, seq, received_at as t, type, key as known, j, j->>'route' as r, ${URL_OF} as u from src
      cross join lateral (select case when ${parse} then ${JSONB} end as j offset 0) jj),
    k as materialized (select session_id as s, seq, received_at as t, type, case when type = 'pageload' then key end as key,
      case when type = 'custom' then key end as name from (${source(true)}) kk
    union all select s, seq, t, type,
      case when type = 'pageload' then coalesce(known,
        case when coalesce(r, '') <> '' then r
             when coalesce(u, '') = '' then 'unknown'
             when ${SAFE} then ${PATH}
             else (select m.key from unnest($8::text[], $9::text[]) as m(raw, key) where m.raw = u limit 1) end)
      end as key,
      case when type = 'custom' and j is not null then case ${NAME} end end as name from u),
    -- Materialized, or the planner pulls the matches up into the join, once per event again.
    ks as materialized (select key, ${pages.join(', ') || 'true'} from (select distinct key from k where type = 'pageload') x),
    -- Materialized: the sort for the windows then holds these few columns, not k's.
    l0 as materialized (select * from (select k.s, k.seq, k.t, ${matches.map((m, i) => `${m} as m${i + 1}`).join(', ')}
      from k left join ks on k.type = 'pageload' and ks.key = k.key) x
      where ${matches.map((_, i) => `m${i + 1}`).join(' or ')}),
    ${layers},
    d as (select s, max(${depth}) as d from l${n} group by s)
    select ${Array.from({ length: n }, (_, i) => `count(*) filter (where d >= ${i + 1})::float8 as c${i + 1}`).join(', ')} from d`;
  return { text, params };
}

export function funnelReader(sql: postgres.Sql, guard: Guard) {
  return async (q: FunnelQuery): Promise<FunnelCounts> => {
    if (q.userId === '') return q.steps.map(() => 0);
    const base = [col(q.userId)!, col(q.projectId)!, new Date(q.from).toISOString(), new Date(q.to).toISOString(),
      String(Math.floor(q.from / DAY_MS)), String(Math.floor((q.to - 1) / DAY_MS)), pgArray(stepTypes(q.steps))];
    // The distinct URLs SQL cannot take the path of, parsed as routeKey parses them.
    const raws = q.steps.some((s) => 'page' in s) ? await guard('funnel', () => sql.unsafe<{ u: string }[]>(`
      select distinct u from (select ${URL_OF} as u, j from (select ${JSONB} as j from (${source(false)}) src where type = 'pageload' and key is null) j) x
      where coalesce(j->>'route', '') = '' and u is not null and u <> '' and not ${SAFE}`, base)) : [];
    const keys = raws.map((r) => routeKey({ route: null, url: r.u, page_url: null }));
    const { text, params } = funnelSql(q, 10);
    const rows = await guard('funnel', () => sql.unsafe<Record<string, number>[]>(text,
      [...base, pgArray(raws.map((r) => r.u)), pgArray(keys), ...params]));
    return q.steps.map((_, i) => rows[0][`c${i + 1}`]);
  };
}
