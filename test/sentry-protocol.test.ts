// The Sentry protocol layer on its own (docs/sentry.md): envelope framing, authentication, the
// mapping to Watchtower events, and hostile input. What the real SDKs send is checked in
// sentry-node.test.ts and sentry-browser.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { HttpError, toErrorResponse, toResponse } from '../lib/http.ts';
import { spansToRaw, transactionToRaw } from '../lib/sentry/transaction.ts';
import { validateEvents } from '../lib/schema.ts';
import {
  envelopeToEvents, isoTimestamp, MAX_ENVELOPE_ITEMS, parseDsn, parseEnvelope, sentryAnswer, sentryAuth,
  sentryEventToRaw, SentryProtocolError, storeBodyToEvents,
} from '../lib/sentry/mod.ts';

const enc = new TextEncoder();
const bytes = (...parts: (string | Uint8Array)[]) => {
  const chunks = parts.map((p) => (typeof p === 'string' ? enc.encode(p) : p));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) (out.set(c, at), (at += c.length));
  return out;
};
const line = (v: unknown) => JSON.stringify(v) + '\n';
const EVENT_ID = '9ec79c33ec9942ab8353589fcb2e04dc';

/** Runs `fn`, expecting a SentryProtocolError; returns it. */
function refused(fn: () => unknown, status: number, code: string, message?: RegExp): SentryProtocolError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, SentryProtocolError);
    assert.instance(err, HttpError, 'an HttpError, so toErrorResponse answers it');
    const e = err as SentryProtocolError;
    assert.is(e.status, status);
    assert.is(e.code, code);
    if (message) assert.match(e.message, message);
    return e;
  }
  throw new assert.Assertion({ message: `expected ${status} ${code}, nothing was thrown`, generated: false, operator: 'throws', expects: code, actual: 'nothing' });
}

// --- Framing ---------------------------------------------------------------------------------

test('framing: items with and without length; length counts bytes of binary and multi-byte payloads', () => {
  const binary = new Uint8Array([0, 255, 10, 13, 10, 0xc3]);
  const unicode = JSON.stringify({ event_id: EVENT_ID, message: 'café 😀 €' });
  const env = parseEnvelope(bytes(
    line({ event_id: EVENT_ID, sent_at: '2026-05-16T12:00:00.000Z' }),
    line({ type: 'event' }), unicode, '\n',
    line({ type: 'attachment', length: binary.length, filename: 'dump.bin' }), binary, '\n',
    line({ type: 'event', length: enc.encode(unicode).length }), unicode, '\n',
    line({ type: 'client_report' }), '{"discarded_events":[]}',
  ));
  assert.is(env.header.event_id, EVENT_ID);
  assert.equal(env.items.map((i) => i.header.type), ['event', 'attachment', 'event', 'client_report']);
  assert.equal([...env.items[1].payload], [...binary], 'binary payload exact, newlines inside included');
  assert.is(new TextDecoder().decode(env.items[2].payload), unicode, 'length in bytes, not UTF-16 units');
  assert.ok(enc.encode(unicode).length > unicode.length, 'the payload has multi-byte characters');
  assert.is(new TextDecoder().decode(env.items[3].payload), '{"discarded_events":[]}', 'the last payload may end without a newline');
});

test('framing: a header alone, with or without its newline; a last item header without payload; blank lines between items', () => {
  assert.is(parseEnvelope(bytes('{}')).items.length, 0);
  assert.is(parseEnvelope(bytes('{}\n')).items.length, 0);
  const bare = parseEnvelope(bytes('{}\n{"type":"attachment"}'));
  assert.is(bare.items.length, 1);
  assert.is(bare.items[0].payload.length, 0);
  const spaced = parseEnvelope(bytes('{}\n', line({ type: 'session' }), '{}\n\n\n', line({ type: 'session' }), '{}\n'));
  assert.is(spaced.items.length, 2);
  const zero = parseEnvelope(bytes('{}\n', line({ type: 'attachment', length: 0 }), '\n', line({ type: 'event' }), '{}'));
  assert.equal(zero.items.map((i) => i.payload.length), [0, 2]);
});

