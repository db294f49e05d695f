// The Sentry protocol layer: pure functions the `/api/<project>/envelope/` and `/store/` endpoints
// call (docs/sentry.md). No runtime-specific imports: web standards only.
export { SentryProtocolError } from './error.ts';
export { parseEnvelope, jsonObject, MAX_ENVELOPE_ITEMS, type Envelope, type EnvelopeItem, type EnvelopeItemHeader } from './envelope.ts';
export { sentryAuth, parseAuthHeader, parseDsn, type SentryAuth, type Dsn } from './auth.ts';
export { sentryEventToRaw, userReportToRaw, MAX_FRAMES, type SentryFrame } from './map.ts';
export { sentryEventId, isoTimestamp } from './fields.ts';
export { envelopeToEvents, storeBodyToEvents, sentryAnswer, MAPPED_ITEM_TYPES, type SentryIngest } from './ingest.ts';
