// The paging cursor of GET /api/events (docs/api.md#list), the same for every store: a position in
// the store's insertion order (its sequence number: memory counts inserts, sqlite and PostgreSQL
// have a `seq` column), never an event's own fields. Receive times repeat (a batch shares one) and
// ids are chosen by clients, so neither is a total order; a sequence number is total, and stays
// meaningful while events are added or pruned ("before 1234" is still "before 1234").
//
// Bytes: a version byte (1), then the sequence number as 8 bytes big-endian; base64url without
// padding, so 12 URL-safe characters. The version byte lets a later store put more in a cursor
// (a segment, say) while the cursors it handed out keep working.
import { InvalidCursorError } from './types.ts';

const VERSION = 1;
const LENGTH = 12;
const SHAPE = /^[A-Za-z0-9_-]{12}$/;

/** Events per batch of Store.export unless the caller asks for fewer. */
export const EXPORT_BATCH = 1000;

/** The cursor of a position: the next page holds the events stored before `seq`. */
export function encodeCursor(seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`not a sequence number: ${seq}`);
  const bytes = new Uint8Array(9);
  bytes[0] = VERSION;
  new DataView(bytes.buffer).setBigUint64(1, BigInt(seq));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_');
}

/** The sequence number of a cursor; InvalidCursorError for anything encodeCursor did not write. */
export function decodeCursor(cursor: string): number {
  // 12 characters are exactly 9 bytes: no padding bits, so every accepted text is canonical.
  if (typeof cursor !== 'string' || cursor.length !== LENGTH || !SHAPE.test(cursor)) throw new InvalidCursorError();
  const binary = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  if (bytes[0] !== VERSION) throw new InvalidCursorError();
  const seq = new DataView(bytes.buffer).getBigUint64(1);
  if (seq > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidCursorError();
  return Number(seq);
}
