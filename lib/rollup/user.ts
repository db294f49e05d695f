// One user's rollups: hour → parts. An hour may have several parts, one per tag (a segment id in
// the segmented store: an hour can span two segments); the memory store uses one tag. Parts are
// mutable (HourRollup, taking events) until frozen (FrozenHour, compact and immutable); retention
// drops every part of a tag at once.
import { encodePart, FrozenHour } from './codec.ts';
import { CrossDays } from './cross-days.ts';
import { asHour, HourRollup, hourOf, type RollupPart, type RollupRow } from './hour.ts';
import { SPAN_SHARE, SpanCache } from './span-totals.ts';

export type PartTag = number;

/** What assembleStats reads of a user's rollups; UserRollups is one, a store may offer its own. */
export interface RollupSource {
  /**
   * Calls fn with every part of every hour in [fromHour, toHour), in no particular order. `byDay`:
   * the caller reads nothing finer than a UTC day of a part's hour, so a whole day may come as
   * one part (its hour the day's first).
   */
  forEachPart(fromHour: number, toHour: number, fn: (part: RollupPart) => void, byDay?: boolean): void;
  /** Calls fn with the sessions of every part in [fromHour, toHour); a session may come more than once. */
  forEachSession(fromHour: number, toHour: number, fn: (session: string) => void): void;
  /** Distinct sessions of one hour, over all its parts. */
  hourSessions(hour: number): number;
  /** Distinct sessions of one UTC day (day number = ms / 86,400,000), over all its parts. */
  daySessions(day: number): number;
  /**
   * Which sessions of the merged days forEachPart gives (byDay) cross into other parts: a read
   * then looks up only those (cross-days.ts). Without it every part's sessions are looked up.
   */
  readonly crossDays?: CrossDays;
  /** Sums of spans of those merged days, kept for reads that read the same span again. */
  readonly spans?: SpanCache;
}

/**
 * A RollupSource with parts on top of another's: events a store holds but has not rolled up yet,
 * rolled up for one read. Distinct sessions are unions computed per call (nothing is cached).
 */
export class WithParts implements RollupSource {
  constructor(private readonly base: RollupSource, private readonly extra: readonly RollupPart[]) {}

  get crossDays(): CrossDays | undefined {
    return this.base.crossDays;
  }

  get spans(): SpanCache | undefined {
    return this.base.spans;
  }

  forEachPart(fromHour: number, toHour: number, fn: (part: RollupPart) => void, byDay?: boolean): void {
    this.base.forEachPart(fromHour, toHour, fn, byDay);
    for (const part of this.extra) if (part.hour >= fromHour && part.hour < toHour) fn(part);
  }

  forEachSession(fromHour: number, toHour: number, fn: (session: string) => void): void {
    this.base.forEachSession(fromHour, toHour, fn);
    for (const part of this.extra) if (part.hour >= fromHour && part.hour < toHour) part.forEachSession(fn);
  }

  hourSessions(hour: number): number {
    return this.union(hour, hour + 1);
  }

  daySessions(day: number): number {
    return this.union(day * 24, day * 24 + 24);
  }

  private union(fromHour: number, toHour: number): number {
    const all = new Set<string>();
    this.forEachSession(fromHour, toHour, (s) => all.add(s));
    return all.size;
  }
}

interface Slot { tag: PartTag; part: HourRollup | FrozenHour }

const dayOfHour = (hour: number) => Math.floor(hour / 24);

/**
 * Merged days kept per user: a range by day then adds up one part a day instead of 24 (a 30-day
 * range at 222k events a day, with breakdowns: 32 → 13–16 ms). Enough for the default 90-day
 * retention and a comparison period; past it the least recently used go. A merged day takes about
 * two thirds of the bytes of its hour parts (40 days of one user at that rate: 4.4 MiB beside 6.7).
 */
const MERGED_DAYS = 100;
/**
 * Time a read, or a call of mergePending, spends merging days not merged yet; the read takes the
 * others hour by hour and leaves them to mergePending. Merging them all in the read made a user's
 * first range by day after a restart take 1.2 s (90 days at 44k events a day). A day of that size
 * takes 6–10 ms to merge. With 10 ms, 50 all-time reads in a row after a 20M-event load had a
 * p50 of 37 ms (7 ms with 40, in a run on a faster machine): most still took days hour by hour.
 */
const MERGE_BUDGET_MS = 40;
/**
 * Closed days (before the newest day held) within this many days of it are merged ahead of any
 * read once their parts are frozen, when the owner has time (mergePending): otherwise the first
 * 30-day read after a load or a restart took ~300–480 ms at 2M events (its first 40 ms merging,
 * then every other day hour by hour, decoding each hour's names), against ~15 ms once merged.
 * Older days, and days no read asks for, stay unmerged (memory: see MERGED_DAYS).
 */
