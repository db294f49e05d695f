// EventFilter (types.ts) applied by the stores: as a predicate over events (memory) and as time
// bounds a database compares with its received_at column (sqlite, PostgreSQL).
import type { StoredEvent } from '../event.ts';
import type { EventFilter } from './types.ts';

/**
 * A predicate for one filter. Events of a batch share one receivedAt string, so its parse is
 * cached: one Date.parse per batch rather than per event.
 */
export function eventMatcher(f: EventFilter): (e: StoredEvent) => boolean {
  const timed = f.since !== undefined || f.until !== undefined;
  const since = f.since ?? -Infinity, until = f.until ?? Infinity;
  let iso = '', ms = NaN;
  return (e) => {
    if (e.user_id !== f.userId) return false;
    if (f.type !== undefined && e.type !== f.type) return false;
    if (f.version !== undefined && e.deployVersion !== f.version) return false;
    if (f.projectId !== undefined && e.projectId !== f.projectId) return false;
    if (f.environment !== undefined && e.environment !== f.environment) return false;
    if (!timed) return true;
    if (e.receivedAt !== iso) ms = Date.parse((iso = e.receivedAt));
    return ms >= since && ms < until;
  };
}

// Receive times are written as ISO strings of years 0001–9999, which compare as text (sqlite) and
// which PostgreSQL reads as timestamptz. Bounds outside those years are clamped, or dropped where
// they exclude nothing.
const MIN_MS = -62135596800000; // 0001-01-01T00:00:00.000Z
const MAX_MS = 253402300799999; // 9999-12-31T23:59:59.999Z

/**
 * The filter's time bounds as ISO strings for `received_at >= since` and `received_at < until`;
 * an absent bound is undefined. Receive times are whole ms, so a fractional bound rounds up.
 */
export function isoBounds(f: Pick<EventFilter, 'since' | 'until'>): { since?: string; until?: string } {
  const out: { since?: string; until?: string } = {};
  if (f.since !== undefined && f.since > MIN_MS) out.since = iso(f.since);
  if (f.until !== undefined && f.until <= MAX_MS) out.until = iso(f.until);
  return out;
}

const iso = (ms: number) => new Date(Math.min(MAX_MS, Math.max(MIN_MS, Math.ceil(ms)))).toISOString();
