// A sealed segment on disk: `<db>.seg-<id>.sqlite.gz` (the segment's database, gzipped) and
// `<db>.seg-<id>.manifest`, written after it. The manifest is the seal's commit point: a segment file
// without one is an unfinished seal (removed at start), a manifest names a complete segment.
//
// Manifest layout (version 4): "WTSEG4\n", then five u32 LE lengths (JSON, parts, windows, filter,
// project windows) and the five sections in that order:
//   - the JSON (ManifestJson: bounds, users, per owner the event count and its parts' byte lengths,
//     and the same per project of the owner's);
//   - the rollup parts, encodePart bytes (lib/rollup/codec.ts) one after the other, owner by owner
//     in the JSON's order, each owner's own parts and then its projects': whatever dimensions a
//     rollup gains travel without a change here;
//   - the owners' live windows (JSON, gzipped): start-up reads only the newest manifest's;
//   - the key filter (sorted 53-bit hashes as float64, dedupe.ts): start-up reads only those of
//     segments within the dedupe window;
//   - the projects' live windows (JSON, gzipped; empty when none were kept), read with the owners'.
// Environments' scopes (lib/environment-scopes.ts) travel as projects under keys with U+0001, and
// the JSON says `environmentsKnown` once a segment's owners have them: a segment sealed before
// they were kept has none, and reads of an environment over its time take the events instead.
// Start-up reads every manifest up to its parts and no further unless it needs the rest: the
// windows were ~1.5 MB and the filter ~0.4 MB of a 2 MB manifest at 50,000 events, so reading them
// all took most of the 1.3 s start-up spent on ~400 manifests. Earlier layouts are still read and
// have no project parts (`projectsKnown` false, until the worker backfills them from the rows):
// "WTSEG3\n" is this layout without projects (four sections, no project windows),
// "WTSEG1\n" the first (the JSON length, the JSON with the windows inside and the parts in base64,
// the filter).
import { Buffer } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import type { LiveWindowState } from '../../live-window.ts';
import type { AppUser } from '../types.ts';
import { renameDurably, writeNewFile, type StoreFs } from '../fs.ts';
import { concat } from '../../bytes.ts';

const gzip = promisify(gzipCb);
const gunzip = promisify(gunzipCb);

export const segmentFile = (dbPath: string, id: number) => `${dbPath}.seg-${id}.sqlite.gz`;
export const manifestFile = (dbPath: string, id: number) => `${dbPath}.seg-${id}.manifest`;
/** Matches a segment's files beside the database (group 1: id, group 2: kind). */
export const segmentName = (dbBase: string) => new RegExp(`^${dbBase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.seg-(\\d+)\\.(sqlite\\.gz|manifest)$`);

/** What a sealed segment's manifest says of it, and reads and retention select segments by. */
export interface SegmentBounds {
  id: number;
  count: number;
  minSeq: number;
  maxSeq: number;
  minReceived: number;
  maxReceived: number;
  /** The segment database's size before gzip: what it takes in memory once open. */
  bytes: number;
}

/** An owner's share of a sealed segment, or one project's share of it. */
export interface ScopeParts {
  count: number;
  /** The rollup parts (encodePart bytes). */
  parts: Uint8Array[];
}

export interface OwnerParts extends ScopeParts {
  /** Project id → the parts of the owner's events ingested with that project's key. */
  projects: Record<string, ScopeParts>;
}

export interface Manifest extends SegmentBounds {
  /** Journal segments up to this one are wholly in this segment or an earlier one: replay skips them. */
  journal: number;
  owners: Record<string, OwnerParts>;
  /**
   * The users when it was sealed (they live in the hot segment; start-up takes them from here when
   * `<db>` still holds the segment it sealed, or is missing).
   */
  users: AppUser[];
  /** Owner → live window when the segment was sealed (start-up continues from the newest manifest). */
  windows: Record<string, LiveWindowState>;
  /**
   * Owner → project id → that project's live window when sealed; null when the manifest has none
   * (an earlier layout, or one whose project parts were backfilled).
   */
  projectWindows: Record<string, Record<string, LiveWindowState>> | null;
  /** Whether `owners[…].projects` holds the projects' parts: false in layouts before version 4. */
  projectsKnown: boolean;
  /**
   * Whether `owners[…].projects` holds the environments' parts too (keys of environmentKey): absent
   * in manifests sealed before environments had scopes.
   */
  environmentsKnown?: boolean;
  /** Owners that had refused an environment a scope when it was sealed (lib/environment-scopes.ts). */
  environmentsFull?: string[];
  filter: Float64Array;
}

