// The node adapter and the Host header: a malformed one is a 400 with a JSON body, never a 500, and
// no URL is built from it. Raw HTTP over node:net, since an HTTP client would not send such a header.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { toNodeListener } from '../lib/adapter/node.ts';
import { createHandler } from '../lib/handler.ts';
import { createMemoryStore } from '../lib/store/memory.ts';

/** Sends raw request text and resolves with everything the server wrote before closing. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let out = '';
    socket.on('data', (c) => (out += c));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

const parse = (response: string) => {
  const [head, body] = response.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), head: head.toLowerCase(), body };
};

async function serve(): Promise<{ port: number; errors: unknown[]; close(): Promise<void> }> {
  const errors: unknown[] = [];
  const handler = createHandler({ store: createMemoryStore(), log: (m) => errors.push(m) });
  const server: Server = createServer(toNodeListener(handler, { onError: (e) => errors.push(e) }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    errors,
    close: () => {
      handler.hub.close();
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const BAD_HOSTS = ['evil.example/path', 'user@evil.example', 'a b', '[::1', 'localhost:99999', '999.1.1.1', 'host?x=1', 'host#frag', 'a%2fb', 'exa\\mple'];

test('a malformed Host is a 400 with a JSON body, and the server keeps serving', async () => {
  const s = await serve();
  try {
    for (const host of BAD_HOSTS) {
      const res = parse(await raw(s.port, `GET /api/health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
      assert.is(res.status, 400, host);
      assert.match(res.head, /content-type: application\/json/, host);
      assert.equal(JSON.parse(res.body), { error: 'Invalid Host header', code: 'invalid_host' }, host);
    }
    // Same connection: a bad request, then a good one.
    const both = await raw(s.port, 'GET /api/health HTTP/1.1\r\nHost: a b\r\n\r\nGET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    assert.match(both, /^HTTP\/1\.1 400[\s\S]*HTTP\/1\.1 200[\s\S]*"status":"ok"/);
    for (const host of ['localhost', 'LOCALHOST:3000', '127.0.0.1:8080', '[::1]:80', 'telemetry.example.com']) {
      const res = parse(await raw(s.port, `GET /api/health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
      assert.is(res.status, 200, host);
    }
    assert.equal(s.errors, [], 'nothing was logged as a bug');
  } finally {
    await s.close();
  }
});

test('request targets: the absolute form is served, `*` is a 400 JSON', async () => {
  const s = await serve();
  try {
    const absolute = parse(await raw(s.port, 'GET http://localhost/api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
    assert.is(absolute.status, 200);
    const star = parse(await raw(s.port, 'OPTIONS * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
    assert.is(star.status, 400);
    assert.is(JSON.parse(star.body).code, 'invalid_target');
  } finally {
    await s.close();
  }
});

test.run();
