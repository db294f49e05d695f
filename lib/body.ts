// Reading request bodies within limits: size before and after gzip, content types sendBeacon uses.
import { concat } from './bytes.ts';
import { HttpError } from './http.ts';
import { MAX_DEPTH, shapeProblem } from './shape.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A server adapter may attach a faster body reader under this symbol (the node adapter reads the
 * IncomingMessage directly); it must honour the same limit and throw the same errors.
 */
export const FAST_BODY = Symbol.for('watchtower.fastBody');
type FastBodyReader = (limit: number) => Promise<Uint8Array>;

const unreadable = (): never => {
  throw new HttpError(400, 'unreadable_body', 'Request body could not be read');
};
const tooLarge = (limit: number) => new HttpError(413, 'payload_too_large', `Request body exceeds ${limit} bytes`);

/** Content types an ingest body may carry: JSON, or text/plain as sendBeacon and CORS-simple posts send. */
export function checkContentType(request: Request): void {
  const type = request.headers.get('content-type');
  if (type === null || type === 'application/json' || type === 'text/plain;charset=UTF-8') return;
  const mime = type.split(';', 1)[0].trim().toLowerCase();
  if (mime === '' || mime === 'application/json' || mime === 'text/plain' || mime.endsWith('+json')) return;
  throw new HttpError(415, 'unsupported_media_type', `Unsupported Content-Type ${mime}; send application/json or text/plain`);
}

export async function readBody(request: Request, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const encoding = (request.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new HttpError(415, 'unsupported_encoding', `Unsupported Content-Encoding ${encoding}; send gzip or none`);
  }
  const declared = Number(request.headers.get('content-length'));
  if (encoding === 'identity' && declared > limit) throw tooLarge(limit);

  const fast = (request as unknown as Record<symbol, FastBodyReader | undefined>)[FAST_BODY];
  if (encoding === 'identity' && fast) return fast.call(request, limit);
  if (encoding === 'identity' && declared > 0) {
    // A declared length within the limit bounds what an HTTP server reads for this request, so the
    // body can be taken whole, which is several times cheaper than reading the stream chunk by chunk.
    const bytes = new Uint8Array(await request.arrayBuffer().catch(unreadable));
    if (bytes.byteLength > limit) throw tooLarge(limit);
    return bytes;
  }
  // Reading .body builds a stream (costly on Deno): only now, when the length is not known.
  if (!request.body) return new Uint8Array(0);

  let stream: ReadableStream<Uint8Array> = request.body;
  if (encoding === 'gzip') {
    // The wire size is bounded too, so a client cannot stream an endless compressed body.
    stream = stream.pipeThrough(limitStream(limit)).pipeThrough(new DecompressionStream('gzip') as unknown as TransformStream<Uint8Array, Uint8Array>);
  }
  try {
    return await collect(stream, limit);
  } catch (err) {
    if (err instanceof HttpError) throw err;
    if (encoding === 'gzip') throw new HttpError(400, 'invalid_gzip', 'Request body is not valid gzip');
    throw new HttpError(400, 'unreadable_body', 'Request body could not be read');
  }
}

/** Reads a stream to its end, cancelling it as soon as it passes the limit. */
async function collect(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return chunks.length ? concat(chunks) : new Uint8Array(0);
}

function limitStream(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  return new TransformStream({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > limit) controller.error(tooLarge(limit));
      else controller.enqueue(chunk);
    },
  });
}

const decoder = new TextDecoder('utf-8', { fatal: false });

/**
 * Parses a JSON body; anything that is not JSON is a 400 "Invalid JSON" (docs/api.md#errors), and a
 * body nested deeper than `maxDepth` a 400 `json_too_deep` (what would read it may recurse). The
 * ingest endpoints pass Infinity: they bound each event instead (validateEvents), counting a deep
 * one as rejected. JSON.parse itself is iterative on V8 and JavaScriptCore: a 1 MiB body nested
 * 500,000 deep parses (test/hostile-input.test.ts holds every runtime to that).
 */
export function parseJson(bytes: Uint8Array, maxDepth = MAX_DEPTH): unknown {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new HttpError(400, 'invalid_json', 'Invalid JSON');
  }
  if (maxDepth !== Infinity && shapeProblem(value, maxDepth, Infinity) !== null) {
    throw new HttpError(400, 'json_too_deep', `The body nests objects and arrays deeper than ${maxDepth} levels`);
  }
  return value;
}
