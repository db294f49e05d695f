// The request bodies the ingest benchmarks send: one event, and a batch of 20 as the SDK sends.
// BENCH_ENVIRONMENTS=1: the events carry an environment (four names), which the stores count in
// rollups of their own (lib/environment-scopes.ts), to measure what that costs ingest.
const environments = typeof process !== 'undefined' && process.env.BENCH_ENVIRONMENTS === '1';

/** A desktop Chrome's User-Agent (bench/post.lua sends the same): ingest reads browser, OS and device from it, and drops a request without one as a bot's. */
export const BROWSER = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/** A POST /api/events request of `body` for a handler, as a desktop Chrome behind a proxy at `forwardedFor` sends it. */
export const ingestRequest = (body: string, forwardedFor: string): Request =>
  new Request('http://bench/api/events', {
    method: 'POST', body, headers: { 'content-type': 'application/json', 'user-agent': BROWSER, 'x-forwarded-for': forwardedFor },
  });

/** What a batch's events carry beside their fixed fields: a query on each page URL, and a custom event's `data`. */
interface Extras { query: (i: number) => string; customData: (i: number) => Record<string, unknown> }

// Custom events carry a name and five properties (docs/api.md#properties), as a shop's would.
const properties = (i: number) => ({ plan: ['free', 'pro', 'team'][i % 3], sku: `sku-${i % 13}`, quantity: 1 + (i % 3), price: 19.99, gift: i % 2 === 0 });
const plain: Extras = { query: () => '', customData: properties };

const event = (i: number, extras: Extras = plain) => ({
  ...(environments ? { environment: ['production', 'production', 'staging', 'preview'][i % 4] } : {}),
  type: ['pageload', 'click', 'error', 'custom'][i % 4],
  timestamp: new Date().toISOString(),
  sessionId: `session-${i % 7}`,
  deployVersion: '1.4.2',
  appName: 'shop',
  url: `https://shop.example/products/${i}${extras.query(i)}`,
  route: '/products/:id',
  ...(i % 4 === 3 ? { name: 'add_to_cart' } : {}),
  data: i % 4 === 0 ? { duration: 420 + i, ttfb: 80, domContentLoaded: 300, loadComplete: 410, transferSize: 18000 }
    : i % 4 === 3 ? extras.customData(i)
    : { target: 'button#buy', text: 'Buy now' },
});

const batch = (extras?: Extras) => JSON.stringify({ events: Array.from({ length: 20 }, (_, i) => event(i, extras)) });

export const payloads = {
  single: JSON.stringify(event(0)),
  batch20: batch(),
};
export const eventsPer = { single: 1, batch20: 20 } as const;

// Campaign queries as links in newsletters and ads write them: percent-encoded and `+` spaces,
// upper case, a parameter given twice (the first counts), an empty one, and other parameters
// around them.
const CAMPAIGNS = [
  '?utm_source=newsletter&utm_medium=email&utm_campaign=spring_sale',
  '?utm_source=google&utm_medium=cpc&utm_campaign=Black%20Friday%202026&utm_term=running+shoes',
  '?utm_source=facebook&utm_medium=social&utm_campaign=launch&utm_source=fb&utm_content=video%2Fa',
  '?ref=home&utm_source=Twitter&utm_medium=&utm_campaign=%C3%A9t%C3%A9+2026',
  '?gclid=Cj0KCQiA&utm_source=bing&utm_medium=cpc&utm_campaign=brand',
];

/**
 * BENCH_ANALYTICS=1 (bench/ingest.ts, bench/ingest-cost.ts): the batch of 20, of the same size
 * (30 bytes apart), with and without what ingest reads for campaigns and custom event properties.
 * `without`: the campaign queries with `ref_` for `utm_` (no `utm_` in the URL: no campaign), and
 * the same five values one level down in `data` (an object value is no property: nothing counted).
 * `with`: every page URL carries a campaign query, and custom events five properties: the worst
 * case of a batch. `landing`: as a site's batches carry campaigns, on the landing page load only
 * (the first of the batch's five; the SDK sends a session's events together, and the pages after
 * a campaign's landing page carry none), with the same properties. So the bodies cost the same to
 * parse, store and answer with, and their difference is what reading campaigns and properties adds.
 */
const ref = (i: number) => CAMPAIGNS[i % CAMPAIGNS.length].replaceAll('utm_', 'ref_');
export const analyticsPayloads = {
  without: batch({ query: ref, customData: (i) => ({ p: properties(i) }) }),
  with: batch({ query: (i) => CAMPAIGNS[i % CAMPAIGNS.length], customData: properties }),
  landing: batch({ query: (i) => (i === 0 ? CAMPAIGNS[0] : ref(i)), customData: properties }),
};

/**
 * Client addresses the `with` requests come from (X-Forwarded-For, one per request in turn):
 * public resolvers and hosts of known allocations on every continent, IPv4 and IPv6, so that the
 * country lookup walks the database for real addresses (test/geo.test.ts checks their countries).
 */
export const CLIENT_ADDRESSES = [
  '8.8.8.8', '2001:4860:4860::8888', '77.88.8.8', '2a02:6b8::feed:0ff', '84.200.69.80', '2606:4700:4700::1111',
  '180.76.76.76', '2400:3200::1', '168.126.63.1', '2620:fe::fe', '1.1.1.1', '139.130.4.5', '200.221.11.100',
  '196.216.2.1', '101.101.101.101', '194.242.2.2',
];
