// What an instance keeps of the PostgreSQL store's rollups between statistics requests: decoded
// fold rows (and blocks' rollups), the session counters of days that no longer change, and the
// latest points read from whole closed days (stats/points.ts).
import type { FrozenHour } from '../../rollup/codec.ts';
import { CrossDays } from '../../rollup/cross-days.ts';
import { SPAN_SHARE, SpanCache } from '../../rollup/span-totals.ts';

/** A session counter row: kind (HOUR_SESSIONS or DAY_SESSIONS), hour, count. */
export type SessionCount = [string, number, number];
/** Days of session counters kept per instance (a day is ~25 rows per user and scope). */
const SESSION_DAYS = 100_000;
/**
 * Answers of kept points (stats/points.ts) held per instance, and per user: one is up to ~40 routes'
 * 100 points (~250 KB at most), and a user's dashboard asks a handful of ranges over and over.
 */
const POINT_ANSWERS = 64;
const POINT_ANSWERS_PER_USER = 4;
/** Keys seenBefore remembers, the most recent ones. */
const SIGHTINGS = 1024;

/** A day's cached fold rows (fold → its hour parts), and their parts merged into one, if built. */
export interface CachedDay { folds: Map<number, FrozenHour[]>; merged: { folds: string; part: FrozenHour } | null }

/**
 * A user's and scope's merged days as the sqlite store keeps its own (lib/rollup/user.ts): which
 * of their sessions cross into other parts (a 30-day read then looks up only those), and the sums
 * of spans of them, within SPAN_SHARE of the merged days' bytes. Kept as long as the merged days
 * are, so bounded by the fold rows they merge; nothing here is stored.
 */
interface MergedDays { crossDays: CrossDays; spans: SpanCache; sizes: Map<number, number>; bytes: number }

/**
 * Decoded fold rows of this instance, least recently used first, within a byte budget. A fold row
 * never changes, so an entry is never stale: retention deletes the row, and a request simply
 * stops asking for it.
 */
export class DayPartCache {
  /** user + scope → day → its folds; `order` holds one entry per fold, least recently used first. */
  private readonly groups = new Map<string, Map<number, CachedDay>>();
  private readonly order = new Map<string, { group: string; day: number; fold: number; bytes: number }>();
  private bytes = 0;
  private readonly sessions = new Map<string, readonly SessionCount[]>();
  private readonly points = new Map<string, { user: string; value: Promise<unknown> }>();
  private readonly merged = new Map<string, MergedDays>();
  private readonly sightings = new Set<string>();
  constructor(private readonly budget: number) {}

  /** The cached days of a user and scope (marked as just used). */
  daysOf(user: string, scope: string): ReadonlyMap<number, CachedDay> {
    const group = `${user}\u0000${scope}`;
    const days = this.groups.get(group) ?? new Map<number, CachedDay>();
    for (const [day, { folds }] of days) {
      for (const fold of folds.keys()) {
        const k = `${group}\u0000${day}\u0000${fold}`;
        const entry = this.order.get(k);
        if (!entry) continue;
        this.order.delete(k);
        this.order.set(k, entry);
      }
    }
    return days;
  }

  /**
   * The parts of a day's folds merged into one (for buckets of whole days: assembleStats adds up
   * the same counts from one part as from all of them), built once per set of folds.
   */
  mergedDay(user: string, scope: string, day: number, folds: readonly number[], build: () => FrozenHour): FrozenHour {
    const group = `${user}\u0000${scope}`;
    const cached = this.groups.get(group)?.get(day);
    const key = folds.join(',');
    if (cached?.merged?.folds === key) return cached.merged.part;
    const part = build();
    if (!cached) return part;
    this.dropMerged(group, day);
    cached.merged = { folds: key, part };
    let m = this.merged.get(group);
    if (!m) {
      const made: MergedDays = { crossDays: new CrossDays(), spans: new SpanCache(() => made.bytes * SPAN_SHARE), sizes: new Map(), bytes: 0 };
      this.merged.set(group, (m = made));
    }
    const bytes = part.encode().byteLength;
    m.sizes.set(day, bytes);
    m.bytes += bytes;
    m.crossDays.add(day, part);
    return part;
  }

  /** The merged days of a user and scope held now, for a read of them (see MergedDays). */
  mergedOf(user: string, scope: string): { readonly crossDays: CrossDays; readonly spans: SpanCache } | undefined {
    return this.merged.get(`${user}\u0000${scope}`);
  }