/** The JSON section: the parts travel as their byte lengths. */
type ManifestJson = Omit<Manifest, 'owners' | 'windows' | 'projectWindows' | 'projectsKnown' | 'filter'> & {
  owners: Record<string, { count: number; parts: number[]; projects: Record<string, { count: number; parts: number[] }> }>;
};

const MAGIC = new TextEncoder().encode('WTSEG4\n');
const MAGIC_V3 = new TextEncoder().encode('WTSEG3\n');
const MAGIC_V1 = new TextEncoder().encode('WTSEG1\n');
/** Header bytes: the magic and a u32 length per section (layout 4: five, layout 3: four). */
const HEAD = MAGIC.length + 20;
const HEAD_V3 = MAGIC.length + 16;
const EMPTY = new Uint8Array(0);

export async function encodeManifest(m: Manifest): Promise<Uint8Array> {
  if (!m.projectsKnown) throw new Error(`segment ${m.id}: a manifest is written with its projects' parts`);
  const { filter, windows, projectWindows, projectsKnown: _, owners, ...rest } = m;
  const { json, parts } = jsonAndParts(rest, owners);
  return frame([
    json,
    parts,
    await gzip(JSON.stringify(windows), { level: 1 }),
    new Uint8Array(filter.buffer, filter.byteOffset, filter.byteLength),
    projectWindows ? await gzip(JSON.stringify(projectWindows), { level: 1 }) : EMPTY,
  ]);
}

/** The JSON and parts sections: each owner's parts, then each of its projects', in the JSON's order. */
function jsonAndParts(rest: Omit<ManifestJson, 'owners'>, owners: Manifest['owners']): { json: Uint8Array; parts: Uint8Array } {
  const json: ManifestJson = { ...rest, owners: {} };
  const parts: Uint8Array[] = [];
  const lengths = (own: Uint8Array[]) => {
    parts.push(...own);
    return own.map((p) => p.byteLength);
  };
  for (const [owner, { count, parts: own, projects }] of Object.entries(owners)) {
    json.owners[owner] = { count, parts: lengths(own), projects: {} };
    for (const [project, p] of Object.entries(projects)) json.owners[owner].projects[project] = { count: p.count, parts: lengths(p.parts) };
  }
  return { json: new TextEncoder().encode(JSON.stringify(json)), parts: concat(parts) };
}

/** Layout 4 around its five sections. */
function frame(sections: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(HEAD + sections.reduce((n, b) => n + b.byteLength, 0));
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  let at = HEAD;
  sections.forEach((b, i) => {
    view.setUint32(MAGIC.length + 4 * i, b.byteLength, true);
    out.set(b, at);
    at += b.byteLength;
  });
  return out;
}

const startsWith = (bytes: Uint8Array, magic: Uint8Array) => magic.every((b, i) => bytes[i] === b);

/** What a reader of a manifest asks for beyond its JSON and parts. */
export interface ManifestWants {
  windows: boolean;
  /** Decided from the JSON (the segment's bounds). */
  filter: (m: Manifest) => boolean;
}

const ALL: ManifestWants = { windows: true, filter: () => true };

