import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import * as v from 'valibot';
import { HttpError } from '../lib/http.ts';
import { batchItems, EventEnvelope, isEnvelope, MAX_BATCH, MAX_EVENT_BYTES, parseEventsQuery, parseIsoTime, parseStatsQuery, parseUserSync, validateEvents } from '../lib/schema.ts';

const check = (item: unknown) => validateEvents([item], 10).valid.length === 1;

test('envelope: type is a non-empty string of at most 64 characters', () => {
  assert.ok(check({ type: 'click' }));
  assert.ok(check({ type: 'my_custom_thing' }), 'the server is permissive about type values');
  assert.not.ok(check({}));
  assert.not.ok(check({ type: '' }));
  assert.not.ok(check({ type: '   ' }));
  assert.not.ok(check({ type: 42 }));
  assert.not.ok(check({ type: 'x'.repeat(65) }));
  assert.ok(check({ type: 'x'.repeat(64) }));
});

test('envelope: not an object is rejected', () => {
  for (const item of [null, 1, 'click', [], true]) assert.not.ok(check(item), JSON.stringify(item));
});

test('envelope: named fields must be strings of sane length; null means absent', () => {
  assert.ok(check({ type: 'x', sessionId: 's', session_id: null, deployVersion: '1.0', userId: 'u', appName: 'a', url: 'https://x' }));
  assert.not.ok(check({ type: 'x', sessionId: 5 }));
  assert.not.ok(check({ type: 'x', userId: { id: 1 } }));
  assert.not.ok(check({ type: 'x', id: 'i'.repeat(129) }));
  assert.not.ok(check({ type: 'x', url: 'u'.repeat(2049) }));
  assert.not.ok(check({ type: 'x', deployVersion: 1.2 }));
});

test('envelope: timestamp must be a parseable ISO 8601 string', () => {
  assert.ok(check({ type: 'x', timestamp: '2026-05-16T12:00:00Z' }));
  assert.ok(check({ type: 'x', timestamp: '2026-05-16T12:00:00.123+02:00' }));
  assert.ok(check({ type: 'x', timestamp: '2026-05-16' }));
  assert.not.ok(check({ type: 'x', timestamp: 'yesterday' }));
  assert.not.ok(check({ type: 'x', timestamp: '2026-13-45T99:00:00Z' }));
  assert.not.ok(check({ type: 'x', timestamp: 1747396800000 }));
});

test('envelope: data must be an object when present', () => {
  assert.ok(check({ type: 'x', data: { a: 1 } }));
  assert.ok(check({ type: 'x', data: null }));
  assert.not.ok(check({ type: 'x', data: [1, 2] }));
  assert.not.ok(check({ type: 'x', data: 'text' }));
});

