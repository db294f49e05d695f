// Issues on PostgreSQL with two instances on one database: errors ingested through both are each
// counted once (one instance groups at a time, under the lease), and when the grouping instance
// stops with errors still waiting, the other takes over from the stored progress and counts every
// one of them once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHandler } from '../lib/handler.ts';
import { openPostgresRecords } from '../lib/records/postgres.ts';
import type { RecordStore } from '../lib/records/types.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';
import type { Store } from '../lib/store/types.ts';
import { runtimeFiles } from './helpers/app.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';

const BUGS = ['TypeError: cart is undefined', 'RangeError: quantity out of range', 'SyntaxError: bad coupon code'];
const OWNER = { 'x-idp-user-id': 'owner-1' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Instance { store: Store; records: RecordStore; handler: ReturnType<typeof createHandler>; closed: boolean }

if (await postgresAvailable('PostgreSQL issue tests')) {
  let db: TestDatabase;
  const instances: Instance[] = [];
  test.before(async () => {
    db = await createTestDatabase();
  });
  test.after(async () => {
    for (const i of instances) if (!i.closed) await close(i);
    await db?.drop();
  });

  async function start(): Promise<Instance> {
    const store = await openPostgresStore({ url: db.url, connectTimeout: 3, issueLeaseMs: 2_000, log: () => {} });
    const records = await openPostgresRecords({ url: db.url });
    const handler = createHandler({ store, records, log: () => {}, files: runtimeFiles, monitoring: { processEveryMs: 50 } });
    const instance = { store, records, handler, closed: false };
    instances.push(instance);
    return instance;
  }
  async function close(i: Instance): Promise<void> {
    i.closed = true;
    await i.handler.close();
    await i.store.close();
    await i.records.close();
  }
  async function send(i: Instance, from: number, count: number): Promise<void> {
    const events = Array.from({ length: count }, (_, k) => {
      const message = BUGS[(from + k) % 3];
      return { id: `e-${from + k}`, type: 'error', message, data: { stack: `${message}\n    at step${['One', 'Two', 'Three'][(from + k) % 3]} (https://shop.example/app.js:1:1)` } };
    });
    const res = (await i.handler(new Request('http://watchtower.test/api/events', { method: 'POST', headers: { 'content-type': 'application/json', ...OWNER }, body: JSON.stringify({ events }) })))!;
    assert.is((await res.json()).accepted, count);
  }
  async function counts(i: Instance): Promise<number[]> {
    const res = (await i.handler(new Request('http://watchtower.test/api/issues', { headers: OWNER })))!;
    return ((await res.json()).issues as { count: number }[]).map((x) => x.count).sort((a, b) => a - b);
  }
  /** Waits until the issues count `total` errors, then a little longer to see that the figure stays. */
  async function settled(i: Instance, total: number): Promise<number[]> {
    for (const end = Date.now() + 30_000; Date.now() < end; await sleep(100)) {
      if ((await counts(i)).reduce((s, n) => s + n, 0) >= total) break;
    }
    await sleep(500);
    return counts(i);
  }

  test('two instances on one database: errors ingested through both are counted once; when the grouping one stops, the other carries on from its progress', async () => {
    const a = await start();
    const b = await start();
    for (let from = 0; from < 3_000; from += 300) await send(from % 600 ? b : a, from, 300);
    assert.equal(await settled(a, 3_000), [1_000, 1_000, 1_000]);
    assert.equal(await counts(b), [1_000, 1_000, 1_000], 'both instances read the same issues');
    const holders = [await a.store.issueLease!(), await b.store.issueLease!()];
    assert.equal(holders.filter(Boolean).length, 1, `one instance groups (${holders})`);
    const [holder, other] = holders[0] ? [a, b] : [b, a];

    // Errors stored through the other instance, then the holder stops at once: its grouping of
    // them, if any had started, ends within its close; the rest is the other's to count.
    for (let from = 3_000; from < 6_000; from += 500) await send(other, from, 500);
    await close(holder);
    assert.equal(await settled(other, 6_000), [2_000, 2_000, 2_000]);
    // The holder gave the lease up on closing; a non-holder asks at most once a second, so the
    // other holds it within about a second (its grouping may not have needed it yet if the
    // holder's close grouped everything).
    let taken = false;
    for (const end = Date.now() + 5_000; !taken && Date.now() < end; await sleep(100)) taken = await other.store.issueLease!();
    assert.ok(taken, 'the other instance took the lease over');
    // Errors after the holder stopped are the other's to group, whether or not the holder's
    // close had grouped all of the earlier ones.
    for (let from = 6_000; from < 7_500; from += 500) await send(other, from, 500);
    assert.equal(await settled(other, 7_500), [2_500, 2_500, 2_500]);
  });

  test.run();
}
