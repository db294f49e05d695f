// The live streams: fan-out of newly stored events to SSE subscribers, scoped by owner.
// Framing: docs/api.md#sse-framing; design: docs/architecture.md#sse-hub.
import { concat } from './bytes.ts';
import type { StoredEvent } from './event.ts';

export interface HubOptions {
  /** Interval of `: keep-alive` comments (15 s keeps proxies from closing an idle connection). */
  keepAliveMs?: number;
  /**
   * Messages for one subscriber are coalesced into one write per tick: one write per broadcast per
   * subscriber managed ~47 broadcasts/s for 1,000 subscribers here; coalescing reached 100/s.
   */
  coalesceMs?: number;
  /** A subscriber whose unread backlog passes this many bytes is dropped, so it slows no one else. */
  maxBacklogBytes?: number;
  /** At most this many open streams; past it subscribe() returns null (the route answers 503). */
  maxSubscribers?: number;
  /**
   * At most this many open streams per party (Subscription.party: a user, or the address of a
   * client nobody identified), so that one party cannot take every stream; past it subscribe()
   * returns null (the route answers 429).
   */
  maxPerParty?: number;
  /** Messages kept per user for `Last-Event-ID` replay on the developer stream. */
  historyPerUser?: number;
  /** Users whose history is kept (the least recently active are forgotten first). */
  historyUsers?: number;
}

export interface Subscription {
  /** The owner whose events this subscriber receives; null = only unowned events. */
  userId: string | null;
  /** Number each message with an `id:` field (the developer stream). */
  ids?: boolean;
  /** Replay this user's messages numbered after this id (from the Last-Event-ID header). */
  lastEventId?: number;
  /** Close the stream at this time (ms since the epoch): when the subscriber's token expires. */
  closeAt?: number;
  /** Who the stream counts against for HubOptions.maxPerParty; absent: nobody (not bounded per party). */
  party?: string;
  /** Only the owner's events of this project (a project shared with the subscriber). */
  projectId?: string;
  /** Closes the stream when aborted (the subscriber lost access to the project), after an `event: revoked`. */
  signal?: AbortSignal;
  /** Called once when the stream ends, however it ends. */
  onClose?: () => void;
}

interface Subscriber {
  userId: string | null;
  projectId?: string;
  onClose?: () => void;
  party?: string;
  ids: boolean;
  expiry?: ReturnType<typeof setTimeout>;
  controller: ReadableStreamDefaultController<Uint8Array>;
  pending: Uint8Array[];
}

export interface Hub {
  /** A new stream, or null when the process holds maxSubscribers streams or the party maxPerParty. */
  subscribe(sub: Subscription): ReadableStream<Uint8Array> | null;
  publish(events: readonly StoredEvent[]): void;
  readonly size: number;
  /** Streams open for a party, and the most it may have open. */
  openFor(party: string): number;
  readonly maxPerParty: number;
  close(): void;
}

/** Open streams per party by default: a dashboard tab holds one. */
export const MAX_STREAMS_PER_PARTY = 100;

const encoder = new TextEncoder();
/** Reconnection hint sent first; also makes the response start at once. */
const PREAMBLE = encoder.encode('retry: 3000\n: connected\n\n');
const KEEP_ALIVE = encoder.encode(': keep-alive\n\n');
/** Sent before a stream closes because the subscriber's credentials expired: sign in again. */
const EXPIRED = encoder.encode('event: expired\ndata: {"reason":"token expired"}\n\n');
/** Sent before a stream closes because the subscriber no longer has access to its project. */
const REVOKED = encoder.encode('event: revoked\ndata: {"reason":"access to the project ended"}\n\n');

interface Frame {
  seq: number;
  plain: Uint8Array;
  /** Built on first use: only developer-stream subscribers want ids. */
  numbered?: Uint8Array;
}