test('envelope: the hand-written check agrees with the valibot schema on any input', () => {
  // Values near every limit, of every JSON type, so both sides of each rule are exercised.
  const near = (max: number) => fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: max - 1, max: max + 1 }).map((n) => 'a'.repeat(n)));
  const anyValue = fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer(), fc.boolean(), fc.object({ maxDepth: 1 }), fc.array(fc.integer(), { maxLength: 2 }));
  const text = (max: number) => fc.oneof(near(max), anyValue);
  const event = fc.record(
    {
      type: fc.oneof(fc.constantFrom('click', ' click ', '', '   ', '\tx\n'), near(64), fc.integer({ min: 60, max: 70 }).map((n) => ' ' + 'x'.repeat(n) + ' '), anyValue),
      timestamp: fc.oneof(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        fc.constantFrom('2026-05-16', '2026-05-16T12:00:00Z', '2026-05-16 12:00', '2026-13-45T99:00:00Z', 'yesterday', '2026-05-16T12:00:00.1234567890Z', '2026-05-16T12:00:00+0200'),
        fc.string({ maxLength: 45 }),
        anyValue,
      ),
      id: text(128), sessionId: text(128), session_id: text(128), deployVersion: text(64), appVersion: text(64), app_version: text(64),
      userId: text(256), appName: text(128), url: text(2048), pageUrl: text(2048), page_url: text(2048), route: text(2048),
      source: text(2048), message: text(8192), severity: text(32),
      data: fc.oneof(fc.object({ maxDepth: 1 }), anyValue, fc.string()),
      custom: fc.anything({ maxDepth: 1 }),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(fc.oneof(event, fc.anything({ maxDepth: 1 })), (item) => {
      const ok = v.safeParse(EventEnvelope, item).success;
      assert.is(isEnvelope(item), ok, JSON.stringify(item));
      // valibot assigns each key of its output, so an own `__proto__` field (fast-check makes them,
      // as JSON.parse does) sets the output's prototype there; the hot path keeps the object parsed,
      // and normalise() drops that field (test/event.test.ts).
      // Compared as plain objects: fast-check also makes objects with a null prototype, which the hot
      // path passes on as they are and valibot copies into an ordinary object.
      if (ok && !Object.hasOwn(item as object, '__proto__')) {
        assert.equal({ ...validateEvents([item], 10).valid[0] }, { ...v.parse(EventEnvelope, item) }, 'same output: type trimmed, custom fields kept');
      }
    }),
    { numRuns: 3000 },
  );
});

test('envelope: an event over 64 KiB is rejected', () => {
  const big = { type: 'x', data: { blob: 'b'.repeat(MAX_EVENT_BYTES) } };
  assert.is(validateEvents([big], MAX_EVENT_BYTES * 2).rejected, 1);
  const fits = { type: 'x', data: { blob: 'b'.repeat(MAX_EVENT_BYTES - 100) } };
  assert.is(validateEvents([fits], MAX_EVENT_BYTES * 2).rejected, 0);
});

test('validateEvents: counts accepted and rejected; empty batch', () => {
  const r = validateEvents([{ type: 'a' }, { nope: 1 }, { type: 'b' }, null], 100);
  assert.is(r.valid.length, 2);
  assert.is(r.rejected, 2);
  assert.equal(validateEvents([], 0), { valid: [], rejected: 0 });
});

test('batchItems: single event, batch, and bodies that are neither', () => {
  assert.equal(batchItems({ type: 'x' }), [{ type: 'x' }]);
  assert.equal(batchItems({ events: [{ type: 'x' }, 1] }), [{ type: 'x' }, 1]);
  for (const body of [null, 5, 'str', [{ type: 'x' }], { events: 'nope' }]) {
    try {
      batchItems(body);
      assert.unreachable();
    } catch (err) {
      assert.instance(err, HttpError);
      assert.is((err as HttpError).status, 400);
    }
  }
});

test('batchItems: more than 500 events is a 413', () => {
  assert.is(batchItems({ events: new Array(MAX_BATCH).fill({ type: 'x' }) }).length, MAX_BATCH);
  try {
    batchItems({ events: new Array(MAX_BATCH + 1).fill({ type: 'x' }) });
    assert.unreachable();
  } catch (err) {
    assert.is((err as HttpError).status, 413);
  }
});

test('events query: defaults, bounds and bad values', () => {
  assert.equal(parseEventsQuery(new URLSearchParams('')), { limit: 100 });
  assert.equal(parseEventsQuery(new URLSearchParams('type=error&version=1.2&limit=5')), { type: 'error', version: '1.2', limit: 5 });
  for (const q of ['limit=0', 'limit=abc', 'limit=1001', 'limit=-3', 'limit=2.5', `type=${'t'.repeat(65)}`]) {
    try {
      parseEventsQuery(new URLSearchParams(q));
      assert.unreachable(q);
    } catch (err) {
      assert.is((err as HttpError).status, 400, q);
    }
  }
});

