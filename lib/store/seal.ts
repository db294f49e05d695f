// A sealed segment on disk: `<db>.seg-<id>.sqlite.gz` (the segment's database, gzipped) and
// `<db>.seg-<id>.manifest`, written after it. The manifest is the seal's commit point: a segment file
// without one is an unfinished seal (removed at start), a manifest names a complete segment.
//
// Manifest layout: "WTSEG1\n", the JSON length (u32 LE), the JSON (ManifestJson), then the key
// filter (sorted 53-bit hashes as float64, dedupe.ts) to the end. Rollup parts are encodePart bytes
// (lib/rollup/codec.ts) in base64: whatever dimensions a rollup gains travel without a change here.
import { Buffer } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import type { LiveWindowState } from '../live-window.ts';
import type { AppUser } from './types.ts';
import { renameDurably, writeNewFile, type StoreFs } from './fs.ts';
import type { SegmentBounds } from './segment-cache.ts';

const gzip = promisify(gzipCb);
const gunzip = promisify(gunzipCb);

export const segmentFile = (dbPath: string, id: number) => `${dbPath}.seg-${id}.sqlite.gz`;
export const manifestFile = (dbPath: string, id: number) => `${dbPath}.seg-${id}.manifest`;
/** Matches a segment's files beside the database (group 1: id, group 2: kind). */
export const segmentName = (dbBase: string) => new RegExp(`^${dbBase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.seg-(\\d+)\\.(sqlite\\.gz|manifest)$`);

export interface ManifestJson extends SegmentBounds {
  /** Journal segments up to this one are wholly in this segment or an earlier one: replay skips them. */
  journal: number;
  /** Owner → that owner's rollup parts (base64 of encodePart) and event count in this segment. */
  owners: Record<string, { count: number; parts: string[] }>;
  /**
   * The users when it was sealed (they live in the hot segment; start-up takes them from here when
   * `<db>` still holds the segment it sealed, or is missing).
   */
  users: AppUser[];
  /** Owner → live window when the segment was sealed (start-up continues from the newest manifest). */
  windows: Record<string, LiveWindowState>;
}

export interface Manifest extends ManifestJson {
  filter: Float64Array;
}

const MAGIC = new TextEncoder().encode('WTSEG1\n');

export function encodeManifest(m: Manifest): Uint8Array {
  const { filter, ...json } = m;
  const text = new TextEncoder().encode(JSON.stringify(json));
  const out = new Uint8Array(MAGIC.length + 4 + text.length + filter.byteLength);
  out.set(MAGIC, 0);
  new DataView(out.buffer).setUint32(MAGIC.length, text.length, true);
  out.set(text, MAGIC.length + 4);
  out.set(new Uint8Array(filter.buffer, filter.byteOffset, filter.byteLength), MAGIC.length + 4 + text.length);
  return out;
}

export function decodeManifest(bytes: Uint8Array, path: string): Manifest {
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) throw new Error(`${path} is not a segment manifest`);
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(MAGIC.length, true);
  const start = MAGIC.length + 4;
  const json = JSON.parse(new TextDecoder().decode(bytes.subarray(start, start + length))) as ManifestJson;
  const rest = bytes.slice(start + length); // a copy: 8-aligned
  return { ...json, filter: new Float64Array(rest.buffer, 0, rest.byteLength / 8) };
}

const base64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
export const fromBase64 = (s: string) => {
  const b = Buffer.from(s, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength).slice();
};
export const partText = base64;

/**
 * Writes a sealed segment: its database file (gzip runs on libuv's thread pool, so the worker keeps
 * answering reads), then its manifest, each temp → fsync → rename → fsync dir. Returns the bytes
 * written to disk.
 */
export async function writeSegment(fs: StoreFs, dbPath: string, database: Uint8Array, manifest: Manifest): Promise<number> {
  const packed = await gzip(database, { level: 6, chunkSize: 4 << 20 });
  const segTmp = `${segmentFile(dbPath, manifest.id)}.tmp`;
  await writeNewFile(fs, segTmp, packed, 2 << 20);
  await renameDurably(fs, segTmp, segmentFile(dbPath, manifest.id));
  const bytes = encodeManifest(manifest);
  const manTmp = `${manifestFile(dbPath, manifest.id)}.tmp`;
  await writeNewFile(fs, manTmp, bytes);
  await renameDurably(fs, manTmp, manifestFile(dbPath, manifest.id));
  return packed.length + bytes.length;
}

/** A sealed segment's database bytes. */
export async function readSegment(fs: StoreFs, dbPath: string, id: number): Promise<Uint8Array> {
  const packed = await fs.read(segmentFile(dbPath, id));
  if (!packed) throw new Error(`${segmentFile(dbPath, id)} is missing, though its manifest exists`);
  const b = await gunzip(packed);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}
