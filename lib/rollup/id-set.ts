// Distinct sessions of a breakdown name as a bitset of the small integers SessionIds hands out.

/** Distinct small non-negative integers, as a bitset that grows: adding one is a few instructions. */
export class IdSet {
  private bits = new Uint32Array(4);
  size = 0;

  /** How many distinct ids the sets hold together. */
  static unionSize(sets: readonly IdSet[]): number {
    if (sets.length === 1) return sets[0].size;
    const words = Math.max(0, ...sets.map((s) => s.bits.length));
    let n = 0;
    for (let w = 0; w < words; w++) {
      let word = 0;
      for (const s of sets) word |= s.bits[w] ?? 0;
      n += popcount(word);
    }
    return n;
  }

  add(id: number): void {
    const word = id >>> 5;
    if (word >= this.bits.length) {
      const grown = new Uint32Array(Math.max(word + 1, this.bits.length * 2));
      grown.set(this.bits);
      this.bits = grown;
    }
    const bit = 1 << (id & 31);
    if ((this.bits[word] & bit) === 0) {
      this.bits[word] |= bit;
      this.size++;
    }
  }
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
