// The binary form of an hour's rollup, and FrozenHour, the immutable part that lives on it.
// A sealed hour is kept in memory as its encoded bytes: columns are typed-array views on them (no
// copy, no per-number objects), and the sessions stay encoded text, decoded only when a union of
// sessions needs them. Decoding is a header read and a few views, not a parse of numbers; the
// names are split on first use (FrozenHour.columns).
//
// Layout (little-endian; every column starts at a multiple of 8 so that it can be viewed in place):
//   u32 magic "WTR2", u32 flags (bit 0: names are UTF-16, bit 1: sessions are UTF-16, else UTF-8;
//   bit 2: sessions are UUIDs, 16 bytes each, without lengths)
//   f64 hour, f64 total
//   u32 × 21: the length of each column below; u8 × 21: the element kind of each; padding to 8
//   columns: typeCounts, versionCounts, feedback (5), routeCounts, routeEnds, routeSumMicros,
//            values, valueCounts, nameLengths (types, versions, routes, dimNames, vitalPages),
//            names, sessionLengths, sessions, dimEnds (one per dimension: 13, the last the custom
//            event properties; 12 in parts kept before properties, 6 in parts kept before
//            environments, campaigns, countries and custom events), dimCounts, dimSessionEnds, dimSessions,
//            vitalMetrics, vitalEnds, vitalValues, vitalValueCounts
// "WTR1" parts (before breakdowns) have the first 12 columns only, and read as without breakdowns.
// Numbers take the smallest kind that holds them (u8/u16/u32/i32/f64), so a typical hour's
// durations cost 3 bytes each. Strings are UTF-8 unless they hold a lone surrogate, which UTF-8
// cannot carry; then UTF-16. Lengths are in UTF-16 code units, which is how the text is split.
// Session ids are most of a part's bytes, and the SDK's are UUIDs: when every session of a part is
// a lowercase canonical UUID, each is kept as its 16 bytes (not 36 characters).
import { DIMENSIONS, LEGACY_DIMENSIONS, PART_DIMENSIONS } from '../breakdowns.ts';
import { NO_BREAKDOWNS, type PartColumns, type RollupPart } from './hour.ts';

const MAGIC = 0x32525457; // "WTR2"
const MAGIC_1 = 0x31525457; // "WTR1"
const COLUMNS = 21;
const COLUMNS_1 = 12;
const LENGTHS_AT = 24;
const layout = (columns: number) => {
  const kindsAt = LENGTHS_AT + 4 * columns;
  return { columns, kindsAt, firstColumn: (kindsAt + columns + 7) & ~7 };
};
const LAYOUT = layout(COLUMNS), LAYOUT_1 = layout(COLUMNS_1);
const [TYPES, VERSIONS, , ROUTES, , , VALUES, , NAME_LENGTHS, NAMES, SESSION_LENGTHS, SESSIONS,
  DIM_ENDS, DIM_COUNTS, DIM_SESSION_ENDS, DIM_SESSIONS, VITAL_METRICS, VITAL_ENDS, VITAL_VALUES, VITAL_VALUE_COUNTS] =
  Array.from({ length: COLUMNS }, (_, i) => i);

type Kind = 0 | 1 | 2 | 3 | 4;
const ARRAYS = [Uint8Array, Uint16Array, Uint32Array, Int32Array, Float64Array] as const;
const [U8, U16, U32, I32, F64] = [0, 1, 2, 3, 4] as const;
type View = InstanceType<(typeof ARRAYS)[number]>;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const utf8 = new TextEncoder();
// ignoreBOM keeps a leading U+FEFF, which is part of the text here, not a marker.
const fromUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** The smallest kind that holds every number of `xs` exactly. */
function kindOf(xs: ArrayLike<number>): Kind {
  let min = 0, max = 0;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (!Number.isInteger(x)) return F64;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (min >= 0) return max <= 0xff ? U8 : max <= 0xffff ? U16 : max <= 0xffffffff ? U32 : F64;
  return min >= -0x80000000 && max <= 0x7fffffff ? I32 : F64;
}

interface Text { utf16: boolean; lengths: number[]; bytes: Uint8Array | Uint16Array }

function encodeText(strings: readonly string[]): Text {
  const joined = strings.join('');
  const lengths = strings.map((s) => s.length);
  if (!LONE_SURROGATE.test(joined)) return { utf16: false, lengths, bytes: utf8.encode(joined) };
  const units = new Uint16Array(joined.length);
  for (let i = 0; i < joined.length; i++) units[i] = joined.charCodeAt(i);
  return { utf16: true, lengths, bytes: units };
}

