// Per-client token buckets for ingestion: generous by default, so only a runaway client feels it.

export interface RateLimitOptions {
  /** Requests per second refilled per client; 0 turns limiting off. */
  rate: number;
  /** Bucket size: the burst a client may send at once. */
  burst: number;
  /** Clients tracked at most; idle buckets (full again) are forgotten first. */
  maxClients?: number;
}

export interface RateLimiter {
  /**
   * 0 when the request may pass, else the seconds to wait (for Retry-After). `cost` is what it
   * takes from the bucket (default 1; events of a batch for per-project limits), at most a full bucket.
   */
  take(client: string, now: number, cost?: number): number;
  readonly size: number;
}

export function createRateLimiter(options: RateLimitOptions): RateLimiter {
  const { rate, burst } = options;
  const maxClients = options.maxClients ?? 100_000;
  const buckets = new Map<string, { tokens: number; at: number }>();

  const sweep = (now: number) => {
    for (const [client, b] of buckets) {
      if (b.tokens + ((now - b.at) / 1000) * rate >= burst) buckets.delete(client);
    }
    // Still too many active clients: forget the oldest, which only makes limiting more lenient.
    for (const client of buckets.keys()) {
      if (buckets.size < maxClients) break;
      buckets.delete(client);
    }
  };

  return {
    take(client, now, cost = 1) {
      if (rate <= 0) return 0;
      let b = buckets.get(client);
      if (!b) {
        if (buckets.size >= maxClients) sweep(now);
        buckets.set(client, (b = { tokens: burst, at: now }));
      } else {
        b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * rate);
        b.at = now;
      }
      const need = Math.min(cost, burst);
      if (b.tokens >= need) {
        b.tokens -= need;
        return 0;
      }
      return Math.max(1, Math.ceil((need - b.tokens) / rate));
    },
    get size() {
      return buckets.size;
    },
  };
}