/** A broadcast kept for replay; encoded only if someone asks for it. */
interface Past {
  seq: number;
  events: StoredEvent[];
}

const numbered = (seq: number, plain: Uint8Array) => concat([encoder.encode(`id: ${seq}\n`), plain]);

/** One SSE message: JSON has no raw newlines, so it always fits one `data:` line. */
export const sseData = (events: readonly StoredEvent[]): Uint8Array => encoder.encode(`data: ${JSON.stringify(events)}\n\n`);

export function createHub(options: HubOptions = {}): Hub {
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const coalesceMs = options.coalesceMs ?? 20;
  const maxBacklog = options.maxBacklogBytes ?? 4 * 1024 * 1024;
  const maxSubscribers = options.maxSubscribers ?? 10_000;
  const maxPerParty = options.maxPerParty ?? MAX_STREAMS_PER_PARTY;
  const historyPerUser = options.historyPerUser ?? 200;
  const historyUsers = options.historyUsers ?? 10_000;
  const subscribers = new Set<Subscriber>();
  const perParty = new Map<string, number>();
  const history = new ReplayHistory(historyPerUser, historyUsers);
  // Ids start from the clock so they keep increasing across restarts of the process.
  let seq = Date.now() * 1000;
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let flushTimer: ReturnType<typeof setTimeout> | undefined;

  const drop = (s: Subscriber) => {
    if (!subscribers.delete(s)) return;
    if (s.party !== undefined) {
      const n = (perParty.get(s.party) ?? 1) - 1;
      if (n > 0) perParty.set(s.party, n);
      else perParty.delete(s.party);
    }
    if (s.expiry !== undefined) clearTimeout(s.expiry);
    s.onClose?.();
    if (subscribers.size === 0 && keepAlive !== undefined) {
      clearInterval(keepAlive);
      keepAlive = undefined;
    }
  };

  const write = (s: Subscriber, bytes: Uint8Array) => {
    try {
      s.controller.enqueue(bytes);
      if ((s.controller.desiredSize ?? 0) < -maxBacklog) {
        drop(s);
        s.controller.error(new Error('subscriber too slow'));
      }
    } catch {
      drop(s);
    }
  };

  const flush = () => {
    flushTimer = undefined;
    for (const s of subscribers) {
      if (s.pending.length === 0) continue;
      const parts = s.pending;
      s.pending = [];
      write(s, concat(parts));
    }
  };

  return {
    subscribe(sub) {
      if (subscribers.size >= maxSubscribers) return null;
      if (sub.party !== undefined && (perParty.get(sub.party) ?? 0) >= maxPerParty) return null;
      let self: Subscriber;
      return new ReadableStream<Uint8Array>(
        {
          start(controller) {
            self = { userId: sub.userId, projectId: sub.projectId, onClose: sub.onClose, party: sub.party, ids: sub.ids ?? false, controller, pending: [] };
            subscribers.add(self);
            if (sub.party !== undefined) perParty.set(sub.party, (perParty.get(sub.party) ?? 0) + 1);
            controller.enqueue(PREAMBLE);
            const end = (last: Uint8Array) => {
              if (!subscribers.has(self)) return;
              flush();
              drop(self);
              try {
                controller.enqueue(last);
                controller.close();
              } catch {
                // the client already went away
              }
            };
            if (sub.closeAt !== undefined) self.expiry = unref(setTimeout(() => end(EXPIRED), Math.max(0, sub.closeAt - Date.now())));
            if (sub.signal?.aborted) end(REVOKED);
            else sub.signal?.addEventListener('abort', () => end(REVOKED), { once: true });
            const after = sub.lastEventId;
            if (self.ids && sub.userId !== null && after !== undefined) {
              for (const p of history.of(sub.userId)) {
                const events = inProject(p.events, sub.projectId);
                if (p.seq > after && events.length) controller.enqueue(numbered(p.seq, sseData(events)));
              }
            }
            keepAlive ??= unref(setInterval(() => {
              for (const s of subscribers) write(s, KEEP_ALIVE);
            }, keepAliveMs));
          },
          cancel() {
            drop(self);
          },
        },
        { highWaterMark: 0, size: (chunk) => chunk.byteLength },
      );
    },
    publish(events) {
      if (events.length === 0) return;
      const byOwner = new Map<string | null, StoredEvent[]>();
      for (const e of events) {
        const list = byOwner.get(e.user_id);
        if (list) list.push(e);
        else byOwner.set(e.user_id, [e]);
      }
      const seqs = new Map<string | null, number>();
      for (const [owner, list] of byOwner) {
        const id = ++seq;
        seqs.set(owner, id);
        if (owner !== null) history.remember(owner, { seq: id, events: list });
      }
      if (subscribers.size === 0) return;
      const frameFor = broadcastFrames(byOwner, seqs);
      for (const s of subscribers) {
        const frame = frameFor(s.userId, s.projectId);
        if (frame) s.pending.push(s.ids ? (frame.numbered ??= numbered(frame.seq, frame.plain)) : frame.plain);
      }
      flushTimer ??= setTimeout(flush, coalesceMs);
    },
    get size() {
      return subscribers.size;
    },
    openFor(party) {
      return perParty.get(party) ?? 0;
    },
    maxPerParty,
    close() {
      if (flushTimer !== undefined) clearTimeout(flushTimer);
      flush();
      for (const s of [...subscribers]) {
        drop(s);
        try {
          s.controller.close();
        } catch {
          // already closed by the client
        }
      }
    },
  };
}

