// Loads sql.js for the database worker, with one change to how its in-memory file grows.
//
// sql.js keeps the database file in Emscripten's in-memory file system, which grows a file past
// 1 MiB by 12.5% at a time into a fresh zeroed buffer, copying the whole database over. Writing
// 100k events spent ~40% of its time there; each copy of a 400 MB database stalled a commit ~380 ms,
// and while it runs the database is held twice (old and new buffer). Loaded here, a large file lives
// in a resizable ArrayBuffer instead, which grows in place: commits no longer stall (worst 15–27 ms
// where it was ~380 ms over 400k events), the copies and their memory are gone. sql.js is pinned;
// if its text ever differs, the stock module is used and `fileGrowth` says so (a test holds the
// pinned version to the change).
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SqlJsStatic } from 'sql.js';

/** sql.js 1.16.0's growth of a file's storage (`a.Ua` its bytes, `a.Wa` the bytes used, `g` the size needed). */
const STOCK_GROWTH = 'm>=g||(g=Math.max(g,m*(m<1048576?2:1.125)>>>0),m&&(g=\nMath.max(g,256)),m=a.Ua.subarray(0,a.Wa),a.Ua=new Uint8Array(g),a.Ua.set(m));';
const GROWTH = 'm>=g||(a.Ua=__growFile(a.Ua,a.Wa,g));';

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
    return bytes; // a view without a length follows its buffer
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
  if (text.split(STOCK_GROWTH).length === 2) {
    // The same CommonJS module, evaluated with the one statement replaced.
    const module = { exports: {} as unknown };
    new Function('module', 'exports', 'require', '__filename', '__dirname', '__growFile', text.replace(STOCK_GROWTH, GROWTH))(
      module, module.exports, require, main, dirname(main), growFile,
    );
    return { SQL: await (module.exports as Init)(config), fileGrowth: 'in place' };
  }
  const stock = (await import('sql.js')) as unknown as { default: Init };
  return { SQL: await stock.default(config), fileGrowth: 'stock' };
}
