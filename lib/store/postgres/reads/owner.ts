// The reads of one owner's events wherever they are, rows of daily partitions or blocks of closed
// days: the owner's days, the conditions of a filter, and the newest events of a filter, by days
// (./by-days.ts). Pages, exports and statistics all read through these.
import type postgres from 'postgres';
import { DAY_MS } from '../../../stats.ts';
import { isoBounds } from '../../filter.ts';
import type { EventFilter } from '../../types.ts';
import { col, pgArray, type SeqRow } from '../sql.ts';
import { readEvents, type EventBlock, type EventDay } from './by-days.ts';

/**
 * How the store reads one owner's events for readEvents: `rows(d0, d1, keys)` reads the rows of
 * days d0..d1, `blocks(chosen, keys)` the rows of the blocks `chosen` (a condition on the blocks
 * `b` of blockEvents or blockPoints) selects. `since`/`until` (receive times, ms), if the read has
 * them, leave out the blocks wholly outside: a range starting inside a busy closed day would
 * otherwise unpack that day's earlier blocks only to filter all their rows away.
 */
export type OwnerRead = <R extends { seq: string }>(
  userId: string, days: readonly EventDay[], order: 'asc' | 'desc', want: number, keys: readonly string[],
  rows: (d0: number, d1: number, keys: string[]) => Promise<Map<string, R[]>>,
  blocks: (chosen: postgres.PendingQuery<postgres.Row[]>, keys: string[]) => Promise<Map<string, R[]>>,
  options?: { target?: number; cursor?: number; since?: number; until?: number },
) => Promise<Map<string, R[]>>;

/**
 * The events of blocks `b` as rows with the columns of watchtower_events that filters and pages
 * read (so that the same conditions apply to both); the owner is `b.user_id`.
 */
export const blockEvents = (sql: postgres.Sql) => sql`watchtower_event_blocks b
  cross join lateral unnest(b.seqs, b.received, b.types, b.versions, b.projects, b.texts)
    as x(seq, received_at, type, app_version, project_id, event)`;
/**
 * The sessions of blocks `b`, for the count of active sessions; with their texts (`event`) when
 * `texts`, for a filter on the environment (otherwise they are not read: they are most of a block).
 */
export const blockSessions = (sql: postgres.Sql, texts = false) => texts
  ? sql`watchtower_event_blocks b
  cross join lateral unnest(b.received, b.projects, b.sessions, b.texts) as x(received_at, project_id, session_id, event)`
  : sql`watchtower_event_blocks b
  cross join lateral unnest(b.received, b.projects, b.sessions) as x(received_at, project_id, session_id)`;
/** The latency points' columns of blocks `b`; their texts (`event`) only when `texts`, as above. */
export const blockPoints = (sql: postgres.Sql, texts = false) => texts
  ? sql`watchtower_event_blocks b
  cross join lateral unnest(b.seqs, b.received, b.projects, b.routes, b.durations, b.timestamps, b.ttfbs, b.texts)
    as x(seq, received_at, project_id, route_key, duration, ts, ttfb, event)`
  : sql`watchtower_event_blocks b
  cross join lateral unnest(b.seqs, b.received, b.projects, b.routes, b.durations, b.timestamps, b.ttfbs)
    as x(seq, received_at, project_id, route_key, duration, ts, ttfb)`;

/**
 * The condition that a row's (or a block's unpacked) event has the environment `env`: a field of
 * the event's text, compared as JSON text with the string's JSON.stringify (how events are
 * written), so a number never equals the string of its digits. PostgreSQL reads no JSON holding
 * an escaped NUL (its text cannot hold one): both sides have it replaced by an escaped U+FFFD
 * first, the same text change on the same canonical JSON, so such an environment matches as in
 * the other stores rather than failing the read.
 */
export const environmentIs = (sql: postgres.Sql, env: string) =>
  sql`and (replace(event, '\\u0000', '\\ufffd')::json -> 'environment')::text = ${JSON.stringify(env).replaceAll('\\u0000', '\\ufffd')}`;


/** The reads of owners' events over the store's connection pool (see the functions' comments). */
export type OwnerReads = ReturnType<typeof ownerReads>;

