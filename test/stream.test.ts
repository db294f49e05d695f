// The live stream (docs/api.md#stream, #sse-framing), through the handler and directly on the hub.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHub, MAX_STREAMS_PER_PARTY } from '../lib/hub.ts';
import { normalise } from '../lib/event.ts';
import { app, dataFrames, readUntil } from './helpers/app.ts';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('headers at once, one data: line of a JSON array per broadcast', async () => {
  const { send, handler } = app();
  const res = await send('GET', '/api/events/stream');
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  assert.is(res.headers.get('cache-control'), 'no-cache');
  assert.is(res.headers.get('connection'), 'keep-alive');
  assert.is(res.headers.get('access-control-allow-origin'), '*');
  const reader = res.body!.getReader();
  await readUntil(reader, ': connected');
  assert.is(handler.hub.size, 1);
  await send('POST', '/api/events', { body: { events: [{ type: 'click', id: 'a' }, { type: 'error', id: 'b' }] } });
  const text = await readUntil(reader, '\n\n');
  const frames = dataFrames(text);
  assert.is(frames.length, 1);
  assert.equal((frames[0] as { id: string }[]).map((e) => e.id), ['a', 'b']);
  assert.match(text, /^data: \[.*\]\n\n$/m);
  await reader.cancel();
  assert.is(handler.hub.size, 0, 'subscriber removed on client disconnect');
});

test('stream scoping: identified subscribers get their own events, others only unowned', async () => {
  const { send, as } = app();
  const mine = (await send('GET', '/api/events/stream', { headers: as('u1') })).body!.getReader();
  const anon = (await send('GET', '/api/events/stream')).body!.getReader();
  await readUntil(mine, ': connected');
  await readUntil(anon, ': connected');
  await send('POST', '/api/events', { body: { events: [{ type: 'x', id: 'u1-event', userId: 'u1' }, { type: 'x', id: 'u2-event', userId: 'u2' }, { type: 'x', id: 'anon-event' }] } });
  await send('POST', '/api/events', { body: { type: 'x', id: 'last', userId: 'u1' } });
  const mineText = await readUntil(mine, 'last');
  assert.match(mineText, /u1-event/);
  assert.not.match(mineText, /u2-event|anon-event/);
  const anonText = await readUntil(anon, 'anon-event');
  assert.not.match(anonText, /u1-event|u2-event/);
  await mine.cancel();
  await anon.cancel();
});

test('a duplicate (retried) event is not broadcast twice', async () => {
  const { send } = app();
  const reader = (await send('GET', '/api/events/stream')).body!.getReader();
  await readUntil(reader, ': connected');
  await send('POST', '/api/events', { body: { type: 'x', id: 'dup' } });
  await send('POST', '/api/events', { body: { type: 'x', id: 'dup' } });
  await send('POST', '/api/events', { body: { type: 'x', id: 'next' } });
  const text = await readUntil(reader, 'next');
  assert.is(text.split('"dup"').length - 1, 1);
  await reader.cancel();
});

test('keep-alive comments are sent while a stream is idle', async () => {
  const hub = createHub({ keepAliveMs: 30 });
  const reader = hub.subscribe({ userId: null })!.getReader();
  const text = await readUntil(reader, ': keep-alive\n\n', 1000);
  assert.match(text, /^retry: \d+/);
  await reader.cancel();
  assert.is(hub.size, 0);
});

test('hub: one broadcast is encoded once per owner and coalesced per subscriber', async () => {
  const hub = createHub({ coalesceMs: 5 });
  const readers = Array.from({ length: 50 }, () => hub.subscribe({ userId: 'u' })!.getReader());
  for (const r of readers) await readUntil(r, ': connected');
  const now = Date.now();
  const originalStringify = JSON.stringify;
  let calls = 0;
  JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
    calls++;
    return originalStringify(...args);
  }) as typeof JSON.stringify;
  try {
    hub.publish([normalise({ type: 'a', id: '1' }, { now, owner: 'u' })]);
    hub.publish([normalise({ type: 'b', id: '2' }, { now, owner: 'u' })]);
  } finally {
    JSON.stringify = originalStringify;
  }
  assert.is(calls, 2, 'one encoding per broadcast, not one per subscriber');
  for (const r of readers) {
    const text = await readUntil(r, '"2"');
    assert.is(dataFrames(text).length, 2, 'two broadcasts stay two data: lines');
    await r.cancel();
  }
});

