// node:http ⇄ fetch handler. Thin, but built for speed the way @hono/node-server is: the web
// Request is only materialised when a handler touches what needs it, the body is read straight
// from the IncomingMessage, and JSON answers are written as strings, not streamed back.
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { FAST_BODY } from '../body.ts';
import type { ServeInfo } from '../context.ts';
import { HttpError, toErrorResponse, type JsonReply } from '../http.ts';
import type { FileAccess } from '../static.ts';

/** The runtime's host-name lookup, for createHandler's `monitoring.resolveHost` (webhook destinations). */
export { resolveHost } from './resolve.ts';

type FetchLike = (request: Request, info?: ServeInfo) => Promise<Response | null>;

/** Served files read with node:fs (for createHandler's `files`). */
export const nodeFiles: FileAccess = {
  async stat(path) {
    const info = await stat(path).catch(() => null);
    return info && { isFile: info.isFile(), isDirectory: info.isDirectory(), size: info.size, mtimeMs: info.mtimeMs };
  },
  readFile: (path) => readFile(path),
};

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

// A Host is valid when the URL parser accepts it and finds in it the very host name given, so no
// user info, path or bad port slips into the URL. A server is mostly reached under one name: the
// last valid Host is remembered, and the parser runs only when another arrives.
let lastValidHost = 'localhost';

function validHost(host: string): boolean {
  try {
    return new URL(`http://${host}/`).hostname === host.replace(/:\d+$/, '').toLowerCase();
  } catch {
    return false;
  }
}

/** The request's absolute URL; an HttpError 400 when the Host header or the target cannot make a valid one. */
export function requestUrl(incoming: IncomingMessage, origin?: string): string {
  const target = incoming.url ?? '/';
  if (target[0] !== '/') {
    // The absolute form a proxy may send; anything else (`OPTIONS *`) names no resource here.
    if (/^https?:\/\//i.test(target) && URL.canParse(target)) return new URL(target).href;
    throw new HttpError(400, 'invalid_target', 'Invalid request target');
  }
  if (origin !== undefined) return origin + target;
  const host = incoming.headers.host ?? 'localhost';
  if (host !== lastValidHost) {
    if (!validHost(host)) throw new HttpError(400, 'invalid_host', 'Invalid Host header');
    lastValidHost = host;
  }
  return `${(incoming.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${host}${target}`;
}

/** A lazy web Request over an IncomingMessage, for a URL from requestUrl. */
export function toRequest(incoming: IncomingMessage, outgoing: ServerResponse, url: string): Request {
  const self = Object.create(requestPrototype) as LazyRequest;
  self[INCOMING] = incoming;
  self[OUTGOING] = outgoing;
  self[URL_KEY] = url;
  return self as unknown as Request;
}

// Own symbol-keyed fields rather than a WeakMap beside the object: a WeakMap entry per response
// is more work for the garbage collector than the response itself.
const REPLY = Symbol('reply');
const REAL = Symbol('real');
type Light = Response & { [REPLY]: JsonReply; [REAL]?: Response };

const real = (self: Light): Response => {
  const reply = self[REPLY];
  return (self[REAL] ??= new Response(reply.body, { status: reply.status, headers: reply.headers }));
};
/**
 * A Response (instanceof included) that materialises the real one only when something reads it.
 * Building a web Response (its Headers and body stream) measured ~19% of a small request on Node,
 * and writeResponse writes a JSON answer's parts directly. The listener hands the handler
 * `respond: light` in ServeInfo, per request, rather than replacing the global Response while
 * serving as @hono/node-server does: an embedder's own code and any other server in the process
 * keep the real Response, and calling the handler directly gives real Responses.
 */
const LightResponse = function (this: Light, reply: JsonReply) {
  this[REPLY] = reply;
} as unknown as new (reply: JsonReply) => Response;
const lightProto: Record<string, unknown> = {};
for (const key of ['headers', 'body', 'bodyUsed', 'ok', 'redirected', 'statusText', 'type', 'url']) {
  Object.defineProperty(lightProto, key, { get(this: Light) { return (real(this) as unknown as Record<string, unknown>)[key]; } });
}
Object.defineProperty(lightProto, 'status', { get(this: Light) { return this[REPLY].status; } });
for (const key of ['arrayBuffer', 'blob', 'bytes', 'clone', 'formData', 'json', 'text']) {
  Object.defineProperty(lightProto, key, { value(this: Light) { return (real(this) as unknown as Record<string, () => unknown>)[key](); } });
}
Object.setPrototypeOf(lightProto, Response.prototype);
LightResponse.prototype = lightProto as unknown as Response;

const light = (reply: JsonReply): Response => new LightResponse(reply);

/**
 * How much of a refused body is read and thrown away after its 413. The client is usually still
 * sending when the refusal goes out, and closing a connection that has unread bytes makes the
 * kernel reset it, which also throws away the answer the client has not read yet: it would see a
 * network error instead of its 413. Reading the rest first is what nginx calls a lingering close.
 * Past this many bytes the connection is closed instead; the server's request timeout bounds a
 * slow sender.
 */
const DISCARD_BYTES = 8 * 1024 * 1024;

/** After a 413: reads and drops the rest of the body. True when the connection must close instead. */
function discardRest(incoming: IncomingMessage): boolean {
  if (incoming.complete) return false;
  if (incoming.destroyed || Number(incoming.headers['content-length']) > DISCARD_BYTES) return true;
  let left = DISCARD_BYTES;
  incoming.removeAllListeners('data');
  incoming.on('data', (chunk: Buffer) => {
    if ((left -= chunk.length) < 0) incoming.socket.destroy();
  });
  incoming.resume();
  return false;
}

export async function writeResponse(response: Response, outgoing: ServerResponse): Promise<void> {
  const close = response.status === 413 && discardRest(outgoing.req);
  const reply = (response as Partial<Light>)[REPLY];
  if (reply !== undefined && (response as Light)[REAL] === undefined) {
    // A flat [name, value, …] list: copying the header object to add content-length cost more.
    const headers: string[] = [];
    for (const name in reply.headers) headers.push(name, reply.headers[name]);
    headers.push('content-length', String(Buffer.byteLength(reply.body)));
    if (close) headers.push('connection', 'close');
    outgoing.writeHead(reply.status, headers);
    outgoing.end(reply.body);
    return;
  }
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, key) => {
    if (key !== 'set-cookie') headers[key] = value;
  });
  if (close) headers.connection = 'close';
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
    // The body errored after the headers went out (a dropped slow subscriber, an export whose store
    // failed): break the connection, so the client sees an unfinished answer rather than a complete
    // one cut short.
    outgoing.destroy();
  } finally {
    finished = true;
    outgoing.end();
  }
}