function decodeText(bytes: View, utf16: boolean): string {
  if (!utf16) return fromUtf8.decode(bytes);
  const units = bytes as Uint16Array;
  let out = '';
  for (let i = 0; i < units.length; i += 8192) out += String.fromCharCode(...units.subarray(i, i + 8192));
  return out;
}

const align8 = (n: number) => (n + 7) & ~7;

// Hex digit value by char code (the UUID pattern has already admitted only 0-9 and a-f).
const NIBBLE = new Uint8Array(128);
for (let i = 0; i < 16; i++) NIBBLE[i.toString(16).charCodeAt(0)] = i;
// Where each of the 16 bytes starts in the 36-character form.
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/** Whether a session id is kept as 16 bytes when every session of its part is one. */
export const isPackedUuid = (s: string): boolean => UUID.test(s);

/** Writes the 16 bytes of a UUID (isPackedUuid) at `at`. */
export function packUuid(s: string, out: Uint8Array, at: number): void {
  for (let j = 0; j < 16; j++) out[at + j] = (NIBBLE[s.charCodeAt(AT[j])] << 4) | NIBBLE[s.charCodeAt(AT[j] + 1)];
}

function packUuids(ids: readonly string[]): Uint8Array | null {
  if (ids.length === 0 || !ids.every(isPackedUuid)) return null;
  const out = new Uint8Array(16 * ids.length);
  ids.forEach((s, i) => packUuid(s, out, 16 * i));
  return out;
}

// The 36-character form is written into one scratch buffer and decoded: about 6× faster than
// joining hex strings, which matters when a union of a day's sessions formats thousands of them.
const HEX_HIGH = new Uint8Array(256), HEX_LOW = new Uint8Array(256);
for (let i = 0; i < 256; i++) [HEX_HIGH[i], HEX_LOW[i]] = [HEX[i].charCodeAt(0), HEX[i].charCodeAt(1)];
const UUID_TEXT = new Uint8Array(36).fill(45); // '-' where no digit goes

function uuidAt(b: View, at: number): string {
  for (let j = 0; j < 16; j++) {
    UUID_TEXT[AT[j]] = HEX_HIGH[b[at + j]];
    UUID_TEXT[AT[j] + 1] = HEX_LOW[b[at + j]];
  }
  return fromUtf8.decode(UUID_TEXT);
}

/**
 * One string for each route, type and version name across parts: 10,000 parts would otherwise
 * hold 10,000 copies of "/checkout". Capped, so that names of parts long dropped (or a flood of
 * distinct routes) cannot grow it for ever; past the cap names are simply not shared.
 */
const SHARED_NAMES = new Map<string, string>();
const SHARED_NAMES_CAP = 10_000;
function shared(name: string): string {
  const known = SHARED_NAMES.get(name);
  if (known !== undefined) return known;
  if (SHARED_NAMES.size < SHARED_NAMES_CAP) SHARED_NAMES.set(name, name);
  return name;
}

/** Encodes any part, mutable or frozen. */
export function encodePart(part: RollupPart): Uint8Array {
  if (!LITTLE_ENDIAN) throw new Error('rollup parts are little-endian; this platform is not');
  const c = part.columns();
  const sessions: string[] = [];
  part.forEachSession((s) => sessions.push(s));
  const names = encodeText([...c.types, ...c.versions, ...c.routes, ...c.dimNames, ...c.vitalPages]);
  const uuids = packUuids(sessions);
  const text = uuids ? { utf16: false, lengths: [], bytes: uuids } : encodeText(sessions);
  const columns: [ArrayLike<number>, Kind][] = [
    [c.typeCounts, kindOf(c.typeCounts)],
    [c.versionCounts, kindOf(c.versionCounts)],
    [c.feedback, kindOf(c.feedback)],
    [c.routeCounts, kindOf(c.routeCounts)],
    [c.routeEnds, U32],
    [c.routeSumMicros, F64],
    [c.values, kindOf(c.values)],
    [c.valueCounts, kindOf(c.valueCounts)],
    [names.lengths, kindOf(names.lengths)],
    [names.bytes, names.utf16 ? U16 : U8],
    [text.lengths, kindOf(text.lengths)],
    [text.bytes, text.utf16 ? U16 : U8],
    [c.dimEnds, U32],
    [c.dimCounts, kindOf(c.dimCounts)],
    [c.dimSessionEnds, U32],
    [c.dimSessions, kindOf(c.dimSessions)],
    [c.vitalMetrics, U8],
    [c.vitalEnds, U32],
    [c.vitalValues, kindOf(c.vitalValues)],
    [c.vitalValueCounts, kindOf(c.vitalValueCounts)],
  ];
  const { kindsAt, firstColumn } = LAYOUT;
  let size = firstColumn;
  for (const [xs, kind] of columns) size = align8(size) + xs.length * ARRAYS[kind].BYTES_PER_ELEMENT;
  const buffer = new ArrayBuffer(align8(size));
  const head = new DataView(buffer);
  head.setUint32(0, MAGIC, true);
  head.setUint32(4, (names.utf16 ? 1 : 0) | (text.utf16 ? 2 : 0) | (uuids ? 4 : 0), true);
  head.setFloat64(8, part.hour, true);
  head.setFloat64(16, part.total, true);
  let at = firstColumn;
  columns.forEach(([xs, kind], i) => {
    head.setUint32(LENGTHS_AT + 4 * i, xs.length, true);
    head.setUint8(kindsAt + i, kind);
    at = align8(at);
    new ARRAYS[kind](buffer, at, xs.length).set(xs);
    at += xs.length * ARRAYS[kind].BYTES_PER_ELEMENT;
  });
  return new Uint8Array(buffer);
}

