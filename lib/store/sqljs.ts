// Loads sql.js for the database worker, with one change to how its in-memory file grows.
//
// sql.js keeps the database file in Emscripten's in-memory file system. Past 1 MiB that file system
// grows a file by 12.5% at a time, each time into a fresh zeroed buffer with the whole database
// copied over: writing 100k events spent ~40% of its time there (page faults of the new buffers
// included), and the copies are ~8× the database's size over its growth. Loaded here with growth in
// doublings up to steps of 64 MiB instead: inserts ~1.45× faster, system time a third (see
// BENCHMARKS.md), at most 64 MiB of unused capacity. sql.js is pinned; if its text ever differs, the
// stock module is used and `fileGrowth` says so (a test holds the pinned version to the change).
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SqlJsStatic } from 'sql.js';

const STOCK_GROWTH = 'm*(m<1048576?2:1.125)>>>0';
const STEPPED_GROWTH = 'm+Math.min(m,67108864)';

export interface LoadedSqlJs {
  SQL: SqlJsStatic;
  /** `stepped`: the change above applied; `stock`: this sql.js differs, loaded as it is. */
  fileGrowth: 'stepped' | 'stock';
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
    // The same CommonJS module, evaluated with the one expression replaced.
    const module = { exports: {} as unknown };
    new Function('module', 'exports', 'require', '__filename', '__dirname', text.replace(STOCK_GROWTH, STEPPED_GROWTH))(
      module, module.exports, require, main, dirname(main),
    );
    return { SQL: await (module.exports as Init)(config), fileGrowth: 'stepped' };
  }
  const stock = (await import('sql.js')) as unknown as { default: Init };
  return { SQL: await stock.default(config), fileGrowth: 'stock' };
}
