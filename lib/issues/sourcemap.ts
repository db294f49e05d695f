// Minified frames → original file, line, column, function and source lines, through source maps
// uploaded per release. A frame without a matching map stays as it is: symbolication only ever adds.
import { FlattenMap, originalPositionFor, sourceContentFor, TraceMap } from '@jridgewell/trace-mapping';
import { HttpError } from '../http.ts';
import { type Frame, isInApp, withoutQuery } from './stack.ts';

/** Largest source map accepted on upload: big single-page bundles with sources inlined reach 20 MB. */
export const MAX_SOURCE_MAP_BYTES = 32 * 1024 * 1024;
/** Parsed maps are kept while their JSON text totals at most this (the parsed form takes a few times more). */
export const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;
/** Lines of original source shown before and after the frame's line. */
export const CONTEXT_LINES = 5;
/** Context lines are cut to this many characters (a minified line would be megabytes). */
const CONTEXT_LINE_MAX = 300;

/** An upload that is not a usable source map: 400 `invalid_source_map`, or 413 `source_map_too_large`. */
export class SourceMapError extends HttpError {
  constructor(code: 'invalid_source_map' | 'source_map_too_large', message: string) {
    super(code === 'source_map_too_large' ? 413 : 400, code, message);
    this.name = 'SourceMapError';
  }
}

export interface SourceMapInfo {
  /** The map's `file` field, when it has one. */
  file: string | null;
  sources: number;
  /** Whether every source's text is inlined (`sourcesContent`), which context lines need. */
  hasSourcesContent: boolean;
  bytes: number;
}

/**
 * Checks an uploaded source map: at most `maxBytes` of UTF-8, JSON, `version` 3, `sources` an array,
 * and `mappings` that decode (or `sections`, an index map). Returns the text to store and a summary;
 * throws SourceMapError saying what is wrong.
 */
