// Two instances on one PostgreSQL database agree on a project's team: a member added on one reads on
// the other, and a removal on one closes the member's live stream on the other within a second.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openPostgresRecords } from '../lib/records/postgres.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { RecordStore } from '../lib/records/types.ts';
import type { Store } from '../lib/store/types.ts';
import { app, readUntil } from './helpers/app.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';

const reason = await unavailableReason();
if (reason === null) {
  test('two instances: membership and removal agree at once, an open stream on the other closes within a second', async () => {
    const db = await createTestDatabase();
    const opened: (Store | RecordStore)[] = [];
    const instance = async () => {
      const store = await openPostgresStore({ url: db.url, connectTimeout: 3 });
      const records = await openPostgresRecords({ url: db.url, max: 2 });
      opened.push(records, store);
      return app({ store, records });
    };
    try {
      const a = await instance();
      const b = await instance();
      const json = async (on: typeof a, method: string, path: string, user: string, body?: unknown) => {
        const res = await on.send(method, path, { headers: on.as(user), body });
        return { status: res.status, body: await res.json() };
      };
      const project = (await json(a, 'POST', '/api/projects', 'alice', { name: 'shop' })).body;
      const invitation = (await json(a, 'POST', `/api/projects/${project.id}/invitations`, 'alice', { role: 'viewer' })).body;
      assert.is((await json(b, 'POST', `/api/invitations/${invitation.token}/accept`, 'bob')).status, 200, 'accepted on the other instance');
      assert.is((await json(a, 'POST', `/api/invitations/${invitation.token}/accept`, 'carol')).status, 410, 'used, on either');
      assert.is((await json(a, 'GET', `/api/projects/${project.id}`, 'bob')).body.role, 'viewer');

      const stream = await b.send('GET', `/api/events/stream?project=${project.id}`, { headers: b.as('bob') });
      assert.is(stream.status, 200);
      const reader = stream.body!.getReader();
      await readUntil(reader, ': connected');
      const removed = Date.now();
      assert.is((await json(a, 'DELETE', `/api/projects/${project.id}/members/bob`, 'alice')).status, 200);
      assert.is((await json(b, 'GET', `/api/events?project=${project.id}`, 'bob')).status, 404, 'the other instance refuses at once');
      await readUntil(reader, 'event: revoked', 1500);
      assert.ok(Date.now() - removed < 1000, `closed after ${Date.now() - removed} ms`);
      await a.handler.close();
      await b.handler.close();
    } finally {
      for (const s of opened) await s.close().catch(() => {});
      await db.drop();
    }
  });
} else if (REQUIRE_POSTGRES) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(reason));
} else {
  console.log(`Teams on PostgreSQL not tested: ${reason}`);
}

test.run();
