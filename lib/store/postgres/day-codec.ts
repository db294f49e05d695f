// The bytes of a fold row of watchtower_rollup_days and of a block's rollup: hour parts in the
// binary form of lib/rollup/codec.ts, one after the other.
import { encodePart, FrozenHour } from '../../rollup/codec.ts';
import type { RollupPart } from '../../rollup/hour.ts';

// --- The bytes of a day: u32 part count, then per part a u32 length and the part, padded to 8 ---

/** The hour parts of a day in one buffer. */
export function encodeDay(parts: readonly RollupPart[]): Uint8Array {
  const encoded = parts.map(encodePart);
  let size = 8;
  for (const p of encoded) size += 8 + ((p.byteLength + 7) & ~7);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, encoded.length, true);
  let at = 8;
  for (const p of encoded) {
    view.setUint32(at, p.byteLength, true);
    out.set(p, at + 8);
    at += 8 + ((p.byteLength + 7) & ~7);
  }
  return out;
}

/** The hour parts of a day's buffer, each copied into a buffer of its own (see FrozenHour.decode). */
export function decodeDay(bytes: Uint8Array): FrozenHour[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = () => new RangeError('not a compacted rollup day');
  if (bytes.byteLength < 8) throw bad();
  const count = view.getUint32(0, true);
  const out: FrozenHour[] = [];
  let at = 8;
  for (let i = 0; i < count; i++) {
    if (at + 8 > bytes.byteLength) throw bad();
    const length = view.getUint32(at, true);
    if (at + 8 + length > bytes.byteLength) throw bad();
    // A copy made by the Uint8Array constructor: a Buffer's slice() would be a view.
    out.push(FrozenHour.decode(new Uint8Array(bytes.subarray(at + 8, at + 8 + length))));
    at += 8 + ((length + 7) & ~7);
  }
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
export const hex = (bytes: Uint8Array) => {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]];
  return s;
};
