// The access matrix, generated: every team endpoint × every standing towards the project (owner,
// admin, member, viewer, non-member, removed member, anonymous, share token) → the status the
// role table gives (test/helpers/teams-world.ts), on memory, sqlite and PostgreSQL. Someone with no
// role gets exactly the answer for a project that does not exist, and no outsider's answer holds
// any of the project's data.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { openSqliteRecords } from '../lib/records/file.ts';
import { openPostgresRecords } from '../lib/records/postgres.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { RecordStore } from '../lib/records/types.ts';
import type { Store } from '../lib/store/types.ts';
import { app } from './helpers/app.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';
import { buildWorld, ENDPOINTS, expected, headersOf, PRINCIPALS, type Endpoint, type Principal, type World } from './helpers/teams-world.ts';

type Opened = { store: Store; records: RecordStore; close: () => Promise<void> };
const backends: [string, () => Promise<Opened>][] = [
  ['memory', async () => {
    const store = createMemoryStore();
    const records = createMemoryRecords();
    return { store, records, close: async () => { await store.close(); await records.close(); } };
  }],
  ['sqlite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'watchtower-matrix-'));
    const path = join(dir, 'watchtower.sqlite');
    const store = await openSqliteStore({ path });
    const records = await openSqliteRecords({ path });
    return { store, records, close: async () => { await records.close(); await store.close(); rmSync(dir, { recursive: true, force: true }); } };
  }],
];
const pgReason = await unavailableReason();
if (pgReason === null) {
  backends.push(['postgres', async () => {
    const db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, connectTimeout: 3 });
    const records = await openPostgresRecords({ url: db.url, max: 2 });
    return { store, records, close: async () => { await records.close(); await store.close(); await db.drop(); } };
  }]);
} else if (REQUIRE_POSTGRES) {
  test('PostgreSQL is reachable (WATCHTOWER_REQUIRE_POSTGRES=1)', () => assert.unreachable(pgReason));
}

const MISSING = '999999999999';

async function answer(res: Response, stream: boolean): Promise<{ status: number; text: string }> {
  if (stream && res.status === 200) {
    // The first bytes only (the preamble): a live stream never ends by itself.
    const reader = res.body!.getReader();
    const first = await reader.read();
    await reader.cancel();
    return { status: 200, text: new TextDecoder().decode(first.value) };
  }
  return { status: res.status, text: await res.text() };
}

for (const [name, open] of backends) {
  test(`access matrix (${name}): ${ENDPOINTS.length} endpoints × ${PRINCIPALS.length} principals`, async () => {
    const backend = await open();
    const { handler, send } = app({ store: backend.store, records: backend.records });
    let worlds = 0;
    const world = () => buildWorld(send, `${name}${++worlds}`, () => handler.monitor.flush());
    try {
      const shared = await world();
      const call = (e: Endpoint, w: World, who: Principal, projectId: string) =>
        send(e.method, e.path(w, projectId, who), { headers: headersOf(w, who), body: e.body?.(w, projectId) });
      const failures: string[] = [];
      for (const e of ENDPOINTS) {
        for (const who of PRINCIPALS) {
          const want = expected(e, who);
          // A change that should succeed gets a world of its own; one that should be refused must
          // leave the shared world as it was (else its status already fails the test).
          const w = e.changes && want === e.ok ? await world() : shared;
          const label = `${who} ${e.method} ${e.path(w, w.project.id, who)}`;
          const got = await answer(await call(e, w, who, w.project.id), e.stream ?? false);
          if (want === 'as-missing') {
            const missing = await answer(await call(e, w, who, MISSING), e.stream ?? false);
            const same = got.status === missing.status && got.text.replaceAll(w.project.id, MISSING) === missing.text;
            if (!same) failures.push(`${label}: ${got.status} ${got.text.slice(0, 120)} but a missing project answers ${missing.status} ${missing.text.slice(0, 120)}`);
          } else if (got.status !== want) {
            failures.push(`${label}: ${got.status}, expected ${want} (${got.text.slice(0, 160)})`);
          }
          const outsider = ['nonmember', 'removed', 'anonymous', 'share'].includes(who) && !(e.least === 'signedIn' || (e.least === 'shareToken' && who === 'share'));
          const leaked = outsider ? w.secrets.filter((s) => got.text.includes(s)) : [];
          // The share link's holder reads aggregates, never the events themselves.
          if (e.least === 'shareToken' && got.text.includes(w.secrets[0])) leaked.push(w.secrets[0]);
          if (leaked.length) failures.push(`${label}: the answer holds ${leaked.join(', ')}`);
        }
      }
      assert.equal(failures, []);
    } finally {
      await handler.close();
      await backend.close();
    }
  });
}

test.run();
