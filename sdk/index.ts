// The SDK's public API (ESM entry; the script-tag build wraps the same functions in `Watchtower`).
import { trail, watch, type Trail } from './breadcrumbs.ts';
import { capture, withCrumbs } from './capture.ts';
import { createClient, type Client, type Env } from './client.ts';
import { DEFAULTS, settle } from './config.ts';
import { errorData } from './payload.ts';
import { doNotTrack, nextSession, sampled, SESSION_KEY } from './session.ts';
import type { Data, Options, Settings } from './types.ts';
import { uuidv7 } from './uuid.ts';

export type { Options, SdkEvent, Data } from './types.ts';

let settings: Settings | null = null;
let client: Client | null = null;
let crumbs: Trail = trail(0);

const storage = (name: 'localStorage' | 'sessionStorage') => {
  try {
    return window[name];
  } catch {
    return null;
  }
};

function browserEnv(): Env {
  return {
    now: Date.now,
    random: Math.random,
    randomBytes: () => crypto.getRandomValues(new Uint8Array(16)),
    fetch: (url, init) => fetch(url, init),
    beacon: navigator.sendBeacon ? (url, body) => navigator.sendBeacon(url, body) : undefined,
    local: storage('localStorage'),
    session: storage('sessionStorage'),
    href: () => location.href,
    path: () => location.pathname,
    online: () => navigator.onLine !== false,
    sameOrigin: (endpoint) => new URL(endpoint, location.href).origin == location.origin,
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t as number),
  };
}

/**
 * Starts the SDK. Calling it again updates the options (appName, userId, …) of the running SDK.
 * `fallbackEndpoint` is the script's own origin in the script-tag build.
 */
export function init(options: Options = {}, fallbackEndpoint = location.origin): void {
  if (settings) {
    Object.assign(settings, settle(settings, options));
    return;
  }
  const o = (settings = settle({ ...DEFAULTS, endpoint: fallbackEndpoint }, options));
  if (o.respectDoNotTrack && doNotTrack(navigator, window as { doNotTrack?: string })) return;
  const env = browserEnv();
  // Sampling is decided per session, before anything is registered: a sampled-out page sends nothing.
  let stored: string | null = null;
  try {
    stored = env.session?.getItem(SESSION_KEY) ?? null;
  } catch {
    // No sessionStorage: the client keeps the session in memory.
  }
  const session = nextSession(stored, Date.now(), () => uuidv7(Date.now(), env.randomBytes()));
  try {
    env.session?.setItem(SESSION_KEY, JSON.stringify(session));
  } catch {
    // As above.
  }
  if (!sampled(session.id, o.sampleRate)) return;
  client = createClient(env, o);
  crumbs = trail(o.breadcrumbs);
  if (o.breadcrumbs > 0) watch(crumbs, o.endpoint);
  capture(client, o, crumbs);
  // Events a previous page could not deliver go out on this visit.
  if (client.status().queued) client.flush();
}

/** A custom event: type `custom`, `data.name` = name. */
export function track(name: string, data?: Data): void {
  client?.record('custom', { name, ...data });
}

/** User feedback: rating 1–5 and an optional comment. */
export function feedback(rating: number, comment?: string): void {
  const r = Math.round(Number(rating));
  if (r >= 1 && r <= 5) client?.record('feedback', { rating: r, comment: comment ? String(comment).slice(0, 2000) : undefined });
}

/** Reports a caught error (or any thrown value) with its stack; `data` is merged into the event data. */
export function captureError(error: unknown, data?: Data): void {
  const d = { ...errorData(error, 'captureError'), ...data };
  client?.record('error', withCrumbs(d, crumbs), { message: d.message as string });
}

/** Sends everything queued now; resolves when the attempt is over (delivered or scheduled for retry). */
export function flush(): Promise<void> {
  return client?.flush() ?? Promise.resolve();
}

/** Sets (or with null, clears) the user id of the events recorded from now on. */
export function setUser(userId: string | null): void {
  if (settings) settings.userId = userId;
}

/** Low-level: queues an event of any type (`performance`, `page_view`, `login`, …). */
export function record(type: string, data?: Data, fields?: Data): void {
  client?.record(type, data, fields);
}

/** Queue length, events dropped and not yet reported, and the session id; null when not sending. */
export function status(): { queued: number; dropped: number; sessionId: string } | null {
  return client?.status() ?? null;
}
