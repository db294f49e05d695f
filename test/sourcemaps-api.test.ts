// Source-map uploads (docs/api.md#source-maps) through the fetch handler: per project and owner,
// validated, replaced per release and URL, listed, deleted, and used by the issue processor, which
// groups and shows the original frames of an esbuild bundle's error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pathToFileURL } from 'node:url';
import { app } from './helpers/app.ts';
import { type Bundle, buildApp, lineOf } from './helpers/bundle.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { MAX_SOURCE_MAP_BYTES } from '../lib/issues/sourcemap.ts';

let bundle: Bundle;
/** The stack of the bundle's error, as a browser at https://shop.example.com/assets/ would report it. */
let stack = '';

test.before(async () => {
  bundle = await buildApp('external');
  try {
    (await import(pathToFileURL(`${bundle.dir}/${bundle.script}`).href)).onBuyClick();
  } catch (e) {
    stack = ((e as Error).stack ?? '').replaceAll(pathToFileURL(`${bundle.dir}/`).href, 'https://shop.example.com/assets/');
  }
});
test.after(() => bundle?.remove());

async function setup() {
  const records = createMemoryRecords();
  await records.put([{ kind: 'project', id: '7', userId: 'u1', body: { name: 'shop' } }, { kind: 'project', id: '8', userId: 'u2', body: { name: 'blog' } }]);
  return { records, ...app({ records }) };
}

test('upload, list and delete the maps of a project; anyone else\'s project is a 404', async () => {
  const { send, as } = await setup();
  const upload = (user: string, project: string, body: unknown) => send('POST', `/api/projects/${project}/sourcemaps`, { headers: as(user), body });
  const created = await upload('u1', '7', { release: '1.0.0', url: `~/assets/${bundle.script}`, map: bundle.map });
  assert.is(created.status, 201, await created.clone().text());
  const { sourceMap } = await created.json();
  assert.equal([sourceMap.release, sourceMap.url, sourceMap.project, sourceMap.hasSourcesContent, sourceMap.blob], ['1.0.0', `~/assets/${bundle.script}`, '7', true, undefined]);

  // The same release and URL again replaces it; the map may also be sent as an object.
  const again = await upload('u1', '7', { release: '1.0.0', url: `~/assets/${bundle.script}`, map: JSON.parse(bundle.map) });
  assert.is((await again.json()).sourceMap.id, sourceMap.id);
  await upload('u1', '7', { release: '1.0.1', url: `https://shop.example.com/assets/${bundle.script}?v=2`, map: bundle.map });
  const list = await (await send('GET', '/api/projects/7/sourcemaps', { headers: as('u1') })).json();
  assert.equal(list.sourceMaps.map((m: { release: string; url: string }) => [m.release, m.url]).sort(), [
    ['1.0.0', `~/assets/${bundle.script}`], ['1.0.1', `https://shop.example.com/assets/${bundle.script}`],
  ]);

  assert.is((await upload('u2', '7', { release: '1', url: '~/a.js', map: bundle.map })).status, 404, "another user's project");
  assert.is((await send('GET', '/api/projects/8/sourcemaps', { headers: as('u1') })).status, 404);
  assert.is((await send('GET', '/api/projects/99/sourcemaps', { headers: as('u1') })).status, 404);
  assert.is((await send('GET', '/api/projects/7/sourcemaps')).status, 401);
  assert.is((await send('DELETE', `/api/projects/7/sourcemaps/${sourceMap.id}`, { headers: as('u2') })).status, 404);

  const deleted = await send('DELETE', `/api/projects/7/sourcemaps/${sourceMap.id}`, { headers: as('u1') });
  assert.is(deleted.status, 200);
  assert.is((await send('DELETE', `/api/projects/7/sourcemaps/${sourceMap.id}`, { headers: as('u1') })).status, 404);
  assert.is((await (await send('GET', '/api/projects/7/sourcemaps', { headers: as('u1') })).json()).sourceMaps.length, 1);
});