export function validateSourceMap(input: string | Uint8Array, maxBytes = MAX_SOURCE_MAP_BYTES): { text: string; info: SourceMapInfo } {
  const bytes = typeof input === 'string' ? utf8Length(input, maxBytes) : input.byteLength;
  if (bytes > maxBytes) throw new SourceMapError('source_map_too_large', `A source map may be at most ${maxBytes} bytes (got ${bytes})`);
  let text: string;
  try {
    text = typeof input === 'string' ? input : new TextDecoder('utf-8', { fatal: true }).decode(input);
  } catch {
    throw new SourceMapError('invalid_source_map', 'The source map is not UTF-8 text');
  }
  let json: unknown;
  try {
    // Maps served to browsers may start with the XSSI guard ")]}'" (source map spec).
    json = JSON.parse(text.startsWith(")]}'") ? text.slice(text.indexOf('\n') + 1) : text);
  } catch {
    throw new SourceMapError('invalid_source_map', 'The source map is not valid JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new SourceMapError('invalid_source_map', 'A source map is a JSON object');
  const map = json as Record<string, unknown>;
  if (map.version !== 3) throw new SourceMapError('invalid_source_map', 'Only source maps of version 3 are supported ("version": 3)');
  const indexed = Array.isArray(map.sections);
  if (!indexed) {
    if (!Array.isArray(map.sources)) throw new SourceMapError('invalid_source_map', '"sources" must be an array');
    if (typeof map.mappings !== 'string') throw new SourceMapError('invalid_source_map', '"mappings" must be a string');
  }
  let parsed: TraceMap;
  try {
    parsed = parseMap(map);
    // Decoding the mappings once finds corrupt VLQ data now rather than at the first error.
    originalPositionFor(parsed, { line: 1, column: 0 });
  } catch (e) {
    throw new SourceMapError('invalid_source_map', `The source map cannot be read: ${(e as Error).message.slice(0, 200)}`);
  }
  const contents = parsed.sourcesContent;
  return {
    text,
    info: {
      file: typeof map.file === 'string' ? map.file : null,
      sources: parsed.sources.length,
      hasSourcesContent: Array.isArray(contents) && contents.length === parsed.sources.length && contents.every((c) => typeof c === 'string'),
      bytes,
    },
  };
}

function utf8Length(s: string, stopAbove: number): number {
  if (s.length > stopAbove) return s.length; // already too large, whatever the encoding
  return new TextEncoder().encode(s).byteLength;
}

const parseMap = (json: unknown): TraceMap =>
  Array.isArray((json as { sections?: unknown }).sections) ? FlattenMap(json as never) : new TraceMap(json as never);

/**
 * Parsed maps, least recently used first out, bounded by the total length of their JSON text.
 * Keyed by release and map name; a stored map replaced under the same key is parsed again, since
 * each entry remembers its text and a hit requires the same text.
 */
export class SourceMapCache {
  private entries = new Map<string, { text: string; map: TraceMap }>();
  private total = 0;

  constructor(readonly maxBytes = DEFAULT_CACHE_BYTES) {}

  /** The parsed map for `text`, from the cache or parsed now. Throws when the text is not a map. */
  get(key: string, text: string): TraceMap {
    const hit = this.entries.get(key);
    if (hit && hit.text === text) {
      this.entries.delete(key);
      this.entries.set(key, hit); // most recently used goes last
      return hit.map;
    }
    if (hit) this.delete(key);
    const json = JSON.parse(text.startsWith(")]}'") ? text.slice(text.indexOf('\n') + 1) : text);
    const map = parseMap(json);
    if (text.length <= this.maxBytes) {
      this.entries.set(key, { text, map });
      this.total += text.length;
      for (const [k, e] of this.entries) {
        if (this.total <= this.maxBytes) break;
        this.entries.delete(k);
        this.total -= e.text.length;
      }
    }
    return map;
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.total -= e.text.length;
  }

  /** Entries and the length of their text, for health figures. */
  get size(): number { return this.entries.size; }
  get bytes(): number { return this.total; }
}

/** Where the uploaded maps are: the map's text for a release and a name, or null. */
export type SourceMapLookup = (release: string, name: string) => string | null | Promise<string | null>;

/**
 * Names a map for a minified file may be stored under, tried in this order (as Sentry names its
 * artifacts): the file's URL without query string or fragment, then `~` and its path, which matches
 * the file on any host (`~/assets/app.js`).
 */
export function sourceMapNames(file: string): string[] {
  const bare = withoutQuery(file);
  const url = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/.*)?$/i.exec(bare);
  if (!url) return [bare];
  return [bare, `~${url[1] ?? '/'}`];
}

export interface SourceContext {
  /** Up to CONTEXT_LINES lines before the frame's line, the line itself, and up to CONTEXT_LINES after. */
  pre: string[];
  line: string;
  post: string[];
}

export interface SymbolicatedFrame extends Frame {
  /** Original source around the line, when the map inlines it (`sourcesContent`). */
  context: SourceContext | null;
  /** The frame as reported, when it was mapped; null when the frame is as reported. */
  minified: Frame | null;
}

export interface SymbolicateOptions {
  cache?: SourceMapCache;
}

const defaultCache = new SourceMapCache();

/**
 * Maps frames (innermost first, as parseStack gives them) through the release's source maps.
 * Frames whose file has no map for the release, or whose position the map does not cover, are
 * returned as they are (`minified: null`); a stored map that cannot be parsed counts as none.
 *
 * Function names: a minified stack names functions by their minified names, and a map records
 * original names at identifiers, not per function. The original name of a frame's function is
 * therefore read where its caller (the next frame) calls it, as Sentry does; the outermost frame,
 * which has no caller, keeps its reported name.
 */
export async function symbolicate(frames: Frame[], release: string | null, lookup: SourceMapLookup, options: SymbolicateOptions = {}): Promise<SymbolicatedFrame[]> {
  const cache = options.cache ?? defaultCache;
  const maps = new Map<string, TraceMap | null>();
  const positions: (Position | null)[] = [];
  const lines = new Map<TraceMap, Map<string, string[] | null>>(); // each source split once per call
  for (const f of frames) {
    // `<anonymous>`, `native`, `[native code]`: no script, so no map.
    if (release === null || f.file === null || f.line === null || f.column === null || /^(?:<|\[|native$)/.test(f.file)) {
      positions.push(null);
      continue;
    }
    if (!maps.has(f.file)) maps.set(f.file, await findMap(f.file, release, lookup, cache));
    const map = maps.get(f.file)!;
    positions.push(map ? originalPosition(map, f.line, f.column, lines) : null);
  }
  return frames.map((f, i) => {
    const pos = positions[i];
    if (!pos) return { ...f, context: null, minified: null };
    const callerName = positions[i + 1]?.name ?? null;
    return {
      function: callerName ?? f.function,
      file: pos.source,
      line: pos.line,
      column: pos.column,
      inApp: f.inApp && isInApp(pos.source),
      context: pos.context,
      minified: f,
    };
  });
}

interface Position { source: string; line: number; column: number; name: string | null; context: SourceContext | null }

async function findMap(file: string, release: string, lookup: SourceMapLookup, cache: SourceMapCache): Promise<TraceMap | null> {
  for (const name of sourceMapNames(file)) {
    const text = await lookup(release, name);
    if (text === null) continue;
    try {
      return cache.get(`${release}\u0000${name}`, text);
    } catch {
      return null;
    }
  }
  return null;
}

function originalPosition(map: TraceMap, line: number, column: number, split: Map<TraceMap, Map<string, string[] | null>>): Position | null {
  // Stack columns are 1-based; source maps count columns from 0.
  const p = originalPositionFor(map, { line, column: Math.max(0, column - 1) });
  if (p.source === null) return null;
  let sources = split.get(map);
  if (!sources) split.set(map, (sources = new Map()));
  let source = sources.get(p.source);
  if (source === undefined) {
    source = sourceContentFor(map, p.source)?.split(/\r?\n/) ?? null;
    sources.set(p.source, source);
  }
  return { source: p.source, line: p.line, column: p.column + 1, name: p.name, context: source && contextOf(source, p.line) };
}

function contextOf(lines: string[], line: number): SourceContext | null {
  if (line < 1 || line > lines.length) return null;
  const cut = (s: string) => (s.length > CONTEXT_LINE_MAX ? `${s.slice(0, CONTEXT_LINE_MAX - 1)}…` : s);
  return {
    pre: lines.slice(Math.max(0, line - 1 - CONTEXT_LINES), line - 1).map(cut),
    line: cut(lines[line - 1]),
    post: lines.slice(line, line + CONTEXT_LINES).map(cut),
  };
}
