// Retry policy: which answers are worth retrying, and how long to wait before the next try.

/** 0 stands for a network error (fetch rejected). Other 4xx answers will not change on retry. */
export const retryable = (status: number): boolean => status === 0 || status === 408 || status === 429 || status >= 500;

/** Retry-After as delta-seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now: number): number | null {
  if (!value || !value.trim()) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

export const BACKOFF_BASE_MS = 1000;
export const BACKOFF_CAP_MS = 60_000;
/** A server asking for longer than this is still retried then, so a page never gives up for good. */
export const RETRY_AFTER_CAP_MS = 600_000;

/**
 * Delay before retry number `attempt` (0-based). Exponential with "equal jitter": half the window
 * fixed, half random, so a fleet of clients that failed together does not come back together, and
 * none hammers the server sooner than half the window. The server's Retry-After wins when given.
 */
export function backoffDelay(attempt: number, random: number, retryAfter: number | null): number {
  if (retryAfter !== null) return Math.min(retryAfter, RETRY_AFTER_CAP_MS);
  const window = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  return Math.round(window / 2 + (random * window) / 2);
}
