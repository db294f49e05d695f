// Heavy work under way per user, bounded: a developer query holds up to 100,000 of its user's
// events in memory while it runs, so one user running many at once could take the memory and the
// store's time that every other user's requests need.
import { HttpError } from './http.ts';

/** Developer queries and insights one user may have running at once. */
export const MAX_QUERIES_PER_USER = 2;

export class InFlight {
  private running = new Map<string, number>();

  constructor(readonly max = MAX_QUERIES_PER_USER) {}

  /** Runs `fn` for `key`, or answers 429 `too_many_queries` when `key` already has `max` runs under way. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const n = this.running.get(key) ?? 0;
    if (n >= this.max) {
      throw new HttpError(429, 'too_many_queries', `At most ${this.max} developer queries and insights may run at once per user; try again when one has finished`, { 'retry-after': '1' });
    }
    this.running.set(key, n + 1);
    try {
      return await fn();
    } finally {
      const left = (this.running.get(key) ?? 1) - 1;
      if (left > 0) this.running.set(key, left);
      else this.running.delete(key);
    }
  }

  /** Keys with runs under way (for tests and health figures). */
  get size(): number {
    return this.running.size;
  }
}
