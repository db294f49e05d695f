// The HTTP surface of history (docs/api.md#list, #export, #stats): time ranges on /api/stats,
// paging /api/events with since/until/before, and the NDJSON export, through the fetch handler.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { toNodeListener } from '../lib/adapter/node.ts';
import { createHandler } from '../lib/handler.ts';
import type { StoredEvent } from '../lib/event.ts';
import { computeStats } from '../lib/stats.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { ExportQuery, Store } from '../lib/store/types.ts';
import { app } from './helpers/app.ts';
import { ROOT } from './helpers/server.ts';
import { storeFactories } from './helpers/stores.ts';

declare const Deno: { execPath(): string } | undefined;

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const as = (user: string) => ({ 'x-idp-user-id': user });

/** A handler on `store` whose clock is `clock.now`, with events of user "h" ingested at several receive times. */
async function withHistory(store: Store = createMemoryStore()) {
  const clock = { now: NOW - 3 * DAY };
  const { send } = app({ store, now: () => clock.now });
  // Batches received 2 days 20 hours, ... 10 minutes before NOW: several hours and days.
  for (const ago of [68 * HOUR, 50 * HOUR + 17 * MIN, 26 * HOUR, 25 * HOUR, 3 * HOUR + 1, HOUR, 10 * MIN]) {
    clock.now = NOW - ago;
    const events = Array.from({ length: 5 }, (_, i) => ({
      type: ['pageload', 'error', 'click', 'feedback', 'custom'][i], userId: 'h', sessionId: `s${ago % 3}`, route: '/r',
      deployVersion: i % 2 ? '2.0' : '1.0', data: { duration: 100 + (ago % 1000) + i, rating: 1 + (ago % 5) },
    }));
    assert.is((await send('POST', '/api/events', { body: { events } })).status, 200);
    await send('POST', '/api/events', { body: { type: 'click', userId: 'other' } });
  }
  clock.now = NOW;
  const all = (await (await send('GET', '/api/events?limit=1000', { headers: as('h') })).json()).events.reverse() as StoredEvent[];
  return { send, clock, all, store };
}

const get = async (send: ReturnType<typeof app>['send'], path: string, user = 'h') => {
  const res = await send('GET', path, { headers: as(user) });
  return { status: res.status, res, body: res.headers.get('content-type')?.startsWith('application/json') ? await res.json() : await res.text() };
};

test('GET /api/stats with from/to/interval answers computeStats over that range; without them, as always', async () => {
  const { send, all } = await withHistory();
  const iso = (t: number) => new Date(t).toISOString();
  const cases = [
    { q: `from=${iso(NOW - 30 * HOUR + 123)}&to=${iso(NOW - 2 * HOUR)}`, range: { from: NOW - 30 * HOUR + 123, to: NOW - 2 * HOUR } },
    { q: `from=${iso(NOW - 2 * DAY)}&interval=day`, range: { from: NOW - 2 * DAY, interval: 'day' as const } },
    { q: `from=2026-05-13&to=2026-05-16T11:00:00Z&interval=hour`, range: { from: Date.parse('2026-05-13T00:00:00Z'), to: NOW - HOUR, interval: 'hour' as const } },
    // A time without an offset is UTC; an offset is honoured.
    { q: `from=2026-05-16T09:00&to=2026-05-16T14:00:00.000%2B02:00`, range: { from: NOW - 3 * HOUR, to: NOW } },
  ];
  for (const { q, range } of cases) {
    const { status, body } = await get(send, `/api/stats?${q}`);
    assert.is(status, 200, q);
    assert.equal(body, JSON.parse(JSON.stringify(computeStats(all, NOW, range))), q);
    assert.ok(body.totalEvents < all.length, `${q}: the range leaves events out`);
  }
  const hourly = (await get(send, `/api/stats?from=2026-05-16T09:30:00Z`)).body;
  assert.equal(hourly.analytics.userSeries.labels, ['2026-05-16T09:00:00.000Z', '2026-05-16T10:00:00.000Z', '2026-05-16T11:00:00.000Z']);
  assert.equal((await get(send, '/api/stats')).body, JSON.parse(JSON.stringify(computeStats(all, NOW))));
  assert.equal((await get(send, '/api/stats?from=&to=&interval=')).body.analytics.userSeries.labels, ['1', '2', '3', '4', '5', '6', '7'], 'empty parameters count as absent');
});

test('GET /api/stats: a bad range is 400 invalid_range, never a 500', async () => {
  const { send } = await withHistory();
  for (const q of [
    'from=yesterday', 'from=2026-02-30', 'from=2026-05-16T24:00Z', 'from=2026-05-16T12:00%2B25:00', 'from=1779000000000',
    'to=2026-05-16', 'interval=hour', 'from=2026-05-16&interval=week', 'from=2026-05-16&to=2026-05-16',
    'from=2026-05-16&to=2026-05-15', 'from=2000-01-01&interval=hour', `from=${'2'.repeat(5000)}`,
  ]) {
    const { status, body } = await get(send, `/api/stats?${q}`);
    assert.is(status, 400, q);
    assert.is(body.code, 'invalid_range', q);
    assert.type(body.error, 'string');
  }
  assert.is((await send('GET', '/api/stats?from=2026-05-16')).status, 401, 'a user first');
});