test('framing: malformed envelopes are 400 invalid_envelope saying what is wrong', () => {
  refused(() => parseEnvelope(new Uint8Array(0)), 400, 'invalid_envelope', /Empty/);
  refused(() => parseEnvelope(bytes('not json\n{"type":"event"}\n{}')), 400, 'invalid_envelope', /envelope header/);
  refused(() => parseEnvelope(bytes('[1,2]\n')), 400, 'invalid_envelope', /envelope header/);
  refused(() => parseEnvelope(bytes('{}\n{type: event}\n{}')), 400, 'invalid_envelope', /Item 1: its header/);
  refused(() => parseEnvelope(bytes('{}\n{"length":2}\n{}')), 400, 'invalid_envelope', /"type"/);
  refused(() => parseEnvelope(bytes('{}\n', line({ type: 'session' }), '{}\n', '{"type":""}\n')), 400, 'invalid_envelope', /Item 2/);
  refused(() => parseEnvelope(bytes('{}\n', line({ type: 'attachment', length: 100 }), 'only ten b')), 400, 'invalid_envelope', /100 bytes but only 10 follow/);
  refused(() => parseEnvelope(bytes('{}\n', line({ type: 'attachment', length: 3 }), 'abcdef\n')), 400, 'invalid_envelope', /not followed by a newline/);
  for (const length of [-1, 1.5, '3', true, 2 ** 60]) {
    refused(() => parseEnvelope(bytes('{}\n', line({ type: 'attachment', length }), 'abc\n')), 400, 'invalid_envelope', /"length"/);
  }
});

test(`framing: more than ${MAX_ENVELOPE_ITEMS} items is 413 batch_too_large`, () => {
  const item = line({ type: 'session' }) + '{}\n';
  assert.is(parseEnvelope(bytes('{}\n', item.repeat(MAX_ENVELOPE_ITEMS))).items.length, MAX_ENVELOPE_ITEMS);
  refused(() => parseEnvelope(bytes('{}\n', item.repeat(MAX_ENVELOPE_ITEMS + 1))), 413, 'batch_too_large');
});

test('framing errors become a 400 JSON answer through toErrorResponse, like every client error', async () => {
  let err: unknown;
  try {
    parseEnvelope(bytes('{'));
  } catch (e) {
    err = e;
  }
  const answer = toErrorResponse(err, () => assert.unreachable('not logged as a bug'));
  assert.is(answer.status, 400);
  assert.equal(await answer.json(), { error: 'The envelope header (first line) is not a JSON object', code: 'invalid_envelope' });
});

test('hostile bytes: any input, and every truncation of a real envelope, parses or is a SentryProtocolError', () => {
  const real = bytes(
    line({ event_id: EVENT_ID }),
    line({ type: 'event' }), JSON.stringify({ exception: { values: [{ type: 'Error', value: 'x' }] } }), '\n',
    line({ type: 'attachment', length: 4 }), new Uint8Array([1, 10, 2, 3]), '\n',
    line({ type: 'user_report' }), JSON.stringify({ event_id: EVENT_ID, comments: 'hi' }), '\n',
  );
  const survives = (input: Uint8Array) => {
    try {
      envelopeToEvents(parseEnvelope(input));
    } catch (err) {
      if (!(err instanceof SentryProtocolError)) throw err;
    }
  };
  for (let cut = 0; cut <= real.length; cut++) survives(real.subarray(0, cut));
  fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (input) => survives(input)), { numRuns: 300 });
  const jsonish = fc.oneof(fc.json(), fc.constantFrom('{"type":"event"}', '{"type":"event","length":5}', '{}', '\n'));
  fc.assert(fc.property(fc.array(jsonish, { maxLength: 8 }), (lines) => survives(bytes(lines.join('\n')))), { numRuns: 300 });
});

// --- What an envelope yields ----------------------------------------------------------------

test('envelopeToEvents: events mapped, every other item type counted as skipped, unusable payloads rejected', () => {
  const skippedTypes = ['session', 'sessions', 'client_report', 'transaction', 'span', 'profile', 'profile_chunk', 'replay_event',
    'replay_recording', 'attachment', 'check_in', 'log', 'statsd', 'something_new'];
  const env = parseEnvelope(bytes(
    line({ event_id: EVENT_ID, sent_at: '2026-05-16T12:00:00.000Z' }),
    line({ type: 'event' }), JSON.stringify({ event_id: EVENT_ID, message: 'hello' }), '\n',
    ...skippedTypes.map((t) => line({ type: t }) + '{}\n'),
    line({ type: 'session' }), '{}\n',
    line({ type: 'event' }), 'not json\n',
    line({ type: 'feedback' }), '[1]\n',
    line({ type: 'event' }), JSON.stringify({ type: 'transaction', spans: [] }), '\n',
  ));
  const out = envelopeToEvents(env);
  assert.is(out.id, EVENT_ID);
  assert.is(out.sentAt, Date.parse('2026-05-16T12:00:00.000Z'));
  assert.is(out.events.length, 1);
  assert.is(out.events[0].message, 'hello');
  assert.is(out.rejected, 2);
  assert.equal(out.skipped, { ...Object.fromEntries(skippedTypes.map((t) => [t, 1])), session: 2, transaction: 2 });
});

