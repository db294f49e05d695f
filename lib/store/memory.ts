// The base behaviour's store: a bounded ring buffer, lost on restart (docs/architecture.md#memory-store).
// Statistics come from per-user rollups and a live window kept on insert and eviction, assembled
// like every store's (lib/rollup/assemble.ts); only a range's partial edge hours are read raw.
import { environmentKey } from '../environment-scopes.ts';
import type { StoredEvent } from '../event.ts';
import { countFunnel } from '../funnels/count.ts';
import { withinDepth } from '../shape.ts';
import { NO_RECENTS, recentsOf } from '../live-window.ts';
import { assembleStats, planStats } from '../rollup/assemble.ts';
import type { RollupRow } from '../rollup/hour.ts';
import { UserRollups } from '../rollup/user.ts';
import type { Stats, StatsRange } from '../stats.ts';
import { decodeCursor, encodeCursor, EXPORT_BATCH } from './cursor.ts';
import { eventMatcher } from './filter.ts';
import { edgeRollups, MemoryScopes } from './memory-scopes.ts';
import { appUser, type AppUser, type ErrorScan, type ErrorScanQuery, type EventPage, type EventQuery, type ExportQuery, type Store, type StoreHealth, type UserSync } from './types.ts';

export const DEFAULT_BUFFER_SIZE = 10_000;

export function createMemoryStore(options: { capacity?: number } = {}): Store {
  const capacity = options.capacity ?? DEFAULT_BUFFER_SIZE;
  // Oldest first; a plain array with a moving head keeps eviction O(1) amortised.
  let buffer: StoredEvent[] = [];
  // The rollup row each held event was counted with (null: no owner), to take it back on eviction
  // without reading the event again (its names and properties).
  let rows: (RollupRow | null)[] = [];
  let head = 0;
  // Sequence number (insertion order, the paging cursor's position) of buffer[i]: base + i.
  let base = 1;
  // Ids per owner: (owner, id) is the dedupe key, without building a joined string per event.
  const ids = new Map<string | null, Set<string>>();
  const idsOf = (owner: string | null) => {
    let set = ids.get(owner);
    if (!set) ids.set(owner, (set = new Set()));
    return set;
  };
  const users = new Map<string, AppUser>();
  const scopes = new MemoryScopes();

  const held = () => buffer.length - head;
  const ofUser = (userId: string, projectId?: string, environment?: string) => {
    const out: StoredEvent[] = [];
    for (let i = head; i < buffer.length; i++) {
      const e = buffer[i];
      if (e.user_id === userId && (projectId === undefined || e.projectId === projectId) && (environment === undefined || e.environment === environment)) out.push(e);
    }
    return out;
  };
  /** Statistics from one scope (the user's, a project's, an environment's) and its held events. */
  const statsOf = (userId: string, key: string | undefined, now: number, range: StatsRange | undefined, projectId?: string, environment?: string): Stats => {
    const u = scopes.get(userId, key);
    const plan = planStats(now, range, u?.window.newest);
    if (!u) return assembleStats({ plan, rollups: new UserRollups(), edges: [], recents: NO_RECENTS });
    let mine: StoredEvent[] | undefined;
    const held = () => (mine ??= ofUser(userId, projectId, environment));
    const edges = plan.rawSpans.length ? edgeRollups(held(), plan.rawSpans) : [];
    const recents = u.window.recents(now, plan.range) ?? recentsOf(held(), now, plan.range);
    return assembleStats({ plan, rollups: u.rollups, edges, recents });
  };

  return {
    persisted: false,
    async insert(events) {
      const stored: StoredEvent[] = [];
      for (const given of events) {
        // Held cut at MAX_DEPTH, as every store reads events back (lib/shape.ts): ingest rejects
        // deeper ones, but an embedder may insert events of its own.
        const e = withinDepth(given);
        const owned = idsOf(e.user_id);
        if (owned.has(e.id)) continue;
        owned.add(e.id);
        buffer.push(e);
        stored.push(e);
        rows.push(scopes.add(e));
        if (held() > capacity) {
          const row = rows[head];
          rows[head] = null;
          const old = buffer[head++];
          if (row) scopes.remove(old, row);
          const set = ids.get(old.user_id)!;
          set.delete(old.id);
          if (set.size === 0) ids.delete(old.user_id);
        }
      }
      if (head > capacity) {
        buffer = buffer.slice(head);
        rows = rows.slice(head);
        base += head;
        head = 0;
      }
      return stored;
    },
    async list(q: EventQuery): Promise<EventPage> {
      // Index just past the page's first candidate: the cursor's position, or the newest event.
      let end = buffer.length;
      if (q.before !== undefined) end = Math.max(head, Math.min(buffer.length, decodeCursor(q.before) - base));
      const matches = eventMatcher(q);
      const events: StoredEvent[] = [];
      let i = end - 1;
      for (; i >= head && events.length < q.limit; i--) if (matches(buffer[i])) events.push(buffer[i]);
      // The page ended at buffer[i + 1]; one more match further down means there is a next page.
      let more = false;
      for (let j = i; j >= head && events.length && !more; j--) more = matches(buffer[j]);
      return { events, nextCursor: more ? encodeCursor(base + i + 1) : null };
    },
    async *export(q: ExportQuery) {
      const size = Math.max(1, q.batchSize ?? EXPORT_BATCH);
      const matches = eventMatcher(q);
      // The events held now, and no later ones: an export of a busy user ends.
      let next = base + head;
      const last = base + buffer.length;
      while (next < last) {
        const batch: StoredEvent[] = [];
        // Evicted meanwhile: start at the oldest held.
        let i = Math.max(head, next - base);
        for (; i < last - base && batch.length < size; i++) if (matches(buffer[i])) batch.push(buffer[i]);
        next = base + i;
        if (batch.length) yield batch;
      }
    },
    async scanErrors(q: ErrorScanQuery): Promise<ErrorScan> {
      const events: StoredEvent[] = [], seqs: number[] = [];
      const last = Math.min(base + buffer.length - 1, q.upTo ?? Infinity);
      let seq = Math.max(q.after + 1, base + head);
      for (; seq <= last && events.length < q.limit; seq++) {
        const e = buffer[seq - base];
        if (e.type !== 'error' || e.user_id === null || (q.userId !== undefined && e.user_id !== q.userId)) continue;
        events.push(e);
        seqs.push(seq);
      }
      return { events, seqs, through: Math.max(q.after, seq - 1), head: base + buffer.length - 1 };
    },
    async stats(userId: string, now: number, range?: StatsRange, projectId?: string): Promise<Stats> {
      return statsOf(userId, projectId, now, range, projectId);
    },
    async statsOfEnvironment(userId, now, range, projectId, environment): Promise<Stats | null> {
      // A name refused a scope may have events no scope counted: the caller reads them.
      if (!scopes.get(userId, environmentKey(environment)) && scopes.isEnvironmentsFull(userId)) return null;
      return statsOf(userId, environmentKey(environment, projectId), now, range, projectId, environment);
    },
    async funnel(q) {
      return countFunnel(buffer.slice(head), q);
    },
    async upsertUser(u: UserSync, now) {
      const user = appUser(u, now);
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
