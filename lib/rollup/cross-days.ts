// Which sessions of a user's merged days cross into other parts, so that a range by day counts the
// others without looking them up. A name's distinct sessions over a range are the union of its
// sessions in each part read; a session held by one part only cannot be counted twice, so a merged
// day adds those of a name as a number (counted once per day, DayView.local), and only sessions
// that other parts may share get a small integer id and a bit in the name's IdSet. Looking up
// every session of every day was most of a 30-day read (BENCHMARKS.md, "Analytics: sessions that
// cross days").
//
// Exactness needs, for every merged day a read takes whole: each of its sessions that any other
// part of the read holds is marked crossing (marking more only costs time). Two sources of such
// sessions:
// - other merged days: CrossDays keeps every session of the merged days it holds in one table with
//   how many of them hold it; a session held by two is marked in both as the second comes.
// - parts read hour by hour (days not merged: the newest, a range's partial first day, hours with
//   mutable parts) and the raw edges of a range: before a read takes its merged days, markLoose
//   looks up each of their sessions in the table and marks the merged day holding it.
// Marks stay while the day stays merged (a session marked once may be shared again by the next
// read). The table is derived from the merged days alone (nothing is stored: a restart rebuilds it
// as days are merged again), so it is bounded as they are (MERGED_DAYS per user), and rebuilt from
// them when sessions of days no longer held fill more than half of it.
import { IdSet } from './id-set.ts';
import type { PartColumns, RollupPart } from './hour.ts';
import { SessionIds } from './session-ids.ts';

/** A merged day's sessions as a read counts them (built from its marks, reused until they change). */
export interface DayView {
  readonly columns: PartColumns;
  /** Per session (forEachSession order): 1 if it may cross into another part of a read. */
  readonly crossing: Uint8Array;
  /** Per name (dimNames order): how many of its sessions do not cross. */
  readonly local: Uint32Array;
  /** The places of the crossing sessions, ascending (the day's sessions that need ids). */
  readonly crossed: Int32Array;
  /** Per name: its crossing sessions, as indexes into `crossed`, from crossEnds[i - 1] to crossEnds[i]. */
  readonly crossEnds: Uint32Array;
  readonly crossRefs: Uint32Array;
  /** Per dimension: how many sessions that do not cross any of its names holds. */
  readonly localAny: Uint32Array;
}

interface Held { day: number; part: RollupPart; ids: Int32Array; crossing: Uint8Array; view: DayView | null }

/** Table ids handed out for sessions no held day has any more, before the table is rebuilt. */
const SLACK = 65_536;

export class CrossDays {
  private readonly days = new Map<number, Held>();
  private ids = new SessionIds();
  /** Per id: how many held days hold it, the first of them and its place there, whether it crosses. */
  private holders = new Uint16Array(0);
  private firstDay = new Int32Array(0);
  private firstAt = new Int32Array(0);
  private crossed = new Uint8Array(0);
  /** Ids with at least one holder. */
  private live = 0;

  constructor(private readonly slack = SLACK) {}

  /** Sessions in the table, held or not (bounded: see rebuild). */
  get tableSize(): number {
    return this.ids.size;
  }

  /** Takes a day's merged part (replacing the one it held for that day). */
  add(day: number, part: RollupPart): void {
    this.remove(day);
    const ids = this.ids.of(part);
    this.reserve(this.ids.size);
    const held: Held = { day, part, ids, crossing: new Uint8Array(ids.length), view: null };
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (this.holders[id] === 0) {
        this.firstDay[id] = day;
        this.firstAt[id] = i;
        this.crossed[id] = 0;
        this.live++;
      } else {
        // Every holder marks it: the first when a second comes, each later one as it comes.
        if (!this.crossed[id]) this.mark(id);
        held.crossing[i] = 1;
      }
      this.holders[id]++;
    }
    this.days.set(day, held);
  }

  /** Forgets a day's merged part (dropped, or one of its parts changed). */
  remove(day: number): void {
    const held = this.days.get(day);
    if (!held) return;
    this.days.delete(day);
    for (const id of held.ids) if (--this.holders[id] === 0) this.live--;
    if (this.ids.size > 2 * this.live + this.slack) this.rebuild();
  }

  /** The merged day held for this part, if the part is one. */
  heldOf(part: RollupPart): Held | null {
    const held = this.days.get(Math.floor(part.hour / 24));
    return held && held.part === part ? held : null;
  }

  /**
   * Marks the sessions of a part read beside merged days in the merged day holding them.
   * `dayReadWhole`: whether the read also takes the part's own day merged (parts a store adds on
   * top of its rollups); if not, the day's merged part is not in the read and need not be marked.
   */
  markLoose(part: RollupPart, dayReadWhole: boolean): void {
    if (this.live === 0) return;
    const day = Math.floor(part.hour / 24);
    this.ids.forEachKnown(part, (_, id) => {
      if (this.holders[id] > 0 && !this.crossed[id] && (dayReadWhole || this.firstDay[id] !== day)) this.mark(id);
    });
  }

  /** The day's view for a read, built anew when its marks changed since the last. */
  view(held: Held): DayView {
    return (held.view ??= buildView(held.part.columns(), held.crossing));
  }

  /** Sets a single holder's mark: it now crosses. */
  private mark(id: number) {
    this.crossed[id] = 1;
    const first = this.days.get(this.firstDay[id])!;
    first.crossing[this.firstAt[id]] = 1;
    first.view = null;
  }

  private reserve(n: number) {
    if (n <= this.holders.length) return;
    const size = Math.max(n, 2 * this.holders.length, 1024);
    const grow = <T extends Uint16Array | Int32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(size);
      b.set(a);
      return b;
    };
    this.holders = grow(this.holders, (k) => new Uint16Array(k));
    this.firstDay = grow(this.firstDay, (k) => new Int32Array(k));
    this.firstAt = grow(this.firstAt, (k) => new Int32Array(k));
    this.crossed = grow(this.crossed, (k) => new Uint8Array(k));
  }

  /** A fresh table of the held days' sessions only (marks from reads are made again by the next). */
  private rebuild() {
    const held = [...this.days.values()];
    this.days.clear();
    this.ids = new SessionIds();
    this.holders = new Uint16Array(0);
    this.live = 0;
    for (const h of held) this.add(h.day, h.part);
  }
}

