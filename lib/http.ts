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

/**
 * Serialised bodies of the Responses json() built, so a server adapter can write the string
 * directly instead of reading the body back through a stream (the fast path of the node adapter).
 */
export const rawBodies = new WeakMap<Response, string>();

export const CORS_HEADERS: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Retry-After, Content-Length',
};

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(body);
  const response = new Response(text, {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...CORS_HEADERS, ...headers },
  });
  rawBodies.set(response, text);
  return response;
}

export function toErrorResponse(err: unknown, log: (msg: string) => void): Response {
  if (err instanceof HttpError) return json({ error: err.message, code: err.code }, err.status, err.headers);
  // A bug: log it with its stack, answer without one.
  log(`internal error: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  return json({ error: 'Internal Server Error', code: 'internal' }, 500);
}
