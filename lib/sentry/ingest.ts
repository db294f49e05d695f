// What a Sentry envelope or /store/ body yields for ingestion, and the answer SDKs expect (docs/sentry.md).
import { isPlainObject, type RawEvent } from '../event.ts';
import { json, type JsonReply } from '../http.ts';
import { jsonObject, type Envelope } from './envelope.ts';
import { SentryProtocolError } from './error.ts';
import { sentryEventId } from './fields.ts';
import { sentryEventToRaw, userReportToRaw } from './map.ts';
import { isTransaction, spansToRaw, transactionToRaw } from './transaction.ts';

export interface SentryIngest {
  /** What the answer names: the envelope's `event_id` (as events store it), else the first event's id; null when neither. */
  id: string | null;
  /** The SDK's clock when it sent the envelope (`sent_at`), ms since the epoch, for clock correction. */
  sentAt: number | null;
  /** Raw events for the service's validation and normalise(), in item order. */
  events: RawEvent[];
  /** Items of a mapped type whose payload was unusable (not a JSON object; a user report without event id). */
  rejected: number;
  /** Items not stored, by item type (sessions, client reports, transactions, replays, attachments…). */
  skipped: Record<string, number>;
}

/**
 * Item types that become Watchtower events; every other type is counted in `skipped`, and so are a
 * transaction that is neither a page load nor a navigation and spans without a page load or a web
 * vital.
 */
export const MAPPED_ITEM_TYPES = ['event', 'feedback', 'user_report', 'transaction', 'span'] as const;

/** A parsed envelope → events to ingest and what was left out. Never throws. */
export function envelopeToEvents(envelope: Envelope): SentryIngest {
  const headerId = envelope.header.event_id;
  const events: RawEvent[] = [];
  const skipped = new Map<string, number>();
  const skip = (type: string) => skipped.set(type, (skipped.get(type) ?? 0) + 1);
  let rejected = 0;
  for (const { header, payload } of envelope.items) {
    const type = header.type.slice(0, 64);
    if (!(MAPPED_ITEM_TYPES as readonly string[]).includes(type)) {
      skip(type);
      continue;
    }
    const body = jsonObject(payload);
    if (type === 'span') {
      const mapped = body && body.version === 2 ? spansToRaw(body) : [];
      if (mapped.length) events.push(...mapped);
      else skip('span');
      continue;
    }
    if (body && (type === 'transaction' || isTransaction(body))) {
      const mapped = transactionToRaw(body, headerId);
      if (mapped.length) events.push(...mapped);
      else skip('transaction');
      continue;
    }
    const raw = !body ? null : type === 'user_report' ? userReportToRaw(body, headerId) : sentryEventToRaw(body, type, headerId);
    if (raw) events.push(raw);
    else rejected++;
  }
  return {
    id: sentryEventId(headerId) ?? (events[0]?.id as string | undefined) ?? null,
    sentAt: sentAt(envelope.header.sent_at),
    events,
    rejected,
    skipped: Object.fromEntries(skipped),
  };
}

/**
 * A legacy `POST /api/<project>/store/` body, one Sentry event as JSON → the same result as an
 * envelope holding it. Not JSON is 400 `invalid_json`; not an object is 400 `invalid_body`.
 */
export function storeBodyToEvents(bytes: Uint8Array): SentryIngest {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new SentryProtocolError(400, 'invalid_json', 'Invalid JSON');
  }
  if (!isPlainObject(body)) throw new SentryProtocolError(400, 'invalid_body', 'A store body must be one Sentry event object');
  if (isTransaction(body)) {
    const events = transactionToRaw(body);
    return { id: sentryEventId(body.event_id) ?? null, sentAt: null, events, rejected: 0, skipped: events.length ? {} : { transaction: 1 } };
  }
  const raw = sentryEventToRaw(body);
  return { id: raw.id as string, sentAt: null, events: [raw], rejected: 0, skipped: {} };
}

/**
 * The answer Sentry SDKs expect once the events are stored: 200 `{ "id": "<event_id>" }` (`{}`
 * when the envelope held no event, sessions for example), without `Retry-After`: the SDKs read that
 * header on every answer and would pause sending.
 */
export function sentryAnswer(ingest: Pick<SentryIngest, 'id'>): JsonReply {
  return json(ingest.id ? { id: ingest.id } : {});
}

function sentAt(value: unknown): number | null {
  if (typeof value !== 'string' || value.length > 40) return null;
  const t = Date.parse(value);
  return Number.isFinite(t) ? t : null;
}
