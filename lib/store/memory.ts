// The base behaviour's store: a bounded ring buffer, lost on restart (docs/architecture.md#memory-store).
// Statistics come from per-user rollups and a live window kept on insert and eviction, assembled
// like every store's (lib/rollup/assemble.ts); only a range's partial edge hours are read raw.
import type { StoredEvent } from '../event.ts';
import { LiveWindow, NO_RECENTS, recentsOf } from '../live-window.ts';
import { assembleStats, planStats } from '../rollup/assemble.ts';
import { HourRollup, rollupRow } from '../rollup/hour.ts';
import { UserRollups } from '../rollup/user.ts';
import type { Stats, StatsRange } from '../stats.ts';
import type { AppUser, EventQuery, Store, StoreHealth, UserSync } from './types.ts';

export const DEFAULT_BUFFER_SIZE = 10_000;


export function createMemoryStore(options: { capacity?: number } = {}): Store {
  const capacity = options.capacity ?? DEFAULT_BUFFER_SIZE;
  // Oldest first; a plain array with a moving head keeps eviction O(1) amortised.
  let buffer: StoredEvent[] = [];
  let head = 0;
  // Ids per owner: (owner, id) is the dedupe key, without building a joined string per event.
  const ids = new Map<string | null, Set<string>>();
  const idsOf = (owner: string | null) => {
    let set = ids.get(owner);
    if (!set) ids.set(owner, (set = new Set()));
    return set;
  };
  const users = new Map<string, AppUser>();
  // Owned events only: statistics are per user, unowned events appear for no one.
  const stats = new Map<string, { rollups: UserRollups; window: LiveWindow }>();
  // A batch's events share one receivedAt: parse it once (one cache for inserts, one for evictions).
  const parser = () => {
    let iso = '', ms = NaN;
    return (e: StoredEvent) => (e.receivedAt === iso ? ms : (ms = Date.parse((iso = e.receivedAt))));
  };
  const insertedMs = parser(), evictedMs = parser();
  const track = (e: StoredEvent) => {
    if (e.user_id === null) return;
    let u = stats.get(e.user_id);
    if (!u) stats.set(e.user_id, (u = { rollups: new UserRollups(), window: new LiveWindow() }));
    const row = rollupRow(e, insertedMs(e));
    u.rollups.add(row);
    u.window.add(e, row.receivedMs, row.route);
  };
  const untrack = (e: StoredEvent) => {
    const u = e.user_id === null ? undefined : stats.get(e.user_id);
    if (!u) return;
    const row = rollupRow(e, evictedMs(e));
    u.rollups.remove(row);
    u.window.remove(e, row.receivedMs, row.route);
    if (u.rollups.empty) stats.delete(e.user_id!);
  };

  const held = () => buffer.length - head;
  const ofUser = (userId: string) => {
    const out: StoredEvent[] = [];
    for (let i = head; i < buffer.length; i++) if (buffer[i].user_id === userId) out.push(buffer[i]);
    return out;
  };

  return {
    persisted: false,
    async insert(events) {
      const stored: StoredEvent[] = [];
      for (const e of events) {
        const owned = idsOf(e.user_id);
        if (owned.has(e.id)) continue;
        owned.add(e.id);
        buffer.push(e);
        stored.push(e);
        track(e);
        if (held() > capacity) {
          const old = buffer[head++];
          untrack(old);
          const set = ids.get(old.user_id)!;
          set.delete(old.id);
          if (set.size === 0) ids.delete(old.user_id);
        }
      }
      if (head > capacity) {
        buffer = buffer.slice(head);
        head = 0;
      }
      return stored;
    },
    async list(q: EventQuery) {
      const out: StoredEvent[] = [];
      for (let i = buffer.length - 1; i >= head && out.length < q.limit; i--) {
        const e = buffer[i];
        if (e.user_id !== q.userId) continue;
        if (q.type !== undefined && e.type !== q.type) continue;
        if (q.version !== undefined && e.deployVersion !== q.version) continue;
        out.push(e);
      }
      return out;
    },
    async stats(userId: string, now: number, range?: StatsRange): Promise<Stats> {
      const u = stats.get(userId);
      const plan = planStats(now, range, u?.window.newest);
      if (!u) return assembleStats({ plan, rollups: new UserRollups(), edges: [], recents: NO_RECENTS });
      let mine: StoredEvent[] | undefined;
      const held = () => (mine ??= ofUser(userId));
      const inSpans = (t: number) => plan.rawSpans.some(([start, end]) => t >= start && t < end);
      const edges = plan.rawSpans.length
        ? HourRollup.fromRows(held().map((e) => rollupRow(e)).filter((row) => inSpans(row.receivedMs)))
        : [];
      const recents = u.window.recents(now, plan.range) ?? recentsOf(held(), now, plan.range);
      return assembleStats({ plan, rollups: u.rollups, edges, recents });
    },
    async upsertUser(u: UserSync, now) {
      const user: AppUser = {
        idp_user_id: u.idpUserId,
        email: u.email,
        display_name: u.displayName,
        last_seen_at: new Date(now).toISOString(),
      };
      users.set(u.idpUserId, user);
      return user;
    },
    async getUser(id) {
      return users.get(id) ?? null;
    },
    async health(): Promise<StoreHealth> {
      return { storage: 'memory', eventCount: held(), capacity };
    },
    async flush() {},
    async close() {},
  };
}