export function ownerReads(sql: postgres.Sql) {

  /** The WHERE conditions of a filter (the user first, so the per-user indexes serve it). */
  const filterSql = (f: EventFilter) => {
    const { since, until } = isoBounds(f);
    return sql`user_id = ${col(f.userId)}
      ${f.type !== undefined ? sql`and type = ${col(f.type)}` : sql``}
      ${f.version !== undefined ? sql`and app_version = ${col(f.version)}` : sql``}
      ${f.projectId !== undefined ? sql`and project_id = ${col(f.projectId)}` : sql``}
      ${f.environment !== undefined ? environmentIs(sql, f.environment) : sql``}
      ${since !== undefined ? sql`and received_at >= ${since}::timestamptz` : sql``}
      ${until !== undefined ? sql`and received_at < ${until}::timestamptz` : sql``}`;
  };

  /** The user's days that the filter's receive times can fall in (see readByDays). */
  const daysOf = async (f: Pick<EventFilter, 'userId' | 'since' | 'until'>): Promise<EventDay[]> => {
    const rows = await sql<EventDay[]>`
      select day, first_seq::float8 as first, last_seq::float8 as last, events::float8 as events, moved::float8 as moved,
             compacted is null or events > compacted as counters, folded, pointed::float8 as pointed
      from watchtower_event_days where user_id = ${col(f.userId)}
        ${f.since !== undefined ? sql`and day >= ${Math.floor(f.since / DAY_MS)}` : sql``}
        ${f.until !== undefined ? sql`and day <= ${Math.floor((f.until - 1) / DAY_MS)}` : sql``}`;
    return rows;
  };
  /** Receive times within days d0..d1: a condition the planner prunes partitions by. */
  const receivedIn = (d0: number, d1: number) =>
    sql`received_at >= ${new Date(d0 * DAY_MS).toISOString()}::timestamptz and received_at < ${new Date((d1 + 1) * DAY_MS).toISOString()}::timestamptz`;

  /**
   * readEvents over one owner's days. A compaction that moves a day's rows into blocks between the
   * read of the days and the read of the rows would hide them from the answer: after the reads, the
   * `moved` counts of the closed days still read as rows are read again, and the whole read done
   * again with the days as they now are while one changed. Compaction moves closed days one after
   * another, so a read again can meet the next day's move: it is checked as the first was. Each
   * pass that goes on saw a day move, which happens about once a day's life, so the passes are
   * bounded by the days; a cap keeps a pathological run of late inserts from looping.
   */
  const readOwner: OwnerRead = async (userId, days, order, want, keys, rows, blocks, options) => {
    // Blocks of the days asked for only (a span of days can reach over days a caller reads
    // elsewhere: statistics read closed days' latest points from watchtower_day_points).
    const asked = pgArray(days.map((d) => d.day));
    const { since, until } = isoBounds({ since: options?.since, until: options?.until });
    const blocksOf = async (d0: number, d1: number) => sql<EventBlock[]>`
      select day, first_seq::float8 as first, last_seq::float8 as last, events from watchtower_event_blocks
      where user_id = ${col(userId)} and day >= ${d0} and day <= ${d1} and day = any(${asked}::int4[])
        ${since !== undefined ? sql`and last_received >= ${since}::timestamptz` : sql``}
        ${until !== undefined ? sql`and first_received < ${until}::timestamptz` : sql``}`;
    const chosen = (of: EventBlock[]) =>
      sql`b.user_id = ${col(userId)} and b.day = any(${pgArray(of.map((b) => b.day))}::int4[]) and b.first_seq = any(${pgArray(of.map((b) => b.first))}::int8[])`;
    const reads = { rows, blocksOf, blocks: (of: EventBlock[], keys: string[]) => blocks(chosen(of), keys) };
    let current = days;
    for (let pass = 0; ; pass++) {
      const got = await readEvents(current, order, want, keys, reads, options);
      const today = Math.floor(Date.now() / DAY_MS);
      const movable = current.filter((d) => d.day < today && d.events > (d.moved ?? 0));
      if (!movable.length || pass > days.length + 2) return got;
      const now = new Map((await sql<{ day: number; moved: number }[]>`
        select day, moved::float8 as moved from watchtower_event_days
        where user_id = ${col(userId)} and day = any(${pgArray(movable.map((d) => d.day))}::int4[])`).map((r) => [r.day, r.moved]));
      if (movable.every((d) => (now.get(d.day) ?? d.moved ?? 0) === (d.moved ?? 0))) return got;
      current = current.map((d) => ({ ...d, moved: now.get(d.day) ?? d.moved }));
    }
  };

  /** The newest `want` events of a filter (before a seq, if given), newest first. */
  const newest = async (f: EventFilter, want: number, beforeSeq?: number, known?: readonly EventDay[]): Promise<SeqRow[]> => {
    const days = known ?? (await daysOf(f));
    const before = beforeSeq !== undefined ? sql`and seq < ${beforeSeq}` : sql``;
    const found = await readOwner(f.userId, days, 'desc', want, [''], (d0, d1) => sql<SeqRow[]>`
      select seq, event from watchtower_events
      where ${filterSql(f)} and ${receivedIn(d0, d1)} ${before}
      order by seq desc
      limit ${want}`.then((rows) => new Map([['', rows]])), (chosen) => sql<SeqRow[]>`
      select seq, event from ${blockEvents(sql)}
      where ${chosen} and ${filterSql(f)} ${before}
      order by seq desc
      limit ${want}`.then((rows) => new Map([['', rows]])), { cursor: beforeSeq, since: f.since, until: f.until });
    return found.get('') ?? [];
  };

  return { filterSql, daysOf, receivedIn, readOwner, newest };
}
