// The core runs on any runtime: only the adapters (lib/adapter/) and the storage backends
// (lib/store/) may import node: modules (README, "Layout").
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { ROOT } from './helpers/server.ts';

/** The node: modules a source text imports, statically or dynamically. */
export function nodeImports(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"`])(node:[^'"`]+)\1/g;
  for (const m of source.matchAll(pattern)) found.push(m[2]);
  return found;
}

const ALLOWED = ['lib/adapter/', 'lib/store/'];

function sources(dir: string): string[] {
  return readdirSync(ROOT + dir, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sources(path);
    return /\.[mc]?[jt]s$/.test(entry.name) ? [path] : [];
  });
}

test('the checker finds static, dynamic and side-effect node: imports', () => {
  assert.equal(nodeImports("import { readFile } from 'node:fs/promises';"), ['node:fs/promises']);
  assert.equal(nodeImports('const { fileURLToPath } = await import("node:url");'), ['node:url']);
  assert.equal(nodeImports("import 'node:process';\nimport type { Server } from 'node:http';"), ['node:process', 'node:http']);
  assert.equal(nodeImports("const zlib = require('node:zlib');"), ['node:zlib']);
  assert.equal(nodeImports("import { x } from './node.ts'; // a node: word in a comment"), []);
});

test('no file in lib/ outside lib/adapter/ and lib/store/ imports a node: module', () => {
  const files = sources('lib').filter((f) => !ALLOWED.some((dir) => f.startsWith(dir)));
  assert.ok(files.includes('lib/handler.ts') && files.includes('lib/static.ts'), 'the scan reaches the core');
  const offenders = files.flatMap((f) => nodeImports(readFileSync(ROOT + f, 'utf8')).map((m) => `${f} imports ${m}`));
  assert.equal(offenders, []);
});

test.run();