  /**
   * Whether `key` was asked for before (among the last SIGHTINGS keys asked), remembering it: for
   * what is worth building only when asked for again (stats/edge-runs.ts).
   */
  seenBefore(key: string): boolean {
    const had = this.sightings.delete(key);
    this.sightings.add(key);
    if (this.sightings.size > SIGHTINGS) this.sightings.delete(this.sightings.values().next().value!);
    return had;
  }

  /** Forgets a day's merged part: its folds changed or were dropped. */
  private dropMerged(group: string, day: number) {
    const m = this.merged.get(group);
    const bytes = m?.sizes.get(day);
    if (!m || bytes === undefined) return;
    m.sizes.delete(day);
    m.bytes -= bytes;
    m.crossDays.remove(day);
    m.spans.dropDay(day);
    if (!m.sizes.size) this.merged.delete(group);
  }

  /**
   * Session counters (kind, hour, n) of a compacted day that took no insert since its compaction
   * (see watchtower_event_days.compacted), which no longer change. The caller asks only for such
   * days; a day that takes a late insert is never such a day again. At most SESSION_DAYS entries,
   * the least recently used dropped first.
   */
  sessionsOf(user: string, scope: string, day: number): readonly SessionCount[] | undefined {
    const k = `${user}\u0000${scope}\u0000${day}`;
    const rows = this.sessions.get(k);
    if (rows) {
      this.sessions.delete(k);
      this.sessions.set(k, rows);
    }
    return rows;
  }

  setSessions(user: string, scope: string, day: number, rows: readonly SessionCount[]): void {
    this.sessions.set(`${user}\u0000${scope}\u0000${day}`, rows);
    for (const k of this.sessions.keys()) {
      if (this.sessions.size <= SESSION_DAYS) break;
      this.sessions.delete(k);
    }
  }

  /**
   * The kept points of whole closed days, read by `load` unless an answer to the same question is
   * held. `key` must name everything the answer depends on: the scope, each day with its pointed
   * count (a late event moved into a day changes it), and the routes. Least recently used first
   * out, at most POINT_ANSWERS_PER_USER per user, so one user's ranges cannot push out the others'.
   * A failed read is not kept. The answer is shared: callers must not change it.
   */
  keptPoints<T>(user: string, key: string, load: () => Promise<T>): Promise<T> {
    const k = `${user}\u0000${key}`;
    const held = this.points.get(k);
    if (held) {
      this.points.delete(k);
      this.points.set(k, held);
      return held.value as Promise<T>;
    }
    const value = load();
    value.catch(() => {
      if (this.points.get(k)?.value === value) this.points.delete(k);
    });
    this.points.set(k, { user, value });
    let mine = 0;
    for (const entry of this.points.values()) if (entry.user === user) mine++;
    for (const [old, entry] of this.points) {
      if (this.points.size <= POINT_ANSWERS && mine <= POINT_ANSWERS_PER_USER) break;
      if (mine > POINT_ANSWERS_PER_USER && entry.user !== user) continue;
      this.points.delete(old);
      if (entry.user === user) mine--;
    }
    return value;
  }

  set(user: string, scope: string, day: number, fold: number, parts: FrozenHour[]): void {
    const group = `${user}\u0000${scope}`;
    const bytes = parts.reduce((n, p) => n + p.encode().byteLength, 0);
    if (bytes > this.budget || this.groups.get(group)?.get(day)?.folds.has(fold)) return;
    let days = this.groups.get(group);
    if (!days) this.groups.set(group, (days = new Map()));
    let cached = days.get(day);
    if (!cached) days.set(day, (cached = { folds: new Map(), merged: null }));
    cached.folds.set(fold, parts);
    this.order.set(`${group}\u0000${day}\u0000${fold}`, { group, day, fold, bytes });
    this.bytes += bytes;
    for (const [k, entry] of this.order) {
      if (this.bytes <= this.budget) break;
      this.order.delete(k);
      this.bytes -= entry.bytes;
      const g = this.groups.get(entry.group)!;
      const d = g.get(entry.day)!;
      d.folds.delete(entry.fold);
      d.merged = null;
      this.dropMerged(entry.group, entry.day);
      if (!d.folds.size) g.delete(entry.day);
      if (!g.size) this.groups.delete(entry.group);
    }
  }
}
