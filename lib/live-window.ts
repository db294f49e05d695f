// The live window of one user: what /api/stats needs about the latest events, kept up to date on
// every insert so that a request never scans (counting the sessions of the last 5 minutes by
// scanning cost 330–350 ms per request after a million events in a minute):
//   - session → when it was last seen, for activeUsers, pruned as sessions go quiet;
//   - the 50 most recent errors, the 20 most recent events, per route the 100 most recent points.
// "Most recent" means inserted last, as in computeStats. The window answers exactly or not at all
// (null): then the store computes Recents from raw events, with recentsOf or its own queries.
import type { StoredEvent } from './event.ts';
import { withinDepth } from './shape.ts';
import {
  ACTIVE_WINDOW_MS, LATENCY_POINTS, pageloadDuration, RECENT_ACTIVITY, RECENT_ERRORS,
  type LatencyPoint, type ResolvedRange,
} from './stats.ts';
import { routeKey } from './event-keys.ts';

/** The statistics that come from the latest events rather than from rollups. */
export interface Recents {
  activeUsers: number;
  /** Newest first. */
  errors: StoredEvent[];
  /** Newest first. */
  activity: StoredEvent[];
  /** Per route key, oldest first. */
  points: ReadonlyMap<string, LatencyPoint[]>;
}

export const NO_RECENTS: Recents = { activeUsers: 0, errors: [], activity: [], points: new Map() };

export const pointOf = (e: StoredEvent, duration: number): LatencyPoint => ({
  duration,
  ttfb: typeof e.data.ttfb === 'number' && Number.isFinite(e.data.ttfb) ? e.data.ttfb : null,
  timestamp: e.timestamp,
});

/**
 * How many events a range holds, of those the recents list (from its rollups): a scan of its latest
 * events can stop once it holds every list's share of them.
 */
export interface RangeCounts {
  events: number;
  errors: number;
  /** Per route key, its pageloads with a numeric duration. */
  pageloads: ReadonlyMap<string, number>;
}

/**
 * The receive times [from, to) whose sessions count as active in a request's answer: the last 5
 * minutes before `now`, within the range (null: none). recentsOf and the live window count a
 * session when one of its events is received at or before `now` and at most 5 minutes before it.
 * Receive times are whole ms, so the bounds are too (a store compares them as ISO strings).
 */
export function activeSpan(now: number, range: ResolvedRange | null): [number, number] | null {
  const from = Math.ceil(Math.max(range ? range.from : -Infinity, now - ACTIVE_WINDOW_MS));
  const to = Math.min(range ? range.to : Infinity, Math.floor(now) + 1);
  return from < to ? [from, to] : null;
}

/**
 * The recent errors, activity and points of a range, from its events given newest first (inserted
 * last, first): all of them through `add`, or each list's own events through its `take…` (a store
 * that can select errors and pageloads reads only those). Given the range's counts, it says when a
 * list is complete: it holds what the range has, up to its length, and older events cannot change
 * it. Active sessions are the caller's (see activeSpan): with receive times out of insertion order,
 * no point of a newest-first scan is past all of them.
 */
export class RecentsBuilder {
  private readonly errors: StoredEvent[] = [];
  private readonly activity: StoredEvent[] = [];
  private readonly points = new Map<string, LatencyPoint[]>();
  /** Routes whose points are still short of what the range holds (counts given). */
  private routesShort = 0;

  constructor(private readonly counts?: RangeCounts) {
    if (counts) for (const n of counts.pageloads.values()) if (n > 0) this.routesShort++;
  }

  /** The next event, to every list it belongs to (route and duration: its pageload's, else null); false once all are complete. */
  add(e: StoredEvent, route: string | null, duration: number | null): boolean {
    this.takeActivity(e);
    if (e.type === 'error') this.takeError(e);
    if (route !== null) this.takePoint(e, route, duration!);
    return !(this.activityDone && this.errorsDone && this.pointsDone);
  }

  /** The next event of the range; false once the activity list is complete. */
  takeActivity(e: StoredEvent): boolean {
    if (this.activity.length < RECENT_ACTIVITY) this.activity.push(e);
    return !this.activityDone;
  }

