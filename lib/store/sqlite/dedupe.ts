// Deduplication of (owner, id) in bounded memory, decided on the main thread before an event is
// acknowledged (docs/architecture.md#sqlite-store).
//
// - Events of the hot segment, and of a segment being sealed until its filter arrives: exact ids,
//   a Set per owner (~75 B per event).
// - Sealed segments received within the dedupe window (SERVICE_DEDUPE_DAYS, default 7): a sorted
//   array of 53-bit hashes of their keys (8 B per event), searched by bisection. A duplicate in the
//   window is always caught; a new event is taken for a duplicate only if its 53-bit hash equals
//   one in the window (about n / 2^53: one in 2.5 billion per event with 3.5M events in the window).
// - Older sealed segments are not checked: a retry that arrives more than the window after the
//   original is stored again.
// - In front of the filters, one bit per hash (its low bits) for every key in them: a new key's bit
//   is clear ~15 times in 16 and it skips the filters' bisections. With a filter per sealed segment
//   (~31 in a 7-day window at 222k events a day), bisecting them all was ~9 µs of the main thread's
//   time per event, the most of any step of an insert at 20M events.

/** cyrb53: a fast 53-bit string hash (two 32-bit multiply-xorshift lanes), exact in a double. */
export function keyHash(owner: string, id: string): number {
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  const mix = (s: string) => {
    for (let i = 0; i < s.length; i++) {
      const ch = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ ch, 2654435761);
      h2 = Math.imul(h2 ^ ch, 1597334677);
    }
  };
  mix(owner);
  h1 = Math.imul(h1 ^ 0, 2654435761); // a separator: ("ab", "c") ≠ ("a", "bc")
  h2 = Math.imul(h2 ^ 0, 1597334677);
  mix(id);
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** A sealed segment's keys, as sorted hashes. */
export interface SegmentFilter {
  segment: number;
  /** The latest receive time in the segment: the filter leaves the window after it. */
  maxReceived: number;
  hashes: Float64Array;
}