test('bad uploads: clear 4xx answers naming the problem', async () => {
  const { send, as } = await setup();
  const upload = async (body: unknown) => {
    const res = await send('POST', '/api/projects/7/sourcemaps', { headers: as('u1'), body });
    return [res.status, (await res.json()).code];
  };
  assert.equal(await upload({ release: '1', url: '~/a.js', map: '{"version":2}' }), [400, 'invalid_source_map']);
  assert.equal(await upload({ release: '1', url: '~/a.js', map: 'not json' }), [400, 'invalid_source_map']);
  assert.equal(await upload({ release: '1', url: '~/a.js', map: { version: 3, sources: 'a.js', mappings: '' } }), [400, 'invalid_source_map']);
  assert.equal(await upload({ release: '', url: '~/a.js', map: bundle.map }), [400, 'invalid_body']);
  assert.equal(await upload({ release: '1', url: 'a.js', map: bundle.map }), [400, 'invalid_body']);
  assert.equal(await upload({ release: '1', url: '~/a.js' }), [400, 'invalid_body']);
  assert.equal(await upload({ release: '1', url: '~/a.js', map: bundle.map, extra: 1 }), [400, 'invalid_body']);
  // A map above the limit (padded with a long source text, still valid JSON).
  const big = JSON.stringify({ ...JSON.parse(bundle.map), sourcesContent: ['x'.repeat(MAX_SOURCE_MAP_BYTES)] });
  assert.equal(await upload({ release: '1', url: '~/a.js', map: big }), [413, 'source_map_too_large']);
});

test('a 20 MB map is accepted', async () => {
  const { send, as } = await setup();
  const map = JSON.parse(bundle.map);
  const large = JSON.stringify({ ...map, sourcesContent: map.sourcesContent.map((s: string, i: number) => (i === 0 ? s + '\n//' + 'x'.repeat(20 * 1024 * 1024) : s)) });
  const res = await send('POST', '/api/projects/7/sourcemaps', { headers: as('u1'), body: { release: '9', url: '~/big.js', map: large } });
  assert.is(res.status, 201);
  assert.ok((await res.json()).sourceMap.bytes > 20 * 1024 * 1024);
});

test('errors of a release with a map: grouped and shown by their original frames; another release stays minified', async () => {
  const { send, as, handler } = await setup();
  await send('POST', '/api/projects/7/sourcemaps', { headers: as('u1'), body: { release: '2.3.0', url: `~/assets/${bundle.script}`, map: bundle.map } });
  for (const release of ['2.3.0', '2.4.0']) {
    await send('POST', '/api/events', { headers: as('u1'), body: { type: 'error', message: 'Uncaught TypeError: coupon FREESHIP is not valid', deployVersion: release, data: { stack } } });
  }
  await handler.monitor.flush();
  const { issues } = await (await send('GET', '/api/issues', { headers: as('u1') })).json();
  assert.is(issues.length, 2, 'the minified and the original frames group apart');
  const mapped = issues.find((i: { culprit: string }) => i.culprit.startsWith('applyCoupon'));
  assert.ok(mapped, JSON.stringify(issues.map((i: { culprit: string }) => i.culprit)));
  const detail = await (await send('GET', `/api/issues/${mapped.id}`, { headers: as('u1') })).json();
  const [top] = detail.frames;
  assert.ok(top.file.endsWith('sourcemap-app/cart.ts'), top.file);
  assert.is(top.line, lineOf('cart.ts', 'throw new TypeError'));
  assert.is(top.function, 'applyCoupon');
  assert.match(top.context.line, /throw new TypeError/);
  assert.is(top.minified.file, `https://shop.example.com/assets/${bundle.script}`);

  const other = issues.find((i: { id: string }) => i.id !== mapped.id);
  const minified = await (await send('GET', `/api/issues/${other.id}`, { headers: as('u1') })).json();
  assert.is(minified.frames[0].minified, null);
  assert.is(minified.frames[0].file, `https://shop.example.com/assets/${bundle.script}`);
});

test.run();