/** Broadcasts kept per owner for `Last-Event-ID` replay; the least recently active owners are forgotten first. */
class ReplayHistory {
  private readonly byOwner = new Map<string, Past[]>();
  constructor(private readonly perOwner: number, private readonly owners: number) {}

  remember(owner: string, frame: Past): void {
    let list = this.byOwner.get(owner);
    if (list) this.byOwner.delete(owner); // re-inserted below: the Map's order is recency
    else list = [];
    list.push(frame);
    if (list.length > this.perOwner) list.shift();
    this.byOwner.set(owner, list);
    if (this.byOwner.size > this.owners) this.byOwner.delete(this.byOwner.keys().next().value!);
  }

  of(owner: string): readonly Past[] {
    return this.byOwner.get(owner) ?? [];
  }
}

/**
 * The frame a subscriber of (owner, project?) gets from one broadcast, or null. Encoded once per
 * owner present in the batch, and once per project asked for, never once per subscriber.
 */
function broadcastFrames(byOwner: ReadonlyMap<string | null, StoredEvent[]>, seqs: ReadonlyMap<string | null, number>) {
  const frames = new Map<string | null, Frame>();
  for (const [owner, list] of byOwner) frames.set(owner, { seq: seqs.get(owner)!, plain: sseData(list) });
  const projectFrames = new Map<string, Frame | null>();
  return (owner: string | null, projectId: string | undefined): Frame | null | undefined => {
    if (projectId === undefined) return frames.get(owner);
    const key = `${owner}\u0000${projectId}`;
    let frame = projectFrames.get(key);
    if (frame === undefined) {
      const list = inProject(byOwner.get(owner) ?? [], projectId);
      frame = list.length ? { seq: seqs.get(owner)!, plain: sseData(list) } : null;
      projectFrames.set(key, frame);
    }
    return frame;
  };
}

const inProject = (events: StoredEvent[], projectId: string | undefined) =>
  projectId === undefined ? events : events.filter((e) => e.projectId === projectId);

/** Keep-alive timers must not keep a process alive on their own (Node and Deno differ). */
function unref<T>(timer: T): T {
  const t = timer as { unref?: () => void };
  if (typeof t.unref === 'function') t.unref();
  else if (typeof timer === 'number') (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(timer);
  return timer;
}
