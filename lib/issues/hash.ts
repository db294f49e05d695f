// Small, synchronous, runtime-neutral hashes. Grouping runs once per error event, and a sync hash
// keeps fingerprinting a plain function (WebCrypto digests are async everywhere).

const utf8 = new TextEncoder();

/**
 * FNV-1a 64-bit over the UTF-8 bytes of `text`, as 16 hex digits: the published algorithm, so any
 * other implementation reproduces a fingerprint. 64 bits keep collisions unlikely (50% only past
 * ~4 billion distinct groups). Computed on two 32-bit halves, since JavaScript numbers hold 53 bits.
 */
export function fnv1a64(text: string): string {
  const [hi, lo] = fnv1a64Parts(text);
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** The two 32-bit halves of fnv1a64 (unsigned). */
export function fnv1a64Parts(text: string): [number, number] {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  // ASCII text (most of it) is its own UTF-8: hashed from the string, without encoding it first.
  let ascii = true;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) { ascii = false; break; }
  const length = ascii ? text.length : 0;
  const bytes = ascii ? null : utf8.encode(text);
  for (let i = 0; i < (bytes ? bytes.length : length); i++) {
    const byte = bytes ? bytes[i] : text.charCodeAt(i);
    lo = (lo ^ byte) >>> 0;
    // h * 0x100000001b3 mod 2^64 = h * 0x1b3 + (h << 40). Products stay below 2^42: exact in doubles.
    const low = lo * 0x1b3;
    const carry = Math.floor(low / 0x1_0000_0000);
    hi = (hi * 0x1b3 + carry + (lo << 8)) >>> 0;
    lo = low >>> 0;
  }
  return [hi, lo];
}

/** MurmurHash3's finaliser: spreads every input bit over the output (FNV's high bits mix poorly). */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