/** An hour's rollup as read from its encoded bytes: immutable, compact, fast to add up. */
export class FrozenHour implements RollupPart {
  readonly hour: number;
  readonly total: number;
  readonly sessionCount: number;
  /** The column views, in layout order; names are decoded from them on first use (columns()). */
  private readonly views: View[];
  private readonly namesUtf16: boolean;
  /** Whether the part has the breakdown columns ("WTR2"). */
  private readonly breakdowns: boolean;
  /**
   * The dimensions it counts (PART_DIMENSIONS; DIMENSIONS.length in a part kept before
   * properties, LEGACY_DIMENSIONS before the newer breakdowns, 0 before breakdowns): a store rebuilds older parts from its rows.
   */
  readonly dimensions: number;
  private cols: PartColumns | null = null;
  private readonly sessionLengths: View;
  private readonly sessionText: View;
  private readonly sessionsUtf16: boolean;
  private readonly sessionsUuid: boolean;

  /**
   * Reads an encoded part. The bytes are copied once unless they are a whole, 8-aligned buffer of
   * their own, so a part read out of a larger buffer (a file) does not keep that buffer alive.
   */
  static decode(bytes: Uint8Array): FrozenHour {
    if (!LITTLE_ENDIAN) throw new Error('rollup parts are little-endian; this platform is not');
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    return new FrozenHour(own ? bytes : bytes.slice());
  }

  private constructor(private readonly bytes: Uint8Array) {
    const buffer = bytes.buffer as ArrayBuffer;
    const bad = (why: string) => new RangeError(`not a rollup part: ${why}`);
    if (bytes.byteLength < LAYOUT_1.firstColumn) throw bad('too short');
    const head = new DataView(buffer);
    const magic = head.getUint32(0, true);
    if (magic !== MAGIC && magic !== MAGIC_1) throw bad('bad magic');
    const { columns, kindsAt, firstColumn } = magic === MAGIC ? LAYOUT : LAYOUT_1;
    if (bytes.byteLength < firstColumn) throw bad('too short');
    const flags = head.getUint32(4, true);
    this.hour = head.getFloat64(8, true);
    this.total = head.getFloat64(16, true);
    const views: View[] = [];
    let at = firstColumn;
    for (let i = 0; i < columns; i++) {
      const kind = ARRAYS[head.getUint8(kindsAt + i)];
      if (!kind) throw bad('bad column kind');
      const n = head.getUint32(LENGTHS_AT + 4 * i, true);
      at = align8(at);
      if (at + n * kind.BYTES_PER_ELEMENT > bytes.byteLength) throw bad('truncated');
      views.push(new kind(buffer, at, n));
      at += n * kind.BYTES_PER_ELEMENT;
    }
    const nTypes = views[TYPES].length, nVersions = views[VERSIONS].length, nRoutes = views[ROUTES].length;
    const ends = views[4];
    if (views[2].length !== 5 || ends.length !== nRoutes || (nRoutes ? ends[nRoutes - 1] : 0) !== views[VALUES].length) {
      throw bad('columns do not match');
    }
    let nDims = 0, nVitals = 0;
    if (columns === COLUMNS) {
      const dimEnds = views[DIM_ENDS];
      nDims = dimEnds.length ? dimEnds[dimEnds.length - 1] : 0;
      nVitals = views[VITAL_METRICS].length;
      const dimSessionEnds = views[DIM_SESSION_ENDS], vitalEnds = views[VITAL_ENDS];
      // As many dimensions as now, or as before properties or the newer ones: still WTR2.
      if ((dimEnds.length !== PART_DIMENSIONS && dimEnds.length !== DIMENSIONS.length && dimEnds.length !== LEGACY_DIMENSIONS) || views[DIM_COUNTS].length !== nDims || dimSessionEnds.length !== nDims ||
        (nDims ? dimSessionEnds[nDims - 1] : 0) !== views[DIM_SESSIONS].length || vitalEnds.length !== nVitals ||
        (nVitals ? vitalEnds[nVitals - 1] : 0) !== views[VITAL_VALUES].length || views[VITAL_VALUE_COUNTS].length !== views[VITAL_VALUES].length) {
        throw bad('breakdown columns do not match');
      }
    }
    if (views[NAME_LENGTHS].length !== nTypes + nVersions + nRoutes + nDims + nVitals) throw bad('names do not match');
    this.views = views;
    this.namesUtf16 = (flags & 1) !== 0;
    this.breakdowns = columns === COLUMNS;
    this.dimensions = this.breakdowns ? views[DIM_ENDS].length : 0;
    this.sessionLengths = views[SESSION_LENGTHS];
    this.sessionText = views[SESSIONS];
    this.sessionsUtf16 = (flags & 2) !== 0;
    this.sessionsUuid = (flags & 4) !== 0;
    this.sessionCount = this.sessionsUuid ? this.sessionText.length / 16 : this.sessionLengths.length;
    if (this.sessionsUuid && this.sessionText.length % 16) throw bad('uuid sessions do not match');
  }

