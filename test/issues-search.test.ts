// Issue search, filters and sort, an issue's tags, users and event navigation, and the events list's
// environment filter, through the real fetch handler on the memory, sqlite and PostgreSQL stores.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';
import { app } from './helpers/app.ts';
import { openFreshPostgresStore, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';
import { tempSqliteStore } from './helpers/stores.ts';

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
/** An error whose stack starts with its message, as a browser's does. */
const err = (message: string, fn: string, fields: Record<string, unknown> = {}) =>
  ({ type: 'error', message, data: { stack: `${message}\n    at ${fn} (https://shop.example.com/assets/app.js:1:100)` }, ...fields });

const stores: [string, () => Promise<Store>][] = [['memory', async () => createMemoryStore()], ['sqlite', tempSqliteStore]];
const reason = await unavailableReason();
if (reason === null) stores.push(['postgres', openFreshPostgresStore]);
else if (REQUIRE_POSTGRES) stores.push(['postgres', () => Promise.reject(new Error(`PostgreSQL is required: ${reason}`))]);
else console.log(`issue search on PostgreSQL skipped: ${reason}.`);

for (const [name, open] of stores) {
  const t = suite(`issue search on ${name}`);
  let store: Store;
  let s: ReturnType<typeof app>;
  const clock = { now: Date.parse('2026-05-16T12:00:00.000Z') };
  t.before.each(async () => {
    store = await open();
    s = app({ store, records: createMemoryRecords(), now: () => clock.now });
  });
  t.after.each(async () => {
    await s.handler.close();
    await store.close();
  });

  const send = async (events: Record<string, unknown>[], ua = FIREFOX, user = 'u1') => {
    const res = await s.send('POST', '/api/events', { headers: { ...s.as(user), 'user-agent': ua }, body: { events } });
    assert.is(res.status, 200, await res.clone().text());
    await s.handler.monitor.flush();
    clock.now += 1000;
  };
  const get = async (path: string, user = 'u1') => {
    const res = await s.send('GET', path, { headers: s.as(user) });
    assert.is(res.status, 200, `${path}: ${await res.clone().text()}`);
    return res.json();
  };
  const titles = async (query: string) => (await get(`/api/issues?${query}`)).issues.map((i: { title: string }) => i.title);

  /** Three bugs: checkout on production in Firefox (3 users), coupon on staging in Chrome, login without environment. */
  async function seed() {
    await send([
      err('TypeError: checkout failed', 'checkout', { environment: 'production', deployVersion: '1.0.0', userId: 'ada', sessionId: 'a1', route: '/cart' }),
      err('TypeError: checkout failed', 'checkout', { environment: 'production', deployVersion: '1.1.0', userId: 'bob', sessionId: 'b1', route: '/cart' }),
    ]);
    await send([err('TypeError: checkout failed', 'checkout', { environment: 'production', deployVersion: '1.1.0', userId: 'cy', sessionId: 'c1', route: '/pay' })]);
    await send([
      err('RangeError: Coupon SUMMER expired', 'applyCoupon', { environment: 'staging', deployVersion: '2.0.0', userId: 'ada', sessionId: 'a2' }),
      err('RangeError: Coupon SUMMER expired', 'applyCoupon', { environment: 'staging', deployVersion: '2.0.0', userId: 'ada', sessionId: 'a3' }),
      err('RangeError: Coupon SUMMER expired', 'applyCoupon', { environment: 'staging', deployVersion: '2.0.0', userId: 'ada', sessionId: 'a4' }),
      err('RangeError: Coupon SUMMER expired', 'applyCoupon', { environment: 'staging', deployVersion: '2.0.0', userId: 'ada', sessionId: 'a5' }),
    ], CHROME);
    await send([err('Error: login timed out', 'login', { sessionId: 'z1' })]);
    await send([err('Error: someone else', 'login', { environment: 'production' })], FIREFOX, 'u2');
  }

  t('query, release, environment and browser select issues; the counts per status are of the selection', async () => {
    await seed();
    assert.equal((await titles('')).length, 3);
    assert.equal(await titles('query=CHECKOUT'), ['TypeError: checkout failed'], 'title, any case');
    assert.equal(await titles('query=applycoupon'), ['RangeError: Coupon SUMMER expired'], 'culprit');
    assert.equal(await titles('query=summer'), ['RangeError: Coupon SUMMER expired'], 'message');
    assert.equal(await titles('query=nothing-like-it'), []);
    assert.equal(await titles('environment=production'), ['TypeError: checkout failed'], "another owner's production issue is not mine");
    assert.equal(await titles('environment=staging&browser=Chrome'), ['RangeError: Coupon SUMMER expired']);
    assert.equal(await titles('environment=staging&browser=Firefox'), []);
    assert.equal(await titles('release=1.0.0'), ['TypeError: checkout failed']);
    assert.equal(await titles('release=2.0.0&query=login'), []);
    const body = await get('/api/issues?environment=production&status=resolved');
    assert.equal([body.issues.length, body.total, body.counts.unresolved], [0, 0, 1]);
  });

  t('sort by events, sessions, users, first and last seen; count is events by its old name', async () => {
    await seed();
    // Checkout: 4 events (the last of all), 3 sessions, 3 users; coupon: 4 events, 4 sessions, 1 user; login: 1 of each but users.
    await send([err('TypeError: checkout failed', 'checkout')]);
    const [checkout, coupon, login] = ['TypeError: checkout failed', 'RangeError: Coupon SUMMER expired', 'Error: login timed out'];
    assert.equal(await titles('sort=events'), [checkout, coupon, login], 'ties by last seen');
    assert.equal(await titles('sort=count'), [checkout, coupon, login]);
    assert.equal(await titles('sort=sessions'), [coupon, checkout, login]);
    assert.equal(await titles('sort=users'), [checkout, coupon, login]);
    assert.equal(await titles('sort=first'), [login, coupon, checkout]);
    assert.equal(await titles('sort=last'), [checkout, login, coupon]);
    assert.equal(await titles(''), [checkout, login, coupon]);
    for (const bad of ['sort=popular', 'query=' + 'x'.repeat(201), 'tag=browser', 'limit=0']) {
      const res = await s.send('GET', `/api/issues?${bad}`, { headers: s.as('u1') });
      assert.is(res.status, 400, bad);
      assert.is((await res.json()).code, 'invalid_query');
    }
  });

  t('an issue: its tags, users and sessions per day, first and last release, and its events older and newer', async () => {
    await seed();
    const [checkout] = (await get('/api/issues?query=checkout')).issues;
    assert.equal([checkout.users, checkout.sessions], [{ count: 3, exact: true }, { count: 3, exact: true }]);
    assert.equal([checkout.firstRelease, checkout.lastRelease], ['1.0.0', '1.1.0']);
    assert.equal(checkout.dailyUsers, [['2026-05-16', 3]]);
    assert.equal(checkout.dailySessions, [['2026-05-16', 3]]);
    assert.equal(checkout.tags.browser.values, [{ value: 'Firefox', count: 3 }]);
    assert.equal(checkout.tags.os.values, [{ value: 'Linux', count: 3 }]);
    assert.equal(checkout.tags.environment, { values: [{ value: 'production', count: 3 }], other: 0, truncated: false, total: 3 });
    assert.equal(checkout.tags.release.values, [{ value: '1.1.0', count: 2 }, { value: '1.0.0', count: 1 }]);
    assert.equal(checkout.tags.page.values, [{ value: '/cart', count: 2 }, { value: '/pay', count: 1 }]);

    const latest = await get(`/api/issues/${checkout.id}`);
    assert.is(latest.events.length, 3);
    assert.is(latest.latestEvent.userId, 'cy');
    assert.equal([latest.previousEventId, latest.nextEventId], [latest.events[1].id, null]);
    const older = await get(`/api/issues/${checkout.id}?event=${latest.previousEventId}`);
    assert.is(older.latestEvent.id, latest.events[1].id);
    assert.equal([older.previousEventId, older.nextEventId], [latest.events[2].id, latest.events[0].id]);
    const oldest = await get(`/api/issues/${checkout.id}?event=${older.previousEventId}`);
    assert.equal([oldest.previousEventId, oldest.nextEventId], [null, older.latestEvent.id]);
    assert.is(oldest.latestEvent.deployVersion, '1.0.0');
    const missing = await s.send('GET', `/api/issues/${checkout.id}?event=not-this-issues`, { headers: s.as('u1') });
    assert.is(missing.status, 404);
  });

  t('GET /api/events?environment= lists the events of that environment only', async () => {
    await seed();
    await send([{ type: 'click', environment: 'production' }, { type: 'click', environment: 5 }, { type: 'click', environment: '5' }]);
    const production = await get('/api/events?environment=production&limit=100');
    assert.equal(production.events.map((e: { type: string; message: string | null }) => e.type + ':' + (e.message ?? '')), ['click:', 'error:TypeError: checkout failed', 'error:TypeError: checkout failed', 'error:TypeError: checkout failed']);
    assert.equal((await get('/api/events?environment=staging&type=error')).events.length, 4);
    assert.equal((await get('/api/events?environment=5')).events.map((e: { environment: unknown }) => e.environment), ['5']);
    const bad = await s.send('GET', `/api/events?environment=${'x'.repeat(65)}`, { headers: s.as('u1') });
    assert.is(bad.status, 400);
  });

  t.run();
}
