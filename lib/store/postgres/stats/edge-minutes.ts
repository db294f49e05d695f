// Rollups of whole minutes at a range's edges, for the rows still in watchtower_events (the open
// day, and a closed day before its move into blocks). A range that starts inside a busy hour
// (`from` = now − 1 hour, as a dashboard asks every few seconds) would otherwise read and parse
// every event of that partial hour on every request. The edge is cut into a partial first minute,
// whole minutes, and a partial last minute: the partial minutes are read as events each time, the
// whole minutes' rollups are kept here once built.
//
// A minute's entry is the rollup of the owner's events of that minute (in the entry's scope) whose
// seq is at or below a horizon `h`: the store's safe horizon of positions (issue-feed.ts,
// safeHorizon), as for the open days' points (./open-points.ts). Every row with a seq at or below
// it that will ever commit had committed when it resolved, so a statement started after that saw
// them all, and none can join them later. A request reads only the minute's events above `h` (by
// the (user, seq) index: the rows inserted since, not the minute's), adds them, and moves `h` up
// to the horizon it resolved. A move into blocks keeps each event's seq and receive time, so the
// entry stays true across it; rows leave otherwise only with their whole day (retention), and an
// entry of a day the owner no longer has is not used. Before this, an entry carried its minute's
// row count and sum of seqs, and the statement recomputed them on every request: a scan of the
// edge's rows, 100,000 for a burst inside the edge, that cost as much as the read it saved.
import { encodePart, FrozenHour } from '../../../rollup/codec.ts';
import { HourRollup, hourOf, rollupRow, type RollupPart } from '../../../rollup/hour.ts';
import type { StoredEvent } from '../../../event.ts';

export const MINUTE_MS = 60_000;

/** One event of an edge, from watchtower_events or a block. */
export interface EdgeEvent { event: StoredEvent; seq: bigint }
/** Minutes kept per user and scope: two edges of at most 59 whole minutes each, with room. */
const MINUTES_PER_GROUP = 180;

/** The whole minutes within spans of time, as [first, end) minute numbers (empty spans left out). */
export function wholeMinutes(spans: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of spans) {
    const m0 = Math.ceil(a / MINUTE_MS), m1 = Math.floor(b / MINUTE_MS);
    if (m0 < m1) out.push([m0, m1]);
  }
  return out;
}

/**
 * How far behind the horizon (in positions, any owner's) an entry may be and still be brought up
 * to date by reading the events above it: the (user, seq) index walks the owner's rows inserted
 * since, at most this many. An older entry is built again from the minute's events.
 */
export const FRESH_SEQS = 20_000;

/** A minute's rollup of its events with seq at or below `h`. */
export interface HeldMinute { h: number; part: RollupPart }

/**
 * Frozen rollups of whole edge minutes (one entry a minute), least recently used first, within a
 * byte budget and at most MINUTES_PER_GROUP a user and scope, so that one tenant's ranges cannot
 * push out everyone else's.
 */
export class EdgeMinuteCache {
  /** user + scope → minute → its entry; `order` has one key per entry, least recently used first. */
  private readonly groups = new Map<string, Map<number, HeldMinute & { bytes: number }>>();
  private readonly order = new Map<string, { group: string; minute: number }>();
  private bytes = 0;
  /** Minutes whose events a request did not read again because this instance held their rollup. */
  private hits = 0;
  /** The store's safe horizon of positions (one probe at a time, shared with the open points). */
  constructor(private readonly budget: number, readonly horizon: () => Promise<number>) {}

  /** What health shows of it. */
  figures(): { minutes: number; bytes: number; budgetBytes: number; hits: number } {
    return { minutes: this.order.size, bytes: this.bytes, budgetBytes: this.budget, hits: this.hits };
  }

  /** Counts the minutes a request did not read again. */
  served(minutes: number): void {
    this.hits += minutes;
  }

  /**
   * The entries held for a user and scope among the given minutes that the horizon `h` has not
   * left more than FRESH_SEQS behind, marked as just used. The caller keeps them: an entry
   * dropped or replaced meanwhile by another request must still be there for its answer.
   */
  held(user: string, scope: string, minutes: readonly [number, number][], h: number): Map<number, HeldMinute> {
    const group = `${user}\u0000${scope}`;
    const out = new Map<number, HeldMinute>();
    for (const [minute, entry] of this.groups.get(group) ?? []) {
      if (!minutes.some(([m0, m1]) => minute >= m0 && minute < m1) || h - entry.h > FRESH_SEQS) continue;
      out.set(minute, { h: entry.h, part: entry.part });
      const key = `${group}\u0000${minute}`;
      this.order.delete(key);
      this.order.set(key, { group, minute });
    }
    return out;
  }

