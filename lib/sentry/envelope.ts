// Sentry envelope framing (docs/sentry.md#envelopes): bytes → header + items, nothing interpreted yet.
import { isPlainObject } from '../event.ts';
import { MAX_BATCH } from '../schema.ts';
import { SentryProtocolError } from './error.ts';

/** Items one envelope may hold: the same bound as the events of one POST /api/events. */
export const MAX_ENVELOPE_ITEMS = MAX_BATCH;

export interface EnvelopeItemHeader {
  [field: string]: unknown;
  type: string;
  /** Payload size in bytes; without it the payload runs to the next newline. */
  length?: number;
}

export interface EnvelopeItem {
  header: EnvelopeItemHeader;
  /** A view into the envelope's bytes (no copy). */
  payload: Uint8Array;
}

export interface Envelope {
  header: Record<string, unknown>;
  items: EnvelopeItem[];
}

const NEWLINE = 10;
const decoder = new TextDecoder();

const invalid = (message: string) => new SentryProtocolError(400, 'invalid_envelope', message);

/** Where the line starting at `from` ends: its newline, or the end of the bytes. */
const lineEnd = (bytes: Uint8Array, from: number): number => {
  const i = bytes.indexOf(NEWLINE, from);
  return i < 0 ? bytes.length : i;
};

/** The bytes as a JSON object, or null for anything else (invalid JSON included). */
export function jsonObject(bytes: Uint8Array): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return isPlainObject(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * Splits an envelope into its header and items, as Sentry's own ingestion does: a JSON header line;
 * then per item a JSON header line with a `type`, and a payload of exactly `length` bytes followed
 * by a newline or the end, or, without `length`, the rest of the line. Works on bytes because
 * `length` counts bytes and attachments may be binary. Empty lines between items are tolerated.
 * Anything else is a SentryProtocolError (400 `invalid_envelope`; 413 past MAX_ENVELOPE_ITEMS).
 */
export function parseEnvelope(bytes: Uint8Array): Envelope {
  if (bytes.length === 0) throw invalid('Empty envelope');
  let end = lineEnd(bytes, 0);
  const header = jsonObject(bytes.subarray(0, end));
  if (!header) throw invalid('The envelope header (first line) is not a JSON object');

  const items: EnvelopeItem[] = [];
  let offset = end + 1;
  while (offset < bytes.length) {
    end = lineEnd(bytes, offset);
    if (end === offset) {
      offset++;
      continue;
    }
    const n = items.length + 1;
    if (n > MAX_ENVELOPE_ITEMS) {
      throw new SentryProtocolError(413, 'batch_too_large', `At most ${MAX_ENVELOPE_ITEMS} items per envelope`);
    }
    const itemHeader = jsonObject(bytes.subarray(offset, end));
    if (!itemHeader || typeof itemHeader.type !== 'string' || itemHeader.type === '') {
      throw invalid(`Item ${n}: its header is not a JSON object with a "type"`);
    }
    // A last item header may end the envelope without a newline: its payload is then empty.
    const start = Math.min(end + 1, bytes.length);
    const length = itemHeader.length;
    let payloadEnd: number;
    if (length === undefined || length === null) {
      payloadEnd = lineEnd(bytes, start);
    } else {
      if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
        throw invalid(`Item ${n}: "length" must be a whole number of bytes`);
      }
      payloadEnd = start + length;
      if (payloadEnd > bytes.length) {
        throw invalid(`Item ${n}: "length" is ${length} bytes but only ${bytes.length - start} follow`);
      }
      if (payloadEnd < bytes.length && bytes[payloadEnd] !== NEWLINE) {
        throw invalid(`Item ${n}: its ${length}-byte payload is not followed by a newline`);
      }
    }
    items.push({ header: itemHeader as EnvelopeItemHeader, payload: bytes.subarray(start, payloadEnd) });
    offset = payloadEnd + 1;
  }
  return { header, items };
}
