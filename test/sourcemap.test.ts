// Source maps (lib/issues/sourcemap.ts): an app built by esbuild fails in this very runtime, and its
// real minified stack is mapped back. The same in headless Chromium: sourcemap-browser.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pathToFileURL } from 'node:url';
import { groupEvent } from '../lib/issues/fingerprint.ts';
import {
  MAX_SOURCE_MAP_BYTES, SourceMapCache, SourceMapError, sourceMapNames, symbolicate, validateSourceMap,
} from '../lib/issues/sourcemap.ts';
import { parseStack } from '../lib/issues/stack.ts';
import { type Bundle, buildApp, lineOf } from './helpers/bundle.ts';

let app: Bundle;
let stack = '';

test.before(async () => {
  app = await buildApp('external');
  const mod = await import(pathToFileURL(`${app.dir}/${app.script}`).href);
  try {
    mod.onBuyClick();
  } catch (e) {
    stack = (e as Error).stack ?? '';
  }
});
test.after(() => app?.remove());

/** Uploaded maps: release → name → text. */
const lookupOf = (maps: Record<string, Record<string, string>>) => (release: string, name: string) => maps[release]?.[name] ?? null;

function expectError(fn: () => unknown, code: string, status: number, message: RegExp) {
  try {
    fn();
  } catch (e) {
    assert.instance(e, SourceMapError);
    assert.is((e as SourceMapError).code, code);
    assert.is((e as SourceMapError).status, status);
    assert.match((e as Error).message, message);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

test('the bundle is minified and its stack names minified functions', () => {
  assert.match(app.script, /^main-[A-Z0-9]{8}\.mjs$/);
  assert.not.ok(app.code.includes('applyCoupon'), 'names are mangled');
  const frames = parseStack(stack);
  assert.ok(frames[0].file!.endsWith(app.script), stack);
  assert.is(frames[0].line, 1);
});

test('symbolicate: the real stack maps back to the original file, line, function and source lines', async () => {
  const frames = parseStack(stack);
  const url = frames[0].file!;
  const mapped = await symbolicate(frames, '1.0.0', lookupOf({ '1.0.0': { [url]: app.map } }));
  const [top, caller, outer] = mapped;
  assert.ok(top.file!.endsWith('sourcemap-app/cart.ts'), top.file!);
  assert.is(top.line, lineOf('cart.ts', 'throw new TypeError'));
  assert.is(top.function, 'applyCoupon');
  assert.is(top.context!.line.trim(), 'throw new TypeError(`coupon ${code} is not valid for a total of ${total}`);');
  assert.is(top.context!.pre.length, 5);
  assert.ok(top.context!.pre.at(-1)!.includes("if (!code.startsWith('SAVE'))"));
  assert.equal(top.minified, frames[0], 'the minified frame stays available');

  assert.is(caller.function, 'checkout');
  assert.is(caller.line, lineOf('cart.ts', 'return applyCoupon('));
  assert.ok(outer.file!.endsWith('sourcemap-app/main.ts'));
  assert.is(outer.line, lineOf('main.ts', 'return checkout('));
  // Its caller here is this test file, which has no map: it keeps the name the runtime reported.
  assert.is(outer.function, frames[2].function);

  const grouped = groupEvent({ message: 'x', data: { stack } }, mapped);
  assert.is(grouped.culprit, `applyCoupon (${top.file})`);
  assert.equal(grouped.components.slice(0, 3), ['type:TypeError', 'frame:applyCoupon@cart.ts', 'frame:checkout@cart.ts']);
});

test('symbolicate: maps are found by URL or by ~/path, on any host', async () => {
  const frames = parseStack(stack);
  const path = new URL(frames[0].file!).pathname;
  const viaPath = await symbolicate(frames, '1.0.0', lookupOf({ '1.0.0': { [`~${path}`]: app.map } }));
  assert.is(viaPath[0].function, 'applyCoupon');
  assert.equal(sourceMapNames('https://shop.example.com/assets/app.js?v=3#x'), ['https://shop.example.com/assets/app.js', '~/assets/app.js']);
  assert.equal(sourceMapNames('/assets/app.js'), ['/assets/app.js']);
});

test('symbolicate: another release, another file or a broken stored map leave the frames as they are', async () => {
  const frames = parseStack(stack);
  const url = frames[0].file!;
  for (const [release, lookup] of [
    ['2.0.0', lookupOf({ '1.0.0': { [url]: app.map } })],
    ['1.0.0', lookupOf({ '1.0.0': { '~/assets/other.js': app.map } })],
    ['1.0.0', lookupOf({ '1.0.0': { [url]: '{"version":3,' } })],
  ] as const) {
    const out = await symbolicate(frames, release, lookup);
    assert.equal(out.map(({ context, minified, ...f }) => f), frames, `release ${release}`);
    assert.ok(out.every((f) => f.minified === null && f.context === null));
  }
  const noRelease = await symbolicate(frames, null, () => assert.unreachable('no lookup without a release') as never);
  assert.is(noRelease[0].function, frames[0].function);
});

test('validateSourceMap: a real map is accepted and summarised', () => {
  const { text, info } = validateSourceMap(app.map);
  assert.is(text, app.map);
  assert.is(info.sources, 2);
  assert.ok(info.hasSourcesContent);
  assert.is(info.bytes, new TextEncoder().encode(app.map).byteLength);
  assert.is(validateSourceMap(new TextEncoder().encode(app.map)).info.sources, 2, 'bytes as uploaded');
  const indexMap = JSON.stringify({ version: 3, sections: [{ offset: { line: 0, column: 0 }, map: JSON.parse(app.map) }] });
  assert.is(validateSourceMap(indexMap).info.sources, 2, 'an index map (sections)');
});

test('validateSourceMap: typed errors that say what is wrong', () => {
  assert.ok(MAX_SOURCE_MAP_BYTES >= 20 * 1024 * 1024);
  expectError(() => validateSourceMap('not json'), 'invalid_source_map', 400, /not valid JSON/);
  expectError(() => validateSourceMap('[]'), 'invalid_source_map', 400, /JSON object/);
  expectError(() => validateSourceMap('{"version":2,"sources":[],"mappings":""}'), 'invalid_source_map', 400, /version 3/);
  expectError(() => validateSourceMap('{"version":3,"mappings":""}'), 'invalid_source_map', 400, /"sources"/);
  expectError(() => validateSourceMap('{"version":3,"sources":[]}'), 'invalid_source_map', 400, /"mappings"/);
  expectError(() => validateSourceMap(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), 'invalid_source_map', 400, /UTF-8/);
  expectError(() => validateSourceMap(app.map, 1000), 'source_map_too_large', 413, /at most 1000 bytes/);
});

test('SourceMapCache: least recently used maps go first, within the text budget', () => {
  const other = (n: number) => app.map.replace(/^\{/, `{"x_pad":${n},`);
  assert.is.not(other(1), other(2));
  const size = app.map.length + 20;
  const cache = new SourceMapCache(size * 2.5);
  const a = cache.get('a', other(1));
  cache.get('b', other(2));
  assert.is(cache.get('a', other(1)), a, 'a hit returns the parsed map');
  cache.get('c', other(3)); // over budget: b, the least recently used, goes
  assert.is(cache.size, 2);
  assert.ok(cache.bytes <= size * 2.5);
  assert.is(cache.get('a', other(1)), a, 'a stayed');
  assert.is.not(cache.get('a', other(4)), a, 'a map replaced under the same key is parsed again');
  const tiny = new SourceMapCache(10);
  tiny.get('big', app.map);
  assert.is(tiny.size, 0, 'a map larger than the budget is used but not kept');
});

test.run();