test('envelopeToEvents: a "__proto__" item type is counted like any other, without touching prototypes', () => {
  const out = envelopeToEvents(parseEnvelope(bytes('{}\n', line({ type: '__proto__' }), '{}\n')));
  assert.ok(Object.hasOwn(out.skipped, '__proto__'));
  assert.is(Object.getPrototypeOf(out.skipped), Object.prototype);
  assert.is(out.id, null);
});

test('user_report (legacy feedback) → a feedback event linked to its error, with an id of its own', () => {
  const env = parseEnvelope(bytes(
    line({ event_id: EVENT_ID }),
    line({ type: 'event' }), JSON.stringify({ exception: { values: [{ type: 'Error', value: 'broke' }] } }), '\n',
    line({ type: 'user_report' }), JSON.stringify({ event_id: EVENT_ID, name: 'Ada', email: 'ada@example.com', comments: 'It broke.' }), '\n',
  ));
  const [error, report] = envelopeToEvents(env).events;
  assert.is(error.id, EVENT_ID, 'the event takes the envelope event_id when its payload has none');
  assert.equal(report, {
    type: 'feedback',
    id: `${EVENT_ID}-user-report`,
    message: 'It broke.',
    severity: 'info',
    data: { comment: 'It broke.', name: 'Ada', email: 'ada@example.com', associatedEventId: EVENT_ID },
  });
  const orphan = envelopeToEvents(parseEnvelope(bytes('{}\n', line({ type: 'user_report' }), '{"comments":"x"}\n')));
  assert.is(orphan.events.length, 0);
  assert.is(orphan.rejected, 1, 'a report about no event is rejected');
});

// --- Mapping ---------------------------------------------------------------------------------

const exceptionEvent = (extra: Record<string, unknown> = {}) => ({
  event_id: EVENT_ID,
  timestamp: 1778932800.25,
  level: 'error',
  release: 'shop@1.4.0',
  environment: 'production',
  transaction: '/checkout',
  request: { url: 'https://shop.example.com/checkout?token=SECRET#step2', headers: { 'User-Agent': 'Firefox/140' } },
  user: { id: 'customer-1', email: 'c@example.com' },
  tags: { region: 'eu' },
  fingerprint: ['{{ default }}', 'checkout'],
  sdk: { name: 'sentry.javascript.browser', version: '11.12.0', integrations: ['a'], packages: [] },
  exception: {
    values: [
      { type: 'SyntaxError', value: 'bad json', stacktrace: { frames: [{ function: 'parse', filename: 'https://shop.example.com/app.js', lineno: 3, colno: 9 }] } },
      {
        type: 'TypeError',
        value: "Cannot read properties of undefined (reading 'total')",
        mechanism: { type: 'onerror', handled: false },
        stacktrace: {
          frames: [
            { function: '?', filename: 'https://shop.example.com/app.js', lineno: 10, colno: 1, in_app: true },
            { function: 'checkout', filename: 'https://shop.example.com/app.js', lineno: 88, colno: 14, in_app: true },
            { function: 'Array.map', filename: 'https://cdn.example.com/vendor.js', lineno: 1, colno: 500, in_app: false },
          ],
        },
      },
    ],
  },
  ...extra,
});

test('an exception event: the thrown error (last value) titles it, the innermost in-app frame locates it, causes follow', () => {
  const raw = sentryEventToRaw(exceptionEvent()) as Record<string, any>;
  assert.is(raw.type, 'error');
  assert.is(raw.id, EVENT_ID);
  assert.is(raw.timestamp, '2026-05-16T12:00:00.250Z');
  assert.is(raw.message, "TypeError: Cannot read properties of undefined (reading 'total')");
  assert.is(raw.severity, 'error');
  assert.is(raw.deployVersion, 'shop@1.4.0');
  assert.is(raw.environment, 'production');
  assert.is(raw.route, '/checkout');
  assert.is(raw.url, 'https://shop.example.com/checkout', 'query string and fragment dropped');
  assert.is(raw.userId, undefined, "the app's end user is not a Watchtower owner");
  assert.equal(raw.data.frames, [
    { function: 'Array.map', file: 'https://cdn.example.com/vendor.js', line: 1, col: 500, inApp: false },
    { function: 'checkout', file: 'https://shop.example.com/app.js', line: 88, col: 14, inApp: true },
    { file: 'https://shop.example.com/app.js', line: 10, col: 1, inApp: true },
  ]);
  assert.is(raw.data.source, 'https://shop.example.com/app.js');
  assert.is(raw.data.line, 88, 'the innermost in-app frame, not the library frame');
  assert.is(raw.data.col, 14);
  assert.is(raw.data.stack, [
    "TypeError: Cannot read properties of undefined (reading 'total')",
    '    at Array.map (https://cdn.example.com/vendor.js:1:500)',
    '    at checkout (https://shop.example.com/app.js:88:14)',
    '    at https://shop.example.com/app.js:10:1',
    'Caused by: SyntaxError: bad json',
    '    at parse (https://shop.example.com/app.js:3:9)',
  ].join('\n'));
  assert.is(raw.data.name, 'TypeError');
  assert.is(raw.data.mechanism, 'onerror');
  assert.is(raw.data.handled, false);
  assert.equal(raw.data.fingerprint, ['{{ default }}', 'checkout']);
  assert.equal(raw.data.tags, { region: 'eu' });
  assert.equal(raw.data.user, { id: 'customer-1', email: 'c@example.com' });
  assert.equal(raw.data.sdk, { name: 'sentry.javascript.browser', version: '11.12.0' });
  assert.is(raw.data.userAgent, 'Firefox/140');
  assert.is(validateEvents([raw], 0).rejected, 0);
});

