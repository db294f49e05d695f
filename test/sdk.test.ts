// The SDK's pure parts (sdk/), and its delivery policy driven with fake timers, storage and fetch.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { backoffDelay, retryable, retryAfterMs, RETRY_AFTER_CAP_MS } from '../sdk/backoff.ts';
import { createClient, type Env } from '../sdk/client.ts';
import { DEFAULTS, fromDataset, settle } from '../sdk/config.ts';
import { errorData, errorLimiter, pageloadData, referrerOrigin, stripQuery, topFrame } from '../sdk/payload.ts';
import { adopt, bound, merge, QUEUE_PREFIX, save } from '../sdk/queue.ts';
import { clickText, selector, type ElementLike } from '../sdk/selector.ts';
import { doNotTrack, nextSession, sampled, SESSION_IDLE_MS } from '../sdk/session.ts';
import type { SdkEvent, StorageLike } from '../sdk/types.ts';
import { uuidv7 } from '../sdk/uuid.ts';
import { normalise, type RawEvent } from '../lib/event.ts';
import { validateEvents } from '../lib/schema.ts';

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('uuidv7: version, variant and time order', () => {
  const a = uuidv7(1_700_000_000_000, new Uint8Array(16).fill(255));
  const b = uuidv7(1_700_000_000_001, new Uint8Array(16));
  assert.ok(UUID7.test(a), a);
  assert.ok(UUID7.test(b), b);
  assert.ok(a < b, 'a later ms sorts later whatever the random bytes');
  assert.is(a.slice(0, 13).replace('-', ''), (1_700_000_000_000).toString(16).padStart(12, '0'));
});

test('backoff: retryable answers', () => {
  for (const s of [0, 408, 429, 500, 502, 503, 504]) assert.ok(retryable(s), String(s));
  for (const s of [200, 202, 400, 401, 404, 413, 415]) assert.not.ok(retryable(s), String(s));
});

test('backoff: exponential with equal jitter, capped', () => {
  assert.is(backoffDelay(0, 0, null), 500);
  assert.is(backoffDelay(0, 1, null), 1000);
  assert.is(backoffDelay(3, 0, null), 4000);
  assert.is(backoffDelay(3, 1, null), 8000);
  assert.is(backoffDelay(30, 1, null), 60_000);
  for (let i = 0; i < 8; i++) {
    const d = backoffDelay(i, Math.random(), null);
    assert.ok(d >= Math.min(60_000, 1000 * 2 ** i) / 2 && d <= Math.min(60_000, 1000 * 2 ** i), `${i}: ${d}`);
  }
});

test('backoff: Retry-After seconds or date wins, bounded', () => {
  const now = Date.parse('2026-05-16T12:00:00Z');
  assert.is(retryAfterMs('3', now), 3000);
  assert.is(retryAfterMs('Sat, 16 May 2026 12:00:10 GMT', now), 10_000);
  assert.is(retryAfterMs('Sat, 16 May 2026 11:00:00 GMT', now), 0);
  assert.is(retryAfterMs('', now), null);
  assert.is(retryAfterMs(null, now), null);
  assert.is(retryAfterMs('soon', now), null);
  assert.is(backoffDelay(5, 0.5, 3000), 3000);
  assert.is(backoffDelay(0, 0.5, 10 ** 9), RETRY_AFTER_CAP_MS);
});

const ev = (id: string, timestamp = '2026-05-16T12:00:00.000Z'): SdkEvent => ({ id, type: 'click', timestamp, data: {} });

test('queue: bound drops the oldest and counts them', () => {
  const q = ['a', 'b', 'c', 'd'].map((id) => ev(id));
  assert.is(bound(q, 10), 0);
  assert.is(bound(q, 2), 2);
  assert.equal(q.map((e) => e.id), ['c', 'd']);
});

test('queue: merge skips known ids and junk', () => {
  const q = merge([ev('a')], [ev('a'), ev('b'), null as unknown as SdkEvent, { id: 3 } as unknown as SdkEvent]);
  assert.equal(q.map((e) => e.id), ['a', 'b']);
});

