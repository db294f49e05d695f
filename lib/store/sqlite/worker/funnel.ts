// Store.funnel on the database worker: the project's pageload and custom rows of the range, read
// segment by segment in seq order (insertion order) and counted as they pass (lib/funnels/count.ts),
// so the worker holds a few numbers per session that reached step 1, never the rows. Only the
// fields a step reads leave the database: json_extract picks them out of the metadata, which is
// far cheaper than parsing each row's JSON into an event.
import { routeKey } from '../../../event-keys.ts';
import { FunnelCounter, type FunnelCounts, type FunnelQuery } from '../../../funnels/count.ts';
import { customEventName, funnelFields, stepMatcher, stepTypes, type FunnelEventFields } from '../../../funnels/steps.ts';
import type { SegmentView } from '../hot-tail.ts';
import { rowFilter } from '../row-filter.ts';
import { eventOfTail } from '../row.ts';
import type { Reads } from './reads.ts';

// A value of the metadata only when it is a JSON string (json_extract answers objects as JSON text).
const text = (path: string) => `CASE WHEN json_type(metadata, '${path}') = 'text' THEN json_extract(metadata, '${path}') END`;
// The metadata holds route and url (no column does), and page_url only when it differs from its column.
const COLUMNS = `seq, received_at, session_id, type, json_extract(metadata, '$.route'), json_extract(metadata, '$.url'),
  coalesce(json_extract(metadata, '$.page_url'), page_url), ${text('$.name')}, ${text('$.eventName')}, ${text('$.data.name')}`;

type Row = [seq: number, received: string, session: string | null, type: string, route: string | null, url: string | null,
  pageUrl: string | null, name: string | null, eventName: string | null, dataName: string | null];

function fieldsOf(r: Row): FunnelEventFields {
  const type = r[3];
  if (type === 'pageload') return { type, page: routeKey({ route: r[4], url: r[5], page_url: r[6] }), name: null };
  return { type, page: null, name: customEventName({ name: r[7], eventName: r[8], data: { name: r[9] } }) };
}

export async function readFunnel(reads: Reads, q: FunnelQuery): Promise<FunnelCounts> {
  const counter = new FunnelCounter(q.steps.length, q.windowMs);
  const match = stepMatcher(q.steps);
  const types = stepTypes(q.steps);
  const filter = rowFilter({ userId: q.userId, projectId: q.projectId, since: q.from, until: q.to });
  const sql = `SELECT ${COLUMNS} FROM events INDEXED BY events_user_received WHERE ${filter.where}
    AND type IN (${types.map(() => '?').join(', ')}) AND session_id IS NOT NULL ORDER BY seq`;
  if (q.userId === '') return counter.counts();
  for (const source of reads.sources(q.userId, 'oldest', { since: q.from, until: q.to })) {
    const view = (await source.open()) as SegmentView;
    const s = view.db.statement(sql);
    s.bind([...filter.params, ...types]);
    try {
      while (s.step()) {
        const r = s.get() as Row;
        counter.add(r[2]!, Date.parse(r[1]), match(fieldsOf(r)));
      }
    } finally {
      s.reset();
    }
    // The segment's rows not written yet follow its database's (higher seqs).
    for (const row of view.pending) {
      if (!filter.matches(row) || !types.includes(row.cols[1]) || !row.cols[5]) continue;
      const e = eventOfTail(row);
      counter.add(row.cols[5], Date.parse(row.cols[3]), match(funnelFields(e)));
    }
  }
  return counter.counts();
}