test('messages: logentry or message (string or object) with the level as severity; Sentry level aliases', () => {
  const m = (event: Record<string, unknown>) => sentryEventToRaw({ event_id: EVENT_ID, ...event }) as Record<string, any>;
  assert.equal([m({ message: 'plain', level: 'info' }).message, m({ message: 'plain', level: 'info' }).severity], ['plain', 'info']);
  assert.is(m({ logentry: { message: 'User %s', params: ['7'], formatted: 'User 7' } }).message, 'User 7');
  assert.is(m({ message: { message: 'old style' } }).message, 'old style');
  assert.is(m({ message: 'x' }).severity, 'error', 'no level: Sentry\'s default for events');
  assert.is(m({ message: 'x', level: 'warn' }).severity, 'warning');
  assert.is(m({ message: 'x', level: 'critical' }).severity, 'fatal');
  assert.is(m({ message: 'x', level: 'log' }).severity, 'info');
  assert.is(m({ message: 'x', level: 'catastrophic' }).severity, 'error');
  assert.is(m({ message: 'x', level: 'fatal' }).type, 'error');
  const both = m({ logentry: { formatted: 'while saving' }, exception: { values: [{ type: 'IOError', value: 'disk full' }] } });
  assert.is(both.message, 'IOError: disk full');
  assert.is(both.data.logMessage, 'while saving');
  assert.is(m({}).message, undefined, 'nothing to say: no message rather than an invented one');
});

test('feedback: contexts.feedback → a feedback event; its url without query; Sentry\'s `source` not taken for a file', () => {
  const raw = sentryEventToRaw({
    type: 'feedback',
    event_id: EVENT_ID,
    level: 'info',
    contexts: { feedback: { message: 'Great', name: 'Ada', contact_email: 'ada@example.com', url: 'https://x.example/p?q=1', source: 'widget', associated_event_id: 'abc' }, os: { name: 'Linux' } },
  }, 'feedback') as Record<string, any>;
  assert.is(raw.type, 'feedback');
  assert.is(raw.message, 'Great');
  assert.is(raw.url, 'https://x.example/p');
  assert.equal(raw.data.contexts, { os: { name: 'Linux' } });
  assert.is(raw.data.source, undefined);
  assert.is(raw.data.feedbackSource, 'widget');
  assert.is(raw.data.associatedEventId, 'abc');
});

test('timestamps: seconds (float) or ISO 8601, read as UTC without an offset; unusable ones left to the server clock', () => {
  assert.is(isoTimestamp(1778932800.5), '2026-05-16T12:00:00.500Z');
  assert.is(isoTimestamp('2026-05-16T12:00:00Z'), '2026-05-16T12:00:00.000Z');
  assert.is(isoTimestamp('2026-05-16T14:00:00+02:00'), '2026-05-16T12:00:00.000Z');
  assert.is(isoTimestamp('2026-05-16T12:00:00.123456'), '2026-05-16T12:00:00.123Z');
  for (const bad of ['yesterday', '', 1e20, NaN, Infinity, null, {}, 'x'.repeat(100)]) assert.is(isoTimestamp(bad), undefined, String(bad));
  // Dates a six-digit year would write (validation takes four): left to the server's time.
  assert.is(isoTimestamp(253402300799), '9999-12-31T23:59:59.000Z');
  for (const far of [253402300800, -62167219201, '+010000-01-01T00:00:00Z']) assert.is(isoTimestamp(far), undefined, String(far));
  const raw = sentryEventToRaw({ event_id: EVENT_ID, message: 'm', timestamp: 'soon' });
  assert.not.ok('timestamp' in raw);
});

test('ids: dashed UUIDs become Sentry\'s 32 hex digits; an event without one gets one, so the answer can name it', () => {
  assert.is(sentryEventToRaw({ event_id: '9EC79C33-EC99-42AB-8353-589FCB2E04DC', message: 'm' }).id, EVENT_ID);
  const out = storeBodyToEvents(bytes(JSON.stringify({ message: 'm' })));
  assert.match(out.id ?? '', /^[0-9a-f]{32}$/);
  assert.is(out.events[0].id, out.id);
  assert.is.not(sentryEventToRaw({ message: 'm' }).id, out.id);
});

