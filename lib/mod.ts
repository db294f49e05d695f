// Public API of the package root (`watchtower`): the handler, configuration, the memory store and
// the pure functions. The persisted stores and the node:http adapter have entry points of their own
// (`watchtower/sqlite`, `watchtower/postgres`, `watchtower/node`), so importing the root never
// loads postgres.js, sql.js or worker_threads.
export { createHandler, type FetchHandler, type HandlerDeps } from './handler.ts';
export { loadConfig, ConfigError, type Config } from './config.ts';
export { loadAlertConfig, type AlertConfig } from './alerts/config.ts';
export type { Monitor, MonitorOptions } from './monitor.ts';
export type { Mailer, MailMessage } from './alerts/mailer.ts';
export { verifySignature, SIGNATURE_HEADER, DELIVERY_HEADER } from './alerts/webhook.ts';
export { groupEvent, type Grouping } from './issues/fingerprint.ts';
export type { Issue, IssueStatus } from './issues/state.ts';
export { createAuthenticator, type Authenticator, type Identity } from './auth.ts';
export { createHub, type Hub } from './hub.ts';
export { createMemoryStore } from './store/memory.ts';
export { createMemoryRecords } from './records/memory.ts';
export { RecordConflictError, type RecordStore, type StoredRecord } from './records/types.ts';
export { DEFAULT_RATE_LIMIT_PER_MINUTE, type Project } from './projects.ts';
export type { Store, EventQuery, EventFilter, EventPage, ExportQuery, AppUser, UserSync, StoreHealth } from './store/types.ts';
export { normalise, uuidv7, KNOWN_EVENT_TYPES, type StoredEvent, type RawEvent } from './event.ts';
export { validateEvents, batchItems, EventEnvelope, MAX_BATCH } from './schema.ts';
export { resolveOwner } from './owner.ts';
export { computeStats, percentile, resolveRange, rangeProblem, MAX_SERIES_BUCKETS, type Stats, type StatsRange, type LatencySummary } from './stats.ts';
export { StoreUnavailableError, InvalidCursorError } from './store/types.ts';
export { computeInsights, fingerprint, type Insights } from './insights.ts';
export { parseDeveloperQuery, evaluateQuery, type DeveloperQuery } from './query.ts';
export { createRateLimiter, type RateLimiter } from './ratelimit.ts';
export { HttpError, JsonReply, toResponse } from './http.ts';
export type { ServeInfo } from './context.ts';
export type { FileAccess, FileStat } from './static.ts';
export type { RateLimitOptions } from './ratelimit.ts';
export type { AuthOptions } from './auth.ts';
export type { HubOptions } from './hub.ts';
export type { SqliteStoreOptions } from './store/sqlite/store.ts';
export type { PostgresStoreOptions } from './store/postgres/store.ts';
export type { FileRecordsOptions } from './records/file.ts';
export type { PostgresRecordsOptions } from './records/postgres.ts';