const AHEAD_DAYS = 31;
export class UserRollups implements RollupSource {
  private readonly hours = new Map<number, Slot[]>();
  /**
   * Distinct sessions per day, kept until one of the day's parts changes: a 30-day series then
   * costs 30 lookups instead of a union of every session of 720 hours. Only the days still taking
   * events are recomputed, at the cost of their own sessions.
   */
  private readonly days = new Map<number, number>();
  /**
   * Whole days as one frozen part, for days whose parts are all frozen (sealed: they take no more
   * events), built when a range by day first reads them and dropped when one of their parts changes.
   * Least recently used first.
   */
  private readonly merged = new Map<number, FrozenHour>();
  /** Days reads took hour by hour for want of budget, to merge when there is time (mergePending). */
  private readonly pending = new Set<number>();
  /** Days whose parts were frozen since, to merge ahead of reads if recent enough (AHEAD_DAYS). */
  private readonly ahead = new Set<number>();
  /** The sessions of the merged days, kept with them: which cross into other days. */
  readonly crossDays = new CrossDays();
  /** Encoded bytes of each merged day, and their sum: what the span sums are bounded by. */
  private readonly mergedSizes = new Map<number, number>();
  private mergedBytes = 0;
  /** Sums of spans of merged days, dropped with any day they hold (dropMerged). */
  readonly spans = new SpanCache(() => this.mergedBytes * SPAN_SHARE);

  get empty(): boolean {
    return this.hours.size === 0;
  }

  /** Adds an event to the mutable part of its hour with this tag (a frozen part takes no events). */
  add(row: RollupRow, tag: PartTag = 0): void {
    const hour = hourOf(row.receivedMs);
    let slots = this.hours.get(hour);
    if (!slots) this.hours.set(hour, (slots = []));
    let slot = slots.find((s) => s.tag === tag);
    if (!slot) slots.push((slot = { tag, part: new HourRollup(hour) }));
    if (!(slot.part instanceof HourRollup)) throw new Error(`the part of hour ${hour} with tag ${tag} is frozen`);
    slot.part.add(row);
    this.changed(hour);
  }

  /** Takes back an event added with this tag (its part empties and goes when nothing is left). */
  remove(row: RollupRow, tag: PartTag = 0): void {
    const hour = hourOf(row.receivedMs);
    const slots = this.hours.get(hour);
    const slot = slots?.find((s) => s.tag === tag);
    if (!slots || !slot || !(slot.part instanceof HourRollup)) throw new Error(`no mutable part of hour ${hour} with tag ${tag}`);
    slot.part.remove(row);
    if (slot.part.total === 0) this.unlink(hour, slots, slot);
    this.changed(hour);
  }

  /** Sets (adds or replaces) the part of its hour with this tag: a decoded part read at start. */
  setPart(part: HourRollup | FrozenHour, tag: PartTag): void {
    let slots = this.hours.get(part.hour);
    if (!slots) this.hours.set(part.hour, (slots = []));
    const slot = slots.find((s) => s.tag === tag);
    if (slot) slot.part = part;
    else slots.push({ tag, part });
    this.changed(part.hour);
    if (part instanceof FrozenHour) this.ahead.add(dayOfHour(part.hour));
  }

  /** Drops every part with this tag (retention drops a whole segment). */
  drop(tag: PartTag): void {
    for (const [hour, slots] of this.hours) {
      const slot = slots.find((s) => s.tag === tag);
      if (slot) this.unlink(hour, slots, slot);
    }
  }

  /** Freezes every mutable part with this tag and returns the frozen parts (to persist their bytes). */
  freeze(tag: PartTag): FrozenHour[] {
    const out: FrozenHour[] = [];
    for (const slots of this.hours.values()) {
      for (const slot of slots) {
        if (slot.tag !== tag) continue;
        if (slot.part instanceof HourRollup) slot.part = FrozenHour.decode(encodePart(slot.part));
        out.push(slot.part);
        this.ahead.add(dayOfHour(slot.part.hour));
      }
    }
    return out.sort((a, b) => a.hour - b.hour);
  }

  /** The parts with this tag, ascending by hour. */
  parts(tag: PartTag): (HourRollup | FrozenHour)[] {
    const out: (HourRollup | FrozenHour)[] = [];
    for (const slots of this.hours.values()) for (const s of slots) if (s.tag === tag) out.push(s.part);
    return out.sort((a, b) => a.hour - b.hour);
  }

  constructor(private readonly mergeBudgetMs = MERGE_BUDGET_MS) {}

  forEachPart(fromHour: number, toHour: number, fn: (part: RollupPart) => void, byDay = false): void {
    const firstDay = byDay ? Math.ceil(fromHour / 24) : 0, endDay = byDay ? Math.floor(toHour / 24) : 0;
    const started = performance.now();
    // Days read as one merged part, and days read hour by hour this time (not mergeable, or past
    // the budget).
    const whole = new Set<number>(), byHour = new Set<number>();
    for (const [hour, slots] of this.hours) {
      if (hour < fromHour || hour >= toHour) continue;
      const day = dayOfHour(hour);
      if (day >= firstDay && day < endDay && !byHour.has(day)) {
        if (whole.has(day)) continue;
        const mergeable = this.mergeable(day); // true for a day merged already
        if (mergeable && (this.merged.has(day) || performance.now() - started < this.mergeBudgetMs)) {
          whole.add(day);
          fn(this.mergedDay(day));
          continue;
        }
        byHour.add(day);
        if (mergeable) this.pending.add(day);
      }
      for (const s of slots) fn(s.part);
    }
  }

