// Small integer ids for session ids, so that a range's breakdowns count distinct sessions as
// bitsets (IdSet in assemble.ts). A frozen part keeps UUID sessions (the SDK's) as 16 bytes; turning
// each into its 36-character string to look it up in a Map cost more than the rest of a 30-day
// breakdown together. So UUIDs are looked up by their bytes in an open-addressing table, and only
// other session ids by string. The two never meet: a string is looked up by bytes exactly when it
// is a UUID in the form parts pack (codec.ts), so equal sessions get equal ids, whatever form
// their parts keep them in.
import { isPackedUuid, packUuid } from './codec.ts';
import type { RollupPart } from './hour.ts';

const EMPTY = -1;

export class SessionIds {
  /** Ids handed out (0 … size − 1). */
  size = 0;
  private readonly strings = new Map<string, number>();
  /** Four 32-bit words of the UUID in each slot, and the slot's id (EMPTY: free). */
  private words: Uint32Array;
  private ids: Int32Array;
  private uuids = 0;
  private readonly scratch = new Uint8Array(16);

  /**
   * `expected`: at most how many sessions will be looked up (the sum of the parts' sessions). The
   * table starts with twice as many slots, since it is kept at most half full: growing it from
   * 1,024 slots rehashed every UUID up to seven times, ~10% of a 30-day range's statistics at 7M
   * events, and starting at `expected` still made the usual read (a range's distinct sessions are
   * most of the sum) double it once, ~3 ms of 13 at 2M events.
   */
  constructor(expected = 0) {
    let slots = 1024;
    while (slots < 2 * expected && slots < 1 << 24) slots *= 2;
    this.words = new Uint32Array(4 * slots);
    this.ids = new Int32Array(slots).fill(EMPTY);
  }

  /** The ids of a part's sessions, in forEachSession's order. */
  of(part: RollupPart): Int32Array {
    const out = new Int32Array(part.sessionCount);
    const packed = part.packedSessions?.();
    if (packed) for (let i = 0; i < out.length; i++) out[i] = this.ofUuid(packed, 16 * i);
    else {
      let i = 0;
      part.forEachSession((s) => (out[i++] = this.ofString(s)));
    }
    return out;
  }

  /**
   * The ids of the sessions at `positions` of a part (in forEachSession's order): a merged day read
   * through its CrossDays view needs ids only for its sessions that cross into other parts.
   */
  at(part: RollupPart, positions: ArrayLike<number>): Int32Array {
    const out = new Int32Array(positions.length);
    if (out.length === 0) return out;
    const packed = part.packedSessions?.();
    if (packed) for (let i = 0; i < out.length; i++) out[i] = this.ofUuid(packed, 16 * positions[i]);
    else {
      const all: string[] = [];
      part.forEachSession((s) => all.push(s));
      for (let i = 0; i < out.length; i++) out[i] = this.ofString(all[positions[i]]);
    }
    return out;
  }

  /** Calls fn with the place and the id of each session of a part that has one (none is handed out). */
  forEachKnown(part: RollupPart, fn: (at: number, id: number) => void): void {
    const packed = part.packedSessions?.();
    if (packed) {
      for (let i = 0, n = part.sessionCount; i < n; i++) {
        const id = this.findUuid(packed, 16 * i);
        if (id !== EMPTY) fn(i, id);
      }
      return;
    }
    let i = 0;
    part.forEachSession((s) => {
      let id: number | undefined;
      if (isPackedUuid(s)) {
        packUuid(s, this.scratch, 0);
        id = this.findUuid(this.scratch, 0);
      } else id = this.strings.get(s) ?? EMPTY;
      if (id !== EMPTY) fn(i, id);
      i++;
    });
  }

  /** The id of a session id given as text. */
  ofString(session: string): number {
    if (isPackedUuid(session)) {
      packUuid(session, this.scratch, 0);
      return this.ofUuid(this.scratch, 0);
    }
    let id = this.strings.get(session);
    if (id === undefined) this.strings.set(session, (id = this.size++));
    return id;
  }

  /** The id of the UUID whose 16 bytes start at `at` (as a part packs them). */
  ofUuid(bytes: ArrayLike<number>, at: number): number {
    const w0 = word(bytes, at), w1 = word(bytes, at + 4), w2 = word(bytes, at + 8), w3 = word(bytes, at + 12);
    const slot = this.slotOf(w0, w1, w2, w3);
    if (this.ids[slot] !== EMPTY) return this.ids[slot];
    const id = this.size++;
    this.put(slot, w0, w1, w2, w3, id);
    if (++this.uuids * 2 > this.ids.length) this.grow();
    return id;
  }

  private findUuid(bytes: ArrayLike<number>, at: number): number {
    return this.ids[this.slotOf(word(bytes, at), word(bytes, at + 4), word(bytes, at + 8), word(bytes, at + 12))];
  }

  /** The slot holding this UUID, or the free slot where it goes. */
  private slotOf(w0: number, w1: number, w2: number, w3: number): number {
    const { ids, words } = this;
    const mask = ids.length - 1;
    // UUIDv7 starts with a timestamp that sessions of one hour share: mix all four words.
    let h = Math.imul(w0 ^ Math.imul(w1, 0x9e3779b1) ^ Math.imul(w2, 0x85ebca77) ^ Math.imul(w3, 0xc2b2ae3d), 0x27d4eb2f);
    h ^= h >>> 15;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const k = 4 * slot;
      if (ids[slot] === EMPTY || (words[k] === w0 && words[k + 1] === w1 && words[k + 2] === w2 && words[k + 3] === w3)) return slot;
    }
  }

  private put(slot: number, w0: number, w1: number, w2: number, w3: number, id: number) {
    const k = 4 * slot;
    this.ids[slot] = id;
    this.words[k] = w0;
    this.words[k + 1] = w1;
    this.words[k + 2] = w2;
    this.words[k + 3] = w3;
  }

  /** Doubles the table (kept at most half full, so probes stay short). */
  private grow() {
    const { words, ids } = this;
    this.words = new Uint32Array(words.length * 2);
    this.ids = new Int32Array(ids.length * 2).fill(EMPTY);
    for (let old = 0; old < ids.length; old++) {
      if (ids[old] === EMPTY) continue;
      const k = 4 * old;
      this.put(this.slotOf(words[k], words[k + 1], words[k + 2], words[k + 3]), words[k], words[k + 1], words[k + 2], words[k + 3], ids[old]);
    }
  }
}

const word = (b: ArrayLike<number>, at: number) => ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