function contains(sorted: Float64Array, h: number): boolean {
  let lo = 0, hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = sorted[mid];
    if (v === h) return true;
    if (v < h) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

type Generation = Map<string, Set<string>>;

/** The bitmap has at least this many bits per key of the filters (a clear bit for ~15 new keys in 16). */
const BITS_PER_KEY = 16;
/** 32 MiB: past 16M keys in the window more new keys pass the bitmap, and are bisected. */
const MAX_BITS = 2 ** 28;

/** Keys hashed between yields when a seal's filter is built (~15 ms). */
const FILTER_SLICE = 16_384;

export class Dedupe {
  /** Exact ids of the hot segment. */
  private hot: Generation = new Map();
  /** Exact ids of segments being sealed (their filter not yet here), by the token `rotate` gave. */
  private sealing = new Map<number, Generation>();
  private tokens = 0;
  private filters: SegmentFilter[] = [];
  /** The filters' keys as bits (see above): bit `hash mod 2^k` set for each. */
  private bits = new Uint32Array(1);
  private bitMask = 31;
  /** Keys set in the bitmap: of filters held, and of filters that have gone since it was built. */
  private bitKeys = 0;
  private staleKeys = 0;
  /** Events added to the hot generation (what a seal would cover). */
  hotCount = 0;

  constructor(private windowMs: number) {}

  /** Keys of inserts waiting for their journal write: taken, not yet stored. */
  private claimed = new Map<string, Set<string>>();

  has(owner: string, id: string): boolean {
    if (this.hot.get(owner)?.has(id) || this.claimed.get(owner)?.has(id)) return true;
    for (const g of this.sealing.values()) if (g.get(owner)?.has(id)) return true;
    if (!this.filters.length) return false;
    const h = keyHash(owner, id);
    // `>>> 0`: the hash's low 32 bits (it is an integer below 2^53).
    const bit = (h >>> 0) & this.bitMask;
    if ((this.bits[bit >>> 5] & (1 << (bit & 31))) === 0) return false;
    for (const f of this.filters) if (contains(f.hashes, h)) return true;
    return false;
  }

  add(owner: string, id: string): void {
    let ids = this.hot.get(owner);
    if (!ids) this.hot.set(owner, (ids = new Set()));
    ids.add(id);
    this.hotCount++;
  }

  claim(owner: string, id: string): void {
    let ids = this.claimed.get(owner);
    if (!ids) this.claimed.set(owner, (ids = new Set()));
    ids.add(id);
  }

  unclaim(owner: string, id: string): void {
    const ids = this.claimed.get(owner);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) this.claimed.delete(owner);
  }

  /** Retention removed a stored event: a retry of it is new again. */
  forget(owner: string, id: string): void {
    const ids = this.hot.get(owner);
    if (ids?.delete(id)) this.hotCount--;
    else for (const g of this.sealing.values()) g.get(owner)?.delete(id);
  }

  /** A seal begins: the hot ids so far belong to it. Returns the token `sealed` takes. */
  rotate(): number {
    const token = ++this.tokens;
    this.sealing.set(token, this.hot);
    this.hot = new Map();
    this.hotCount = 0;
    return token;
  }

  /**
   * The filter of a segment being sealed: the sorted hashes of its exact ids, as retention left
   * them (the worker reports what it prunes before it answers the seal).
   */
  async filterOf(token: number): Promise<Float64Array> {
    const generation = this.sealing.get(token) ?? new Map<string, Set<string>>();
    let n = 0;
    for (const ids of generation.values()) n += ids.size;
    const out = new Float64Array(n);
    let i = 0;
    for (const [owner, ids] of generation) {
      for (const id of ids) {
        // Hashing 150k keys took ~120 ms: in slices, so acknowledgements go on.
        if (i > 0 && i % FILTER_SLICE === 0) await new Promise((r) => setTimeout(r, 0));
        out[i++] = keyHash(owner, id);
      }
    }
    // Retention may have forgotten ids while this yielded.
    return out.subarray(0, i).sort();
  }

  /** The seal is durable: its exact ids give way to its filter (none when it sealed nothing). */
  sealed(token: number, filter: SegmentFilter | null, now: number): void {
    this.sealing.delete(token);
    if (!filter) return;
    // Filters that left the window go as this one comes: between retention's runs (every minute) a
    // bulk load of past days, whose clock runs ahead, held three times the window's filters.
    this.expire(now);
    this.addFilter(filter, now);
  }

  addFilter(filter: SegmentFilter, now: number): void {
    if (filter.maxReceived < now - this.windowMs) return;
    this.filters.push(filter);
    this.bitKeys += filter.hashes.length;
    if (this.bitKeys * BITS_PER_KEY > this.bitMask + 1) this.rebuildBits();
    else this.setBits(filter.hashes);
  }

  /**
   * Retention dropped a segment, or its filter left the window. The bits of its keys stay set
   * until they are as many as the live ones: rebuilding the bitmap holds the main thread (~30 ms
   * for 1.5M keys), and with a seal every few hours it would run as often.
   */
  expire(now: number, dropped: readonly number[] = []): void {
    const kept = this.filters.filter((f) => !dropped.includes(f.segment) && f.maxReceived >= now - this.windowMs);
    if (kept.length === this.filters.length) return;
    for (const f of this.filters) if (!kept.includes(f)) this.staleKeys += f.hashes.length;
    this.filters = kept;
    if (this.staleKeys * 2 > this.bitKeys) this.rebuildBits();
  }

  /** The bitmap sized for the filters' keys, from them (a few ms per million keys). */
  private rebuildBits(): void {
    this.bitKeys = this.filters.reduce((n, f) => n + f.hashes.length, 0);
    this.staleKeys = 0;
    let size = 32;
    while (size < this.bitKeys * BITS_PER_KEY && size < MAX_BITS) size *= 2;
    this.bits = new Uint32Array(size / 32);
    this.bitMask = size - 1;
    for (const f of this.filters) this.setBits(f.hashes);
  }

  private setBits(hashes: Float64Array): void {
    for (let i = 0; i < hashes.length; i++) {
      const bit = (hashes[i] >>> 0) & this.bitMask;
      this.bits[bit >>> 5] |= 1 << (bit & 31);
    }
  }

  /** Bytes held by the filters and their bitmap (for health and the documented cost). */
  get filterBytes(): number {
    return this.filters.reduce((n, f) => n + f.hashes.byteLength, 0) + this.bits.byteLength;
  }
}
