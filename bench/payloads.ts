// The request bodies the ingest benchmarks send: one event, and a batch of 20 as the SDK sends.
// BENCH_ENVIRONMENTS=1: the events carry an environment (four names), which the stores count in
// rollups of their own (lib/environment-scopes.ts), to measure what that costs ingest.
const environments = typeof process !== 'undefined' && process.env.BENCH_ENVIRONMENTS === '1';
// Custom events carry a name and five properties (docs/api.md#properties), as a shop's would.
const event = (i: number) => ({
  ...(environments ? { environment: ['production', 'production', 'staging', 'preview'][i % 4] } : {}),
  type: ['pageload', 'click', 'error', 'custom'][i % 4],
  timestamp: new Date().toISOString(),
  sessionId: `session-${i % 7}`,
  deployVersion: '1.4.2',
  appName: 'shop',
  url: `https://shop.example/products/${i}`,
  route: '/products/:id',
  ...(i % 4 === 3 ? { name: 'add_to_cart' } : {}),
  data: i % 4 === 0 ? { duration: 420 + i, ttfb: 80, domContentLoaded: 300, loadComplete: 410, transferSize: 18000 }
    : i % 4 === 3 ? { plan: ['free', 'pro', 'team'][i % 3], sku: `sku-${i % 13}`, quantity: 1 + (i % 3), price: 19.99, gift: i % 2 === 0 }
    : { target: 'button#buy', text: 'Buy now' },
});

export const payloads = {
  single: JSON.stringify(event(0)),
  batch20: JSON.stringify({ events: Array.from({ length: 20 }, (_, i) => event(i)) }),
};
export const eventsPer = { single: 1, batch20: 20 } as const;