function memoryStorage(init: Record<string, string> = {}): StorageLike & { map: Map<string, string> } {
  const map = new Map(Object.entries(init));
  return {
    map,
    get length() {
      return map.size;
    },
    key: (i) => [...map.keys()][i] ?? null,
    getItem: (k) => map.get(k) ?? null,
    setItem: (k, v) => void map.set(k, String(v)),
    removeItem: (k) => void map.delete(k),
  };
}

test('queue: a new page adopts the queues left behind, oldest first, and removes them', () => {
  const storage = memoryStorage({
    [QUEUE_PREFIX + 'p1']: JSON.stringify({ events: [ev('b', '2026-05-16T12:00:02.000Z')], dropped: 2 }),
    [QUEUE_PREFIX + 'p2']: JSON.stringify({ events: [ev('a', '2026-05-16T12:00:01.000Z'), ev('b')], dropped: 1 }),
    [QUEUE_PREFIX + 'torn']: '{"events":[',
    [QUEUE_PREFIX + 'mine']: JSON.stringify({ events: [ev('z')], dropped: 0 }),
    unrelated: 'keep',
  });
  const found = adopt(storage, QUEUE_PREFIX + 'mine');
  assert.equal(found.events.map((e) => e.id), ['a', 'b']);
  assert.is(found.dropped, 3);
  assert.equal([...storage.map.keys()].sort(), ['unrelated', QUEUE_PREFIX + 'mine']);
});

test('queue: save removes the key when empty and survives a full or disabled storage', () => {
  const storage = memoryStorage();
  save(storage, 'k', { events: [ev('a')], dropped: 0 });
  assert.equal(JSON.parse(storage.getItem('k')!).events[0].id, 'a');
  save(storage, 'k', { events: [], dropped: 0 });
  assert.is(storage.getItem('k'), null);
  const full = { ...storage, setItem() { throw new Error('QuotaExceededError'); } };
  save(full, 'k', { events: [ev('a')], dropped: 0 });
  save(null, 'k', { events: [ev('a')], dropped: 0 });
  assert.equal(adopt({ get length(): number { throw new Error('SecurityError'); } } as unknown as StorageLike, 'x'), { events: [], dropped: 0 });
});

function el(tagName: string, props: Partial<ElementLike> = {}, parent: ElementLike | null = null): ElementLike {
  return { tagName: tagName.toUpperCase(), parentElement: parent, ...props };
}

test('selector: stops at an id, keeps two classes, at most three levels', () => {
  const body = el('body');
  const main = el('main', { id: 'app' }, body);
  const form = el('form', { className: 'signup  wide extra' }, main);
  const div = el('div', {}, form);
  const button = el('button', { className: 'btn primary big' }, div);
  assert.is(selector(button), 'form.signup.wide > div > button.btn.primary');
  assert.is(selector(div), 'main#app > form.signup.wide > div');
  assert.is(selector(el('a', {}, body)), 'a');
  assert.is(selector(el('span', { id: '1bad id', className: 'x:y ok' }, body)), 'span.ok');
  const svgClass = { baseVal: 'icon' };
  assert.is(selector(el('svg', { className: svgClass }, null)), 'svg');
  assert.is(selector(el('input', { getAttribute: (n) => (n == 'name' ? 'email' : null) })), 'input[name=email]');
});

test('clickText: trimmed label, never form input', () => {
  assert.is(clickText(el('button', { textContent: '\n   Save   the\tnote \n' })), 'Save the note');
  assert.is(clickText(el('a', { textContent: 'x'.repeat(200) })).length, 80);
  assert.is(clickText(el('button', { textContent: '×', getAttribute: (n) => (n == 'aria-label' ? 'Close dialog' : null) })), 'Close dialog');
  assert.is(clickText(el('input', { textContent: 'secret' })), '');
  assert.is(clickText(el('textarea', { textContent: 'my draft' })), '');
  assert.is(clickText(el('select', { textContent: 'Option A Option B' })), '');
  assert.is(clickText(el('div', { textContent: 'typed text', isContentEditable: true })), '');
  assert.is(clickText(el('label', { textContent: 'Email you@example.com', querySelector: () => ({}) })), '');
});

test('payload: stripQuery drops query and fragment', () => {
  assert.is(stripQuery('https://a.test/p/q?token=abc#frag'), 'https://a.test/p/q');
  assert.is(stripQuery('https://a.test/p#access_token=x'), 'https://a.test/p');
  assert.is(stripQuery('https://a.test/'), 'https://a.test/');
});

