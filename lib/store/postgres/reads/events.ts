// Pages and exports of one owner's events (Store.list, Store.export), read by days (./owner.ts).
import type postgres from 'postgres';
import { decodeCursor, encodeCursor, EXPORT_BATCH } from '../../cursor.ts';
import type { EventPage, EventQuery, Store } from '../../types.ts';
import { toEvent, type Guard, type SeqRow } from '../sql.ts';
import { blockEvents, type OwnerReads } from './owner.ts';

export function eventPages(sql: postgres.Sql, guard: Guard, { daysOf, filterSql, receivedIn, readOwner, newest }: OwnerReads): Pick<Store, 'list' | 'export'> {
  return {
    // Keyset pagination on seq, the insertion order, through the per-user (type | version, seq)
    // indexes: a page costs the same however deep it is, with no server-side cursor (and so no
    // reserved connection, see the top of ../store.ts) held between pages. readByDays bounds each
    // query by receive time to the days that can hold the page, so only their partitions are read.
    async list(q: EventQuery): Promise<EventPage> {
      const beforeSeq = q.before === undefined ? undefined : decodeCursor(q.before);
      const limit = Math.max(0, Math.floor(q.limit));
      if (limit === 0) return { events: [], nextCursor: null };
      const rows = await guard('list', () => newest(q, limit + 1, beforeSeq));
      const more = rows.length > limit;
      if (more) rows.pop();
      return { events: rows.map(toEvent), nextCursor: more ? encodeCursor(Number(rows[rows.length - 1].seq)) : null };
    },

    async *export(q) {
      const { batchSize = EXPORT_BATCH, ...filter } = q;
      const limit = Math.max(1, batchSize);
      // The end is fixed first. An insert that took a lower seq and commits later can still be
      // missed, as with any read of a table being written: what the export covers is what had
      // committed when it began, give or take those in flight.
      const days = await guard('export', () => daysOf(filter));
      const max = Math.max(0, ...days.map((d) => d.last));
      let afterSeq = 0;
      for (;;) {
        const after = afterSeq;
        const found = await guard('export', () => readOwner(filter.userId, days, 'asc', limit, [''], (d0, d1) => sql<SeqRow[]>`
          select seq, event from watchtower_events
          where ${filterSql(filter)} and ${receivedIn(d0, d1)} and seq > ${after} and seq <= ${max}
          order by seq
          limit ${limit}`.then((rows) => new Map([['', rows]])), (chosen) => sql<SeqRow[]>`
          select seq, event from ${blockEvents(sql)}
          where ${chosen} and ${filterSql(filter)} and seq > ${after} and seq <= ${max}
          order by seq
          limit ${limit}`.then((rows) => new Map([['', rows]])), { cursor: after, since: filter.since, until: filter.until }));
        const rows = found.get('') ?? [];
        if (rows.length) yield rows.map(toEvent);
        if (rows.length < limit) return;
        afterSeq = Number(rows[rows.length - 1].seq);
      }
    },
  };
}
