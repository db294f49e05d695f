// The bounded, persisted queue. Each page keeps its own localStorage key so two open tabs never
// overwrite each other's pending events; a new page adopts the keys left behind. A tab that is
// still open may then send the same events too: the server stores an event id once.
import type { SdkEvent, StorageLike } from './types.ts';

export const QUEUE_PREFIX = 'watchtower_queue:';

export interface Pending {
  events: SdkEvent[];
  /** Events dropped (queue full, or refused by the server) and not yet reported. */
  dropped: number;
}

/** Drops the oldest events beyond `max`, in place; returns how many went. */
export function bound(events: SdkEvent[], max: number): number {
  const over = events.length - max;
  if (over <= 0) return 0;
  events.splice(0, over);
  return over;
}

/** Appends events whose id is not queued yet. */
export function merge(into: SdkEvent[], more: readonly SdkEvent[]): SdkEvent[] {
  const seen = new Set(into.map((e) => e.id));
  for (const e of more) if (e && typeof e.id == 'string' && !seen.has(e.id)) seen.add(e.id), into.push(e);
  return into;
}

export function without(events: readonly SdkEvent[], sent: readonly SdkEvent[]): SdkEvent[] {
  const ids = new Set(sent.map((e) => e.id));
  return events.filter((e) => !ids.has(e.id));
}

/** Takes over (and removes) the queues other pages of this origin left in storage, oldest event first. */
export function adopt(storage: StorageLike | null, ownKey: string): Pending {
  const found: Pending = { events: [], dropped: 0 };
  if (!storage) return found;
  try {
    const keys: string[] = [];
    for (let i = 0; i < storage.length; i++) {
      const key = storage.key(i);
      if (key && key !== ownKey && key.startsWith(QUEUE_PREFIX)) keys.push(key);
    }
    for (const key of keys) {
      try {
        const saved = JSON.parse(storage.getItem(key)!) as Partial<Pending>;
        if (Array.isArray(saved.events)) merge(found.events, saved.events);
        if (typeof saved.dropped == 'number') found.dropped += saved.dropped;
      } catch {
        // A torn or foreign value: nothing to recover from it.
      }
      storage.removeItem(key);
    }
  } catch {
    // Storage can throw when disabled by the user; the queue then lives in memory only.
  }
  found.events.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
  return found;
}

export function save(storage: StorageLike | null, key: string, pending: Pending): void {
  try {
    if (!pending.events.length && !pending.dropped) storage?.removeItem(key);
    else storage?.setItem(key, JSON.stringify(pending));
  } catch {
    // Quota exceeded or storage disabled: the events are still in memory and sent from there.
  }
}