test('payload: pageload data from a Navigation Timing entry', () => {
  const nav = { startTime: 0, responseStart: 120.4, domContentLoadedEventEnd: 480.6, loadEventEnd: 900.2, duration: 900.2, transferSize: 5120, type: 'navigate' };
  assert.equal(pageloadData(nav), { duration: 900, ttfb: 120, domContentLoaded: 481, loadComplete: 900, transferSize: 5120, navigationType: 'navigate' });
  const early = pageloadData({ ...nav, loadEventEnd: 0, duration: 700, transferSize: undefined });
  assert.is(early.duration, 700);
  assert.is(early.transferSize, 0);
});

test('payload: topFrame reads V8 and Firefox/Safari stacks', () => {
  assert.equal(topFrame('TypeError: x is null\n    at save (https://a.test/app.js:12:34)\n    at https://a.test/b.js:1:2'), { source: 'https://a.test/app.js', line: 12, col: 34 });
  assert.equal(topFrame('Error: boom\n    at https://a.test/app.js:5:6'), { source: 'https://a.test/app.js', line: 5, col: 6 });
  assert.equal(topFrame('save@https://a.test/app.js:7:8\n@https://a.test/b.js:1:2'), { source: 'https://a.test/app.js', line: 7, col: 8 });
  assert.equal(topFrame(undefined), {});
  assert.equal(topFrame('no frames here'), {});
});

test('payload: errorData from an Error, a string, an object and a circular object', () => {
  const err = new TypeError('cart is null');
  const d = errorData(err, 'captureError');
  assert.is(d.message, 'cart is null');
  assert.is(d.name, 'TypeError');
  assert.type(d.stack, 'string');
  assert.type(d.line, 'number');
  assert.type(d.col, 'number');
  assert.ok(String(d.source).includes('sdk.test.ts'), String(d.source));
  assert.is(errorData('plain reason', 'x').message, 'plain reason');
  assert.is(errorData({ code: 42 }, 'x').message, '{"code":42}');
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  assert.is(errorData(circular, 'x').message, '[object Object]');
  assert.is(errorData(undefined, 'x').message, 'Unknown error');
  assert.is((errorData('m'.repeat(5000), 'x').message as string).length, 2000);
});

test('payload: errorLimiter caps one error and all errors', () => {
  const allow = errorLimiter(2, 3);
  assert.equal([allow('a'), allow('a'), allow('a'), allow('b'), allow('c')], [true, true, false, true, false]);
});

test('session: kept while active, renewed after 30 minutes idle', () => {
  let n = 0;
  const id = () => `s${++n}`;
  const t = 1_000_000;
  const first = nextSession(null, t, id);
  assert.equal(first, { id: 's1', at: t });
  const again = nextSession(JSON.stringify(first), t + SESSION_IDLE_MS - 1, id);
  assert.equal(again, { id: 's1', at: t + SESSION_IDLE_MS - 1 });
  assert.is(nextSession(JSON.stringify(again), again.at + SESSION_IDLE_MS, id).id, 's2');
  assert.is(nextSession('garbage', t, id).id, 's3');
  assert.is(nextSession(JSON.stringify({ id: 's1', at: t + 5000 }), t, id).id, 's4', 'a clock that went back starts afresh');
});

test('session: sampling is per session and close to the rate', () => {
  const ids = Array.from({ length: 4000 }, (_, i) => uuidv7(1_700_000_000_000 + i, crypto.getRandomValues(new Uint8Array(16))));
  const share = ids.filter((id) => sampled(id, 0.25)).length / ids.length;
  assert.ok(share > 0.2 && share < 0.3, String(share));
  assert.ok(ids.every((id) => sampled(id, 1)));
  assert.not.ok(ids.some((id) => sampled(id, 0)));
  assert.is(sampled(ids[0], 0.5), sampled(ids[0], 0.5));
});

test('session: Do Not Track and Global Privacy Control', () => {
  assert.ok(doNotTrack({ globalPrivacyControl: true }));
  assert.ok(doNotTrack({ doNotTrack: '1' }));
  assert.ok(doNotTrack({}, { doNotTrack: '1' }));
  assert.not.ok(doNotTrack({ doNotTrack: '0', globalPrivacyControl: false }));
  assert.not.ok(doNotTrack({ doNotTrack: null }));
});