export interface NodeListenerOptions {
  /** Origin of request URLs (e.g. 'https://telemetry.example.com'); default from the Host header, which is then checked. */
  origin?: string;
  /** Called with what a request could not be answered for (a bug); default console.error. */
  onError?: (err: unknown) => void;
}

/**
 * A node:http request listener serving a fetch handler. When the handler answers null (created
 * with `fallthrough`), the request goes to `next` (Express's, or your own app), else a 404.
 */
export function toNodeListener(fetch: FetchLike, options: NodeListenerOptions = {}) {
  const onError = options.onError ?? ((err) => console.error(err));
  const log = (msg: string) => onError(new Error(msg));
  return (incoming: IncomingMessage, outgoing: ServerResponse, next?: () => void): void => {
    let request: Request;
    try {
      request = toRequest(incoming, outgoing, requestUrl(incoming, options.origin));
    } catch (err) {
      void writeResponse(toErrorResponse(err, log, light), outgoing);
      return;
    }
    fetch(request, { remoteAddr: { hostname: incoming.socket.remoteAddress }, respond: light })
      .then((response) => {
        if (response) return writeResponse(response, outgoing);
        if (next) return next();
        return writeResponse(toErrorResponse(new HttpError(404, 'not_found', 'Not found'), log, light), outgoing);
      })
      .catch((err) => {
        onError(err);
        if (!outgoing.headersSent) outgoing.writeHead(500, { 'content-type': 'application/json' });
        outgoing.end('{"error":"Internal Server Error","code":"internal"}');
      });
  };
}
