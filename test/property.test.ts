// Property tests: whatever arrives at the ingest endpoints, the answer is a 2xx/4xx, never a 5xx,
// the counts add up, and what was accepted reads back unchanged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { app } from './helpers/app.ts';
import { tempSqliteStore } from './helpers/stores.ts';

const ALLOWED = new Set([200, 400, 413, 415, 429]);
const RUNS = Number(process.env.WATCHTOWER_PROPERTY_RUNS ?? 150);

const field = fc.oneof(fc.string(), fc.constantFrom('', null), fc.integer(), fc.boolean(), fc.object(), fc.array(fc.anything()));
const eventLike = fc.record(
  {
    type: fc.oneof(fc.constantFrom('pageload', 'error', 'click', 'feedback', 'custom', ''), fc.string(), fc.integer()),
    id: fc.oneof(fc.uuid(), fc.string({ maxLength: 200 })),
    timestamp: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.string()),
    sessionId: field,
    session_id: field,
    deployVersion: field,
    userId: fc.constantFrom('u1', 'u2', '', 'x'.repeat(300)),
    url: field,
    route: field,
    message: field,
    data: fc.oneof(fc.object(), fc.constant(null), fc.array(fc.integer()), fc.string()),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  eventLike.map((e) => JSON.stringify(e)),
  fc.array(fc.oneof(eventLike, fc.anything()), { maxLength: 30 }).map((events) => JSON.stringify({ events })),
  fc.anything().map((v) => JSON.stringify(v) ?? 'undefined'),
  fc.string(),
  fc.uint8Array({ maxLength: 200 }).map((b) => new TextDecoder().decode(b)),
);
const contentType = fc.constantFrom(undefined, 'application/json', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/vnd.api+json', '');
const encoding = fc.constantFrom(undefined, 'gzip', 'identity', 'br', 'GZIP');

test('any body, content type and encoding: never a 5xx', async () => {
  const { handler } = app({ rateLimit: { rate: 0, burst: 1 } });
  await fc.assert(
    fc.asyncProperty(body, contentType, encoding, fc.constantFrom('/api/events', '/api/beacon'), async (text, type, enc, path) => {
      const headers: Record<string, string> = {};
      if (type !== undefined) headers['content-type'] = type;
      if (enc !== undefined) headers['content-encoding'] = enc;
      const payload = enc?.toLowerCase() === 'gzip' ? gzipSync(text) : text;
      const res = await handler(new Request(`http://x${path}`, { method: 'POST', body: payload, headers }));
      const out = await res.json();
      if (!ALLOWED.has(res.status)) throw new Error(`status ${res.status} for ${JSON.stringify(text).slice(0, 200)}: ${JSON.stringify(out)}`);
      if (res.status !== 200) assert.type(out.error, 'string');
    }),
    { numRuns: RUNS },
  );
});

test('accepted + rejected equals the batch size, and accepted events read back unchanged', async () => {
  // A persisted store, whose answer carries the stored events (docs/api.md#ingest): one store for every
  // run, each run's owners its own, so runs cannot see each other's events.
  const store = await tempSqliteStore();
  const { send, as } = app({ store, rateLimit: { rate: 0, burst: 1 } });
  let run = 0;
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(eventLike, fc.anything()), { minLength: 1, maxLength: 40 }), async (events) => {
        const owner = (user: string) => `r${run}-${user}`;
        run++;
        const batch = events.map((e) => (isRecord(e) && (e.userId === 'u1' || e.userId === 'u2') ? { ...e, userId: owner(e.userId) } : e));
        const res = await send('POST', '/api/events', { body: { events: batch } });
        assert.is(res.status, 200);
        const out = await res.json();
        assert.is(out.accepted + out.rejected, events.length);
        assert.is(out.events.length, out.accepted);
        for (const user of ['u1', 'u2'].map(owner)) {
          const mine = out.events.filter((e: { user_id: string }) => e.user_id === user);
          const read = (await (await send('GET', '/api/events?limit=1000', { headers: as(user) })).json()).events;
          // Read back most recent first; a retried id within the batch is stored once (the first).
          const firstById = new Map<string, unknown>();
          for (const e of mine) if (!firstById.has(e.id)) firstById.set(e.id, e);
          assert.equal(read, [...firstById.values()].reverse());
        }
      }),
      { numRuns: Math.max(20, RUNS / 3) },
    );
  } finally {
    await store.close();
  }
});

test('the base behaviour answers with the counts only, and they add up', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.oneof(eventLike, fc.anything()), { minLength: 1, maxLength: 40 }), async (events) => {
      const { send, store } = app({ rateLimit: { rate: 0, burst: 1 } });
      const out = await (await send('POST', '/api/events', { body: { events } })).json();
      assert.equal(Object.keys(out), ['accepted', 'rejected']);
      assert.is(out.accepted + out.rejected, events.length);
      assert.ok((await store.health()).eventCount <= out.accepted, 'a retried id within the batch is stored once');
    }),
    { numRuns: Math.max(20, RUNS / 3) },
  );
});

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

test.run();
