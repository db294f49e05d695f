// The funnel contract: hand-checked sessions and a seeded property test (each store equals the
// reference evaluator on random data), run against every store by test/funnels-store.test.ts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import type { FunnelQuery } from '../lib/funnels/count.ts';
import { referenceFunnel } from '../lib/funnels/reference.ts';
import type { FunnelStep } from '../lib/funnels/steps.ts';
import type { Store } from '../lib/store/types.ts';

export interface FunnelBackend {
  store: Store;
  /** What the store does to past days in time (PostgreSQL: compaction into blocks). */
  settle?: () => Promise<void>;
}

const MIN = 60_000;
const DAY = 86_400_000;
// Three days ago, 10:00 UTC: a closed day, which PostgreSQL compacts.
const T0 = Math.floor(Date.now() / DAY) * DAY - 3 * DAY + 10 * 60 * MIN;

let ids = 0;
const event = (at: number, raw: Partial<RawEvent>, owner = 'u1', project: string | undefined = 'p1'): StoredEvent => {
  const e = normalise({ type: 'pageload', ...raw } as RawEvent, { now: at, owner, newId: () => `f${++ids}` });
  if (project !== undefined) e.projectId = project;
  return e;
};
const page = (session: string | null, minute: number, route: string, more: Partial<RawEvent> = {}) =>
  event(T0 + minute * MIN, { type: 'pageload', sessionId: session ?? undefined, route, ...more });
const custom = (session: string, minute: number, fields: Record<string, unknown>) =>
  event(T0 + minute * MIN, { type: 'custom', sessionId: session, ...fields });

export const SHOP_STEPS: FunnelStep[] = [{ page: '/' }, { page: '/product/*' }, { event: 'add_to_cart' }, { page: '/checkout/**' }];

/**
 * The shop fixture, in insertion order. Hand-checked depths (steps above, window 30 minutes):
 * A 4 (whole funnel) · B 2 (skips add_to_cart) · C 3 (repeats step 1: the later "/" is within the
 * window, the first is not) · D 1 (31 minutes: over the window) · E 2 (exactly 30 minutes) · F 1
 * (steps out of order) · G 3 and H 4 (interleaved; names from data.name and eventName) · L 4
 * (pages from URLs, one with a dot segment, parsed) · N 1 ("*" does not cross "/") · P 2 (same
 * receive time, add_to_cart stored before the product page) · I (other project), J (other owner),
 * K (no session), M (step 2 only), O (step 1 before the range): 0.
 * Sessions per step: 11, 8, 5, 3.
 */
export function shopEvents(): StoredEvent[] {
  const x = [
    page('A', 0, '/', { data: { duration: 80 } }), page('A', 1, '/product/shoe', { data: { duration: 90 } }), custom('A', 2, { name: 'add_to_cart' }), page('A', 3, '/checkout/pay/card'),
    page('B', 0, '/'), page('B', 1, '/product/x'), page('B', 2, '/checkout/x'),
    page('C', 0, '/'), page('C', 40, '/'), page('C', 65, '/product/a'), custom('C', 70, { name: 'add_to_cart' }),
    page('D', 0, '/'), page('D', 31, '/product/a'),
    page('E', 0, '/'), page('E', 30, '/product/a'),
    page('F', 0, '/product/a'), custom('F', 1, { name: 'add_to_cart' }), page('F', 2, '/'),
    page('G', 0, '/'), page('H', 0, '/'), page('H', 1, '/product/b'), page('G', 2, '/product/c'),
    custom('G', 3, { data: { name: 'add_to_cart' } }), custom('H', 4, { eventName: 'add_to_cart', name: '' }), page('H', 5, '/checkout/done'),
    page('L', 0, '', { route: undefined, url: 'https://shop.example/' }), page('L', 1, '', { route: undefined, url: 'https://shop.example/product/hat?ref=x', data: { duration: 70 } }),
    custom('L', 2, { name: 'add_to_cart' }), page('L', 3, '', { route: undefined, url: 'https://shop.example/checkout/a/../pay' }),
    page('N', 0, '/'), page('N', 1, '/product/a/b'), custom('N', 2, { name: 'add_to_cart' }),
    page('P', 0, '/'), custom('P', 1, { name: 'add_to_cart' }), page('P', 1, '/product/z'),
    event(T0, { type: 'pageload', sessionId: 'I', route: '/' }, 'u1', 'p2'), event(T0 + MIN, { type: 'pageload', sessionId: 'I', route: '/product/i' }, 'u1', 'p2'),
    event(T0, { type: 'pageload', sessionId: 'J', route: '/' }, 'u2'), event(T0 + MIN, { type: 'pageload', sessionId: 'J', route: '/product/j' }, 'u2'),
    page(null, 0, '/'), page(null, 1, '/product/k'),
    page('M', 0, '/product/m'),
    page('O', -61, '/'), page('O', -59, '/product/o'),
  ];
  // Interleaved by receive time as they would arrive (stable: same-time events keep their order).
  return x.map((e, i) => [e, i] as const).sort((a, b) => Date.parse(a[0].receivedAt) - Date.parse(b[0].receivedAt) || a[1] - b[1]).map(([e]) => e);
}

export const SHOP_QUERY: FunnelQuery = { userId: 'u1', projectId: 'p1', from: T0 - 60 * MIN, to: T0 + DAY, windowMs: 30 * MIN, steps: SHOP_STEPS };

/** A seeded generator (mulberry32): the same data on every run and store. */
export function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(xs: readonly T[]): T => xs[int(xs.length)] };
}

