// The handler served for real on 127.0.0.1: the node adapter, Deno.serve, and server.ts itself.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { toNodeListener } from '../lib/adapter/node.ts';
import { createHandler, type FetchHandler } from '../lib/handler.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { readUntil } from './helpers/app.ts';
import { existsSync } from 'node:fs';
import { ROOT, runServerToExit, startServer } from './helpers/server.ts';

declare const Deno:
  | { serve(o: { port: number; hostname: string; onListen?: () => void }, h: (r: Request) => Promise<Response>): { addr: { port: number }; shutdown(): Promise<void> } }
  | undefined;

interface Served { url: string; handler: FetchHandler; close(): Promise<void> }

async function serveNode(): Promise<Served> {
  const handler = createHandler({ store: createMemoryStore(), keepBots: true, log: () => {} });
  const server: Server = createServer(toNodeListener(handler));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    handler,
    close: () => {
      handler.hub.close();
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

async function serveDeno(): Promise<Served> {
  const handler = createHandler({ store: createMemoryStore(), keepBots: true, log: () => {} });
  const server = Deno!.serve({ port: 0, hostname: '127.0.0.1', onListen: () => {} }, handler);
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    handler,
    close: () => {
      handler.hub.close();
      return server.shutdown();
    },
  };
}

const servers: [string, () => Promise<Served>][] = [['node adapter', serveNode]];
if (typeof Deno !== 'undefined') servers.push(['Deno.serve', serveDeno]);

for (const [name, serve] of servers) {
  test(`${name}: ingest, read back, stats over real HTTP`, async () => {
    const s = await serve();
    try {
      const post = await fetch(`${s.url}/api/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'pageload', route: '/', data: { duration: 80 }, userId: 'u1' }, { bad: 1 }] }),
      });
      assert.is(post.status, 200);
      assert.is(post.headers.get('access-control-allow-origin'), '*');
      const body = await post.json();
      assert.is(body.accepted, 1);
      assert.is(body.rejected, 1);
      const list = await (await fetch(`${s.url}/api/events`, { headers: { 'x-idp-user-id': 'u1' } })).json();
      assert.is(list.events.length, 1);
      const stats = await (await fetch(`${s.url}/api/stats`, { headers: { 'x-idp-user-id': 'u1' } })).json();
      assert.is(stats.latencyByRoute['/'].p50, 80);
      const unauth = await fetch(`${s.url}/api/stats`);
      assert.is(unauth.status, 401);
      await unauth.body?.cancel();
    } finally {
      await s.close();
    }
  });

  test(`${name}: SSE delivers and a client disconnect removes the subscriber`, async () => {
    const s = await serve();
    try {
      const controller = new AbortController();
      const res = await fetch(`${s.url}/api/events/stream`, { signal: controller.signal });
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const reader = res.body!.getReader();
      await readUntil(reader, ': connected');
      const post = await fetch(`${s.url}/api/events`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"type":"click","id":"live-1"}' });
      await post.body?.cancel();
      assert.match(await readUntil(reader, 'live-1'), /^data: \[\{/m);
      controller.abort();
      await reader.cancel().catch(() => {});
      const deadline = Date.now() + 2000;
      while (s.handler.hub.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.is(s.handler.hub.size, 0);
    } finally {
      await s.close();
    }
  });

  test(`${name}: a declared body over 1 MiB is refused with 413 before it is read`, async () => {
    const s = await serve();
    try {
      const { port } = new URL(s.url);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/api/events', headers: { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        });
        req.on('error', reject);
        req.write('{"events":[');
      });
      assert.is(status, 413);
    } finally {
      await s.close();
    }
  });

  test(`${name}: a client that sends its whole oversized body before reading gets its 413`, async () => {
    // The refusal goes out while the client is still sending. Closing the connection on unread
    // bytes makes the kernel reset it, which throws away the answer the client has not read yet:
    // a client that reads only after sending (as many do) saw a network error instead of its 413.
    const s = await serve();
    try {
      const { port } = new URL(s.url);
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      let received = '';
      let broken: string | null = null;
      socket.on('error', (err: NodeJS.ErrnoException) => (broken = err.code ?? err.message));
      socket.pause(); // read nothing until the whole request is sent
      const size = 2 * 1024 * 1024;
      const head = `POST /api/events HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`;
      const write = (data: string) => new Promise<string | null>((resolve) => socket.write(data, (err) => resolve(err ? ((err as NodeJS.ErrnoException).code ?? err.message) : null)));
      let failed = await write(head);
      const chunk = ' '.repeat(64 * 1024);
      for (let sent = 0; sent < size && !failed; sent += chunk.length) {
        failed = await write(chunk);
        await new Promise((r) => setTimeout(r, 5)); // a client slower than the loopback
      }
      assert.is(failed, null, 'the server broke the connection while the body was being sent');
      socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
      socket.resume();
      for (const deadline = Date.now() + 5000; !received.includes('payload_too_large') && !broken && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 10));
      }
      socket.destroy();
      assert.is(broken, null, 'the connection was reset before the answer was read');
      assert.match(received, /^HTTP\/1\.1 413 /);
      assert.match(received, /"code":"payload_too_large"/);
    } finally {
      await s.close();
    }
  });

  test(`${name}: a chunked body over 1 MiB is cut off with 413`, async () => {
    const s = await serve();
    try {
      const { port } = new URL(s.url);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/api/events', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
        const chunk = ' '.repeat(64 * 1024);
        let sent = 0;
        // Keep sending (up to 8 MiB) until the server answers; it must not wait for the end.
        const pump = () => {
          while (sent < 128 && req.write(chunk)) sent++;
          if (sent < 128 && !req.destroyed) req.once('drain', () => (sent++, pump()));
        };
        pump();
      });
      assert.is(status, 413);
    } finally {
      await s.close();
    }
  });
}

test('server.ts: PORT=abc stops at start with one line naming the variable', async () => {
  const { code, output } = await runServerToExit({ PORT: 'abc' });
  assert.is(code, 1);
  assert.match(output, /PORT/);
  assert.is(output.trim().split('\n').length, 1, output);
});

/** Sends `head` as it is on a fresh connection and resolves with the answer's text. */
function rawRequest(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c) => (text += c));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(head);
  });
}

test('server.ts: a page redirect stays on this origin however many slashes and backslashes the path has', async () => {
  const server = await startServer();
  try {
    const cases: [string, string][] = [['/landing', '/landing/'], ['//issues', '/issues/'], ['/\\issues', '/issues/'], ['///\\//login', '/login/'], ['/\\/\\alerts', '/alerts/']];
    for (const [path, location] of cases) {
      const answer = await rawRequest(server.port, `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 301 /, `${path}: ${answer.slice(0, 200)}`);
      assert.is(/\r\nlocation: ([^\r]*)/i.exec(answer)?.[1], location, path);
    }
  } finally {
    await server.stop();
  }
});

test('server.ts: serves, then SIGTERM shuts down gracefully with open streams', async () => {
  const server = await startServer();
  const stream = await fetch(`${server.url}/api/events/stream`);
  const reader = stream.body!.getReader();
  await readUntil(reader, ': connected');
  const health = await (await fetch(`${server.url}/api/health`)).json();
  assert.is(health.status, 'ok');
  assert.is(health.streamSubscribers, 1);
  const code = await server.stop('SIGTERM');
  assert.is(code, 0, server.output());
  assert.match(server.output(), /stopped/);
  await reader.cancel().catch(() => {});
});

test('server.ts runs on Bun too: ingest, read back, live stream, SIGTERM', async () => {
  const bun = ROOT + 'node_modules/.bin/bun';
  if (!existsSync(bun)) throw new Error('bun is a dev dependency: run npm install');
  const server = await startServer({}, 20_000, [bun, ['server.ts']]);
  try {
    const stream = await fetch(`${server.url}/api/events/stream`, { headers: { 'x-idp-user-id': 'u1' } });
    const reader = stream.body!.getReader();
    await readUntil(reader, ': connected');
    const post = await fetch(`${server.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"click","id":"on-bun","userId":"u1"}' });
    assert.is((await post.json()).accepted, 1);
    await readUntil(reader, 'on-bun');
    const list = await (await fetch(`${server.url}/api/events`, { headers: { 'x-idp-user-id': 'u1' } })).json();
    assert.equal(list.events.map((e: { id: string }) => e.id), ['on-bun']);
    await reader.cancel();
  } finally {
    assert.is(await server.stop('SIGTERM'), 0, server.output());
  }
});

/** A POST to /api/events sent from a given local address (any of 127.0.0.0/8 reaches the server). */
function postFrom(url: string, localAddress: string): Promise<number> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, localAddress, method: 'POST', path: '/api/events', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end('{"type":"click"}');
  });
}

test('server.ts on Bun: each client address has its own rate-limit bucket, and the SDK is served', async () => {
  const server = await startServer({ SERVICE_RATE_LIMIT: '1', SERVICE_RATE_BURST: '1' }, 20_000, [ROOT + 'node_modules/.bin/bun', ['server.ts']]);
  try {
    assert.is(await postFrom(server.url, '127.0.0.1'), 200);
    assert.is(await postFrom(server.url, '127.0.0.1'), 429, 'the same client is limited');
    // Were every Bun client one bucket (no address), this one would be limited too.
    assert.is(await postFrom(server.url, '127.0.0.2'), 200, 'another client is not');
    const sdk = await fetch(`${server.url}/sdk/watchtower.js`);
    assert.is(sdk.status, 200);
    assert.match(await sdk.text(), /watchtower/i);
  } finally {
    assert.is(await server.stop('SIGTERM'), 0, server.output());
  }
});

test.run();
