// Delivering one notification on one channel, with retries, and the log of how that went.

export type DeliveryStatus = 'sending' | 'retrying' | 'sent' | 'failed';

/** One notification on one channel. Plain JSON, so a store can persist the log as it is. */
export interface DeliveryRecord {
  /** `<notification id>:<channel>`. */
  id: string;
  notificationId: string;
  ruleId: string;
  channel: 'webhook' | 'email';
  /** The webhook URL, or the recipients. */
  target: string;
  subject: string;
  /** `sending` (first attempt under way), `retrying` (an attempt failed, another is due at `nextAttemptAt`), `sent`, `failed` (gave up). */
  status: DeliveryStatus;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** Wait before the second attempt; doubled before each next one, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** 5 attempts over about 15 s (waits of ~1, 2, 4 and 8 s, each with up to half taken off at random). */
export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 60_000 };

/** Records kept per rule, newest last. */
export const LOG_PER_RULE = 50;

type Listener = (record: DeliveryRecord) => void;

/**
 * The recent deliveries of each rule, in memory and bounded (LOG_PER_RULE per rule). Listeners hear
 * every change, which is how a store can persist the log and how tests watch a delivery progress.
 */
export class DeliveryLog {
  private byRule = new Map<string, DeliveryRecord[]>();
  private listeners = new Set<Listener>();

  constructor(readonly perRule = LOG_PER_RULE) {}

  /** Adds a record or replaces the one with the same id; tells the listeners. */
  put(record: DeliveryRecord): void {
    let list = this.byRule.get(record.ruleId);
    if (!list) this.byRule.set(record.ruleId, (list = []));
    const i = list.findIndex((r) => r.id === record.id);
    if (i >= 0) list[i] = record;
    else {
      list.push(record);
      if (list.length > this.perRule) list.shift();
    }
    for (const listener of this.listeners) {
      try {
        listener(record);
      } catch {
        // A listener that fails (a store that cannot persist) must not stop the delivery.
      }
    }
  }

  /** A rule's recent deliveries, oldest first. */
  list(ruleId: string): DeliveryRecord[] {
    return [...(this.byRule.get(ruleId) ?? [])];
  }

  /** Loads records kept by a store (oldest first), e.g. at start. */
  restore(records: readonly DeliveryRecord[]): void {
    for (const r of records) {
      let list = this.byRule.get(r.ruleId);
      if (!list) this.byRule.set(r.ruleId, (list = []));
      list.push(r);
      if (list.length > this.perRule) list.shift();
    }
  }

  forget(ruleId: string): void {
    this.byRule.delete(ruleId);
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export interface DeliveryContext {
  log: DeliveryLog;
  policy?: RetryPolicy;
  now?: () => number;
  /** How to wait between attempts (a timer by default). */
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The wait after failed attempt `n` (1-based): exponential, capped, with jitter so that retries to one receiver spread out. */
export function retryDelay(n: number, policy: RetryPolicy, random = Math.random()): number {
  const full = Math.min(policy.baseDelayMs * 2 ** (n - 1), policy.maxDelayMs);
  return Math.round(full * (1 - random / 2));
}

/**
 * Runs `attempt` until it succeeds or the policy's attempts are used up, keeping `record` in the log
 * up to date at every step. An attempt that throws an error marked `final: true` (a refused webhook
 * destination) ends it at once: no retry could succeed. Resolves with the final record; never throws.
 */
export async function deliver(
  record: Omit<DeliveryRecord, 'status' | 'attempts' | 'lastError' | 'nextAttemptAt' | 'createdAt' | 'updatedAt'>,
  attempt: () => Promise<void>,
  ctx: DeliveryContext,
): Promise<DeliveryRecord> {
  const policy = ctx.policy ?? DEFAULT_RETRY;
  const now = ctx.now ?? Date.now;
  const sleep = ctx.sleep ?? defaultSleep;
  const iso = () => new Date(now()).toISOString();
  let current: DeliveryRecord = { ...record, status: 'sending', attempts: 0, lastError: null, nextAttemptAt: null, createdAt: iso(), updatedAt: iso() };
  ctx.log.put(current);
  for (;;) {
    let error: string | null = null;
    let final = false;
    try {
      await attempt();
    } catch (e) {
      error = (e as Error)?.message || String(e);
      final = (e as { final?: unknown })?.final === true;
    }
    const attempts = current.attempts + 1;
    if (error === null) {
      current = { ...current, status: 'sent', attempts, lastError: null, nextAttemptAt: null, updatedAt: iso() };
      ctx.log.put(current);
      return current;
    }
    if (final || attempts >= policy.maxAttempts) {
      current = { ...current, status: 'failed', attempts, lastError: error, nextAttemptAt: null, updatedAt: iso() };
      ctx.log.put(current);
      return current;
    }
    const wait = retryDelay(attempts, policy);
    current = { ...current, status: 'retrying', attempts, lastError: error, nextAttemptAt: new Date(now() + wait).toISOString(), updatedAt: iso() };
    ctx.log.put(current);
    await sleep(wait);
  }
}
