// SQL helpers shared by every module of the PostgreSQL store: the array literal bound as one
// parameter, the NUL mapping of columns, the rows read back, and the guard that turns connection
// failures and hung operations into StoreUnavailableError.
import type { StoredEvent } from '../../event.ts';
import { environmentKey } from '../../environment-scopes.ts';
import { withinDepth } from '../../shape.ts';
import { StoreUnavailableError } from '../types.ts';

/**
 * A PostgreSQL array literal, sent as one bound text parameter and cast in SQL (::text[], ::float8[]).
 * Elements are always double-quoted with \\ and " escaped, so no value can change the array's shape.
 */
export function pgArray(values: readonly (string | number | null)[]): string {
  // Joined rather than appended to: `+=` makes a rope of small strings that the driver flattens
  // again to measure and send (three times the time and garbage of one join, per batch column).
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    parts[i] = v === null ? 'NULL' : typeof v === 'number' ? String(v) : '"' + (ESCAPED.test(v) ? v.replace(ESCAPED_ALL, '\\$&') : v) + '"';
  }
  return '{' + parts.join(',') + '}';
}
const ESCAPED = /[\\"]/;
const ESCAPED_ALL = /[\\"]/g;

// Failures that mean "the database cannot be reached right now" rather than a bug: client-side
// connection errors, SQLSTATE class 08 (connection exception), 57P01–57P03 (terminated, crash,
// starting up), 53300 (too many connections).
const UNAVAILABLE_CODES = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', '53300',
]);

export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = String((err as { code?: unknown }).code ?? '');
  return UNAVAILABLE_CODES.has(code) || code.startsWith('08');
}

// PostgreSQL text cannot hold NUL; the columns (not the event's text, where JSON escapes it as
// \u0000) carry U+FFFD instead, and filters are mapped the same way so they still match.
export const col = (s: string | null): string | null => (s !== null && s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s);

/** A row read back: the event's JSON text, as it was stored. */
export interface Row { event: string }
/** A row read for paging: seq is a bigint, which postgres.js hands over as a string. */
export interface SeqRow extends Row { seq: string }
/**
 * The event of a row. One stored before ingest bounded the shape of events may nest deeper than
 * MAX_DEPTH: it is read cut at that depth (lib/shape.ts), as every store reads it, and so that
 * serialising it cannot overflow the stack (JSON.stringify recurses: from ~10,000 levels on Node).
 */
export const toEvent = (r: Row): StoredEvent => withinDepth(JSON.parse(r.event) as StoredEvent);

/**
 * The rollup scope of a project's statistics ('' is all the user's events), or of an environment's
 * share of them: environmentKey's separator, a control character, occurs in neither an environment
 * name (environmentOf) nor a generated project id, so no two of these scopes are the same text.
 */
export const scopeOf = (projectId: string | undefined, environment?: string) =>
  (projectId === undefined ? '' : '#' + col(projectId)) + (environment === undefined ? '' : environmentKey(environment));

/** The scopes an owner's event counts in: the owner's, its project's, and its environment's share of both. */
export const scopesOf = (projectId: string | undefined, environment: string | undefined) => {
  const scopes = projectId === undefined ? [''] : ['', scopeOf(projectId)];
  return environment === undefined ? scopes : [...scopes, ...scopes.map((s) => s + environmentKey(environment))];
};

/** Runs a database operation under a name (see guardWith). */
export type Guard = <T>(what: string, op: () => Promise<T>) => Promise<T>;

/**
 * Runs a database operation; connection failures become StoreUnavailableError (→ 503). So does an
 * operation still unanswered after operationTimeoutMs: a query can hang on a connection whose
 * server went away without a reset, and the request must not hang with it. (An insert answered
 * 503 that commits later is harmless: the client retries, and inserts are idempotent by id.)
 */
export function guardWith(operationTimeoutMs: number): Guard {
  return async <T>(what: string, op: () => Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        op(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new StoreUnavailableError(`${what}: no answer from the database in ${operationTimeoutMs} ms`)), operationTimeoutMs);
        }),
      ]);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      if (isUnavailable(err)) {
        throw new StoreUnavailableError(undefined, { cause: err });
      }
      throw err instanceof Error ? Object.assign(err, { message: `${what}: ${err.message}` }) : err;
    } finally {
      clearTimeout(timer);
    }
  };
}