test('fields are clipped to the event limits, so a long release or message never gets an event rejected', () => {
  const raw = sentryEventToRaw({
    event_id: EVENT_ID,
    release: 'r'.repeat(200),
    environment: 'e'.repeat(200),
    message: 'm'.repeat(20_000),
    transaction: '/t'.repeat(2000),
    request: { url: 'https://x.example/' + 'p'.repeat(3000) },
    tags: [['a', '1'], ['b', '2'], 'junk'],
  }) as Record<string, any>;
  assert.is(raw.deployVersion.length, 64);
  assert.is(raw.message.length, 8192);
  assert.equal(raw.data.tags, { a: '1', b: '2' }, 'tags as pairs');
  assert.is(validateEvents([raw], 1 << 20).rejected, 0);
});

test('a huge event sheds extra data, contexts and deep frames to stay within 64 KiB', () => {
  const frames = Array.from({ length: 200 }, (_, i) => ({ function: `f${i}`, filename: `https://x.example/${'d'.repeat(300)}.js`, lineno: i, colno: 1 }));
  const raw = sentryEventToRaw(exceptionEvent({
    extra: { dump: 'x'.repeat(70_000) },
    contexts: { big: { blob: 'y'.repeat(70_000) } },
    exception: { values: [{ type: 'RangeError', value: 'deep', stacktrace: { frames } }] },
  })) as Record<string, any>;
  assert.is(raw.data.extra, undefined);
  assert.is(raw.data.contexts, undefined);
  assert.ok(raw.data.frames.length <= 50);
  assert.is(raw.data.frames[0].function, 'f199', 'the innermost frames are the ones kept');
  assert.ok(JSON.stringify(raw).length <= 64 * 1024);
  assert.is(validateEvents([raw], 1 << 20).rejected, 0);
  assert.is(raw.message, 'RangeError: deep');
});

test('any JSON object maps to a raw event the service validation accepts, or at worst rejects, never a throw', () => {
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom('event_id', 'timestamp', 'level', 'message', 'logentry', 'exception', 'release', 'request', 'tags', 'user', 'contexts', 'type', 'fingerprint', 'sdk', 'transaction', 'stacktrace', 'extra'), fc.anything()), (event) => {
      const raw = sentryEventToRaw(event);
      assert.ok(raw.type === 'error' || raw.type === 'feedback');
      assert.is(validateEvents([JSON.parse(JSON.stringify(raw))], 1 << 20).rejected, 0);
    }),
    { numRuns: 300 },
  );
});

// --- /store/ ---------------------------------------------------------------------------------

test('legacy /store/ bodies: one JSON event; not JSON is invalid_json, not an object invalid_body; transactions skipped', () => {
  const out = storeBodyToEvents(bytes(JSON.stringify(exceptionEvent())));
  assert.is(out.id, EVENT_ID);
  assert.is(out.events.length, 1);
  assert.is(out.events[0].type, 'error');
  refused(() => storeBodyToEvents(bytes('{nope')), 400, 'invalid_json');
  refused(() => storeBodyToEvents(bytes('[{}]')), 400, 'invalid_body');
  assert.equal(storeBodyToEvents(bytes('{"type":"transaction"}')), { id: null, sentAt: null, events: [], rejected: 0, skipped: { transaction: 1 } });
});

// --- Authentication --------------------------------------------------------------------------

const req = (url: string, headers: Record<string, string> = {}) => ({ url: `http://wt.example${url}`, headers: new Headers(headers) });
const KEY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

test('auth: the key from the query string, X-Sentry-Auth, Authorization: Sentry, or the envelope dsn', () => {
  assert.equal(sentryAuth(req(`/api/7/envelope/?sentry_version=7&sentry_key=${KEY}&sentry_client=sentry.javascript.browser%2F11.12.0`), '7'),
    { publicKey: KEY, client: 'sentry.javascript.browser/11.12.0' });
  assert.equal(sentryAuth(req('/api/7/store/', { 'X-Sentry-Auth': `Sentry sentry_version=7, sentry_client=raven-python/6.0, sentry_key=${KEY}, sentry_secret=s` }), '7'),
    { publicKey: KEY, client: 'raven-python/6.0' });
  assert.equal(sentryAuth(req('/api/7/store/', { Authorization: `Sentry sentry_key="${KEY}"` }), '7'), { publicKey: KEY, client: null });
  assert.equal(sentryAuth(req('/api/7/envelope/'), '7', { dsn: `https://${KEY}@wt.example/7` }), { publicKey: KEY, client: null });
  assert.equal(sentryAuth(req(`/api/7/envelope/?sentry_key=${KEY}`, { Authorization: 'Bearer eyJ.x.y' }), '7').publicKey, KEY, 'a bearer token is not a Sentry key');
  assert.equal(sentryAuth(req(`/api/7/envelope/?sentry_key=${KEY}`), '7', { dsn: `https://${KEY}@wt.example/7` }).publicKey, KEY, 'the same key twice is fine');
});

