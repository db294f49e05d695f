// node:http ⇄ fetch handler. Thin, but built for speed the way @hono/node-server is: the web
// Request is only materialised when a handler touches what needs it, the body is read straight
// from the IncomingMessage, and JSON responses are written as strings, not streamed back.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { FAST_BODY } from '../body.ts';
import { HttpError, rawResponse } from '../http.ts';

type FetchLike = (request: Request, info?: { remoteAddr: { hostname?: string }; rawResponses?: boolean }) => Promise<Response>;

const INCOMING = Symbol('incoming');
const OUTGOING = Symbol('outgoing');
const URL_KEY = Symbol('url');
const HEADERS = Symbol('headers');
const REQUEST = Symbol('request');

interface LazyRequest {
  [INCOMING]: IncomingMessage;
  [OUTGOING]: ServerResponse;
  [URL_KEY]: string;
  [HEADERS]?: IncomingHeaders;
  [REQUEST]?: Request;
}

function headersOf(incoming: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].charCodeAt(0) !== 58 /* ':' pseudo-headers */) headers.append(raw[i], raw[i + 1]);
  return headers;
}

/**
 * Headers whose get/has read node's own parsed header object: building an undici Headers (one
 * append per header) measured ~10% of a small ingest request, and the handlers only ever call
 * get(). Anything else (iteration, getSetCookie, mutation) uses a real Headers built on first use.
 */
class IncomingHeaders {
  #incoming: IncomingMessage;
  #real?: Headers;
  constructor(incoming: IncomingMessage) {
    this.#incoming = incoming;
  }
  get(name: string): string | null {
    const value = this.#incoming.headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  }
  has(name: string): boolean {
    return this.#incoming.headers[name.toLowerCase()] !== undefined;
  }
  get real(): Headers {
    return (this.#real ??= headersOf(this.#incoming));
  }
}
for (const key of ['append', 'delete', 'set', 'forEach', 'entries', 'keys', 'values', 'getSetCookie', Symbol.iterator] as const) {
  Object.defineProperty(IncomingHeaders.prototype, key, {
    value(this: IncomingHeaders, ...args: unknown[]) {
      const real = this.real as unknown as Record<string | symbol, (...a: unknown[]) => unknown>;
      return real[key as string].apply(real, args);
    },
  });
}
Object.setPrototypeOf(IncomingHeaders.prototype, Headers.prototype);

function materialise(self: LazyRequest): Request {
  if (self[REQUEST]) return self[REQUEST];
  const incoming = self[INCOMING];
  const controller = new AbortController();
  self[OUTGOING].once('close', () => controller.abort());
  const method = incoming.method ?? 'GET';
  const init: RequestInit & { duplex?: 'half' } = { method, headers: lazyHeaders(self).real, signal: controller.signal };
  if (method !== 'GET' && method !== 'HEAD') {
    init.body = Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>;
    init.duplex = 'half';
  }
  return (self[REQUEST] = new Request(self[URL_KEY], init));
}

const lazyHeaders = (self: LazyRequest) => (self[HEADERS] ??= new IncomingHeaders(self[INCOMING]));

/** Reads a body within a limit. A class rather than closures: nothing is allocated per chunk. */
class BodyReader {
  chunks: Buffer[] = [];
  size = 0;
  constructor(
    readonly incoming: IncomingMessage,
    readonly limit: number,
    readonly resolve: (bytes: Uint8Array) => void,
    readonly reject: (err: unknown) => void,
  ) {
    this.onData = this.onData.bind(this);
    incoming.on('data', this.onData);
    incoming.once('end', () => resolve(this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size)));
    incoming.once('error', () => reject(new HttpError(400, 'unreadable_body', 'Request body could not be read')));
  }
  onData(chunk: Buffer) {
    this.size += chunk.length;
    if (this.size > this.limit) {
      // Stop reading: the rest of an oversized body is never buffered.
      this.incoming.off('data', this.onData);
      this.incoming.pause();
      this.reject(new HttpError(413, 'payload_too_large', `Request body exceeds ${this.limit} bytes`));
    } else this.chunks.push(chunk);
  }
}

function readIncoming(incoming: IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => void new BodyReader(incoming, limit, resolve, reject));
}