test('config: data-* attributes become options', () => {
  const o = fromDataset({ appName: 'shop', deployVersion: '1.2.0', endpoint: 'https://wt.test/', sampleRate: '0.5', maxBatch: 'x', respectDoNotTrack: '', clicks: 'false', pageload: '0', unknown: 'y' });
  assert.equal(o, { appName: 'shop', deployVersion: '1.2.0', endpoint: 'https://wt.test/', sampleRate: 0.5, respectDoNotTrack: true, clicks: false, pageload: false });
});

test('config: data-key becomes the ingest key, kept as written', () => {
  assert.equal(fromDataset({ key: 'wt_pub_Ab3+/x', appName: 'shop' }), { key: 'wt_pub_Ab3+/x', appName: 'shop' });
  assert.is(settle(DEFAULTS, { key: 'k1' }).key, 'k1');
  assert.is(settle(DEFAULTS, {}).key, undefined);
});

test('payload: referrerOrigin keeps only the origin of another site', () => {
  const page = 'https://shop.example.com/cart?coupon=X';
  assert.is(referrerOrigin('https://www.google.com/search?q=my+secret+query#top', page), 'https://www.google.com');
  assert.is(referrerOrigin('https://news.test:8443/a/b?token=abc', page), 'https://news.test:8443', 'a port other than the default is part of the origin');
  assert.is(referrerOrigin('http://user:pw@blog.test/p', page), 'http://blog.test', 'credentials never kept');
  assert.is(referrerOrigin('https://example.com/', page), 'https://example.com', 'a parent domain is another site');
  assert.is(referrerOrigin('https://blog.shop.example.com/', page), 'https://blog.shop.example.com', 'so is a subdomain');
});

test('payload: referrerOrigin reports nothing for the same site, no referrer or a non-web one', () => {
  const page = 'https://shop.example.com/cart';
  assert.is(referrerOrigin('https://shop.example.com/products/42?ref=x', page), undefined, 'same origin');
  assert.is(referrerOrigin('https://www.shop.example.com/', page), undefined, 'www. of the same host');
  assert.is(referrerOrigin('https://shop.example.com/', 'https://www.shop.example.com/'), undefined, 'and the other way round');
  assert.is(referrerOrigin('http://shop.example.com:8080/', page), undefined, 'another scheme or port of the same host');
  assert.is(referrerOrigin('https://SHOP.example.com/x', page), undefined, 'host names compare case-insensitively');
  assert.is(referrerOrigin('', page), undefined, 'no referrer');
  assert.is(referrerOrigin('android-app://com.google.android.gm/', page), undefined);
  assert.is(referrerOrigin('about:blank', page), undefined);
  assert.is(referrerOrigin('not a url', page), undefined);
});

test('config: settle keeps numbers in bounds and trims the endpoint', () => {
  const s = settle(DEFAULTS, { endpoint: 'https://wt.test/base//', maxBatch: 500, sampleRate: 7, flushInterval: -1, maxQueue: 0, appName: undefined });
  assert.is(s.endpoint, 'https://wt.test/base');
  assert.is(s.maxBatch, 50);
  assert.is(s.sampleRate, 1);
  assert.is(s.flushInterval, 2000);
  assert.is(s.maxQueue, 250);
  assert.is(settle(DEFAULTS, { sampleRate: 0 }).sampleRate, 0);
});

// ---- delivery policy, with fake time ----

interface Sent { url: string; body: { sentAt: string; dropped?: number; events: SdkEvent[] }; keepalive: boolean; via: 'fetch' | 'beacon'; headers?: Record<string, string> }