  /** Moves an entry's horizon up, when the events between the two horizons are none. */
  advance(user: string, scope: string, minute: number, from: number, to: number): void {
    const entry = this.groups.get(`${user}\u0000${scope}`)?.get(minute);
    if (entry && entry.h === from && to > from) entry.h = to;
  }

  /** Keeps a minute's rollup up to a horizon, unless what is kept already reaches further. */
  set(user: string, scope: string, minute: number, h: number, part: RollupPart): RollupPart {
    const encoded = encodePart(part);
    const frozen = FrozenHour.decode(encoded);
    const group = `${user}\u0000${scope}`;
    if (encoded.byteLength > this.budget || (this.groups.get(group)?.get(minute)?.h ?? -1) >= h) return frozen;
    this.drop(group, minute);
    let held = this.groups.get(group);
    if (!held) this.groups.set(group, (held = new Map()));
    held.set(minute, { h, part: frozen, bytes: encoded.byteLength });
    this.order.set(`${group}\u0000${minute}`, { group, minute });
    this.bytes += encoded.byteLength;
    // The group's own oldest first when it holds too many, then everyone's oldest over the budget.
    if (held.size > MINUTES_PER_GROUP) {
      for (const entry of this.order.values()) {
        if (entry.group !== group) continue;
        this.drop(group, entry.minute);
        break;
      }
    }
    for (const entry of this.order.values()) {
      if (this.bytes <= this.budget) break;
      this.drop(entry.group, entry.minute);
    }
    return frozen;
  }

  private drop(group: string, minute: number): void {
    const held = this.groups.get(group);
    const entry = held?.get(minute);
    if (!held || !entry) return;
    held.delete(minute);
    if (!held.size) this.groups.delete(group);
    this.order.delete(`${group}\u0000${minute}`);
    this.bytes -= entry.bytes;
  }
}

/**
 * The edge parts: the held minutes' rollups with the events read above their horizons, rollups of
 * the other whole minutes (kept for the next request up to the horizon `h`, resolved before the
 * read started), and the rest (partial minutes, blocks) as events. `keep` is false when the
 * statement answered blocks inside the edges by their rollups (their events are not read, so a
 * minute's would be incomplete). `read` pages through the edges' events: all of those outside
 * the held minutes, and those above each held minute's horizon (./edge-rows.ts).
 */
export async function edgeParts(cache: EdgeMinuteCache, user: string, scope: string, minuteSpans: readonly [number, number][],
  held: ReadonlyMap<number, HeldMinute>, h: number, keep: boolean,
  read: (held: ReadonlyMap<number, HeldMinute>, take: (page: EdgeEvent[]) => void) => Promise<void>): Promise<RollupPart[]> {
  // Per whole minute: the events at or below h (kept), and those above it (this answer's only).
  const minutes = new Set<number>();
  for (const [m0, m1] of minuteSpans) for (let m = m0; m < m1; m++) minutes.add(m);
  const rest = new Map<number, HourRollup>();
  const add = (to: Map<number, HourRollup>, key: number, hour: number, row: ReturnType<typeof rollupRow>) => {
    let part = to.get(key);
    if (!part) to.set(key, (part = new HourRollup(hour)));
    part.add(row);
  };
  const kept = new Map<number, HourRollup>(), above = new Map<number, HourRollup>();
  const horizon = BigInt(h);
  await read(held, (page) => {
    for (const { event, seq } of page) {
      const row = rollupRow(event);
      const minute = Math.floor(row.receivedMs / MINUTE_MS), hour = hourOf(row.receivedMs);
      if (!minutes.has(minute)) add(rest, hour, hour, row);
      else add(seq <= horizon ? kept : above, minute, hour, row);
    }
  });
  const parts: RollupPart[] = [];
  for (const minute of minutes.keys()) {
    const before = held.get(minute), now = kept.get(minute), late = above.get(minute);
    if (late) parts.push(late);
    if (before) {
      cache.served(1);
      if (!now) {
        // Nothing between the two horizons: the same rollup, true up to h.
        parts.push(before.part);
        if (keep) cache.advance(user, scope, minute, before.h, h);
        continue;
      }
      const merged = new HourRollup(before.part.hour);
      merged.merge(before.part);
      merged.merge(now);
      parts.push(keep ? cache.set(user, scope, minute, h, merged) : merged);
    } else if (now) parts.push(keep ? cache.set(user, scope, minute, h, now) : now);
  }
  parts.push(...rest.values());
  return parts;
}