const requestPrototype: object = {
  get method() {
    return (this as unknown as LazyRequest)[INCOMING].method ?? 'GET';
  },
  get url() {
    return (this as unknown as LazyRequest)[URL_KEY];
  },
  get headers() {
    return lazyHeaders(this as unknown as LazyRequest) as unknown as Headers;
  },
  [FAST_BODY](this: LazyRequest, limit: number) {
    return readIncoming(this[INCOMING], limit);
  },
};
for (const key of ['body', 'bodyUsed', 'cache', 'credentials', 'destination', 'integrity', 'mode', 'redirect', 'referrer', 'referrerPolicy', 'signal', 'keepalive']) {
  Object.defineProperty(requestPrototype, key, {
    get(this: LazyRequest) {
      return (materialise(this) as unknown as Record<string, unknown>)[key];
    },
  });
}
for (const key of ['arrayBuffer', 'blob', 'clone', 'formData', 'json', 'text', 'bytes']) {
  Object.defineProperty(requestPrototype, key, {
    value(this: LazyRequest) {
      return (materialise(this) as unknown as Record<string, () => unknown>)[key]();
    },
  });
}
Object.setPrototypeOf(requestPrototype, Request.prototype);

export function toRequest(incoming: IncomingMessage, outgoing: ServerResponse, origin: string): Request {
  const self = Object.create(requestPrototype) as LazyRequest;
  self[INCOMING] = incoming;
  self[OUTGOING] = outgoing;
  self[URL_KEY] = origin + (incoming.url ?? '/');
  return self as unknown as Request;
}

export async function writeResponse(response: Response, outgoing: ServerResponse): Promise<void> {
  const raw = rawResponse(response);
  if (raw !== undefined) {
    // A flat [name, value, …] list: copying the header object to add content-length cost more.
    const headers: string[] = [];
    for (const name in raw.headers) headers.push(name, raw.headers[name]);
    headers.push('content-length', String(Buffer.byteLength(raw.body)));
    // An oversized body was left unread: close the connection rather than drain it.
    if (raw.status === 413) headers.push('connection', 'close');
    outgoing.writeHead(raw.status, headers);
    outgoing.end(raw.body);
    return;
  }
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key !== 'set-cookie') headers[key] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers['set-cookie'] = cookies;
  if (!response.body) {
    outgoing.writeHead(response.status, headers);
    outgoing.end();
    return;
  }
  outgoing.writeHead(response.status, headers);
  outgoing.flushHeaders();
  const reader = response.body.getReader();
  let finished = false;
  // The client went away: cancel the body, which unsubscribes a live stream.
  outgoing.once('close', () => {
    if (!finished) reader.cancel().catch(() => {});
  });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!outgoing.write(value)) {
        await new Promise<void>((resolve) => {
          const go = () => {
            outgoing.off('drain', go);
            outgoing.off('close', go);
            resolve();
          };
          outgoing.on('drain', go);
          outgoing.on('close', go);
        });
        if (outgoing.destroyed) break;
      }
    }
  } catch {
    // The body errored (a dropped slow subscriber): end what was sent.
  } finally {
    finished = true;
    outgoing.end();
  }
}

/** A node:http request listener serving a fetch handler. */
export function toNodeListener(fetch: FetchLike, options: { origin?: string; onError?: (err: unknown) => void } = {}) {
  const onError = options.onError ?? ((err) => console.error(err));
  return (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const origin = options.origin ?? `http://${incoming.headers.host ?? 'localhost'}`;
    fetch(toRequest(incoming, outgoing, origin), { remoteAddr: { hostname: incoming.socket.remoteAddress }, rawResponses: true })
      .then((response) => writeResponse(response, outgoing))
      .catch((err) => {
        onError(err);
        if (!outgoing.headersSent) outgoing.writeHead(500, { 'content-type': 'application/json' });
        outgoing.end('{"error":"Internal Server Error","code":"internal"}');
      });
  };
}