  /** The encoded bytes this part lives on (do not modify them). */
  encode(): Uint8Array {
    return this.bytes;
  }

  columns(): PartColumns {
    return (this.cols ??= this.readColumns());
  }

  /**
   * The columns with their names. Deferred to the first use: a start-up that sets every sealed
   * hour of a long history spent most of its rollup time splitting and sharing names (12,750 parts
   * at 20M events: ~0.5 s) that the first statistics, or idle merging, read soon enough anyway.
   */
  private readColumns(): PartColumns {
    const views = this.views;
    const names = splitText(decodeText(views[NAMES], this.namesUtf16), views[NAME_LENGTHS]).map(shared);
    const nTypes = views[TYPES].length, nVersions = views[VERSIONS].length, nRoutes = views[ROUTES].length;
    const at = nTypes + nVersions + nRoutes;
    const nDims = this.breakdowns ? views[DIM_COUNTS].length : 0;
    const breakdowns: Pick<PartColumns, keyof typeof NO_BREAKDOWNS> = !this.breakdowns ? NO_BREAKDOWNS : {
      dimNames: names.slice(at, at + nDims),
      dimEnds: views[DIM_ENDS],
      dimCounts: views[DIM_COUNTS],
      dimSessionEnds: views[DIM_SESSION_ENDS],
      dimSessions: views[DIM_SESSIONS],
      vitalPages: names.slice(at + nDims),
      vitalMetrics: views[VITAL_METRICS],
      vitalEnds: views[VITAL_ENDS],
      vitalValues: views[VITAL_VALUES],
      vitalValueCounts: views[VITAL_VALUE_COUNTS],
    };
    return {
      types: names.slice(0, nTypes),
      typeCounts: views[TYPES],
      versions: names.slice(nTypes, nTypes + nVersions),
      versionCounts: views[VERSIONS],
      feedback: views[2],
      routes: names.slice(nTypes + nVersions, at),
      routeCounts: views[ROUTES],
      routeEnds: views[4],
      routeSumMicros: views[5],
      values: views[VALUES],
      valueCounts: views[7],
      ...breakdowns,
    };
  }

  packedSessions(): ArrayLike<number> | null {
    return this.sessionsUuid ? this.sessionText : null;
  }

  forEachSession(fn: (session: string) => void): void {
    if (this.sessionCount === 0) return;
    if (this.sessionsUuid) {
      for (let at = 0; at < this.sessionText.length; at += 16) fn(uuidAt(this.sessionText, at));
      return;
    }
    for (const s of splitText(decodeText(this.sessionText, this.sessionsUtf16), this.sessionLengths)) fn(s);
  }
}

function splitText(text: string, lengths: ArrayLike<number>): string[] {
  const out: string[] = [];
  for (let i = 0, at = 0; i < lengths.length; i++) out.push(text.slice(at, (at += lengths[i])));
  return out;
}
