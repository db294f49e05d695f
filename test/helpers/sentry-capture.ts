// A Sentry ingest endpoint in miniature, for the SDK tests: a real HTTP server on 127.0.0.1 that
// takes what a Sentry SDK posts to /api/<project>/envelope/, reads it with the service's own body
// reader (gzip included) and runs it through the Sentry protocol layer, as the real endpoint will.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { readBody } from '../../lib/body.ts';
import { toErrorResponse, toResponse } from '../../lib/http.ts';
import { envelopeToEvents, parseEnvelope, sentryAnswer, sentryAuth, type Envelope, type SentryAuth, type SentryIngest } from '../../lib/sentry/mod.ts';

export interface CapturedRequest {
  path: string;
  headers: Record<string, string>;
  /** The body as the service reads it (gunzipped). */
  bytes: Uint8Array;
  envelope?: Envelope;
  auth?: SentryAuth;
  ingest?: SentryIngest;
  /** The answer's status: 200, or the status of the error the protocol layer raised. */
  status: number;
  error?: string;
}

export interface SentryCapture {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  dsn(key: string, projectId: string): string;
  requests: CapturedRequest[];
  /** Resolves once `done(requests)` holds; rejects after `ms` with what arrived. */
  waitFor(done: (requests: CapturedRequest[]) => boolean, ms?: number): Promise<CapturedRequest[]>;
  close(): Promise<void>;
}

// Headers a Sentry SDK request may carry that the protocol layer or the body reader read.
const FORWARDED = ['content-type', 'content-encoding', 'content-length', 'x-sentry-auth', 'authorization'];

export async function startSentryCapture(): Promise<SentryCapture> {
  const requests: CapturedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'content-type, x-sentry-auth' };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors).end();
      return;
    }
    // A page closed while its SDK was still posting aborts the request: nobody is left to answer,
    // and an unhandled rejection here would end the whole test process (Deno ends it at once).
    const wire = await readAll(req).catch(() => null);
    if (!wire) {
      res.destroy();
      return;
    }
    const url = `http://127.0.0.1${req.url ?? '/'}`;
    const headers = new Headers();
    for (const name of FORWARDED) if (typeof req.headers[name] === 'string') headers.set(name, req.headers[name] as string);
    const request = new Request(url, { method: 'POST', headers, body: wire });
    const captured: CapturedRequest = { path: new URL(url).pathname, headers: Object.fromEntries(headers), bytes: new Uint8Array(0), status: 0 };
    let response: Response;
    try {
      captured.bytes = await readBody(request);
      const projectId = /^\/(?:[^/]+\/)*api\/(\d+)\/envelope\/?$/.exec(captured.path)?.[1] ?? '';
      captured.envelope = parseEnvelope(captured.bytes);
      captured.auth = sentryAuth(request, projectId, captured.envelope.header);
      captured.ingest = envelopeToEvents(captured.envelope);
      response = toResponse(sentryAnswer(captured.ingest));
    } catch (err) {
      captured.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      response = toErrorResponse(err, () => {});
    }
    captured.status = response.status;
    requests.push(captured);
    const answer = response;
    res.writeHead(answer.status, { ...cors, 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    dsn: (key, projectId) => `http://${key}@127.0.0.1:${port}/${projectId}`,
    requests,
    async waitFor(done, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!done(requests)) {
        if (Date.now() > deadline) {
          throw new Error(`Sentry requests after ${ms} ms: ${JSON.stringify(requests.map((r) => [r.path, r.status, r.error, r.envelope?.items.map((i) => i.header.type)]))}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readAll(req: IncomingMessage): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    req.on('data', (c: Uint8Array) => chunks.push(c));
    req.on('end', () => {
      const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
      let offset = 0;
      for (const c of chunks) {
        out.set(c, offset);
        offset += c.byteLength;
      }
      resolve(out);
    });
    req.on('error', reject);
  });
}

/** Every mapped event of the captured requests, with the request it came in. */
export function capturedEvents(requests: CapturedRequest[]) {
  return requests.flatMap((r) => (r.ingest?.events ?? []).map((event) => ({ event, request: r })));
}