function harness(answers: (number | 'network' | [number, string])[] = [], options: Partial<typeof DEFAULTS> & { userId?: string | null; key?: string } = {}) {
  let now = Date.parse('2026-05-16T12:00:00.000Z');
  const timers: { at: number; fn: () => void; id: number }[] = [];
  let nextTimer = 1;
  const sent: Sent[] = [];
  let online = true;
  let beaconOk = true;
  const local = memoryStorage();
  const session = memoryStorage();
  const env: Env = {
    now: () => now,
    random: () => 0.5,
    randomBytes: () => crypto.getRandomValues(new Uint8Array(16)),
    async fetch(url, init) {
      sent.push({ url, body: JSON.parse(init.body), keepalive: init.keepalive, via: 'fetch', headers: init.headers });
      const a = answers.shift() ?? 200;
      if (a === 'network') throw new TypeError('Failed to fetch');
      const [status, retryAfter] = Array.isArray(a) ? a : [a, null];
      return { status, headers: { get: (n: string) => (n.toLowerCase() == 'retry-after' ? retryAfter : null) } };
    },
    beacon(url, body) {
      if (beaconOk) sent.push({ url, body: JSON.parse(body), keepalive: true, via: 'beacon' });
      return beaconOk;
    },
    local,
    session,
    href: () => 'https://app.test/cart?coupon=SECRET#x',
    path: () => '/cart',
    online: () => online,
    sameOrigin: (endpoint) => endpoint.startsWith('https://app.test'),
    setTimeout(fn, ms) {
      const id = nextTimer++;
      timers.push({ at: now + ms, fn, id });
      return id;
    },
    clearTimeout(id) {
      const i = timers.findIndex((t) => t.id === id);
      if (i >= 0) timers.splice(i, 1);
    },
  };
  const settings = settle(DEFAULTS, { endpoint: 'https://wt.test', appName: 'shop', deployVersion: '1.2.0', ...options });
  const client = createClient(env, settings);
  const settle_ = () => new Promise((r) => setTimeout(r, 0));
  return {
    env, client, sent, local, session, settings,
    /** Advances fake time, firing due timers and letting their promises settle. */
    async advance(ms: number) {
      const end = now + ms;
      for (;;) {
        timers.sort((a, b) => a.at - b.at);
        const t = timers[0];
        if (!t || t.at > end) break;
        timers.shift();
        now = t.at;
        t.fn();
        for (let i = 0; i < 5; i++) await settle_();
      }
      now = end;
      for (let i = 0; i < 5; i++) await settle_();
    },
    setOnline: (v: boolean) => (online = v),
    setBeacon: (v: boolean) => (beaconOk = v),
  };
}

test('client: envelope fields, stripped url, and a body the server accepts as sent', async () => {
  const h = harness();
  h.client.record('custom', { name: 'checkout' });
  await h.advance(2000);
  assert.is(h.sent.length, 1);
  const { url, body, keepalive } = h.sent[0];
  assert.is(url, 'https://wt.test/api/events');
  assert.ok(keepalive);
  assert.is(body.sentAt, '2026-05-16T12:00:02.000Z', 'the clock at sending, for the server to correct skew');
  const e = body.events[0];
  assert.ok(UUID7.test(e.id));
  assert.equal({ ...e, id: 'x', sessionId: 'y' }, {
    id: 'x', type: 'custom', timestamp: '2026-05-16T12:00:00.000Z', sessionId: 'y', appName: 'shop', deployVersion: '1.2.0',
    url: 'https://app.test/cart', route: '/cart', data: { name: 'checkout' },
  });
  // The same payload through the server's own validation and normalisation.
  const { valid, rejected } = validateEvents(body.events, 1000);
  assert.is(rejected, 0);
  const stored = normalise(valid[0] as RawEvent, { now: Date.now(), owner: null });
  assert.is(stored.id, e.id);
  assert.is(stored.session_id, e.sessionId);
  assert.is(stored.app_version, '1.2.0');
  assert.is(stored.page_url, 'https://app.test/cart');
  assert.is(stored.route, '/cart');
});

test('client: one flush ~flushInterval after the first event, batches of at most maxBatch', async () => {
  const h = harness();
  for (let i = 0; i < 120; i++) h.client.record('click', { i });
  await h.advance(1999);
  assert.is(h.sent.length, 0, 'nothing before the interval');
  await h.advance(1);
  assert.equal(h.sent.map((s) => s.body.events.length), [50, 50, 20]);
  assert.equal(h.sent.flatMap((s) => s.body.events.map((e) => e.data.i)), [...Array(120).keys()]);
  assert.is(h.client.status().queued, 0);
  assert.is(h.local.length, 0, 'nothing left in storage once delivered');
});

