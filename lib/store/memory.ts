// The base behaviour's store: a bounded ring buffer, lost on restart (docs/architecture.md#memory-store).
import type { StoredEvent } from '../event.ts';
import { computeStats, type Stats } from '../stats.ts';
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
        if (held() > capacity) {
          const old = buffer[head++];
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
    async stats(userId, now): Promise<Stats> {
      return computeStats(ofUser(userId), now);
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