function buildView(c: PartColumns, marks: Uint8Array): DayView {
  const crossing = marks.slice();
  const names = c.dimNames.length;
  const refOf = new Int32Array(crossing.length);
  const crossedList: number[] = [];
  for (let s = 0; s < crossing.length; s++) if (crossing[s]) refOf[s] = crossedList.push(s) - 1;
  const local = new Uint32Array(names), crossEnds = new Uint32Array(names);
  const refs: number[] = [];
  const localAny = new Uint32Array(c.dimEnds.length);
  // Which dimension last counted a session in localAny (d + 1; 0: none yet).
  const seenIn = new Uint8Array(crossing.length);
  for (let d = 0, i = 0; d < c.dimEnds.length; d++) {
    for (; i < c.dimEnds[d]; i++) {
      for (let j = i ? c.dimSessionEnds[i - 1] : 0; j < c.dimSessionEnds[i]; j++) {
        const s = c.dimSessions[j];
        if (crossing[s]) refs.push(refOf[s]);
        else {
          local[i]++;
          if (seenIn[s] !== d + 1) (seenIn[s] = d + 1), localAny[d]++;
        }
      }
      crossEnds[i] = refs.length;
    }
  }
  return { columns: c, crossing, local, crossed: Int32Array.from(crossedList), crossEnds, crossRefs: Uint32Array.from(refs), localAny };
}

/**
 * A breakdown name's distinct sessions over a read: ids of sessions that parts may share, and the
 * count of those only one merged day holds. Where unions of names are asked (goals, properties),
 * the names' places in the days that counted them, to unite those per day.
 */
export class NameSessions {
  readonly ids = new IdSet();
  local = 0;
  days: DayView[] | null = null;
  names: number[] | null = null;

  get size(): number {
    return this.local + this.ids.size;
  }

  /** Adds the not-crossing sessions of name i of a day; `unions`: keep where they came from. */
  addLocal(view: DayView, i: number, unions: boolean): void {
    const n = view.local[i];
    if (n === 0) return;
    this.local += n;
    if (!unions) return;
    (this.days ??= []).push(view);
    (this.names ??= []).push(i);
  }

  /** How many distinct sessions the sets hold together (each kept its days: addLocal's `unions`). */
  static unionSize(sets: readonly NameSessions[]): number {
    if (sets.length === 1) return sets[0].size;
    let n = IdSet.unionSize(sets.map((s) => s.ids));
    // Sessions that cross no part are distinct across days: unite each day's names on their own.
    const byDay = new Map<DayView, number[]>();
    for (const s of sets) {
      s.days?.forEach((view, k) => {
        const names = byDay.get(view);
        if (names) names.push(s.names![k]);
        else byDay.set(view, [s.names![k]]);
      });
    }
    for (const [view, names] of byDay) {
      if (names.length === 1) {
        n += view.local[names[0]];
        continue;
      }
      const c = view.columns, seen = stamps(view.crossing.length), stamp = ++stamped;
      for (const i of names) {
        for (let j = i ? c.dimSessionEnds[i - 1] : 0; j < c.dimSessionEnds[i]; j++) {
          const s = c.dimSessions[j];
          if (!view.crossing[s] && seen[s] !== stamp) (seen[s] = stamp), n++;
        }
      }
    }
    return n;
  }
}

// Which sessions of a day a union saw: one array for every union, each with its own stamp (a fresh
// zeroed array per day and goal was a tenth of a 30-day read with goals).
let seenBy = new Int32Array(0);
let stamped = 0;
function stamps(n: number): Int32Array {
  if (seenBy.length < n || stamped >= 0x7fffffff) (seenBy = new Int32Array(Math.max(n, 2 * seenBy.length))), (stamped = 0);
  return seenBy;
}