const PATHS = ['/', '/a', '/a/b', '/product/1', '/product/2/x', '/checkout', '/checkout/pay', '/blog/x-y'];
const NAMES = ['signup', 'add_to_cart', 'buy'];
// URLs whose path the WHATWG parser rewrites or rejects, or that a regular expression could misread.
const ODD_URLS = ['https://shop.example/a/../product/1', 'product/1', '//other.example/a/b', 'HTTPS://Shop.Example/checkout',
  'https://shop.example/a b/x', 'https://shop.example:99999/a', 'https://xn--nxasmq6b.example/a', '?q=1', 'https://shop.example/%2e%2e/a',
  'https://shop.example', 'https://[::1]/a/b', 'https://1.2.3.999/a', ' /a', '/a\\b', 'mailto:x@y'];
const PATTERNS = ['/', '/a', '/a/*', '/a/**', '/product/*', '/product/**', '/checkout*', '/*', '/**', '/*/x', '*'];

/** Random events of one project: few sessions and steps, so chains, repeats and windows all occur. */
export function randomEvents(seed: number, project: string): StoredEvent[] {
  const r = random(seed);
  const out: StoredEvent[] = [];
  let t = T0 + r.int(60) * MIN;
  for (let i = 0, n = 20 + r.int(40); i < n; i++) {
    t += r.pick([0, 0, 1_000, MIN, 5 * MIN, 20 * MIN, 70 * MIN]);
    const session = r.next() < 0.05 ? undefined : `s${r.int(5)}`;
    const kind = r.int(10);
    const path = r.pick(PATHS);
    const raw: Partial<RawEvent> = kind < 5
      ? {
        type: 'pageload', sessionId: session,
        ...(r.next() < 0.4 ? { route: path } : { url: r.next() < 0.2 ? r.pick(ODD_URLS) : `https://shop.example${path}${r.next() < 0.3 ? '?q=1' : ''}` }),
        // With a duration, PostgreSQL keeps the route key in a column; without, it is read from the event.
        ...(r.next() < 0.5 ? { data: { duration: 120 } } : {}),
      }
      : kind < 9
        ? { type: 'custom', sessionId: session, ...(r.next() < 0.7 ? { name: r.pick(NAMES) } : { data: { name: r.pick(NAMES) } }) }
        : { type: 'click', sessionId: session, route: path };
    const owner = r.next() < 0.05 ? 'u2' : 'u1';
    out.push(event(t, raw, owner, r.next() < 0.05 ? 'other' : project));
  }
  return out;
}

export function randomQuery(seed: number, project: string): FunnelQuery {
  const r = random(seed * 7919 + 1);
  const steps: FunnelStep[] = Array.from({ length: 2 + r.int(4) }, () => (r.next() < 0.6 ? { page: r.pick(PATTERNS) } : { event: r.pick(NAMES) }));
  return { userId: 'u1', projectId: project, from: T0 + r.int(3) * 30 * MIN, to: T0 + DAY, windowMs: r.pick([1, 5, 30, 90]) * MIN, steps };
}

export function funnelContract(name: string, open: () => Promise<FunnelBackend>, rounds = 40): void {
  const t = suite(`funnel contract (${name})`);

  t('shop fixture: hand-checked sessions per step, equal to the reference', async () => {
    const { store, settle } = await open();
    try {
      const events = shopEvents();
      await store.insert(events);
      await settle?.();
      assert.equal(referenceFunnel(events, SHOP_QUERY), [11, 8, 5, 3], 'reference');
      assert.equal(await store.funnel(SHOP_QUERY), [11, 8, 5, 3]);
      // Another project, owner, range or window: the same rules.
      assert.equal(await store.funnel({ ...SHOP_QUERY, projectId: 'p2' }), [1, 1, 0, 0]);
      assert.equal(await store.funnel({ ...SHOP_QUERY, userId: 'u2', steps: SHOP_STEPS.slice(0, 2) }), [1, 1]);
      assert.equal(await store.funnel({ ...SHOP_QUERY, windowMs: 24 * 60 * MIN }), referenceFunnel(events, { ...SHOP_QUERY, windowMs: 24 * 60 * MIN }));
      assert.equal(await store.funnel({ ...SHOP_QUERY, from: T0 + 2 * MIN }), referenceFunnel(events, { ...SHOP_QUERY, from: T0 + 2 * MIN }));
      assert.equal(await store.funnel({ ...SHOP_QUERY, steps: [{ page: '/**' }, { page: '/**' }] }), referenceFunnel(events, { ...SHOP_QUERY, steps: [{ page: '/**' }, { page: '/**' }] }));
    } finally {
      await store.close();
    }
  });

  t(`property: equal to the reference on ${rounds} seeded random projects`, async () => {
    const { store, settle } = await open();
    try {
      const all: StoredEvent[] = [];
      for (let i = 0; i < rounds; i++) all.push(...randomEvents(i + 1, `r${i}`));
      all.sort((a, b) => Date.parse(a.receivedAt) - Date.parse(b.receivedAt));
      await store.insert(all);
      await settle?.();
      for (let i = 0; i < rounds; i++) {
        for (const q of [randomQuery(i + 1, `r${i}`), randomQuery(i + 1000, `r${i}`)]) {
          assert.equal(await store.funnel(q), referenceFunnel(all, q), `seed ${i + 1}: ${JSON.stringify(q)}`);
        }
      }
    } finally {
      await store.close();
    }
  });

  t.run();
}