test('client: 503 twice, then delivered once; backoff grows; Retry-After honoured', async () => {
  const h = harness([503, [503, '7'], 200]);
  h.client.record('error', { message: 'boom' });
  await h.advance(2000);
  assert.is(h.sent.length, 1);
  await h.advance(749);
  assert.is(h.sent.length, 1, 'first retry after 750 ms (attempt 0, jitter 0.5)');
  await h.advance(1);
  assert.is(h.sent.length, 2);
  await h.advance(6999);
  assert.is(h.sent.length, 2, 'Retry-After: 7 wins over the 1.5 s backoff');
  await h.advance(1);
  assert.is(h.sent.length, 3);
  assert.equal(new Set(h.sent.map((s) => s.body.events[0].id)).size, 1, 'the same id on every try');
  await h.advance(60_000);
  assert.is(h.sent.length, 3, 'nothing resent after success');
});

test('client: network errors back off; coming online retries at once', async () => {
  const h = harness(['network', 'network', 'network']);
  h.client.record('click', {});
  await h.advance(2000 + 750 + 1500);
  assert.is(h.sent.length, 3);
  h.client.resume();
  await h.advance(0);
  assert.is(h.sent.length, 4);
  assert.is(h.client.status().queued, 0);
});

test('client: a 4xx refusal is dropped and counted, not retried', async () => {
  const h = harness([400]);
  h.client.record('click', {});
  await h.advance(2000);
  assert.equal(h.client.status().dropped, 1);
  h.client.record('click', {});
  await h.advance(2000);
  assert.is(h.sent.length, 2);
  assert.is(h.sent[1].body.dropped, 1, 'the count travels with the next batch');
  assert.is(h.client.status().dropped, 0);
});

test('client: bounded queue drops the oldest and counts them', async () => {
  const h = harness(['network'], { maxQueue: 3 });
  for (let i = 0; i < 5; i++) h.client.record('click', { i });
  assert.equal(h.client.status(), { ...h.client.status(), queued: 3, dropped: 2 });
  const saved = JSON.parse([...h.local.map.values()][0]);
  assert.equal(saved.events.map((e: SdkEvent) => e.data.i), [2, 3, 4]);
  assert.is(saved.dropped, 2);
});

test('client: leave() beacons the queue to /api/beacon; offline keeps it for the next visit', async () => {
  const h = harness();
  for (let i = 0; i < 60; i++) h.client.record('click', { i });
  h.client.leave();
  assert.equal(h.sent.map((s) => [s.via, s.url, s.body.events.length]), [
    ['beacon', 'https://wt.test/api/beacon', 50],
    ['beacon', 'https://wt.test/api/beacon', 10],
  ]);
  assert.is(h.local.length, 0);

  const off = harness();
  off.client.record('click', {});
  off.setOnline(false);
  off.client.leave();
  assert.is(off.sent.length, 0);
  const refused = harness();
  refused.setBeacon(false);
  refused.client.record('click', {});
  refused.client.leave();
  // The next page on this origin finds both queues and sends them.
  const next = createClient({ ...off.env, local: off.local }, off.settings);
  assert.is(next.status().queued, 1);
  assert.is(refused.local.length, 1);
});

test('client: userId from options, else the signed-in id on the same origin only', async () => {
  const own = harness([], { endpoint: 'https://app.test' });
  own.local.setItem('service_idp_user_id', 'user_42');
  own.client.record('click', {});
  const other = harness();
  other.local.setItem('service_idp_user_id', 'user_42');
  other.client.record('click', {});
  const explicit = harness([], { endpoint: 'https://app.test', userId: 'u7' });
  explicit.local.setItem('service_idp_user_id', 'user_42');
  explicit.client.record('click', {});
  explicit.settings.userId = null;
  explicit.client.record('click', {});
  for (const h of [own, other, explicit]) await h.advance(2000);
  assert.is(own.sent[0].body.events[0].userId, 'user_42');
  assert.is(other.sent[0].body.events[0].userId, undefined);
  assert.equal(explicit.sent[0].body.events.map((e) => e.userId), ['u7', undefined]);
});