test('GET /api/events pages with before, newest first, within since/until; nextCursor null at the end', async () => {
  const { send, all } = await withHistory();
  const walk = async (query: string, limit: number) => {
    const out: StoredEvent[] = [];
    let cursor: string | null = null;
    do {
      const { status, body } = await get(send, `/api/events?limit=${limit}&${query}${cursor ? `&before=${cursor}` : ''}`);
      assert.is(status, 200);
      assert.equal(Object.keys(body).sort(), ['events', 'nextCursor']);
      out.push(...body.events);
      cursor = body.nextCursor;
    } while (cursor !== null);
    return out.map((e) => e.id);
  };
  const ids = (xs: StoredEvent[]) => xs.map((e) => e.id).reverse();
  assert.equal(await walk('', 4), ids(all));
  assert.equal(await walk('type=error', 2), ids(all.filter((e) => e.type === 'error')));
  const since = NOW - 26 * HOUR, until = NOW - HOUR;
  const window = all.filter((e) => Date.parse(e.receivedAt) >= since && Date.parse(e.receivedAt) < until);
  assert.equal(await walk(`since=${new Date(since).toISOString()}&until=${new Date(until).toISOString()}`, 3), ids(window));
  assert.is(window.length, 15, 'since is inclusive, until exclusive');
  const { body } = await get(send, `/api/events?limit=${all.length}`);
  assert.is(body.nextCursor, null);
});

test('GET /api/events: a bad cursor is 400 invalid_cursor, a bad window 400 invalid_range', async () => {
  const { send } = await withHistory();
  const cursor = (await get(send, '/api/events?limit=1')).body.nextCursor as string;
  for (const before of ['nope', 'A'.repeat(12), cursor + 'x', '%2F%2F%2F', 'a'.repeat(100)]) {
    const { status, body } = await get(send, `/api/events?before=${before}`);
    assert.is(status, 400, before);
    assert.is(body.code, 'invalid_cursor', before);
  }
  for (const q of ['since=soon', 'until=2026-13-01', 'since=2026-05-16&until=2026-05-16', 'since=2026-05-17&until=2026-05-16']) {
    const { status, body } = await get(send, `/api/events?${q}`);
    assert.is(status, 400, q);
    assert.is(body.code, 'invalid_range', q);
  }
  assert.is((await get(send, '/api/events?limit=0')).body.code, 'invalid_query');
  assert.is((await get(send, `/api/events?before=${cursor}`)).status, 200);
});

test('GET /api/events/export: NDJSON, oldest first, filtered and scoped, on every store', async () => {
  for (const [name, factory] of [['memory', async () => createMemoryStore()] as const, ...(await storeFactories())]) {
    const store = await factory();
    try {
      const { send, all } = await withHistory(store);
      const res = await send('GET', '/api/events/export', { headers: as('h') });
      assert.is(res.status, 200, name);
      assert.is(res.headers.get('content-type'), 'application/x-ndjson', name);
      assert.match(res.headers.get('content-disposition') ?? '', /^attachment; filename="watchtower-events-[\w-]+\.ndjson"$/, name);
      assert.is(res.headers.get('access-control-allow-origin'), '*');
      const text = await res.text();
      assert.ok(text.endsWith('\n'), `${name}: every line ends with a newline`);
      const lines = text.split('\n').slice(0, -1).map((l) => JSON.parse(l));
      assert.equal(lines, JSON.parse(JSON.stringify(all)), `${name}: every event once, oldest first, as stored`);
      const since = NOW - 26 * HOUR;
      const filtered = await (await send('GET', `/api/events/export?type=pageload&version=1.0&since=${new Date(since).toISOString()}`, { headers: as('h') })).text();
      assert.equal(
        filtered.split('\n').slice(0, -1).map((l) => JSON.parse(l).id),
        all.filter((e) => e.type === 'pageload' && e.deployVersion === '1.0' && Date.parse(e.receivedAt) >= since).map((e) => e.id),
        name,
      );
      assert.ok(!text.includes('"other"'), `${name}: only the caller's events`);
      const none = await send('GET', '/api/events/export', { headers: as('nobody') });
      assert.is(none.status, 200);
      assert.is(await none.text(), '');
    } finally {
      await store.close();
    }
  }
  const { send } = app();
  assert.is((await send('GET', '/api/events/export')).status, 401);
  const bad = await send('GET', '/api/events/export?until=never', { headers: as('h') });
  assert.equal([bad.status, (await bad.json()).code], [400, 'invalid_range']);
});

