// Rollups of whole minutes at a range's edges, for the rows still in watchtower_events (the open
// day, and a closed day before its move into blocks). A range that starts inside a busy hour
// (`from` = now − 1 hour, as a dashboard asks every few seconds) would otherwise read and parse
// every event of that partial hour on every request. The edge is cut into a partial first minute,
// whole minutes, and a partial last minute: the partial minutes are read as rows each time, the
// whole minutes' rollups are kept here once built.
//
// A minute's entry is only ever used for the same rows: each comes with the minute's signature
// (its row count and the sum of its seqs), which the statistics statement computes over the rows
// as they are in its snapshot. Rows are only added to a minute (an insert takes a new, larger
// seq) or removed from it (a move into blocks, retention), so any change changes the signature,
// and a stale entry is never read: the statement sends the rows of that minute again instead.
import { encodePart, FrozenHour } from '../../../rollup/codec.ts';
import { HourRollup, hourOf, rollupRow, type RollupPart } from '../../../rollup/hour.ts';
import type { StoredEvent } from '../../../event.ts';

export const MINUTE_MS = 60_000;

/** One event of an edge; `row` when it was read from watchtower_events (not from a block). */
export interface EdgeEvent { event: StoredEvent; seq: bigint; row: boolean }
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

/** A minute's rows as the statement saw them: `${minute}:${count}:${sum of seqs}`. */
export const signature = (minute: number, count: number, seqSum: string): string => `${minute}:${count}:${seqSum}`;

/**
 * Frozen rollups of whole edge minutes (one signature a minute), least recently used first,
 * within a byte budget and at most MINUTES_PER_GROUP a user and scope, so that one tenant's
 * ranges cannot push out everyone else's.
 */
export class EdgeMinuteCache {
  /** user + scope → minute → its entry; `order` has one key per entry, least recently used first. */
  private readonly groups = new Map<string, Map<number, { sig: string; part: RollupPart; bytes: number }>>();
  private readonly order = new Map<string, { group: string; minute: number }>();
  private bytes = 0;
  /** Minutes whose rows a statement left out because this instance held their rollup. */
  private hits = 0;
  constructor(private readonly budget: number) {}

  /** What health shows of it. */
  figures(): { minutes: number; bytes: number; budgetBytes: number; hits: number } {
    return { minutes: this.order.size, bytes: this.bytes, budgetBytes: this.budget, hits: this.hits };
  }

  /** Counts the minutes a statement did not read again. */
  served(minutes: number): void {
    this.hits += minutes;
  }

  /**
   * The rollups held for a user and scope among the given minutes, by signature (sent to the
   * statement), marked as just used. The caller keeps them: an entry dropped meanwhile by another
   * request must still be there for the answer whose statement left its rows out.
   */
  held(user: string, scope: string, minutes: readonly [number, number][]): Map<string, RollupPart> {
    const group = `${user}\u0000${scope}`;
    const out = new Map<string, RollupPart>();
    for (const [minute, { sig, part }] of this.groups.get(group) ?? []) {
      if (!minutes.some(([m0, m1]) => minute >= m0 && minute < m1)) continue;
      out.set(sig, part);
      const key = `${group}\u0000${minute}`;
      this.order.delete(key);
      this.order.set(key, { group, minute });
    }
    return out;
  }

  /** Keeps a minute's rollup under its signature, in place of what was held for the minute. */
  set(user: string, scope: string, minute: number, sig: string, part: RollupPart): RollupPart {
    const encoded = encodePart(part);
    const frozen = FrozenHour.decode(encoded);
    if (encoded.byteLength > this.budget) return frozen;
    const group = `${user}\u0000${scope}`;
    this.drop(group, minute);
    let held = this.groups.get(group);
    if (!held) this.groups.set(group, (held = new Map()));
    held.set(minute, { sig, part: frozen, bytes: encoded.byteLength });
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
 * The edge parts: the held minutes' rollups, rollups of the other whole minutes (kept for the next
 * request when their rows are exactly those the statement signed), and the rest (partial minutes,
 * blocks) as events. `minutes` is the statement's list of whole minutes: (minute, count, sum of
 * seqs, whether the instance held its rollup); `read` pages through the edges' events but those
 * of the held minutes (./edge-rows.ts).
 */
export async function edgeParts(cache: EdgeMinuteCache, user: string, scope: string, held: ReadonlyMap<string, RollupPart>,
  minutes: readonly [number, number, string, boolean][], read: (skip: number[], take: (page: EdgeEvent[]) => void) => Promise<void>): Promise<RollupPart[]> {
  const parts: RollupPart[] = [];
  const skip: number[] = [];
  const fresh = new Map<number, { sig: string; count: number; seqSum: bigint; part: HourRollup; rows: number; rowSum: bigint }>();
  for (const [minute, count, seqSum, wasHeld] of minutes) {
    const sig = signature(minute, count, seqSum);
    if (wasHeld) {
      parts.push(held.get(sig)!);
      skip.push(minute);
      cache.served(1);
    } else fresh.set(minute, { sig, count, seqSum: BigInt(seqSum), part: new HourRollup(hourOf(minute * MINUTE_MS)), rows: 0, rowSum: 0n });
  }
  const rest = new Map<number, HourRollup>();
  await read(skip, (page) => {
    for (const { event, seq, row: fromRows } of page) {
      const row = rollupRow(event);
      const minute = fresh.get(Math.floor(row.receivedMs / MINUTE_MS));
      if (minute) {
        minute.part.add(row);
        if (fromRows) {
          minute.rows++;
          minute.rowSum += seq;
        }
        continue;
      }
      const hour = hourOf(row.receivedMs);
      let part = rest.get(hour);
      if (!part) rest.set(hour, (part = new HourRollup(hour)));
      part.add(row);
    }
  });
  for (const [minute, f] of fresh) {
    // Kept only when it is exactly the rows the statement signed, all of them from rows: a row
    // inserted or moved into a block since is read again next time.
    const exact = f.rows === f.count && f.rowSum === f.seqSum && f.part.total === f.count;
    if (f.part.total) parts.push(exact ? cache.set(user, scope, minute, f.sig, f.part) : f.part);
  }
  parts.push(...rest.values());
  return parts;
}