  /** The next error of the range; false once the errors list is complete. */
  takeError(e: StoredEvent): boolean {
    if (this.errors.length < RECENT_ERRORS) this.errors.push(e);
    return !this.errorsDone;
  }

  /** The next pageload of the range with a duration, under its route key; false once every route's points are complete. */
  takePoint(e: StoredEvent, route: string, duration: number): boolean {
    let list = this.points.get(route);
    if (!list) this.points.set(route, (list = []));
    if (list.length < LATENCY_POINTS) {
      list.push(pointOf(e, duration));
      if (this.counts && list.length === Math.min(LATENCY_POINTS, this.counts.pageloads.get(route) ?? 0)) this.routesShort--;
    }
    return !this.pointsDone;
  }

  // Never complete without counts: the caller reads every event.
  get activityDone(): boolean {
    return this.counts !== undefined && this.activity.length >= Math.min(RECENT_ACTIVITY, this.counts.events);
  }

  get errorsDone(): boolean {
    return this.counts !== undefined && this.errors.length >= Math.min(RECENT_ERRORS, this.counts.errors);
  }

  get pointsDone(): boolean {
    return this.counts !== undefined && this.routesShort <= 0;
  }

  recents(activeUsers: number): Recents {
    // Points were gathered newest first; the answer lists them oldest first.
    for (const list of this.points.values()) list.reverse();
    return { activeUsers, errors: this.errors, activity: this.activity, points: this.points };
  }
}

/**
 * Recents computed from raw events, for when the window cannot answer: `events` are the user's
 * events in insertion order (all of them, or at least every one in range received in the last 5
 * minutes before `now` and the latest ones in range the answer needs).
 */
export function recentsOf(events: readonly StoredEvent[], now: number, range: ResolvedRange | null): Recents {
  const active = new Set<string>();
  const span = activeSpan(now, range);
  const latest = new RecentsBuilder();
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const t = Date.parse(e.receivedAt);
    if (range && (t < range.from || t >= range.to)) continue;
    if (span && e.sessionId && t >= span[0] && t < span[1]) active.add(e.sessionId);
    const duration = pageloadDuration(e);
    latest.add(e, duration === null ? null : routeKey(e), duration);
  }
  return latest.recents(active.size);
}

/** An item of a bounded list with its receive time and the id of its event. */
type Held<T> = [item: T, receivedMs: number, id: string];

/** The `limit` most recently inserted items, oldest first. */
class Latest<T> {
  /** The latest receive time among items pushed out by newer ones (-Infinity: none yet). */
  pushedOut = -Infinity;
  items: Held<T>[] = [];

  constructor(readonly limit: number) {}

  push(item: T, t: number, id: string) {
    this.items.push([item, t, id]);
    if (this.items.length > this.limit) this.pushedOut = Math.max(this.pushedOut, this.items.shift()![1]);
  }

  /** The event was removed from the store; eviction is oldest first, so it can only be the oldest. */
  evict(id: string) {
    if (this.items.length && this.items[0][2] === id) this.items.shift();
  }

  /**
   * Items received at or after `from`, or null when older items pushed out could be among the
   * latest in range. Exact because the caller asks only when every event is before `to`: then the
   * latest in range are the latest received at or after `from`. If every item held is, they are
   * the answer (nothing pushed out is more recent). If some item is not, the answer is the items
   * that are, unless an item pushed out was received at or after `from` (possible only when events
   * were not inserted in receive order), which `pushedOut` rules out.
   */
  since(from: number): T[] | null {
    const kept = this.items.filter((h) => h[1] >= from);
    if (kept.length < this.items.length && from <= this.pushedOut) return null;
    return kept.map((h) => h[0]);
  }

  dropBefore(cutoff: number) {
    this.items = this.items.filter((h) => h[1] >= cutoff);
  }
}

/** A session's entry: latest receive time, and the id and receive time of its latest-inserted event. */
interface SessionSeen { t: number; id: string; lastT: number }

