// The node adapter and a streamed body that fails after its headers went out (an export whose store
// failed mid-way): the client must see a broken response, never one that looks complete.
import { createServer } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { toNodeListener } from '../lib/adapter/node.ts';

test('a streamed body that errors mid-way breaks the connection instead of ending the answer', async () => {
  const handler = async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"id":1}\n'));
        },
        pull(controller) {
          controller.error(new Error('the store failed'));
        },
      }),
      { headers: { 'content-type': 'application/x-ndjson' } },
    );
  const server = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/export`);
    assert.is(res.status, 200);
    const body = await res.text().then(
      (text) => ({ complete: true, text }),
      () => ({ complete: false, text: '' }),
    );
    assert.is(body.complete, false, `the client read a complete answer: ${JSON.stringify(body.text)}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test.run();