test('auth: no key is 401 missing_sentry_key; a malformed, conflicting or misdirected one is 401 invalid_sentry_auth', () => {
  refused(() => sentryAuth(req('/api/7/envelope/'), '7', {}), 401, 'missing_sentry_key');
  refused(() => sentryAuth(req('/api/7/envelope/', { Authorization: 'Bearer x' }), '7'), 401, 'missing_sentry_key');
  refused(() => sentryAuth(req('/api/7/store/', { 'X-Sentry-Auth': 'Sentry sentry_version=7' }), '7'), 401, 'invalid_sentry_auth', /no sentry_key/);
  refused(() => sentryAuth(req('/api/7/store/', { 'X-Sentry-Auth': 'Basic abc' }), '7'), 401, 'invalid_sentry_auth');
  refused(() => sentryAuth(req(`/api/7/envelope/?sentry_key=${KEY}`, { 'X-Sentry-Auth': 'Sentry sentry_key=other' }), '7'), 401, 'invalid_sentry_auth', /more than one/);
  refused(() => sentryAuth(req('/api/7/envelope/?sentry_key='), '7'), 401, 'invalid_sentry_auth', /malformed/);
  refused(() => sentryAuth(req('/api/7/envelope/?sentry_key=a%20b'), '7'), 401, 'invalid_sentry_auth', /malformed/);
  refused(() => sentryAuth(req('/api/7/envelope/'), '7', { dsn: `https://${KEY}@wt.example/8` }), 401, 'invalid_sentry_auth', /project 8, not 7/);
  refused(() => sentryAuth(req('/api/7/envelope/'), '7', { dsn: 'not a dsn' }), 401, 'invalid_sentry_auth', /dsn/);
  refused(() => sentryAuth(req('/api/7/envelope/'), '7', { dsn: 42 }), 401, 'invalid_sentry_auth', /dsn/);
});

test('parseDsn: key and project id as the SDKs read them', () => {
  assert.equal(parseDsn(`https://${KEY}@wt.example/42`), { publicKey: KEY, projectId: '42' });
  assert.equal(parseDsn(`http://${KEY}:secret@wt.example:8080/watchtower/42`), { publicKey: KEY, projectId: '42' });
  assert.is(parseDsn('https://wt.example/42'), null);
  assert.is(parseDsn(`https://${KEY}@wt.example/abc`), null);
  assert.is(parseDsn(`ftp://${KEY}@wt.example/42`), null);
  assert.is(parseDsn('::'), null);
});

// --- Answer ----------------------------------------------------------------------------------

test('the answer: 200 { id } (or {}), JSON, and no Retry-After, which the SDKs would obey', async () => {
  const answer = toResponse(sentryAnswer({ id: EVENT_ID }));
  assert.is(answer.status, 200);
  assert.equal(await answer.json(), { id: EVENT_ID });
  assert.is(answer.headers.get('retry-after'), null);
  assert.equal(await toResponse(sentryAnswer({ id: null })).json(), {});
});


// --- Transactions -------------------------------------------------------------------------------

/** A page load as @sentry/browser's tracing sends it (seconds since the epoch; measurements in ms). */
const pageloadTransaction = (over: Record<string, unknown> = {}) => ({
  type: 'transaction', event_id: EVENT_ID, transaction: '/checkout', release: 'web@3.0.0',
  start_timestamp: 1_780_000_000.0, timestamp: 1_780_000_003.5,
  contexts: { trace: { op: 'pageload', trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) } },
  request: { url: 'https://shop.example/checkout?token=SECRET#top', headers: { 'User-Agent': 'Mozilla/5.0' } },
  measurements: { lcp: { value: 1234.56, unit: 'millisecond' }, fcp: { value: 812.2, unit: 'millisecond' }, ttfb: { value: 95.4, unit: 'millisecond' },
    cls: { value: 0.123456, unit: '' }, fp: { value: 800, unit: 'millisecond' }, 'connection.rtt': { value: 50, unit: 'millisecond' } },
  spans: [
    { op: 'browser.request', start_timestamp: 1_780_000_000.01, timestamp: 1_780_000_000.2 },
    { op: 'browser.load_event', start_timestamp: 1_780_000_001.2, timestamp: 1_780_000_001.25 },
  ],
  ...over,
});

