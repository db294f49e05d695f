// Defaults of the embedded store's limits, in one place: the store's options fall back to them,
// and the server's configuration uses them where its environment does not say otherwise.
export const DEFAULT_RETENTION_DAYS = 90;
export const DEFAULT_MAX_EVENTS = 50_000_000;
/**
 * The budget of the cache of open sealed segments (SERVICE_CACHE_MB). An open segment of 50,000
 * events takes ~30–35 MiB of sql.js memory, and the process's resident memory grew by ~1.7× the
 * cache's bytes (sql.js keeps the heap it grew to): 64 MiB keeps two open, and a store holding
 * 20M events at 495–551 MiB after its load (bench:history; 607 MiB with 128). Reopening a segment
 * that was closed costs a read ~250–350 ms.
 */
export const DEFAULT_CACHE_MB = 64;
/** How long an event id is remembered, so that a retry is stored once (SERVICE_DEDUPE_DAYS). */
export const DEFAULT_DEDUPE_DAYS = 7;
