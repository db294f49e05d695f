// Defaults of the embedded store's limits, in one place: the store's options fall back to them,
// and the server's configuration uses them where its environment does not say otherwise.
export const DEFAULT_RETENTION_DAYS = 90;
export const DEFAULT_MAX_EVENTS = 50_000_000;
/** The budget of the cache of open sealed segments (SERVICE_CACHE_MB). */
export const DEFAULT_CACHE_MB = 128;
/** How long an event id is remembered, so that a retry is stored once (SERVICE_DEDUPE_DAYS). */
export const DEFAULT_DEDUPE_DAYS = 7;
