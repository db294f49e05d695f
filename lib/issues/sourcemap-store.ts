// Uploaded source maps, kept in the record store: a small record per map (kind 'sourcemap', owned
// by the project's owner) and the map's text as a blob. The issue processor looks maps up by owner,
// project, release and file name for every error with a release, so the owner's map records are
// indexed in memory for a few seconds, and map texts are cached by blob key within a memory bound
// (a blob key is never reused, so a cached text is never stale).
import { fnv1a64 } from './hash.ts';
import { withoutQuery } from './stack.ts';
import type { RecordStore } from '../records/types.ts';
import { HttpError } from '../http.ts';
import { MAX_SOURCE_MAP_BYTES, type SourceMapInfo, type SourceMapLookup, sourceMapNames, validateSourceMap } from './sourcemap.ts';

export const SOURCEMAP_KIND = 'sourcemap';
/** How long an owner's map index is reused before it is read again (uploads through another instance show up after this). */
export const INDEX_TTL_MS = 10_000;
/** Map texts kept in memory, in UTF-16 code units (the parsed maps are SourceMapCache's). */
export const TEXT_CACHE_CHARS = 64 * 1024 * 1024;
export const MAX_RELEASE = 200;
export const MAX_URL = 2048;
/** Source map text one project may hold, in UTF-8 bytes (SERVICE_SOURCEMAP_MAX_MB). */
export const DEFAULT_PROJECT_QUOTA_BYTES = 100 * 1024 * 1024;
/**
 * Maps one project may hold, whatever their size: each is a record the record store and the
 * processor's per-owner index hold in memory, and a map can be a few dozen bytes.
 */
export const MAX_MAPS_PER_PROJECT = 2000;

/** What a project's maps take, and what they may take. */
export interface SourceMapUsage {
  bytes: number;
  maxBytes: number;
  maps: number;
  maxMaps: number;
}

export interface SourceMapRecord extends SourceMapInfo {
  id: string;
  project: string;
  release: string;
  /** The minified file's URL as uploaded (`https://cdn.example.com/assets/app-3f9a.js` or `~/assets/app-3f9a.js`). */
  url: string;
  /** Names a frame's file is matched against (sourceMapNames): the URL, and `~/path` for any host. */
  names: string[];
  uploadedAt: string;
  /** Where the text is (RecordStore blobs). */
  blob: string;
}

export interface SourceMapUpload {
  release: string;
  url: string;
  /** The map as text, bytes or an already parsed object. */
  map: string | Uint8Array | object;
}

