// Loads sql.js for the database worker, with one change to how its in-memory file is written.
//
// sql.js keeps the database file in Emscripten's in-memory file system, which grows a file past
// 1 MiB by 12.5% at a time into a fresh zeroed buffer, copying the whole database over. Writing
// 100k events spent ~40% of its time there; each copy of a 400 MB database stalled a commit ~380 ms,
// and while it runs the database is held twice (old and new buffer). Loaded here, a large file lives
// in a resizable ArrayBuffer instead, which grows in place: commits no longer stall (worst 15–27 ms
// where it was ~380 ms over 400k events), the copies and their memory are gone.
//
// Opening a snapshot copied it twice more: the file system copies the bytes it is given into a new
// buffer, and the first write past the end copied them again into a larger one. A snapshot read by
// `readDatabaseFile` is already in a resizable buffer, which the file system now adopts as it is (at
// 1M events: ~3 s and ~1 GB of transient memory less at start-up). The same change notes each
// database's file, so a snapshot can write it out as it is (`databaseFile`) instead of exporting a
// copy.
//
// sql.js is pinned; if its text ever differs, the stock module is used and `fileGrowth` says so (a
// test holds the pinned version to the change).
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Database, SqlJsStatic } from 'sql.js';
import { nodeFs, type StoreFs } from '../fs.ts';

/**
 * sql.js 1.16.0's write to a file (`a.Ua` its bytes, `a.Wa` the bytes used, `g` the size needed;
 * writing `c` bytes of `b` from `d`): grow by copying, or take a copy of the first write.
 */
const STOCK_WRITE =
  'm>=g||(g=Math.max(g,m*(m<1048576?2:1.125)>>>0),m&&(g=\nMath.max(g,256)),m=a.Ua.subarray(0,a.Wa),a.Ua=new Uint8Array(g),a.Ua.set(m));' +
  'a.Ua.set(b.subarray(d,d+c),e);a.Wa=Math.max(a.Wa,e+c)}else a.Ua=b.slice(d,d+c),a.Wa=c;';
const WRITE = 'm>=g||(a.Ua=__growFile(a.Ua,a.Wa,g));a.Ua.set(b.subarray(d,d+c),e);a.Wa=Math.max(a.Wa,e+c)}else a.Ua=__adoptFile(b,d,c,a),a.Wa=c;';

/** Address space a large file may grow into (reserved, not allocated: pages are used as written). */
const MAX_FILE_BYTES = 2 ** 32;

type Resizable = ArrayBuffer & { resizable: boolean; maxByteLength: number; resize(bytes: number): void };

/**
 * The storage of a file that must hold `needed` bytes, `used` of which are in `bytes` now. Past
 * 1 MiB the storage is a view of a resizable buffer, which later growth extends in place.
 */
export function growFile(bytes: Uint8Array, used: number, needed: number): Uint8Array {
  const buffer = bytes.buffer as Resizable;
  if (buffer.resizable && bytes.byteOffset === 0 && bytes.length === buffer.byteLength && needed <= buffer.maxByteLength) {
    buffer.resize(Math.min(buffer.maxByteLength, Math.max(needed, Math.ceil(buffer.byteLength * 1.125))));
    // A view without a length follows its buffer; one with a length is replaced (nothing is copied).
    return bytes.length === buffer.byteLength ? bytes : new Uint8Array(buffer);
  }
  const size = bytes.length < 1048576 ? Math.max(needed, 256, bytes.length * 2) : Math.max(needed, Math.ceil(bytes.length * 1.125));
  let grown: Uint8Array | undefined;
  if (size >= 1048576 && size <= MAX_FILE_BYTES) {
    try {
      const options = { maxByteLength: MAX_FILE_BYTES };
      grown = new Uint8Array(new (ArrayBuffer as unknown as new (n: number, o: typeof options) => ArrayBuffer)(size, options));
    } catch {
      grown = undefined; // no address space to reserve: grow by copying, as sql.js does
    }
  }
  grown ??= new Uint8Array(size);
  grown.set(bytes.subarray(0, used));
  return grown;
}

/**
 * The storage of a new file's first write (`length` bytes of `bytes` from `offset`): the bytes
 * themselves when they fill a resizable buffer (as `readDatabaseFile` returns them), else a copy.
 */
export function adoptFile(bytes: Uint8Array, offset: number, length: number, node?: FileNode): Uint8Array {
  if (node && node.name.startsWith('dbfile_')) files.set(node.name, new WeakRef(node));
  const buffer = bytes.buffer as Resizable;
  if (buffer.resizable && offset === 0 && bytes.byteOffset === 0 && length === bytes.length && length === buffer.byteLength) return bytes;
  return bytes.slice(offset, offset + length);
}

/** A file of sql.js's in-memory file system: its name, its storage and the bytes of it in use. */
interface FileNode { name: string; Ua: Uint8Array; Wa: number }
/**
 * The file of each database opened, by its name in the file system (one per Database). Weakly: once
 * a database is closed its file is deleted, and its storage must not outlive it here.
 */
const files = new Map<string, WeakRef<FileNode>>();

/**
 * The bytes of a database's file as they are now, without a copy (null where this sql.js is the
 * stock one). Outside a transaction they are the whole database: SQLite writes every page of a
 * transaction to the file when it commits. They change with the next write, so whoever reads them
 * must finish before the database is written to again.
 */
export function databaseFile(db: Database): Uint8Array | null {
  const node = files.get((db as unknown as { filename: string }).filename)?.deref();
  return node ? node.Ua.subarray(0, node.Wa) : null;
}

/**
 * A database file's bytes in a resizable buffer (null if there is no file), for `new SQL.Database()`:
 * the loaded sql.js keeps them as its file without a copy, and grows them in place.
 */
export function readDatabaseFile(path: string, fs: StoreFs = nodeFs): Promise<Uint8Array | null> {
  return fs.read(path, (size) => {
    try {
      const options = { maxByteLength: Math.max(size, MAX_FILE_BYTES) };
      return new Uint8Array(new (ArrayBuffer as unknown as new (n: number, o: typeof options) => ArrayBuffer)(size, options));
    } catch {
      return new Uint8Array(size); // no address space to reserve: sql.js copies it, as it always did
    }
  });
}

export interface LoadedSqlJs {
  SQL: SqlJsStatic;
  /** `in place`: the change above applied; `stock`: this sql.js differs, loaded as it is. */
  fileGrowth: 'in place' | 'stock';
}

type Init = (config: object) => Promise<SqlJsStatic>;

/** sql.js with its .wasm read from node_modules (no network; Deno needs --allow-read). */
export async function loadSqlJs(): Promise<LoadedSqlJs> {
  const require = createRequire(import.meta.url);
  const main = require.resolve('sql.js');
  const wasm = await readFile(join(dirname(main), 'sql-wasm.wasm'));
  const config = { wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) };
  const text = await readFile(main, 'utf8');
  if (text.split(STOCK_WRITE).length === 2) {
    // The same CommonJS module, evaluated with the one statement replaced.
    const module = { exports: {} as unknown };
    new Function('module', 'exports', 'require', '__filename', '__dirname', '__growFile', '__adoptFile', text.replace(STOCK_WRITE, WRITE))(
      module, module.exports, require, main, dirname(main), growFile, adoptFile,
    );
    return { SQL: await (module.exports as Init)(config), fileGrowth: 'in place' };
  }
  const stock = (await import('sql.js')) as unknown as { default: Init };
  return { SQL: await stock.default(config), fileGrowth: 'stock' };
}
