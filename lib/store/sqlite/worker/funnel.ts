// Store.funnel on the database worker: the project's pageload and custom rows of the range, segment
// by segment in seq order (insertion order), counted as they pass (lib/funnels/count.ts), so the
// worker holds a few numbers per session that reached step 1, never the rows.
//
// Sealed segments are read from their funnel index (../funnel-index.ts): typed arrays, each
// distinct step key tested once. The hot segment (and one still being sealed) is read in SQL, only
// the fields a step reads picked out of the metadata by json_extract, a page of rows at a time.
//
// The read is a job of small units (a segment's index, a page of SQL rows): the message loop runs a
// few milliseconds of units, then queues the rest behind the messages that arrived meanwhile
// (../worker.ts: sliced), so a long funnel delays other tenants' ingest and reads by a slice, not by
// the whole read. Between units the hot segment may be sealed and retention may drop segments: the
// job finds each segment by id when it reads it, and reads only rows up to the seq that was the
// newest when it started (the answer is the funnel as of then, less what retention dropped).
import { FunnelCounter, FunnelTooLargeError, type FunnelCounts, type FunnelQuery } from '../../../funnels/count.ts';
import { stepMatcher, stepTypes, funnelFields } from '../../../funnels/steps.ts';
import { fieldsOfKey, stepKey, type FunnelIndex } from '../funnel-index.ts';
import { rowFilter } from '../row-filter.ts';
import { eventOfTail } from '../row.ts';
import type { SegmentDb } from '../segment.ts';
import type { FunnelIndexes } from './funnel-indexes.ts';
import type { WorkerState } from './state.ts';

const COLUMNS = `seq, received_at, session_id, type, page_url,
  json_extract(metadata, '$.route', '$.url', '$.page_url', '$.name', '$.eventName', '$.data.name')`;
/** Rows of a SQL page: one unit of work (a few ms). */
const PAGE = 2048;

type Row = [seq: number, received: string, session: string, type: string, pageUrl: string | null, fields: string];

// Most rows repeat a few routes, URLs and names: a row's step mask is remembered by the fields it
// comes from (parsing URLs and testing patterns again for each row cost most of a read), up to a
// bound so that a range of unique URLs cannot grow the worker's memory.
const REMEMBERED = 50_000;

function maskCache(match: (key: string) => number): (r: Row) => number {
  const known = new Map<string, number>();
  return (r) => {
    // The JSON array holds no NUL, nor the type (pageload or custom): the key is unambiguous.
    const k = `${r[3]}\u0000${r[4] === null ? '' : '=' + r[4]}\u0000${r[5]}`;
    let mask = known.get(k);
    if (mask === undefined) {
      mask = match(stepKey(r[3], r[4], JSON.parse(r[5]) as unknown[]));
      if (known.size < REMEMBERED) known.set(k, mask);
    }
    return mask;
  };
}

/** The rows of one owner's project in an index whose receive times are in [from, to). */
function countIndex(x: FunnelIndex, q: FunnelQuery, counter: FunnelCounter, match: (key: string) => number): number {
  let rows = 0;
  for (const g of x.groups) {
    if (g.user !== q.userId || g.project !== q.projectId) continue;
    const masks = x.keys.map(match);
    // Receive times as offsets: the range's bounds in the same terms (the offsets are whole ms).
    const from = q.from - x.base, to = q.to - x.base;
    const end = g.start + g.count;
    for (let i = g.start; i < end; i++) {
      const mask = masks[x.keyOf[i]];
      if (mask === 0) continue;
      const dt = x.times[i];
      if (dt >= from && dt < to) counter.add(x.sessions[x.sessionOf[i]], x.base + dt, mask);
    }
    rows += g.count;
  }
  return rows;
}

/**
 * The funnel as a job: each step of the generator is one unit of work; its value is the answer.
 * Throws FunnelTooLargeError once the units took more than the query's budget in all.
 */
export async function* funnelJob(s: WorkerState, indexes: FunnelIndexes, q: FunnelQuery): AsyncGenerator<void, FunnelCounts> {
  const counter = new FunnelCounter(q.steps.length, q.windowMs);
  if (q.userId === '') return counter.counts();
  const matchFields = stepMatcher(q.steps);
  const matchKey = (key: string) => matchFields(fieldsOfKey(key));
  const maskOf = maskCache(matchKey);
  const types = stepTypes(q.steps);
  const maxSeq = s.maxSeq;
  // Segment ids in seq order: the sealed ones that may hold the range's rows, then the hot one.
  const ids = s.sealed.oldestFirst().filter((seg) =>
    seg.owners.has(q.userId) && seg.maxReceived >= q.from && seg.minReceived < q.to).map((seg) => seg.id);
  ids.push(s.hotId);
  let spent = 0;
  const unit = async <T>(work: () => T | Promise<T>): Promise<T> => {
    if (s.closed) throw new Error('the store is closed');
    const t0 = performance.now();
    const out = await work();
    spent += performance.now() - t0;
    if (q.budgetMs !== undefined && spent > q.budgetMs) throw new FunnelTooLargeError(q.budgetMs);
    return out;
  };
  for (const id of ids) {
    const seg = s.sealed.get(id);
    if (seg && !seg.writing) {
      await unit(async () => countIndex(await indexes.get(seg), q, counter, matchKey));
      yield;
      continue;
    }
    // The hot segment, or one being sealed (or sealed since the job started): in SQL, a page at a time.
    let after = 0;
    for (let more = true; more;) {
      more = await unit(async () => {
        const db = await segmentById(s, id);
        if (!db) return false; // dropped by retention meanwhile
        const filter = rowFilter({ userId: q.userId, projectId: q.projectId, since: q.from, until: q.to, afterSeq: after, maxSeq });
        const stmt = db.statement(`SELECT ${COLUMNS} FROM events INDEXED BY events_user WHERE ${filter.where}
          AND type IN (${types.map(() => '?').join(', ')}) AND session_id IS NOT NULL ORDER BY seq LIMIT ${PAGE}`);
        stmt.bind([...filter.params, ...types]);
        let n = 0;
        try {
          while (stmt.step()) {
            const r = stmt.get() as Row;
            counter.add(r[2], Date.parse(r[1]), maskOf(r));
            after = r[0];
            n++;
          }
        } finally {
          stmt.reset();
        }
        if (n === PAGE) return true;
        // The segment's rows not written yet follow its database's (higher seqs); read in the same
        // unit, since between units they move to the database.
        if (s.tail.size) {
          for (const row of s.tail.of(id)) {
            if (!filter.matches(row) || !types.includes(row.cols[1]) || !row.cols[5]) continue;
            counter.add(row.cols[5], Date.parse(row.cols[3]), matchFields(funnelFields(eventOfTail(row, db.format))));
          }
        }
        return false;
      });
      yield;
    }
  }
  return counter.counts();
}

/** The database of a segment by id, wherever it is now; null once retention dropped it. */
async function segmentById(s: WorkerState, id: number): Promise<SegmentDb | null> {
  if (id === s.hotId) return s.hot;
  if (s.sealing?.id === id) return s.sealing.db;
  return s.sealed.has(id) ? s.sealed.open(id) : null;
}
