// The filter a read puts on one owner's rows, defined once: each condition names its column, its
// comparison and where a row still in the hot tail (not written yet) holds the same value. The SQL
// a segment's database runs (segment.ts) and the predicate over the tail (hot-tail.ts) are both
// made from it, so the two cannot disagree about which rows match.
import { isoBounds } from '../filter.ts';
import type { TailRow } from './row.ts';

/** The bounds a read puts on one owner's rows; an absent bound is none. */
export interface RowBounds {
  userId: string;
  type?: string;
  version?: string;
  projectId?: string;
  environment?: string;
  /** Receive times [since, until), ms. */
  since?: number;
  until?: number;
  /** Seq below this / above this / at most this. */
  beforeSeq?: number;
  afterSeq?: number;
  maxSeq?: number;
}

type Op = '=' | '<>' | '<' | '<=' | '>' | '>=';
type Value = string | number;
type Key = Exclude<keyof RowBounds, 'since' | 'until'> | 'sinceIso' | 'untilIso' | 'notUserId';

interface Condition {
  key: Key;
  /** The column (or expression) of the segment's database. */
  column: string;
  op: Op;
  /** The same value in a tail row. */
  of: (r: TailRow) => Value | null | undefined;
}

// Indexes into ColValues (row.ts).
const TYPE = 1, RECEIVED = 3, OWNER = 4, VERSION = 6;

const CONDITIONS: readonly Condition[] = [
  { key: 'userId', column: 'user_id', op: '=', of: (r) => r.cols[OWNER] },
  { key: 'notUserId', column: 'user_id', op: '<>', of: (r) => r.cols[OWNER] },
  { key: 'type', column: 'type', op: '=', of: (r) => r.cols[TYPE] },
  { key: 'version', column: 'app_version', op: '=', of: (r) => r.cols[VERSION] },
  // The project lives in the row's metadata JSON, with the fields no column holds: every segment has
  // it there, those sealed before projects existed included, and a column would cost each insert a
  // bind that only project filters use. Filters by project walk the owner's rows as type filters do.
  { key: 'projectId', column: "json_extract(metadata, '$.projectId')", op: '=', of: (r) => r.projectId },
  // The environment is a field of the event no column holds. json_extract gives a number for a
  // number, which never equals the text asked for, as in the other stores.
  { key: 'environment', column: "json_extract(metadata, '$.environment')", op: '=', of: (r) => metadataString(r.metadata, 'environment') },
  // Receive times compare as ISO text (filter.ts: isoBounds).
  { key: 'sinceIso', column: 'received_at', op: '>=', of: (r) => r.cols[RECEIVED] },
  { key: 'untilIso', column: 'received_at', op: '<', of: (r) => r.cols[RECEIVED] },
  { key: 'beforeSeq', column: 'seq', op: '<', of: (r) => r.seq },
  { key: 'afterSeq', column: 'seq', op: '>', of: (r) => r.seq },
  { key: 'maxSeq', column: 'seq', op: '<=', of: (r) => r.seq },
];

const compare: Record<Op, (a: Value, b: Value) => boolean> = {
  '=': (a, b) => a === b,
  '<>': (a, b) => a !== b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

/** A string field of a tail row's metadata JSON; parsed only by reads that filter on it. */
function metadataString(metadata: string, key: string): string | null {
  const v = (JSON.parse(metadata) as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : null;
}

export interface RowFilter {
  /** The SQL condition, `?` for each of `params`. */
  where: string;
  params: Value[];
  /** Whether a tail row matches: the same conditions as `where`. */
  matches(r: TailRow): boolean;
}

export function rowFilter(b: RowBounds): RowFilter {
  const { since, until } = isoBounds(b);
  return compile({ ...b, sinceIso: since, untilIso: until });
}

/** Issue processing's feed: error rows of identified owners ('' is no owner) with seq in (after, upTo]. */
export function errorFilter(after: number, upTo: number): RowFilter {
  return compile({ notUserId: '', type: 'error', afterSeq: after, maxSeq: upTo });
}

function compile(values: Partial<Record<Key, Value>>): RowFilter {
  const active: [Condition, Value][] = [];
  for (const c of CONDITIONS) {
    const v = values[c.key];
    if (v !== undefined) active.push([c, v]);
  }
  return {
    where: active.map(([c]) => `${c.column} ${c.op} ?`).join(' AND '),
    params: active.map(([, v]) => v),
    matches: (r) => {
      for (const [c, v] of active) {
        const own = c.of(r);
        if (own === null || own === undefined || !compare[c.op](own, v)) return false;
      }
      return true;
    },
  };
}
