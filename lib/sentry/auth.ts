// Which project key a Sentry SDK request carries (docs/sentry.md#authentication).
import { SentryProtocolError } from './error.ts';

export interface SentryAuth {
  /** The DSN's public key; the endpoint looks the project up by it. */
  publicKey: string;
  /** `sentry_client` (e.g. `sentry.javascript.browser/11.12.0`) when the request names one. */
  client: string | null;
}

export interface Dsn {
  publicKey: string;
  projectId: string;
}

// What Sentry's own SDKs accept as a key in a DSN (word characters only): a key that cannot be
// written in a DSN cannot be a project's key either.
const KEY = /^\w{1,128}$/;

const unauthorized = (code: string, message: string) => new SentryProtocolError(401, code, message);

/**
 * The public key of a request to `/api/<projectId>/envelope/` or `/store/`, from every place a
 * Sentry SDK may put it: the `X-Sentry-Auth` header or an `Authorization: Sentry …` header
 * (`Sentry sentry_version=7, sentry_key=…, sentry_client=…`), the `sentry_key` query parameter
 * (what the JavaScript SDKs send), and the `dsn` of the envelope header (sent through a tunnel).
 * Places that disagree, a malformed value, or a dsn naming another project are 401
 * `invalid_sentry_auth`; no key anywhere is 401 `missing_sentry_key`. Whether the key belongs to
 * the project is the caller's question.
 */
export function sentryAuth(
  request: { url: string; headers: Headers },
  projectId: string,
  envelopeHeader?: Record<string, unknown>,
): SentryAuth {
  const keys: string[] = [];
  let client: string | null = null;

  for (const name of ['x-sentry-auth', 'authorization']) {
    const value = request.headers.get(name);
    // Authorization may carry another scheme (a bearer token for Watchtower itself): not ours.
    if (value === null || (name === 'authorization' && !/^sentry\s/i.test(value))) continue;
    const fields = parseAuthHeader(value);
    if (!fields?.sentry_key) throw unauthorized('invalid_sentry_auth', `The ${name} header holds no sentry_key`);
    keys.push(fields.sentry_key);
    client ??= fields.sentry_client ?? null;
  }

  const query = new URL(request.url).searchParams;
  const queryKey = query.get('sentry_key');
  if (queryKey !== null) {
    keys.push(queryKey);
    client ??= query.get('sentry_client');
  }

  const dsnText = envelopeHeader?.dsn;
  if (dsnText !== undefined && dsnText !== null) {
    const dsn = typeof dsnText === 'string' ? parseDsn(dsnText) : null;
    if (!dsn) throw unauthorized('invalid_sentry_auth', 'The envelope header\'s "dsn" is not a DSN');
    if (dsn.projectId !== projectId) {
      throw unauthorized('invalid_sentry_auth', `The envelope's dsn names project ${dsn.projectId}, not ${projectId}`);
    }
    keys.push(dsn.publicKey);
  }

  if (keys.length === 0) {
    throw unauthorized('missing_sentry_key', 'No Sentry key: send sentry_key in the query string or the X-Sentry-Auth header');
  }
  if (keys.some((k) => k !== keys[0])) throw unauthorized('invalid_sentry_auth', 'The request names more than one Sentry key');
  if (!KEY.test(keys[0])) throw unauthorized('invalid_sentry_auth', 'The Sentry key is malformed');
  return { publicKey: keys[0], client: client ? client.slice(0, 256) : null };
}

/** `Sentry a=1, b="2"` → `{ a: "1", b: "2" }`; null when it is not a Sentry auth header. */
export function parseAuthHeader(value: string): Record<string, string> | null {
  const m = /^\s*sentry\s+(.*)$/is.exec(value);
  if (!m) return null;
  const fields: Record<string, string> = {};
  for (const part of m[1].split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!Object.hasOwn(fields, name)) fields[name] = part.slice(eq + 1).trim().replace(/^"(.*)"$/s, '$1');
  }
  return fields;
}

/**
 * `http(s)://<key>[:<secret>]@<host>[/<path>]/<projectId>` → key and project id, or null. The
 * project id is the last path segment, digits only, as the SDKs read it.
 */
export function parseDsn(text: string): Dsn | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const projectId = url.pathname.split('/').filter(Boolean).pop() ?? '';
  if (!KEY.test(url.username) || !/^\d{1,20}$/.test(projectId)) return null;
  return { publicKey: url.username, projectId };
}