/** The serialisable state of a LiveWindow (plain JSON data). */
export interface LiveWindowState {
  newest: number | null;
  /** Absent in states written before it: -Infinity. */
  completeFrom?: number | null;
  sessionsSorted: boolean;
  staleSessions: string[];
  sessions: [session: string, t: number, id: string, lastT: number][];
  errors: { pushedOut: number | null; items: Held<StoredEvent>[] };
  activity: { pushedOut: number | null; items: Held<StoredEvent>[] };
  points: [route: string, { pushedOut: number | null; items: Held<LatencyPoint>[] }][];
}

export class LiveWindow {
  /** The latest receive time added (an upper bound on every event held). */
  newest = -Infinity;
  /**
   * The window holds every event received from this time on, not necessarily those before: it
   * answers only ranges from at least here (a store that started one part-way, without what came
   * before, sets it; -Infinity: from the first event).
   */
  completeFrom = -Infinity;
  /** Insertion order: a session is moved to the end whenever it is seen. */
  private sessions = new Map<string, SessionSeen>();
  /** True while that order is also ascending `t` (events arrived in receive order). */
  private sessionsSorted = true;
  /**
   * Sessions whose `t` a removal may have left too late (only when events arrived out of receive
   * order): the window does not count them until they are seen again or pruned.
   */
  private staleSessions = new Set<string>();
  private errors = new Latest<StoredEvent>(RECENT_ERRORS);
  private activity = new Latest<StoredEvent>(RECENT_ACTIVITY);
  private points = new Map<string, Latest<LatencyPoint>>();

  /**
   * `route`: the event's route key when it is a pageload with a numeric duration, else null (a
   * caller that already has its RollupRow passes row.route rather than computing it twice).
   */
  add(e: StoredEvent, receivedMs = Date.parse(e.receivedAt), route = pageloadDuration(e) === null ? null : routeKey(e)): void {
    const t = receivedMs;
    if (e.sessionId) {
      let seen = this.sessions.get(e.sessionId);
      if (t < this.newest) this.sessionsSorted = false;
      if (seen) {
        if (t >= seen.t) this.staleSessions.delete(e.sessionId);
        // Delete and set again: Map order is insertion order, and this session was just seen.
        this.sessions.delete(e.sessionId);
        seen.t = Math.max(seen.t, t);
        seen.id = e.id;
        seen.lastT = t;
      } else seen = { t, id: e.id, lastT: t };
      this.sessions.set(e.sessionId, seen);
    }
    if (t > this.newest) {
      this.newest = t;
      this.prune();
    }
    this.activity.push(e, t, e.id);
    if (e.type === 'error') this.errors.push(e, t, e.id);
    if (route !== null) {
      let list = this.points.get(route);
      if (!list) this.points.set(route, (list = new Latest(LATENCY_POINTS)));
      list.push(pointOf(e, e.data.duration as number), t, e.id);
    }
  }

  /**
   * Takes back the user's oldest held event (the memory store evicts oldest first; nothing else is
   * supported). A session goes when its latest event does: none of its events is left then.
   */
  remove(e: StoredEvent, receivedMs = Date.parse(e.receivedAt), route = pageloadDuration(e) === null ? null : routeKey(e)): void {
    const session = e.sessionId;
    const seen = session ? this.sessions.get(session) : undefined;
    if (seen && seen.id === e.id) this.forget(session!);
    // Its latest time may have been this event's while a later-inserted one is earlier: unknown now.
    else if (seen && receivedMs >= seen.t && seen.lastT < seen.t) this.staleSessions.add(session!);
    this.activity.evict(e.id);
    this.errors.evict(e.id);
    const list = route === null ? undefined : this.points.get(route);
    list?.evict(e.id);
    if (list?.items.length === 0) this.points.delete(route!);
  }

  /** Forgets what was received before `cutoff` (retention dropped those events). */
  dropBefore(cutoff: number): void {
    for (const [s, seen] of this.sessions) if (seen.t < cutoff) this.forget(s);
    this.errors.dropBefore(cutoff);
    this.activity.dropBefore(cutoff);
    for (const [route, list] of this.points) {
      list.dropBefore(cutoff);
      if (list.items.length === 0) this.points.delete(route);
    }
  }

