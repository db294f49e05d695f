// Store.funnel on the database worker: the project's pageload and custom rows of the range, read
// segment by segment in seq order (insertion order) and counted as they pass (lib/funnels/count.ts),
// so the worker holds a few numbers per session that reached step 1, never the rows. Only the
// fields a step reads leave the database: json_extract picks them out of the metadata, which is
// far cheaper than parsing each row's JSON into an event.
import { routeKey } from '../../../event-keys.ts';
import { FunnelCounter, FunnelTooLargeError, type FunnelCounts, type FunnelQuery } from '../../../funnels/count.ts';
import { customEventName, funnelFields, stepMatcher, stepTypes, type FunnelEventFields } from '../../../funnels/steps.ts';
import type { SegmentView } from '../hot-tail.ts';
import { rowFilter } from '../row-filter.ts';
import { eventOfTail } from '../row.ts';
import type { Reads } from './reads.ts';

// One json_extract with several paths parses the metadata once and answers a JSON array of the
// values (null where a path is missing). The metadata holds route and url (no column does), and
// page_url only when it differs from its column.
const COLUMNS = `seq, received_at, session_id, type, page_url,
  json_extract(metadata, '$.route', '$.url', '$.page_url', '$.name', '$.eventName', '$.data.name')`;

type Row = [seq: number, received: string, session: string | null, type: string, pageUrl: string | null, fields: string];

function fieldsOf(type: string, pageUrl: string | null, fields: string): FunnelEventFields {
  const [route, url, ownPageUrl, name, eventName, dataName] = JSON.parse(fields) as unknown[];
  if (type === 'pageload') {
    return { type, page: routeKey({ route: route as string | null, url: url as string | null, page_url: (ownPageUrl ?? pageUrl) as string | null }), name: null };
  }
  return { type, page: null, name: customEventName({ name, eventName, data: { name: dataName } }) };
}

// Most rows repeat a few routes, URLs and names: a row's step mask is remembered by the fields it
// comes from (parsing URLs and testing patterns again for each row cost most of a read), up to a
// bound so that a range of unique URLs cannot grow the worker's memory.
const REMEMBERED = 50_000;

function maskCache(match: (f: FunnelEventFields) => number): (r: Row) => number {
  const known = new Map<string, number>();
  return (r) => {
    // The JSON array holds no NUL, nor the type (pageload or custom): the key is unambiguous.
    const key = `${r[3]}\u0000${r[4] === null ? '' : '=' + r[4]}\u0000${r[5]}`;
    let mask = known.get(key);
    if (mask === undefined) {
      mask = match(fieldsOf(r[3], r[4], r[5]));
      if (known.size < REMEMBERED) known.set(key, mask);
    }
    return mask;
  };
}

export async function readFunnel(reads: Reads, q: FunnelQuery): Promise<FunnelCounts> {
  const counter = new FunnelCounter(q.steps.length, q.windowMs);
  const match = stepMatcher(q.steps);
  const maskOf = maskCache(match);
  const types = stepTypes(q.steps);
  const filter = rowFilter({ userId: q.userId, projectId: q.projectId, since: q.from, until: q.to });
  const sql = `SELECT ${COLUMNS} FROM events INDEXED BY events_user_received WHERE ${filter.where}
    AND type IN (${types.map(() => '?').join(', ')}) AND session_id IS NOT NULL ORDER BY seq`;
  if (q.userId === '') return counter.counts();
  // Messages wait for a read to finish: past its budget, a funnel gives up rather than hold them.
  const t0 = performance.now();
  let rows = 0;
  const spent = () => q.budgetMs !== undefined && (++rows & 4095) === 0 && performance.now() - t0 > q.budgetMs;
  for (const source of reads.sources(q.userId, 'oldest', { since: q.from, until: q.to })) {
    const view = (await source.open()) as SegmentView;
    const s = view.db.statement(sql);
    s.bind([...filter.params, ...types]);
    try {
      while (s.step()) {
        const r = s.get() as Row;
        counter.add(r[2]!, Date.parse(r[1]), maskOf(r));
        if (spent()) throw new FunnelTooLargeError(q.budgetMs!);
      }
    } finally {
      s.reset();
    }
    // The segment's rows not written yet follow its database's (higher seqs).
    for (const row of view.pending) {
      if (!filter.matches(row) || !types.includes(row.cols[1]) || !row.cols[5]) continue;
      const e = eventOfTail(row);
      counter.add(row.cols[5], Date.parse(row.cols[3]), match(funnelFields(e)));
      if (spent()) throw new FunnelTooLargeError(q.budgetMs!);
    }
  }
  return counter.counts();
}
