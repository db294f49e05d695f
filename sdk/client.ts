// Delivery: event envelope, batching, retries and the page-exit beacon. Browser globals come in
// through `Env`, so the whole policy runs under test with fake timers, storage and fetch.
import { backoffDelay, retryable, retryAfterMs } from './backoff.ts';
import { stripQuery } from './payload.ts';
import { adopt, bound, QUEUE_PREFIX, save, without } from './queue.ts';
import { nextSession, SESSION_KEY } from './session.ts';
import type { Data, SdkEvent, Settings, StorageLike } from './types.ts';
import { uuidv7 } from './uuid.ts';

export interface Env {
  now(): number;
  random(): number;
  randomBytes(): Uint8Array;
  fetch(url: string, init: { method: string; body: string; headers: Record<string, string>; keepalive: boolean }): Promise<{ status: number; headers: { get(name: string): string | null } }>;
  /** navigator.sendBeacon; false when the browser refused to queue the body. */
  beacon?(url: string, body: string): boolean;
  local: StorageLike | null;
  session: StorageLike | null;
  href(): string;
  path(): string;
  online(): boolean;
  /** The endpoint is this page's own origin, so the dashboard's signed-in id applies (docs/api.md#ownership). */
  sameOrigin(endpoint: string): boolean;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const USER_KEY = 'service_idp_user_id';
/** Browsers refuse keepalive and beacon bodies past 64 KiB in flight; stay under it. */
export const KEEPALIVE_MAX = 60_000;

export interface Client {
  record(type: string, data?: Data, fields?: Partial<SdkEvent>): void;
  flush(): Promise<void>;
  /** Page is going away: hand the queue to sendBeacon, keep what it refused for the next visit. */
  leave(): void;
  /** The network is back: retry now rather than when the backoff timer says. */
  resume(): void;
  status(): { queued: number; dropped: number; sessionId: string };
}

export function createClient(env: Env, o: Settings): Client {
  const newId = () => uuidv7(env.now(), env.randomBytes());
  const key = QUEUE_PREFIX + newId();
  const pending = adopt(env.local, key);
  let queue = pending.events;
  let dropped = pending.dropped;
  let timer: unknown = 0;
  let sending: Promise<void> | null = null;
  let attempt = 0;
  let memorySession: string | null = null;

  const persist = () => save(env.local, key, { events: queue, dropped });
  const body = (events: SdkEvent[]) =>
    JSON.stringify({ sentAt: new Date(env.now()).toISOString(), dropped: dropped || undefined, events });
  // The ingest key rides in the query string: a header would cost each batch a CORS preflight,
  // and sendBeacon cannot send one at all. Read at each send, so init({ key }) applies at once.
  const url = (path: string) => o.endpoint + path + (o.key ? '?key=' + encodeURIComponent(o.key) : '');

  function sessionId(): string {
    let stored = memorySession;
    try {
      stored = env.session?.getItem(SESSION_KEY) ?? memorySession;
    } catch {
      // sessionStorage disabled: keep the session in memory for this page.
    }
    const s = nextSession(stored, env.now(), newId);
    memorySession = JSON.stringify(s);
    try {
      env.session?.setItem(SESSION_KEY, memorySession);
    } catch {
      // As above.
    }
    return s.id;
  }

  function userId(): string | undefined {
    if (o.userId !== undefined) return o.userId ?? undefined;
    try {
      return (env.sameOrigin(o.endpoint) && env.local?.getItem(USER_KEY)) || undefined;
    } catch {
      return undefined;
    }
  }

  function schedule(ms: number) {
    if (!timer && queue.length) {
      timer = env.setTimeout(() => {
        timer = 0;
        flush();
      }, ms);
    }
  }

  async function send(): Promise<void> {
    while (queue.length) {
      const batch = queue.slice(0, o.maxBatch);
      const reported = dropped;
      const text = body(batch);
      let status = 0;
      let wait: string | null = null;
      try {
        // text/plain keeps the request CORS-simple: no preflight, and keepalive works cross-origin.
        const res = await env.fetch(url('/api/events'), {
          method: 'POST',
          body: text,
          headers: { 'content-type': 'text/plain', ...(o.headers && (await o.headers())) },
          keepalive: text.length < KEEPALIVE_MAX,
        });
        status = res.status;
        wait = res.headers.get('retry-after');
      } catch {
        // Offline, DNS, CORS or connection reset: all retried like a 503.
      }
      if (retryable(status)) {
        schedule(backoffDelay(attempt++, env.random(), retryAfterMs(wait, env.now())));
        return;
      }
      // 2xx: stored. Another 4xx: refused for good, so retrying cannot help; counted as dropped.
      dropped += status < 300 ? -reported : batch.length;
      attempt = 0;
      queue = without(queue, batch);
      persist();
    }
  }

  function flush(): Promise<void> {
    env.clearTimeout(timer);
    timer = 0;
    return (sending ??= send().finally(() => (sending = null)));
  }

  return {
    record(type, data = {}, fields) {
      const href = env.href();
      queue.push({
        id: newId(),
        type,
        timestamp: new Date(env.now()).toISOString(),
        sessionId: sessionId(),
        appName: o.appName,
        deployVersion: o.deployVersion,
        environment: o.environment,
        userId: userId(),
        url: o.stripQuery ? stripQuery(href, 1) : href,
        route: env.path(),
        ...fields,
        data,
      });
      dropped += bound(queue, o.maxQueue);
      persist();
      schedule(o.flushInterval);
    },
    flush,
    leave() {
      if (env.beacon && env.online() && !o.headers) {
        while (queue.length) {
          const batch = queue.slice(0, o.maxBatch);
          const reported = dropped;
          const text = body(batch);
          if (text.length >= KEEPALIVE_MAX || !env.beacon(url('/api/beacon'), text)) break;
          dropped -= reported;
          queue = without(queue, batch);
        }
      }
      persist();
    },
    resume() {
      attempt = 0;
      if (queue.length) flush();
    },
    status: () => ({ queued: queue.length, dropped, sessionId: sessionId() }),
  };
}