  /**
   * activeUsers, recent errors, activity and points for a stats request, or null when the window
   * cannot answer exactly: `now` before the newest event, a range ending at or before it, a range
   * reaching before `completeFrom`, or (rare: events inserted out of receive order) an answer that
   * may need events the window let go.
   */
  recents(now: number, range: ResolvedRange | null): Recents | null {
    const from = range ? range.from : -Infinity;
    if (now < this.newest || (range && range.to <= this.newest) || this.staleSessions.size || from < this.completeFrom) return null;
    const errors = this.errors.since(from);
    const activity = this.activity.since(from);
    if (!errors || !activity) return null;
    const points = new Map<string, LatencyPoint[]>();
    for (const [route, list] of this.points) {
      const kept = list.since(from);
      if (!kept) return null;
      if (kept.length) points.set(route, kept);
    }
    return { activeUsers: this.activeSince(Math.max(from, now - ACTIVE_WINDOW_MS)), errors: errors.reverse(), activity: activity.reverse(), points };
  }

  /**
   * Sessions seen at or after `since`. Every event is at or before `now` here, so "seen in the
   * last 5 minutes (and in range)" is "latest time ≥ since". Sorted entries are counted from the
   * oldest up to the first one in the window, which is a handful once pruned.
   */
  private activeSince(since: number): number {
    let before = 0;
    for (const seen of this.sessions.values()) {
      if (seen.t >= since) {
        if (this.sessionsSorted) break;
      } else before++;
    }
    return this.sessions.size - before;
  }

  /** Drops sessions no request can count any more: quiet for 5 minutes before the newest event. */
  private prune() {
    const cutoff = this.newest - ACTIVE_WINDOW_MS;
    for (const [s, seen] of this.sessions) {
      if (seen.t >= cutoff) break;
      this.forget(s);
    }
  }

  private forget(session: string) {
    this.sessions.delete(session);
    this.staleSessions.delete(session);
    // Nothing left to be out of order.
    if (this.sessions.size === 0) this.sessionsSorted = true;
  }

  toJSON(): LiveWindowState {
    // Copies of the lists (their items are never changed): a seal keeps this state while inserts go on.
    const latest = <T>(l: Latest<T>) => ({ pushedOut: finite(l.pushedOut), items: [...l.items] });
    return {
      newest: finite(this.newest),
      completeFrom: finite(this.completeFrom),
      sessionsSorted: this.sessionsSorted,
      staleSessions: [...this.staleSessions],
      sessions: [...this.sessions].map(([s, v]) => [s, v.t, v.id, v.lastT]),
      errors: latest(this.errors),
      activity: latest(this.activity),
      points: [...this.points].map(([route, l]) => [route, latest(l)]),
    };
  }

  static fromJSON(state: LiveWindowState): LiveWindow {
    const w = new LiveWindow();
    const latest = <T>(l: Latest<T>, s: { pushedOut: number | null; items: Held<T>[] }) => {
      l.pushedOut = s.pushedOut ?? -Infinity;
      l.items = s.items;
      return l;
    };
    w.newest = state.newest ?? -Infinity;
    w.completeFrom = state.completeFrom ?? -Infinity;
    w.sessionsSorted = state.sessionsSorted;
    w.staleSessions = new Set(state.staleSessions);
    w.sessions = new Map(state.sessions.map(([s, t, id, lastT]) => [s, { t, id, lastT }]));
    // Events of states written before ingest bounded their shape are held cut at MAX_DEPTH, as reads return them.
    const bounded = (s: LiveWindowState['errors']) => ({ pushedOut: s.pushedOut, items: s.items.map(([e, t, id]): Held<StoredEvent> => [withinDepth(e), t, id]) });
    latest(w.errors, bounded(state.errors));
    latest(w.activity, bounded(state.activity));
    w.points = new Map(state.points.map(([route, s]) => [route, latest(new Latest<LatencyPoint>(LATENCY_POINTS), s)]));
    return w;
  }
}

// JSON has no -Infinity: "nothing yet" travels as null.
const finite = (n: number): number | null => (Number.isFinite(n) ? n : null);