test('client: the ingest key goes in the query string, never in a header or the body', async () => {
  const h = harness([], { key: 'wt pub/é+1' });
  h.client.record('click', {});
  await h.advance(2000);
  const [req] = h.sent;
  assert.is(req.url, 'https://wt.test/api/events?key=wt%20pub%2F%C3%A9%2B1');
  assert.is(new URL(req.url).searchParams.get('key'), 'wt pub/é+1', 'decodes back to the key');
  assert.equal(req.headers, { 'content-type': 'text/plain' }, 'a CORS-simple request: no preflight');
  assert.not.ok('key' in req.body);
  assert.ok(req.body.events.every((e) => !('key' in e)));
});

test('client: beacons carry the key in the query string too; no key, no query string', async () => {
  const h = harness([], { key: 'k_123' });
  h.client.record('click', {});
  h.client.leave();
  assert.equal(h.sent.map((s) => [s.via, s.url]), [['beacon', 'https://wt.test/api/beacon?key=k_123']]);

  const none = harness();
  none.client.record('click', {});
  none.client.leave();
  none.client.record('click', {});
  await none.advance(2000);
  assert.equal(none.sent.map((s) => s.url), ['https://wt.test/api/beacon', 'https://wt.test/api/events']);
});

test('client: headers() is asked before each batch; with it, nothing leaves as a beacon (which carries no headers)', async () => {
  let token = 't1';
  const h = harness();
  h.settings.headers = async () => ({ authorization: `Bearer ${token}` });
  h.client.record('click', {});
  await h.advance(2000);
  token = 't2';
  h.client.record('click', {});
  await h.advance(2000);
  assert.equal(h.sent.map((s) => s.headers), [
    { 'content-type': 'text/plain', authorization: 'Bearer t1' },
    { 'content-type': 'text/plain', authorization: 'Bearer t2' },
  ]);
  h.client.record('click', {});
  h.client.leave();
  assert.is(h.sent.length, 2, 'no beacon');
  assert.is(h.client.status().queued, 1, 'kept for the next page');
});

test('client: a headers() that throws is retried like a failed send', async () => {
  const h = harness();
  let fail = true;
  h.settings.headers = () => {
    if (fail) throw new Error('token refresh failed');
    return {};
  };
  h.client.record('click', {});
  await h.advance(2000);
  assert.is(h.sent.length, 0);
  fail = false;
  await h.advance(60_000);
  assert.is(h.sent.length, 1);
  assert.is(h.client.status().queued, 0);
});

test('client: a key set by a later init() applies to the next request', async () => {
  const h = harness();
  h.client.record('click', {});
  await h.advance(2000);
  h.settings.key = 'k_late';
  h.client.record('click', {});
  await h.advance(2000);
  assert.equal(h.sent.map((s) => s.url), ['https://wt.test/api/events', 'https://wt.test/api/events?key=k_late']);
});

test('client: the referrer travels at the top level of the pageload, as the server stores it', async () => {
  const h = harness();
  h.client.record('pageload', { duration: 120 }, { referrer: referrerOrigin('https://www.google.com/search?q=secret', h.env.href()) });
  h.client.record('pageload', { duration: 80 }, { referrer: referrerOrigin('https://app.test/home?x=1', h.env.href()) });
  await h.advance(2000);
  const wire = JSON.stringify(h.sent[0].body);
  assert.not.ok(wire.includes('secret') || wire.includes('search'), 'path and query never leave the page');
  const [cross, same] = h.sent[0].body.events;
  assert.is(cross.referrer, 'https://www.google.com');
  assert.not.ok('referrer' in same, 'same-site navigation: no field at all');
  const { valid, rejected } = validateEvents(h.sent[0].body.events, 1000);
  assert.is(rejected, 0);
  assert.is(normalise(valid[0] as RawEvent, { now: Date.now(), owner: null }).referrer, 'https://www.google.com');
});

test('client: session id shared by events and renewed after 30 minutes idle', async () => {
  const h = harness();
  h.client.record('click', {});
  h.client.record('click', {});
  await h.advance(SESSION_IDLE_MS + 2000);
  h.client.record('click', {});
  await h.advance(2000);
  const ids = h.sent.flatMap((s) => s.body.events.map((e) => e.sessionId));
  assert.is(ids[0], ids[1]);
  assert.is.not(ids[2], ids[0]);
  assert.ok(UUID7.test(ids[2]!));
});

test.run();