test('developer query: the store applies the time window, so scanned counts only events in it (until inclusive)', async () => {
  const { send, all } = await withHistory();
  const since = NOW - 26 * HOUR, until = NOW - HOUR;
  const filter = { since: new Date(since).toISOString(), until: new Date(until).toISOString() };
  const res = await send('POST', '/api/developer/query', { headers: as('h'), body: { filter, groupBy: ['type'], metrics: ['count'] } });
  assert.is(res.status, 200);
  const out = await res.json();
  const inWindow = all.filter((e) => Date.parse(e.receivedAt) >= since && Date.parse(e.receivedAt) <= until);
  assert.is(inWindow.length, 20);
  assert.is(out.scanned, 20);
  assert.is(out.truncated, false);
  assert.is(out.rows.reduce((n: number, r: { count: number }) => n + r.count, 0), 20);
});

/** The memory store, with its export watched: how many batches it produced and whether it ended. */
function watched(capacity: number) {
  const store = createMemoryStore({ capacity });
  const seen = { batches: 0, ended: false };
  const wrapped: Store = {
    ...store,
    async *export(q: ExportQuery) {
      try {
        for await (const batch of store.export(q)) {
          seen.batches++;
          yield batch;
        }
      } finally {
        seen.ended = true;
      }
    },
  };
  return { store: wrapped, seen };
}

async function fill(store: Store, user: string, n: number) {
  const { send } = app({ store });
  for (let i = 0; i < n; i += 500) {
    await send('POST', '/api/events', { body: { events: Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ type: 'click', id: `e-${i + j}`, userId: user })) } });
  }
}

test('export: the next batch is read from the store only when the client reads (backpressure)', async () => {
  const { store, seen } = watched(20_000);
  await fill(store, 'bp', 12_000);
  const { send } = app({ store });
  const res = await send('GET', '/api/events/export', { headers: as('bp') });
  const reader = res.body!.getReader();
  await new Promise((r) => setTimeout(r, 0));
  assert.is(seen.batches, 1, 'only the first batch before the answer');
  let lines = 0;
  for (let reads = 1; ; reads++) {
    const { done, value } = await reader.read();
    if (done) break;
    lines += new TextDecoder().decode(value).split('\n').length - 1;
    // A turn of the event loop, in which a body that reads ahead would pull more batches; this one
    // does not: each read pulled at most one.
    await new Promise((r) => setTimeout(r, 0));
    assert.ok(seen.batches <= reads, `${seen.batches} batches after ${reads} reads`);
  }
  assert.is(lines, 12_000);
  assert.is(seen.batches, 12);
  assert.ok(seen.ended);
});

test('export: cancelling the body mid-way stops the store\'s iteration', async () => {
  const { store, seen } = watched(20_000);
  await fill(store, 'cx', 10_000);
  const { send } = app({ store });
  const reader = (await send('GET', '/api/events/export', { headers: as('cx') })).body!.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel();
  assert.ok(seen.ended, 'the store iteration ended');
  assert.is(seen.batches, 2, 'no batch was read after the cancel');
});

test('export over real HTTP: a client that goes away stops the store\'s iteration', async () => {
  const { store, seen } = watched(50_000);
  await fill(store, 'gone', 50_000);
  const handler = createHandler({ store, log: () => {} });
  const server: Server = createServer(toNodeListener(handler));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    const abort = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/api/events/export`, { headers: as('gone'), signal: abort.signal });
    assert.is(res.status, 200);
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.cancel().catch(() => {});
    // The server notices the closed connection and cancels the body; wait for that, bounded.
    for (let i = 0; i < 200 && !seen.ended; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok(seen.ended, 'the store iteration ended when the client went away');
    assert.ok(seen.batches < 50, `stopped early: ${seen.batches} of 50 batches read`);
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
});

test('export of 200,000 events (~230 MB of NDJSON) keeps the live heap bounded while a slow client reads', async () => {
  const [cmd, args] = typeof Deno !== 'undefined'
    ? [Deno.execPath(), ['run', '--allow-all', '--no-prompt', '--v8-flags=--expose-gc', 'test/helpers/export-memory.ts']]
    : [process.execPath, ['--expose-gc', '--import', 'tsx', 'test/helpers/export-memory.ts']];
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, EXPORT_EVENTS: '200000' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (err += c));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  assert.is(code, 0, err);
  const { bytes, lines, maxGrowth } = JSON.parse(out.trim().split('\n').pop()!) as { bytes: number; lines: number; maxGrowth: number };
  assert.is(lines, 200_000);
  // Holding the export (or reading it ahead) would add at least its size, ~230 MB; streaming it
  // holds a batch or two (a few MB).
  const BOUND = 32 * 1024 * 1024;
  assert.ok(bytes > 6 * BOUND, `the export (${bytes} bytes) is far larger than the bound`);
  assert.ok(maxGrowth < BOUND, `live heap grew by ${(maxGrowth / 1048576).toFixed(1)} MiB during the export`);
});

test.run();
