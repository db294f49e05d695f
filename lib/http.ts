// Responses and errors. Every error becomes a Response in toErrorResponse, nowhere else.

/** An error with an HTTP status and a stable code; its message is safe to show to clients. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const unauthorized = () => new HttpError(401, 'unauthorized', 'Unauthorized');

export const CORS_HEADERS: Record<string, string> = { 'access-control-allow-origin': '*' };
// Content-Length and Content-Type are CORS-safelisted; Retry-After is not, so answers that carry it
// expose it. (Every header costs: on Deno, one beyond Content-Type made a Response ~4 µs dearer.)
const EXPOSE_RETRY_AFTER = { 'access-control-expose-headers': 'Retry-After' };

/** What a server adapter may write directly for a Response json() built: no stream, no Headers. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// Own symbol-keyed fields rather than a WeakMap beside the object: a WeakMap entry per response
// is more work for the garbage collector than the response itself.
const RAW = Symbol('raw');
const LAZY = Symbol('real');
type Lazy = Response & { [RAW]: RawResponse; [LAZY]?: Response };

/** The raw parts of a Response json() built, for an adapter to write directly; undefined for any other Response. */
export const rawResponse = (response: Response): RawResponse | undefined => (response as Partial<Lazy>)[RAW];

const real = (self: Lazy): Response => {
  const raw = self[RAW];
  return (self[LAZY] ??= new Response(raw.body, { status: raw.status, headers: raw.headers }));
};
/**
 * A Response (instanceof included) that materialises the real one only when it is read: building
 * a real Response (its body stream) measured ~19% of a small request on Node, and the node adapter
 * writes the raw parts directly. Servers that need a real Response get one from toWebResponse.
 */
const LightResponse = function (this: Lazy, raw: RawResponse) {
  this[RAW] = raw;
} as unknown as new (raw: RawResponse) => Response;
const lightProto: Record<string, unknown> = {};
for (const key of ['headers', 'body', 'bodyUsed', 'ok', 'redirected', 'statusText', 'type', 'url']) {
  Object.defineProperty(lightProto, key, { get(this: Lazy) { return (real(this) as unknown as Record<string, unknown>)[key]; } });
}
Object.defineProperty(lightProto, 'status', { get(this: Lazy) { return this[RAW].status; } });
for (const key of ['arrayBuffer', 'blob', 'bytes', 'clone', 'formData', 'json', 'text']) {
  Object.defineProperty(lightProto, key, { value(this: Lazy) { return (real(this) as unknown as Record<string, () => unknown>)[key](); } });
}
Object.setPrototypeOf(lightProto, Response.prototype);
LightResponse.prototype = lightProto as unknown as Response;

export const json = (body: unknown, status = 200, headers?: Record<string, string>): Response => jsonText(JSON.stringify(body), status, headers);

/** A JSON answer whose text the caller already serialised. */
export function jsonText(text: string, status = 200, headers?: Record<string, string>): Response {
  const all = headers ? { ...JSON_HEADERS, ...headers, ...('retry-after' in headers ? EXPOSE_RETRY_AFTER : undefined) } : JSON_HEADERS;
  return new LightResponse({ status, headers: all, body: text });
}
const JSON_HEADERS: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', ...CORS_HEADERS };

/** The real Response behind a lightweight one (any other Response is returned as it is). */
export function toWebResponse(response: Response): Response {
  return response instanceof LightResponse ? real(response as Lazy) : response;
}

export function toErrorResponse(err: unknown, log: (msg: string) => void): Response {
  if (err instanceof HttpError) return json({ error: err.message, code: err.code }, err.status, err.headers);
  if (err instanceof Error && err.name === 'StoreUnavailableError') {
    log(`storage unavailable: ${err.message}`);
    return json({ error: err.message, code: 'storage_unavailable' }, 503, { 'retry-after': '2' });
  }
  // A bug: log it with its stack, answer without one.
  log(`internal error: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  return json({ error: 'Internal Server Error', code: 'internal' }, 500);
}
