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
/** On every answer (README "Security headers"): browsers must never guess another type than the one sent. */
export const NOSNIFF = { 'x-content-type-options': 'nosniff' };
const JSON_HEADERS: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', ...CORS_HEADERS, ...NOSNIFF };

/**
 * A JSON answer as plain parts. Routes return these rather than Responses, and the handler makes
 * the Response at the end with the server's `respond` (ServeInfo) or `toResponse`: on Node, building
 * a web Response (its body stream) measured ~19% of a small request, so the node adapter passes a
 * `respond` whose Responses it can write without that.
 */
export class JsonReply {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body: string,
  ) {}
}

export const json = (body: unknown, status = 200, headers?: Record<string, string>): JsonReply => jsonText(JSON.stringify(body), status, headers);

/** A JSON answer whose text the caller already serialised. */
export function jsonText(text: string, status = 200, headers?: Record<string, string>): JsonReply {
  if (!headers) return new JsonReply(status, JSON_HEADERS, text);
  const expose = 'retry-after' in headers && !('access-control-expose-headers' in headers) ? EXPOSE_RETRY_AFTER : undefined;
  return new JsonReply(status, { ...JSON_HEADERS, ...headers, ...expose }, text);
}

/** The web Response of a JSON answer. */
export const toResponse = (reply: JsonReply): Response => new Response(reply.body, { status: reply.status, headers: reply.headers });

export function toErrorResponse(err: unknown, log: (msg: string) => void, respond: (reply: JsonReply) => Response = toResponse): Response {
  if (err instanceof HttpError) return respond(json({ error: err.message, code: err.code }, err.status, err.headers));
  if (err instanceof Error && err.name === 'StoreUnavailableError') {
    log(`storage unavailable: ${err.message}`);
    return respond(json({ error: err.message, code: 'storage_unavailable' }, 503, { 'retry-after': '2' }));
  }
  // A bug: log it with its stack, answer without one.
  log(`internal error: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  return respond(json({ error: 'Internal Server Error', code: 'internal' }, 500));
}
