// The three embeddings README.md shows ("Embedding the handler"), each serving real requests on
// 127.0.0.1: Watchtower under /telemetry, the host app everywhere else.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { createHandler, createMemoryStore } from '../lib/mod.ts';
import { nodeFiles, toNodeListener } from '../lib/adapter/node.ts';
import { denoFiles } from '../lib/adapter/deno.ts';

declare const Deno:
  | {
      serve(
        o: { port: number; hostname: string; onListen?: () => void },
        h: (r: Request, info: { remoteAddr: { hostname: string } }) => Response | Promise<Response>,
      ): { addr: { port: number }; shutdown(): Promise<void> };
    }
  | undefined;

/** What every embedding must do: Watchtower answers below /telemetry, the host app elsewhere. */
async function checkEmbedding(url: string) {
  const post = await fetch(`${url}/telemetry/api/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"click","id":"e1","userId":"u1"}' });
  assert.equal(await post.json(), { accepted: 1, rejected: 0 });
  const list = await (await fetch(`${url}/telemetry/api/events`, { headers: { 'x-idp-user-id': 'u1' } })).json();
  assert.equal(list.events.map((e: { id: string }) => e.id), ['e1']);

  const root = await fetch(`${url}/telemetry/`, { redirect: 'manual' });
  assert.is(root.status, 302);
  assert.is(root.headers.get('location'), '/telemetry/landing/');
  const landing = await fetch(`${url}/telemetry/landing`, { redirect: 'manual' });
  assert.is(landing.status, 301);
  assert.is(landing.headers.get('location'), '/telemetry/landing/');
  const sdk = await fetch(`${url}/telemetry/sdk/watchtower.js`);
  assert.is(sdk.status, 200);
  assert.match(sdk.headers.get('content-type') ?? '', /javascript/);
  await sdk.body?.cancel();

  // Outside the base path, the host app answers, and reads a body Watchtower left alone.
  assert.is(await (await fetch(`${url}/`)).text(), 'host app: GET /');
  assert.is(await (await fetch(`${url}/api/events`)).text(), 'host app: GET /api/events');
  assert.is(await (await fetch(`${url}/telemetryx`)).text(), 'host app: GET /telemetryx');
  assert.is(await (await fetch(`${url}/form`, { method: 'POST', body: 'a=1' })).text(), 'host app: POST /form a=1');
}

const telemetry = (files: typeof nodeFiles) => createHandler({ store: createMemoryStore(), files, basePath: '/telemetry', fallthrough: true, keepBots: true, log: () => {} });

test('embedding in a node:http server: the listener hands what it does not own to the host app', async () => {
  const hostApp = (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => res.end(`host app: ${req.method} ${req.url}${body ? ' ' + body : ''}`));
  };
  const handler = telemetry(nodeFiles);
  const watchtower = toNodeListener(handler);
  const server = createServer((req, res) => watchtower(req, res, () => hostApp(req, res)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await checkEmbedding(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    handler.hub.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('embedding in a Hono app served by @hono/node-server', async () => {
  const handler = createHandler({ store: createMemoryStore(), files: nodeFiles, basePath: '/telemetry', keepBots: true, log: () => {} });
  const app = new Hono();
  app.all('/telemetry/*', (c) => handler(c.req.raw, { remoteAddr: { hostname: getConnInfo(c).remote.address } }));
  app.all('*', async (c) => {
    const body = await c.req.text();
    return c.text(`host app: ${c.req.method} ${c.req.path}${body ? ' ' + body : ''}`);
  });
  // The test process keeps the real global Request and Response for the suites that follow.
  let server!: ReturnType<typeof serve>;
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', overrideGlobalObjects: false }, (info) => resolve(info.port));
  });
  try {
    await checkEmbedding(`http://127.0.0.1:${port}`);
  } finally {
    handler.hub.close();
    (server as unknown as { closeAllConnections(): void }).closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

// Deno.serve exists only on Deno; the suite's Deno pass runs this one.
if (typeof Deno !== 'undefined') {
  test('embedding with Deno.serve: null from the handler goes to the host app', async () => {
    const handler = telemetry(denoFiles);
    const hostApp = async (request: Request) => {
      const body = await request.text();
      return new Response(`host app: ${request.method} ${new URL(request.url).pathname}${body ? ' ' + body : ''}`);
    };
    const server = Deno!.serve({ port: 0, hostname: '127.0.0.1', onListen: () => {} }, async (request, info) => (await handler(request, info)) ?? hostApp(request));
    try {
      await checkEmbedding(`http://127.0.0.1:${server.addr.port}`);
    } finally {
      handler.hub.close();
      await server.shutdown();
    }
  });
}

test.run();