test('events query: since and until in ms, before kept as given', () => {
  assert.equal(parseEventsQuery(new URLSearchParams('since=2026-05-16&until=2026-05-16T12:30:00.250Z&before=AQAAAAAAAAAq')), {
    limit: 100, since: Date.parse('2026-05-16T00:00:00Z'), until: Date.parse('2026-05-16T12:30:00.250Z'), before: 'AQAAAAAAAAAq',
  });
  const code = (q: string) => {
    try {
      parseEventsQuery(new URLSearchParams(q));
      return 'accepted';
    } catch (err) {
      return (err as HttpError).code;
    }
  };
  assert.is(code('since=2026-05-16&until=2026-05-16'), 'invalid_range');
  assert.is(code('until=tomorrow'), 'invalid_range');
  assert.is(code('before=a%20b'), 'invalid_cursor');
  assert.is(code(`before=${'a'.repeat(65)}`), 'invalid_cursor');
});

test('ISO times: every field checked, UTC without an offset, offsets honoured', () => {
  const utc = Date.parse('2026-05-16T12:34:56.789Z');
  for (const text of ['2026-05-16T12:34:56.789Z', '2026-05-16T12:34:56.789', '2026-05-16t12:34:56.789z', '2026-05-16T14:34:56.789+02:00', '2026-05-16T11:04:56.789-0130', '2026-05-16T12:34:56.789123Z']) {
    assert.is(parseIsoTime(text), utc, text);
  }
  assert.is(parseIsoTime('2026-05-16'), Date.parse('2026-05-16T00:00:00Z'));
  assert.is(parseIsoTime('2024-02-29T23:59'), Date.parse('2024-02-29T23:59:00Z'));
  assert.is(parseIsoTime('0099-01-01'), Date.parse('0099-01-01T00:00:00Z'), 'a two-digit year is not 1999');
  for (const bad of ['2026-02-30', '2025-02-29', '2026-13-01', '2026-00-10', '2026-05-16T24:00', '2026-05-16T12:60', '2026-05-16T12:00:60',
    '2026-05-16T12:00+24:00', '2026-05-16 12:00', '16/05/2026', '1779000000000', '', `2026-05-16T12:00:00.${'1'.repeat(40)}Z`]) {
    assert.is(parseIsoTime(bad), null, bad);
  }
});

test('stats query: no parameters is no range; bad ranges are 400 invalid_range with the reason', () => {
  const now = Date.parse('2026-05-16T12:00:00Z');
  assert.is(parseStatsQuery(new URLSearchParams(''), now), undefined);
  assert.is(parseStatsQuery(new URLSearchParams('from=&to=&interval='), now), undefined);
  assert.equal(parseStatsQuery(new URLSearchParams('from=2026-05-15&interval=hour'), now), { from: Date.parse('2026-05-15T00:00:00Z'), to: undefined, interval: 'hour' });
  for (const [q, reason] of [['to=2026-05-16', /needs from/], ['from=2026-05-16T12:00Z', /before to/], ['from=2026-01-01&interval=hour', /buckets/],
    ['from=2026-05-15&interval=minute', /hour or day/], ['from=2026-5-15', /ISO 8601/]] as const) {
    try {
      parseStatsQuery(new URLSearchParams(q), now);
      assert.unreachable(q);
    } catch (err) {
      assert.is((err as HttpError).status, 400, q);
      assert.is((err as HttpError).code, 'invalid_range', q);
      assert.match((err as HttpError).message, reason, q);
    }
  }
});

test('users sync body', () => {
  assert.equal(parseUserSync({ idpUserId: 'u', email: 'a@b.c', displayName: 'A' }), { idpUserId: 'u', email: 'a@b.c', displayName: 'A' });
  assert.equal(parseUserSync({ idpUserId: 'u' }), { idpUserId: 'u', email: '', displayName: '' });
  assert.throws(() => parseUserSync({ email: 'x' }), (e: HttpError) => e.status === 400 && e.message.includes('idpUserId'));
});

test.run();
