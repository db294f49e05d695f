// No endpoint or stream shows one user another user's data, in any store (docs/architecture.md,
// invariant 10).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';
import { app, readUntil } from './helpers/app.ts';
import { storeFactories } from './helpers/stores.ts';

const USERS = ['alice', 'bob'] as const;
const marker = (owner: string, i: number) => `${owner}-secret-${i}`;

function eventsOf(owner: string) {
  return Array.from({ length: 5 }, (_, i) => ({
    id: marker(owner, i),
    type: i % 2 ? 'error' : 'pageload',
    message: marker(owner, i),
    sessionId: `${owner}-session`,
    deployVersion: `${owner}-v1`,
    route: `/${owner}`,
    data: { duration: 100 + i, stack: `Error: ${marker(owner, i)}\n    at ${owner}Fn (https://x/${owner}.js:1:1)` },
  }));
}

for (const [name, open] of [['memory', async () => createMemoryStore()] as const, ...(await storeFactories())]) {
  test(`isolation (${name}): every read endpoint and both streams, both directions`, async () => {
    const store: Store = await open();
    const { send, as } = app({ store });
    try {
      const streams = new Map<string, ReadableStreamDefaultReader<Uint8Array>>();
      for (const user of USERS) {
        streams.set(`${user}:events`, (await send('GET', '/api/events/stream', { headers: as(user) })).body!.getReader());
        streams.set(`${user}:developer`, (await send('GET', '/api/developer/stream', { headers: as(user) })).body!.getReader());
      }
      streams.set('anonymous:events', (await send('GET', '/api/events/stream')).body!.getReader());
      for (const reader of streams.values()) await readUntil(reader, ': connected');

      // Alice ingests signed in; Bob's app tags its events; an anonymous app sends unowned events.
      await send('POST', '/api/events', { body: { events: eventsOf('alice') }, headers: as('alice') });
      await send('POST', '/api/beacon', { body: { events: eventsOf('bob').map((e) => ({ ...e, userId: 'bob' })) } });
      await send('POST', '/api/events', { body: { events: eventsOf('anon') } });
      // A hostile sender cannot read by claiming the owner in the payload of a read.
      await send('POST', '/api/events', { body: { type: 'probe', id: 'probe', userId: 'mallory' } });

      for (const user of USERS) {
        const other = user === 'alice' ? 'bob' : 'alice';
        const reads = [
          await send('GET', '/api/events?limit=1000', { headers: as(user) }),
          await send('GET', `/api/events?version=${other}-v1`, { headers: as(user) }),
          await send('GET', '/api/events?type=error', { headers: as(user) }),
          await send('GET', '/api/stats', { headers: as(user) }),
          await send('GET', '/api/developer/insights', { headers: as(user) }),
          await send('POST', '/api/developer/query', { body: { groupBy: ['sessionId', 'version', 'route'] }, headers: as(user) }),
          await send('POST', '/api/developer/query', { body: { filter: { sessionId: `${other}-session` } }, headers: as(user) }),
        ];
        const texts = await Promise.all(reads.map((r) => r.text()));
        for (const [i, text] of texts.entries()) {
          assert.is(reads[i].status, 200, text);
          assert.not.match(text, new RegExp(`${other}|anon-|mallory`), `read ${i} of ${user} leaks`);
        }
        assert.match(texts[0], new RegExp(marker(user, 4)), `${user} sees their own events`);
        const stats = JSON.parse(texts[3]);
        assert.is(stats.totalEvents, 5);
        assert.is(stats.activeUsers, 1);

        const own = await readUntil(streams.get(`${user}:events`)!, marker(user, 4));
        assert.not.match(own, new RegExp(`${other}|anon-|mallory`));
        const dev = await readUntil(streams.get(`${user}:developer`)!, marker(user, 4));
        assert.not.match(dev, new RegExp(`${other}|anon-|mallory`));
      }
      const anonymous = await readUntil(streams.get('anonymous:events')!, marker('anon', 4));
      assert.not.match(anonymous, /alice|bob/, 'unidentified subscribers see only unowned events');

      // Unowned events appear for no user, whatever id is claimed.
      for (const claimed of ['', 'null', 'anon', 'undefined']) {
        const res = await send('GET', '/api/events', { headers: as(claimed) });
        if (res.status === 200) assert.not.match(await res.text(), /anon-secret/);
        else assert.is(res.status, 401);
      }
      for (const reader of streams.values()) await reader.cancel();
    } finally {
      await store.close();
    }
  });
}

test.run();
