// Hardening: rate limiting, clock drift, SSE framing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRateLimiter } from '../lib/ratelimit.ts';
import { app, readUntil } from './helpers/app.ts';

test('token bucket: burst, then refill at the rate; 0 disables', () => {
  const limiter = createRateLimiter({ rate: 10, burst: 3 });
  const t = 1_000_000;
  assert.equal([limiter.take('a', t), limiter.take('a', t), limiter.take('a', t)], [0, 0, 0]);
  assert.is(limiter.take('a', t), 1, 'empty bucket: wait about a second');
  assert.is(limiter.take('b', t), 0, 'other clients are not affected');
  assert.is(limiter.take('a', t + 100), 0, 'one token back after 1/rate s');
  assert.is(limiter.take('a', t + 100), 1);
  const off = createRateLimiter({ rate: 0, burst: 1 });
  for (let i = 0; i < 100; i++) assert.is(off.take('a', t), 0);
});

test('token bucket: tracked clients stay bounded', () => {
  const limiter = createRateLimiter({ rate: 1, burst: 1, maxClients: 100 });
  for (let i = 0; i < 1000; i++) limiter.take(`c${i}`, i);
  assert.ok(limiter.size <= 100, String(limiter.size));
});

test('ingestion over the limit is 429 with Retry-After; service returns when load drops', async () => {
  let now = 5_000_000;
  const { handler } = app({ rateLimit: { rate: 2, burst: 2 }, now: () => now });
  const info = { remoteAddr: { hostname: '10.0.0.7' } };
  const post = () => handler(new Request('http://x/api/events', { method: 'POST', body: '{"type":"x"}' }), info);
  assert.is((await post()).status, 200);
  assert.is((await post()).status, 200);
  const limited = await post();
  assert.is(limited.status, 429);
  assert.is(limited.headers.get('retry-after'), '1');
  assert.is(limited.headers.get('access-control-expose-headers'), 'Retry-After', 'a cross-origin SDK can read when to retry');
  assert.is((await limited.json()).code, 'rate_limited');
  const ok = await handler(new Request('http://x/api/events', { method: 'POST', body: '{"type":"x"}' }), { remoteAddr: { hostname: '10.0.0.9' } });
  assert.is(ok.headers.get('access-control-allow-origin'), '*');
  assert.is(ok.headers.get('access-control-expose-headers'), null, 'nothing beyond the CORS-safelisted headers to expose');
  const other = await handler(new Request('http://x/api/events', { method: 'POST', body: '{"type":"x"}' }), { remoteAddr: { hostname: '10.0.0.8' } });
  assert.is(other.status, 200);
  now += 1000;
  assert.is((await post()).status, 200);
});

test('X-Forwarded-For is used only when the proxy is trusted', async () => {
  const trusting = app({ rateLimit: { rate: 1, burst: 1 }, trustProxy: true });
  const post = (h: typeof trusting.handler, ip: string) =>
    h(new Request('http://x/api/events', { method: 'POST', body: '{"type":"x"}', headers: { 'x-forwarded-for': `${ip}, 10.0.0.1` } }), { remoteAddr: { hostname: '10.0.0.1' } });
  assert.is((await post(trusting.handler, '1.1.1.1')).status, 200);
  assert.is((await post(trusting.handler, '2.2.2.2')).status, 200);
  const plain = app({ rateLimit: { rate: 1, burst: 1 } });
  assert.is((await post(plain.handler, '1.1.1.1')).status, 200);
  assert.is((await post(plain.handler, '2.2.2.2')).status, 429, 'a spoofed header does not buy a new bucket');
});

test('sentAt corrects client clock drift; a clock far ahead is still capped', async () => {
  const now = Date.parse('2026-05-16T12:00:00.000Z');
  const { send, as } = app({ now: () => now });
  const stored = async (body: unknown) => {
    await send('POST', '/api/events', { body });
    return (await (await send('GET', '/api/events?limit=1', { headers: as('u1') })).json()).events[0].timestamp;
  };
  const x = (timestamp: string) => ({ type: 'x', userId: 'u1', timestamp });
  // The device clock is 1 h ahead: it says it sent at 13:00 an event of 12:59:50.
  assert.is(await stored({ sentAt: '2026-05-16T13:00:00.000Z', events: [x('2026-05-16T12:59:50.000Z')] }), '2026-05-16T11:59:50.000Z');
  assert.is(await stored({ events: [x('2026-05-16T12:59:50.000Z')] }), '2026-05-16T12:59:50.000Z');
  assert.is(await stored({ events: [x('2026-05-18T12:00:00.000Z')] }), '2026-05-16T12:00:00.000Z', 'more than 24 h ahead: server time');
  assert.is(await stored({ sentAt: 'soon', events: [x('2026-05-16T11:00:00.000Z')] }), '2026-05-16T11:00:00.000Z', 'an unparseable sentAt is ignored');
});

test('SSE: CR/LF in any field can never split an SSE field', async () => {
  const { send } = app();
  const reader = (await send('GET', '/api/events/stream')).body!.getReader();
  await readUntil(reader, ': connected');
  await send('POST', '/api/events', { body: { type: 'error', id: 'crlf', message: 'line1\r\nevent: fake\r\ndata: injected\n\nid: 9', data: { stack: 'a\rb\nc' } } });
  const text = await readUntil(reader, '\n\n');
  const lines = text.split(/\r\n|\r|\n/).filter(Boolean);
  assert.is(lines.length, 1, text);
  assert.ok(lines[0].startsWith('data: '));
  assert.is(JSON.parse(lines[0].slice(6))[0].message, 'line1\r\nevent: fake\r\ndata: injected\n\nid: 9');
  await reader.cancel();
});

test.run();