test('transactions: a page load becomes a pageload with its load time and TTFB, and one performance event per web vital', () => {
  const env = parseEnvelope(bytes(line({ event_id: EVENT_ID }), line({ type: 'transaction' }), JSON.stringify(pageloadTransaction()), '\n'));
  const out = envelopeToEvents(env);
  assert.equal(out.skipped, {});
  assert.is(out.id, EVENT_ID);
  const [pageload, ...vitals] = out.events;
  assert.equal(pageload, {
    type: 'pageload', id: `${EVENT_ID}-pageload`, route: '/checkout', url: 'https://shop.example/checkout', deployVersion: 'web@3.0.0',
    timestamp: new Date(1_780_000_000_000).toISOString(), data: { sdk: 'sentry', navigationType: 'navigate', duration: 1250, ttfb: 95 },
  });
  assert.equal(vitals.map((v) => [v.type, v.id, (v.data as any).name, (v.data as any).value, v.route]), [
    ['performance', `${EVENT_ID}-lcp`, 'LCP', 1235, '/checkout'],
    ['performance', `${EVENT_ID}-cls`, 'CLS', 0.1235, '/checkout'],
    ['performance', `${EVENT_ID}-fcp`, 'FCP', 812, '/checkout'],
    ['performance', `${EVENT_ID}-ttfb`, 'TTFB', 95, '/checkout'],
  ]);
  // Every mapped event passes the service's validation.
  assert.is(validateEvents(out.events, 1 << 20).rejected, 0);
});

test('transactions: older SDKs\' load event span, navigations (vitals only), other operations skipped, hostile shapes bounded', () => {
  const old = transactionToRaw(pageloadTransaction({ spans: [{ op: 'browser', description: 'loadEvent', timestamp: 1_780_000_002 }] }));
  assert.is((old[0].data as any).duration, 2000);
  // Without a load event span: a pageload without duration (counted, not in latency).
  assert.is((transactionToRaw(pageloadTransaction({ spans: [] }))[0].data as any).duration, undefined);
  const nav = transactionToRaw(pageloadTransaction({ contexts: { trace: { op: 'navigation' } }, measurements: { inp: { value: 180, unit: 'millisecond' } } }));
  assert.equal(nav.map((e) => [e.type, (e.data as any).name, (e.data as any).value]), [['performance', 'INP', 180]]);
  assert.equal(transactionToRaw(pageloadTransaction({ contexts: { trace: { op: 'ui.action.click' } } })), []);
  assert.equal(transactionToRaw(pageloadTransaction({ transaction: '' })), []);
  // Measurements that are not numbers, negative, or unknown are left out; spans past the bound are not read.
  const odd = transactionToRaw(pageloadTransaction({
    measurements: { lcp: { value: 'slow' }, fcp: { value: -1 }, ttfb: null, cls: { value: Infinity }, '__proto__': { value: 1 } },
    spans: [...Array.from({ length: 5000 }, () => ({ op: 'resource.script' })), { op: 'browser.load_event', timestamp: 1_780_000_001 }],
  }));
  assert.equal(odd.map((e) => e.type), ['pageload']);
  assert.is((odd[0].data as any).duration, undefined);
  assert.is((odd[0].data as any).ttfb, undefined);
  // A legacy /store/ body holding a page load is mapped the same way.
  assert.is(storeBodyToEvents(bytes(JSON.stringify(pageloadTransaction()))).events.length, 5);
});

/** Spans as @sentry/browser streams them (version 2 items), attributes as the SDK sets them. */
const span = (name: string, id: string, attrs: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  name, span_id: id, trace_id: 'c'.repeat(32), parent_span_id: 'p'.repeat(16), start_timestamp: 1_780_000_000.5, end_timestamp: 1_780_000_000.6,
  is_segment: false, status: 'ok',
  attributes: Object.fromEntries(Object.entries({ 'sentry.release': 'web@3.0.0', 'sentry.segment.id': 'a'.repeat(16), ...attrs })
    .map(([k, v]) => [k, { value: v, type: typeof v === 'number' ? 'double' : 'string' }])),
  ...over,
});

