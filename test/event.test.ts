import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { clientTimestamp, normalise, uuidv7, type RawEvent } from '../lib/event.ts';

const now = Date.parse('2026-05-16T12:00:00.000Z');

test('normalise: snake_case aliases fold into both shapes', () => {
  const e = normalise({ type: 'pageload', session_id: 's1', app_version: '1.2.0', page_url: 'https://a.test/x' }, { now, owner: 'u1' });
  assert.is(e.sessionId, 's1');
  assert.is(e.session_id, 's1');
  assert.is(e.deployVersion, '1.2.0');
  assert.is(e.app_version, '1.2.0');
  assert.is(e.url, 'https://a.test/x');
  assert.is(e.page_url, 'https://a.test/x');
  assert.is(e.user_id, 'u1');
  assert.is(e.receivedAt, '2026-05-16T12:00:00.000Z');
  assert.is(e.received_at, e.receivedAt);
  assert.is(e.timestamp, e.receivedAt, 'server time when the client sent none');
  assert.not.ok('session_id' in { ...e, session_id: undefined } && e.session_id === undefined);
});

test('normalise: generated id is a UUIDv7; a client id is kept', () => {
  const generated = normalise({ type: 'click' }, { now, owner: null });
  assert.ok(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(generated.id), generated.id);
  assert.is(normalise({ type: 'click', id: 'abc' }, { now, owner: null }).id, 'abc');
  assert.is.not(generated.id, normalise({ type: 'click' }, { now, owner: null }).id);
});

test('normalise: camelCase wins over snake_case; appVersion and deployVersion', () => {
  const e = normalise({ type: 'x', sessionId: 'camel', session_id: 'snake', appVersion: '2', app_version: '3' }, { now, owner: null });
  assert.is(e.sessionId, 'camel');
  assert.is(e.deployVersion, '2');
  assert.is(normalise({ type: 'x', deployVersion: '1', appVersion: '2' }, { now, owner: null }).deployVersion, '1');
});

test('normalise: severity defaults to critical for errors only; explicit severity kept', () => {
  assert.is(normalise({ type: 'error' }, { now, owner: null }).severity, 'critical');
  assert.is(normalise({ type: 'error', severity: 'warning' }, { now, owner: null }).severity, 'warning');
  assert.is(normalise({ type: 'click' }, { now, owner: null }).severity, null);
});

test('normalise: message and source lifted from data', () => {
  const e = normalise({ type: 'error', data: { message: 'boom', source: 'app.js', line: 3 } }, { now, owner: null });
  assert.is(e.message, 'boom');
  assert.is(e.source, 'app.js');
  assert.equal(e.data, { message: 'boom', source: 'app.js', line: 3 });
  const top = normalise({ type: 'error', message: 'top', data: { message: 'inner' } }, { now, owner: null });
  assert.is(top.message, 'top');
});

test('normalise: page_url from route when no url; custom fields kept', () => {
  const e = normalise({ type: 'pageload', route: '/home', plan: 'pro' }, { now, owner: null });
  assert.is(e.page_url, '/home');
  assert.is(e.url, null);
  assert.is(e.route, '/home');
  assert.is(e.plan, 'pro');
  assert.equal(e.data, {});
});

test('normalise: a client timestamp is kept, normalised to ISO; far future replaced', () => {
  assert.is(normalise({ type: 'x', timestamp: '2026-05-16T11:00:00+01:00' }, { now, owner: null }).timestamp, '2026-05-16T10:00:00.000Z');
  const future = new Date(now + 25 * 3600e3).toISOString();
  assert.is(normalise({ type: 'x', timestamp: future }, { now, owner: null }).timestamp, new Date(now).toISOString());
  const soon = new Date(now + 23 * 3600e3).toISOString();
  assert.is(clientTimestamp(soon, now), soon);
  assert.is(clientTimestamp('yesterday', now), null);
  assert.is(clientTimestamp(42, now), null);
});

test('clientTimestamp: canonical strings compared as text answer as parsing them would', () => {
  // Reference: parse, refuse past the skew, format. The fast path must agree on any canonical-looking input.
  const reference = (value: string, at: number) => {
    const t = Date.parse(value);
    return !Number.isFinite(t) || t - at > 24 * 3600e3 ? null : new Date(t).toISOString();
  };
  const digits = (n: number, max: number) => fc.integer({ min: 0, max }).map((x) => String(x).padStart(n, '0'));
  const canonicalLike = fc
    .tuple(digits(4, 9999), digits(2, 19), digits(2, 39), digits(2, 29), digits(2, 69), digits(2, 69), digits(3, 999))
    .map(([y, mo, d, h, mi, s, ms]) => `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
  const near = fc.integer({ min: -48 * 3600e3, max: 48 * 3600e3 }).map((delta) => new Date(now + delta).toISOString());
  fc.assert(
    fc.property(fc.oneof(canonicalLike, near), (value) => {
      const expected = reference(value, now);
      const got = clientTimestamp(value, now);
      // Calendar overflow (Feb 30) is kept as sent rather than rolled over, as it always was.
      if (expected !== null && got !== null && expected !== value) assert.is(got, value, value);
      else assert.is(got, expected, value);
    }),
    { numRuns: 3000 },
  );
  assert.is(clientTimestamp('2026-05-16T24:00:00.000Z', now), '2026-05-17T00:00:00.000Z', 'hour 24 is parsed and formatted');
});

test('normalise: the owner is what the caller resolved, not the payload', () => {
  const e = normalise({ type: 'x', userId: 'claimed', user_id: 'other' }, { now, owner: 'real' });
  assert.is(e.user_id, 'real');
  assert.is(e.userId, 'claimed', 'the original payload field is kept as sent');
});

test('uuidv7: ids sort by time', () => {
  assert.ok(uuidv7(1000) < uuidv7(2000));
  assert.is(uuidv7(0).slice(0, 13), '00000000-0000');
});

test('normalise: a custom field named __proto__ is dropped and cannot change the stored event', () => {
  const raw = JSON.parse('{"type":"custom","__proto__":{"polluted":true},"kept":1}') as RawEvent;
  const e = normalise(raw, { now: 0, owner: null });
  assert.is(Object.getPrototypeOf(e), Object.prototype);
  assert.is((e as Record<string, unknown>).polluted, undefined);
  assert.is(e.kept, 1);
  assert.not.ok(Object.hasOwn(e, '__proto__'));
});

test('normalise: a client cannot claim a project (projectId is set by the server from a key only)', () => {
  const e = normalise({ type: 'custom', projectId: '1', kept: 1 } as unknown as RawEvent, { now: 0, owner: 'u' });
  assert.not.ok(Object.hasOwn(e, 'projectId'));
  assert.is(e.kept, 1);
});

test.run();
