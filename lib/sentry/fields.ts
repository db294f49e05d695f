// The fields every Sentry payload shares, read the same way by the event, transaction and
// breadcrumb mappings: ids, timestamps and page URLs.
import { campaignQuery } from '../event-fields.ts';
import { isTimestamp } from '../schema.ts';

/**
 * The page or request URL without query string and fragment: they often carry tokens or personal
 * data, and Watchtower's own SDK strips them too (README, "Instrument your app"). An event's own
 * page URL (`campaign`) keeps its `utm_*` parameters, as the SDK does, so that ingest reads its
 * campaign.
 */
export function pageUrl(value: unknown, campaign = false): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const base = value.replace(/[?#].*/s, '');
  return (campaign ? base + campaignQuery(value.slice(0, 8192)) : base).slice(0, 2048) || undefined;
}

/**
 * Sentry event ids are 32 hex digits; a dashed UUID is the same id, as Sentry reads it. Other
 * strings are kept up to 100 characters, leaving room for the user-report suffix within the
 * 128 an event id may have.
 */
export function sentryEventId(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > 100) return undefined;
  return /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(value) ? value.replace(/-/g, '').toLowerCase() : value;
}

/**
 * Sentry timestamps: seconds since the epoch (a float) or an ISO 8601 string, read as UTC when it
 * has no offset. Undefined when unusable, so the server's time is used.
 */
export function isoTimestamp(value: unknown): string | undefined {
  let ms: number;
  if (typeof value === 'number') ms = value * 1000;
  else if (typeof value === 'string' && value.length <= 64) {
    ms = Date.parse(/T\d\d:\d\d(?::\d\d(?:\.\d+)?)?$/.test(value) ? value + 'Z' : value);
  } else return undefined;
  // Past ±8.64e15 ms a Date is invalid and toISOString would throw; past the year 9999 it writes
  // a six-digit year, which validation rejects (and the whole event with it).
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return undefined;
  const iso = new Date(ms).toISOString();
  return isTimestamp(iso) ? iso : undefined;
}