test('hub: a subscriber that stops reading is dropped without blocking others', async () => {
  const hub = createHub({ coalesceMs: 1, maxBacklogBytes: 10_000 });
  const stalled = hub.subscribe({ userId: null })!; // never read
  const reader = hub.subscribe({ userId: null })!.getReader();
  const now = Date.now();
  for (let i = 0; i < 50; i++) {
    hub.publish([normalise({ type: 'x', data: { pad: 'p'.repeat(500) } }, { now, owner: null })]);
    await tick(2);
    await reader.read();
  }
  assert.is(hub.size, 1, 'the stalled subscriber was dropped');
  await reader.cancel();
  await stalled.cancel().catch(() => {});
});

test('hub: the stream cap answers 503', async () => {
  const { send, handler } = app({ hub: createHub({ maxSubscribers: 1 }) });
  const first = await send('GET', '/api/events/stream');
  const second = await send('GET', '/api/events/stream');
  assert.is(second.status, 503);
  assert.ok(second.headers.get('retry-after'));
  await first.body!.cancel();
  assert.is(handler.hub.size, 0);
});

test('streams per user (or, unidentified, per client address) are bounded: 429 too_many_user_streams', async () => {
  assert.is(createHub().maxPerParty, MAX_STREAMS_PER_PARTY);
  assert.is(MAX_STREAMS_PER_PARTY, 100);
  const { handler, as } = app({ hub: createHub({ maxPerParty: 2 }) });
  const open = (path: string, headers: Record<string, string> = {}, address = '10.0.0.1') =>
    handler(new Request(`http://x${path}`, { headers }), { remoteAddr: { hostname: address } });
  const mine = [await open('/api/events/stream', as('u1')), await open('/api/developer/stream', as('u1'))];
  assert.equal(mine.map((r) => r.status), [200, 200]);
  for (const path of ['/api/events/stream', '/api/developer/stream']) {
    const refused = await open(path, as('u1'), '10.0.0.9');
    assert.is(refused.status, 429, path);
    assert.is(refused.headers.get('retry-after'), '10');
    const body = await refused.json();
    assert.is(body.code, 'too_many_user_streams');
    assert.match(body.error, /This user already has 2 open live streams/);
  }
  const other = await open('/api/events/stream', as('u2'));
  assert.is(other.status, 200, "another user's streams are not counted with u1's");
  // Nobody identified: counted per client address.
  const anon = [await open('/api/events/stream'), await open('/api/events/stream')];
  const third = await open('/api/events/stream');
  assert.equal([third.status, (await third.json()).code], [429, 'too_many_user_streams']);
  const elsewhere = await open('/api/events/stream', {}, '10.0.0.2');
  assert.is(elsewhere.status, 200);
  // A stream closed frees its place.
  await mine[0].body!.cancel();
  const again = await open('/api/events/stream', as('u1'));
  assert.is(again.status, 200);
  for (const r of [mine[1], other, ...anon, elsewhere, again]) await r.body!.cancel();
  assert.is(handler.hub.size, 0);
});

test('hub: a stream closes when its credentials expire, with an expired event', async () => {
  const hub = createHub();
  const reader = hub.subscribe({ userId: 'u', closeAt: Date.now() + 80 })!.getReader();
  const text = await readUntil(reader, 'event: expired', 2000);
  assert.match(text, /data: \{"reason":"token expired"\}/);
  assert.is((await reader.read()).done, true);
  assert.is(hub.size, 0);
});

test('hub: close ends every stream', async () => {
  const hub = createHub();
  const reader = hub.subscribe({ userId: null })!.getReader();
  await readUntil(reader, ': connected');
  hub.close();
  assert.is((await reader.read()).done, true);
});

test.run();