  /** Whether reads, or parts frozen since, left days to merge (mergePending). */
  get mergesPending(): boolean {
    return this.pending.size > 0 || this.ahead.size > 0;
  }

  /**
   * Merges days reads left to their hours, then recent closed days frozen since (AHEAD_DAYS), for
   * up to `budgetMs` (at least one day); true while some are left. The owner calls it when it has nothing else to do: the worker of the sqlite store,
   * between messages (a merge run from a timer delayed the I/O of a snapshot that holds reads).
   */
  mergePending(budgetMs = this.mergeBudgetMs): boolean {
    const started = performance.now();
    let done = 0;
    const more = () => done === 0 || performance.now() - started < budgetMs;
    for (const day of this.pending) {
      if (!more()) break;
      this.pending.delete(day);
      // Still whole and frozen: a part may have changed or gone since the read.
      if (!this.merged.has(day) && this.mergeable(day)) this.mergedDay(day), done++;
    }
    if (this.ahead.size === 0) return this.mergesPending;
    // The newest day takes events yet (merging it would be undone by the next seal), and days
    // long before it are seldom read: both are only dropped, as are days merged already.
    let newest = -Infinity;
    for (const hour of this.hours.keys()) if (hour > newest) newest = hour;
    const newestDay = dayOfHour(newest);
    for (const day of this.ahead) {
      if (day >= newestDay || day < newestDay - AHEAD_DAYS || this.merged.has(day) || !this.mergeable(day)) this.ahead.delete(day);
      else if (!more()) break;
      else this.ahead.delete(day), this.mergedDay(day), done++;
    }
    return this.mergesPending;
  }

  /** Whether every part of the day is frozen (and there is at least one). */
  private mergeable(day: number): boolean {
    if (this.merged.has(day)) return true;
    let any = false;
    for (let h = day * 24; h < day * 24 + 24; h++) {
      for (const s of this.hours.get(h) ?? []) {
        if (!(s.part instanceof FrozenHour)) return false;
        any = true;
      }
    }
    return any;
  }

  private mergedDay(day: number): FrozenHour {
    let part = this.merged.get(day);
    if (part) this.merged.delete(day); // re-inserted last: the most recently used
    else {
      const sum = new HourRollup(day * 24);
      for (let h = day * 24; h < day * 24 + 24; h++) {
        for (const s of this.hours.get(h) ?? []) sum.merge(asHour(s.part, sum.hour));
      }
      const bytes = encodePart(sum);
      part = FrozenHour.decode(bytes);
      if (this.merged.size >= MERGED_DAYS) this.dropMerged(this.merged.keys().next().value!);
      this.mergedSizes.set(day, bytes.byteLength);
      this.mergedBytes += bytes.byteLength;
      this.crossDays.add(day, part);
    }
    this.merged.set(day, part);
    return part;
  }

  /** A part of `hour` changed, came or went: its day's cached figures are stale. */
  private changed(hour: number) {
    this.days.delete(dayOfHour(hour));
    this.dropMerged(dayOfHour(hour));
  }

  private dropMerged(day: number) {
    if (!this.merged.delete(day)) return;
    this.crossDays.remove(day);
    this.mergedBytes -= this.mergedSizes.get(day)!;
    this.mergedSizes.delete(day);
    this.spans.dropDay(day);
  }

  forEachSession(fromHour: number, toHour: number, fn: (session: string) => void): void {
    if (toHour - fromHour <= 48) {
      // A few hours: look them up rather than walk every hour held.
      for (let h = fromHour; h < toHour; h++) for (const s of this.hours.get(h) ?? []) s.part.forEachSession(fn);
    } else this.forEachPart(fromHour, toHour, (p) => p.forEachSession(fn));
  }

  hourSessions(hour: number): number {
    const slots = this.hours.get(hour);
    if (!slots) return 0;
    if (slots.length === 1) return slots[0].part.sessionCount;
    const union = new Set<string>();
    for (const s of slots) s.part.forEachSession((x) => union.add(x));
    return union.size;
  }

  daySessions(day: number): number {
    let n = this.days.get(day);
    if (n === undefined) {
      const union = new Set<string>();
      this.forEachSession(day * 24, day * 24 + 24, (s) => union.add(s));
      this.days.set(day, (n = union.size));
    }
    return n;
  }

  private unlink(hour: number, slots: Slot[], slot: Slot) {
    slots.splice(slots.indexOf(slot), 1);
    if (slots.length === 0) this.hours.delete(hour);
    this.changed(hour);
  }
}