/** Where the sections of a layout 3 or 4 manifest are (null: another layout), checking it is whole enough. */
function sectionsOf(bytes: Uint8Array, path: string): { v4: boolean; section: (i: number) => Uint8Array } | null {
  const v4 = startsWith(bytes, MAGIC);
  if (!v4 && !startsWith(bytes, MAGIC_V3)) return null;
  const head = v4 ? HEAD : HEAD_V3;
  if (bytes.byteLength < head) throw new Error(`${path} is truncated`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lengths = Array.from({ length: v4 ? 5 : 4 }, (_, i) => view.getUint32(MAGIC.length + 4 * i, true));
  const section = (i: number) => {
    if (i >= lengths.length) return EMPTY;
    const start = head + lengths.slice(0, i).reduce((a, b) => a + b, 0);
    if (start + lengths[i] > bytes.byteLength) throw new Error(`${path} is truncated`);
    return bytes.subarray(start, start + lengths[i]);
  };
  return { v4, section };
}

const JSON_S = 0, PARTS = 1, WINDOWS = 2, FILTER = 3, PROJECT_WINDOWS = 4;

/**
 * A manifest's contents. Its windows are `{}` and its filter empty unless `wants` them; `bytes` may
 * end after the parts when neither is wanted (readManifest reads no further).
 */
export async function decodeManifest(bytes: Uint8Array, path: string, wants: ManifestWants = ALL): Promise<Manifest> {
  if (startsWith(bytes, MAGIC_V1)) return decodeV1(bytes, wants);
  const layout = sectionsOf(bytes, path);
  if (!layout) throw new Error(`${path} is not a segment manifest`);
  const { v4, section } = layout;
  const json = JSON.parse(new TextDecoder().decode(section(JSON_S))) as ManifestJson;
  const partBytes = section(PARTS);
  const m: Manifest = { ...json, owners: {}, windows: {}, projectWindows: null, projectsKnown: v4, filter: new Float64Array(0) };
  let at = 0;
  const cut = (lengths: number[]) => lengths.map((n) => partBytes.subarray(at, (at += n)));
  for (const [owner, { count, parts, projects }] of Object.entries(json.owners)) {
    m.owners[owner] = { count, parts: cut(parts), projects: {} };
    for (const [project, p] of Object.entries(projects ?? {})) m.owners[owner].projects[project] = { count: p.count, parts: cut(p.parts) };
  }
  if (wants.windows) {
    m.windows = JSON.parse(new TextDecoder().decode(await gunzip(section(WINDOWS))));
    const projectWindows = section(PROJECT_WINDOWS);
    if (projectWindows.byteLength) m.projectWindows = JSON.parse(new TextDecoder().decode(await gunzip(projectWindows)));
  }
  if (wants.filter(m)) m.filter = filterOf(section(FILTER));
  return m;
}

/**
 * The manifest `bytes` with its projects' parts (owner → project → parts): layout 4, its windows
 * and filter sections copied as they are (a backfill rewrites hundreds of manifests, and decoding
 * their windows and filters only to write them again was most of the work).
 */
export async function withProjects(bytes: Uint8Array, path: string, projects: Record<string, Record<string, ScopeParts>>,
  /** The owners' own parts, when they are rebuilt too (an owner not named keeps its parts). */
  ownParts: Record<string, Uint8Array[]> = {}): Promise<Uint8Array> {
  const layout = sectionsOf(bytes, path);
  const m = await decodeManifest(bytes, path, layout ? { windows: false, filter: () => false } : ALL);
  for (const [owner, entry] of Object.entries(m.owners)) {
    entry.projects = projects[owner] ?? {};
    if (ownParts[owner]) entry.parts = ownParts[owner];
  }
  m.projectsKnown = true;
  if (!layout) return encodeManifest(m);
  const { filter: _f, windows: _w, projectWindows: _p, projectsKnown: _k, owners, ...rest } = m;
  const { json, parts } = jsonAndParts(rest, owners);
  return frame([json, parts, layout.section(WINDOWS), layout.section(FILTER), layout.section(PROJECT_WINDOWS)]);
}

/** The first layout: one JSON with the windows and the parts in base64, then the filter. */
function decodeV1(bytes: Uint8Array, wants: ManifestWants): Manifest {
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(MAGIC_V1.length, true);
  const start = MAGIC_V1.length + 4;
  type V1 = Omit<Manifest, 'owners' | 'filter' | 'projectWindows' | 'projectsKnown'> & { owners: Record<string, { count: number; parts: string[] }> };
  const json = JSON.parse(new TextDecoder().decode(bytes.subarray(start, start + length))) as V1;
  const owners: Manifest['owners'] = {};
  for (const [owner, { count, parts }] of Object.entries(json.owners)) owners[owner] = { count, parts: parts.map(fromBase64), projects: {} };
  const m: Manifest = {
    ...json, owners, windows: wants.windows ? json.windows : {}, projectWindows: null, projectsKnown: false, filter: new Float64Array(0),
  };
  if (wants.filter(m)) m.filter = filterOf(bytes.subarray(start + length));
  return m;
}

/** The filter section as float64s (copied: the section need not be 8-aligned). */
const filterOf = (b: Uint8Array) => new Float64Array(b.slice().buffer, 0, b.byteLength >> 3);

const fromBase64 = (s: string) => {
  const b = Buffer.from(s, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
};

/** Segment `id`'s manifest, read only as far as `wants` needs (see the layout above). */
export async function readManifest(fs: StoreFs, dbPath: string, id: number, wants: ManifestWants): Promise<Manifest> {
  const path = manifestFile(dbPath, id);
  const missing = () => new Error(`${path} is missing`);
  const head = await fs.readStart(path, HEAD);
  if (!head) throw missing();
  let bytes: Uint8Array | null = null;
  const v4 = startsWith(head, MAGIC);
  if ((v4 || startsWith(head, MAGIC_V3)) && head.byteLength >= (v4 ? HEAD : HEAD_V3)) {
    const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
    const upToParts = (v4 ? HEAD : HEAD_V3) + view.getUint32(MAGIC.length, true) + view.getUint32(MAGIC.length + 4, true);
    bytes = await fs.readStart(path, upToParts);
    if (!bytes) throw missing();
    const lean = await decodeManifest(bytes, path, { windows: false, filter: () => false });
    if (!wants.windows && !wants.filter(lean)) return lean;
  }
  bytes = await fs.read(path);
  if (!bytes) throw missing();
  return decodeManifest(bytes, path, wants);
}

/**
 * Writes a sealed segment: its database file (gzip runs on libuv's thread pool, so the worker keeps
 * answering reads), then its manifest, each temp → fsync → rename → fsync dir. Returns the bytes
 * written to disk.
 */
export async function writeSegment(fs: StoreFs, dbPath: string, database: Uint8Array, manifest: Manifest): Promise<number> {
  // Level 1: about half the CPU of level 6, which ingest shares the cores with, for ~20% more
  // bytes (BENCHMARKS.md, sqlite store's constants).
  const packed = await gzip(database, { level: 1, chunkSize: 4 << 20 });
  const segTmp = `${segmentFile(dbPath, manifest.id)}.tmp`;
  await writeNewFile(fs, segTmp, packed, 2 << 20);
  await renameDurably(fs, segTmp, segmentFile(dbPath, manifest.id));
  return packed.length + (await writeManifest(fs, dbPath, manifest));
}

/**
 * Writes (or replaces) a segment's manifest: temp → fsync → rename → fsync dir, so a crash leaves
 * the old one or the new one. Returns its size.
 */
export async function writeManifest(fs: StoreFs, dbPath: string, manifest: Manifest): Promise<number> {
  return writeManifestBytes(fs, dbPath, manifest.id, await encodeManifest(manifest));
}

/** writeManifest of bytes already encoded (withProjects). */
export async function writeManifestBytes(fs: StoreFs, dbPath: string, id: number, bytes: Uint8Array): Promise<number> {
  const tmp = `${manifestFile(dbPath, id)}.tmp`;
  await writeNewFile(fs, tmp, bytes);
  await renameDurably(fs, tmp, manifestFile(dbPath, id));
  return bytes.length;
}

/** A sealed segment's database bytes. */
export async function readSegment(fs: StoreFs, dbPath: string, id: number): Promise<Uint8Array> {
  const packed = await fs.read(segmentFile(dbPath, id));
  if (!packed) throw new Error(`${segmentFile(dbPath, id)} is missing, though its manifest exists`);
  const b = await gunzip(packed);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}