/** Reads `{ release, url, map }` from a request body; 400 naming the field otherwise. */
export function parseSourceMapUpload(body: unknown): SourceMapUpload {
  const invalid = (why: string) => new HttpError(400, 'invalid_body', `Invalid source map upload: ${why}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('the body must be an object { release, url, map }');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (key !== 'release' && key !== 'url' && key !== 'map') throw invalid(`unknown field "${key}"`);
  if (typeof b.release !== 'string' || b.release.trim() === '' || b.release.length > MAX_RELEASE) throw invalid(`"release" must be a string of 1–${MAX_RELEASE} characters`);
  if (typeof b.url !== 'string' || b.url.length > MAX_URL || !/^(?:~\/|https?:\/\/[^/]+\/)\S*$/i.test(b.url)) {
    throw invalid('"url" must be the minified file\'s http(s) URL, or ~/path to match it on any host');
  }
  if (typeof b.map !== 'string' && (typeof b.map !== 'object' || b.map === null || Array.isArray(b.map))) throw invalid('"map" must be the source map, as an object or as its text');
  return { release: b.release.trim(), url: b.url, map: b.map };
}

export class SourceMapStore {
  private index = new Map<string, { at: number; maps: Promise<SourceMapRecord[]> }>();
  private texts = new Map<string, string>();
  private textChars = 0;
  /** Uploads under way, per owner and project: each checks the quota after the one before it stored its map. */
  private uploads = new Map<string, Promise<void>>();

  constructor(
    private readonly records: RecordStore,
    private readonly options: { now?: () => number; maxBytes?: number; projectQuotaBytes?: number; maxMapsPerProject?: number; textCacheChars?: number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /**
   * Stores a map for a project, release and file URL; one uploaded again for the same three
   * replaces the earlier one (and counts once). Throws SourceMapError (400/413) for what is not a
   * usable map, 413 `source_map_quota_exceeded` when the project's maps would pass their quota of
   * bytes, 409 `too_many_source_maps` when the project already holds its most maps. A project's
   * uploads through this process run one after another, so two of them cannot both pass the quota;
   * two instances can each let one through at the same moment.
   */
  async upload(userId: string, project: string, upload: SourceMapUpload): Promise<SourceMapRecord> {
    const input = typeof upload.map === 'string' || upload.map instanceof Uint8Array ? upload.map : JSON.stringify(upload.map);
    const { text, info } = validateSourceMap(input, this.options.maxBytes ?? MAX_SOURCE_MAP_BYTES);
    const url = withoutQuery(upload.url);
    const id = fnv1a64(`${userId}\u0000${project}\u0000${upload.release}\u0000${url}`);
    return this.oneAtATime(`${userId}\u0000${project}`, async () => {
      const others = (await this.projectMaps(userId, project)).filter((m) => m.id !== id);
      const usage = this.usageOf(others);
      if (usage.bytes + info.bytes > usage.maxBytes) {
        throw new HttpError(413, 'source_map_quota_exceeded',
          `Project ${project} holds ${mib(usage.bytes)} of source maps; this ${mib(info.bytes)} map would pass its quota of ${mib(usage.maxBytes)}. Delete the maps of old releases first`);
      }
      if (usage.maps >= usage.maxMaps) {
        throw new HttpError(409, 'too_many_source_maps', `Project ${project} already holds ${usage.maxMaps} source maps, the most it may. Delete the maps of old releases first`);
      }
      return this.store(userId, project, id, url, upload.release, text, info);
    });
  }

  /** What the project's maps take now, and its quota. */
  async usage(userId: string, project: string): Promise<SourceMapUsage> {
    return this.usageOf(await this.projectMaps(userId, project));
  }

  private usageOf(maps: readonly SourceMapRecord[]): SourceMapUsage {
    return {
      bytes: maps.reduce((n, m) => n + m.bytes, 0),
      maxBytes: this.options.projectQuotaBytes ?? DEFAULT_PROJECT_QUOTA_BYTES,
      maps: maps.length,
      maxMaps: this.options.maxMapsPerProject ?? MAX_MAPS_PER_PROJECT,
    };
  }

  private async projectMaps(userId: string, project: string): Promise<SourceMapRecord[]> {
    return (await this.records.list<SourceMapRecord>(SOURCEMAP_KIND, userId)).map((r) => r.body).filter((m) => m.project === project);
  }

  private oneAtATime<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.uploads.get(key) ?? Promise.resolve()).then(fn);
    const done = run.then(() => {}, () => {});
    this.uploads.set(key, done);
    void done.then(() => {
      if (this.uploads.get(key) === done) this.uploads.delete(key);
    });
    return run;
  }

  private async store(userId: string, project: string, id: string, url: string, release: string, text: string, info: SourceMapInfo): Promise<SourceMapRecord> {
    const previous = await this.records.get<SourceMapRecord>(SOURCEMAP_KIND, id, userId);
    const record: SourceMapRecord = {
      ...info,
      id,
      project,
      release,
      url,
      names: url.startsWith('~/') ? [url] : sourceMapNames(url),
      uploadedAt: new Date(this.now()).toISOString(),
      blob: `sourcemap/${id}/${crypto.randomUUID()}`,
    };
    // The blob first: a record never points to a text that is not there.
    await this.records.putBlob(record.blob, new TextEncoder().encode(text));
    await this.records.put([{ kind: SOURCEMAP_KIND, id, userId, body: record }]);
    if (previous) await this.records.deleteBlob(previous.body.blob);
    this.index.delete(userId);
    return record;
  }

  /** A project's maps, newest first. */
  async list(userId: string, project: string): Promise<SourceMapRecord[]> {
    const maps = await this.projectMaps(userId, project);
    return maps.sort((a, b) => (a.uploadedAt < b.uploadedAt ? 1 : a.uploadedAt > b.uploadedAt ? -1 : 0));
  }

  /** Removes one map of a project; false when the project has no such map. */
  async delete(userId: string, project: string, id: string): Promise<boolean> {
    const record = await this.records.get<SourceMapRecord>(SOURCEMAP_KIND, id, userId);
    if (!record || record.body.project !== project) return false;
    await this.records.delete(SOURCEMAP_KIND, id, userId);
    await this.records.deleteBlob(record.body.blob);
    this.index.delete(userId);
    return true;
  }

  /**
   * Removes every map of a project, when the project is deleted: nothing could list, delete or use
   * them afterwards, and they would still take space the project's quota no longer counts.
   */
  async removeProject(userId: string, project: string): Promise<number> {
    return this.oneAtATime(`${userId}\u0000${project}`, async () => {
      const maps = await this.projectMaps(userId, project);
      for (const map of maps) {
        await this.records.delete(SOURCEMAP_KIND, map.id, userId);
        await this.records.deleteBlob(map.blob);
      }
      this.index.delete(userId);
      return maps.length;
    });
  }

  /**
   * The lookup the processor symbolicates an owner's event with. An event of a project uses that
   * project's maps; an event sent without a project key (no project) may use any of the owner's.
   */
  lookup(owner: string | null, project: string | null): SourceMapLookup {
    return async (release, name) => {
      if (owner === null) return null;
      const maps = await this.ownerMaps(owner);
      const map = maps.find((m) => m.release === release && m.names.includes(name) && (project === null || m.project === project));
      return map ? this.text(map.blob) : null;
    };
  }

  private ownerMaps(owner: string): Promise<SourceMapRecord[]> {
    const held = this.index.get(owner);
    if (held && this.now() - held.at < INDEX_TTL_MS) return held.maps;
    const maps = this.records.list<SourceMapRecord>(SOURCEMAP_KIND, owner).then((rs) => rs.map((r) => r.body));
    this.index.set(owner, { at: this.now(), maps });
    maps.catch(() => this.index.delete(owner));
    // Bounded like the texts: owners whose index has not been used for a while are dropped first.
    if (this.index.size > 1000) this.index.delete(this.index.keys().next().value!);
    return maps;
  }

  private async text(blob: string): Promise<string | null> {
    const held = this.texts.get(blob);
    if (held !== undefined) {
      this.texts.delete(blob);
      this.texts.set(blob, held);
      return held;
    }
    const bytes = await this.records.getBlob(blob);
    if (bytes === null) return null;
    const text = new TextDecoder().decode(bytes);
    const max = this.options.textCacheChars ?? TEXT_CACHE_CHARS;
    if (text.length <= max) {
      this.texts.set(blob, text);
      this.textChars += text.length;
      for (const [key, t] of this.texts) {
        if (this.textChars <= max) break;
        this.texts.delete(key);
        this.textChars -= t.length;
      }
    }
    return text;
  }
}

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