test('streamed spans: the page load\'s segment gives the pageload (load time, TTFB), every web vital attribute a performance event', () => {
  const segment = 'a'.repeat(16);
  const body = { version: 2, items: [
    span('Load event', '1'.repeat(16), { 'sentry.op': 'browser.load_event', 'url.full': 'http://shop.example/cart?token=[Filtered]#top' }, { end_timestamp: 1_780_000_001.25 }),
    span('Pageload', segment, { 'sentry.op': 'pageload', 'url.path': '/cart', 'url.full': 'http://shop.example/cart?token=[Filtered]#top',
      'browser.performance.time_origin': 1_780_000_000.0, 'browser.web_vital.ttfb.value': 16.7, 'browser.web_vital.fcp.value': 280, 'browser.navigation.type': 'navigate' },
    { is_segment: true, start_timestamp: 1_780_000_000.0 }),
    span('Largest contentful paint', '2'.repeat(16), { 'sentry.op': 'ui.webvital.lcp', 'browser.web_vital.lcp.value': 1450.4, 'sentry.segment.name': 'Pageload' }),
    span('Layout shift', '3'.repeat(16), { 'sentry.op': 'ui.webvital.cls', 'browser.web_vital.cls.value': 0.0412345 }),
    span('Main UI thread blocked', '4'.repeat(16), { 'sentry.op': 'ui.long_animation_frame' }),
  ] };
  const events = spansToRaw(body);
  const pageload = events.find((e) => e.type === 'pageload')!;
  assert.equal([pageload.route, pageload.url, pageload.deployVersion, (pageload.data as any).duration, (pageload.data as any).ttfb],
    ['/cart', 'http://shop.example/cart', 'web@3.0.0', 1250, 17]);
  assert.equal(events.filter((e) => e.type === 'performance').map((e) => [(e.data as any).name, (e.data as any).value, e.route]),
    [['FCP', 280, '/cart'], ['TTFB', 17, '/cart'], ['LCP', 1450, '/cart'], ['CLS', 0.0412, '/cart']]);
  assert.is(validateEvents(events, 1 << 20).rejected, 0);
  // Through an envelope; spans with nothing to map are counted as skipped.
  const env = parseEnvelope(bytes(line({}), line({ type: 'span', content_type: 'application/vnd.sentry.items.span.v2+json' }), JSON.stringify(body), '\n',
    line({ type: 'span' }), JSON.stringify({ version: 2, items: [span('x', '5'.repeat(16), { 'sentry.op': 'http.client' })] }), '\n'));
  const out = envelopeToEvents(env);
  assert.is(out.events.length, events.length);
  assert.equal(out.skipped, { span: 1 });
  // Hostile shapes: no items, items that are not objects, attributes that are not objects.
  assert.equal(spansToRaw({ version: 2, items: [1, null, 'x', { span_id: 's', trace_id: 't', attributes: [] }] }), []);
  assert.equal(spansToRaw({ version: 2 }), []);
});

// --- Breadcrumbs ---------------------------------------------------------------------------------

test('breadcrumbs: Sentry\'s become the SDK\'s shape (click, navigation, http, console), newest 30, query strings stripped', () => {
  const t = 1_780_000_000;
  const raw = sentryEventToRaw({
    event_id: EVENT_ID, exception: { values: [{ type: 'Error', value: 'boom' }] },
    breadcrumbs: { values: [
      ...Array.from({ length: 40 }, (_, i) => ({ timestamp: t - 100 + i, category: 'sentry.event', message: `old ${i}` })),
      { timestamp: t + 1, category: 'ui.click', message: 'main > button.buy' },
      { timestamp: t + 2, category: 'navigation', data: { from: '/cart?x=1', to: '/checkout?token=SECRET' } },
      { timestamp: t + 3, category: 'fetch', type: 'http', level: 'error', data: { method: 'POST', url: 'https://api.example/pay?card=SECRET', status_code: 502 } },
      { timestamp: new Date((t + 4) * 1000).toISOString(), category: 'console', level: 'warning', message: 'retrying' },
      { timestamp: 'never', category: 'console', message: 'no time' },
      'not an object',
    ] },
  });
  const crumbs = (raw.data as any).breadcrumbs as { at: string; category: string; message: string; level?: string; data?: unknown }[];
  assert.is(crumbs.length, 30 - 2);
  assert.equal(crumbs.slice(-4), [
    { at: new Date((t + 1) * 1000).toISOString(), category: 'click', message: 'main > button.buy' },
    { at: new Date((t + 2) * 1000).toISOString(), category: 'navigation', message: '/checkout', data: { from: '/cart', to: '/checkout' } },
    { at: new Date((t + 3) * 1000).toISOString(), category: 'http', level: 'error', message: 'POST https://api.example/pay 502', data: { method: 'POST', url: 'https://api.example/pay', status: 502 } },
    { at: new Date((t + 4) * 1000).toISOString(), category: 'console', level: 'warning', message: 'retrying' },
  ]);
  assert.not.match(JSON.stringify(crumbs), /SECRET/);
  // A bare array is read too; feedback carries none; none at all is no field.
  assert.is(((sentryEventToRaw({ breadcrumbs: [{ timestamp: t, message: 'x' }] }).data as any).breadcrumbs).length, 1);
  assert.is((sentryEventToRaw({ type: 'feedback', breadcrumbs: [{ timestamp: t, message: 'x' }], contexts: { feedback: { message: 'hi' } } }).data as any).breadcrumbs, undefined);
  assert.is((sentryEventToRaw({ message: 'x' }).data as any).breadcrumbs, undefined);
});

test.run();
