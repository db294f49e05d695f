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
import { DEFAULT_PROJECT_QUOTA_BYTES, MAX_MAPS_PER_PROJECT, SourceMapStore } from '../lib/issues/sourcemap-store.ts';
import { startServer } from './helpers/server.ts';

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

async function setup(monitoring: { sourceMapQuotaBytes?: number } = {}) {
  const records = createMemoryRecords();
  await records.put([
    { kind: 'project', id: '7', userId: 'u1', body: { name: 'shop' } },
    { kind: 'project', id: '8', userId: 'u2', body: { name: 'blog' } },
    { kind: 'project', id: '9', userId: 'u1', body: { name: 'admin' } },
  ]);
  return { records, ...app({ records, monitoring }) };
}

/** The bundle's map with `pad` more bytes of source text (still a valid map). */
const padded = (pad: number) => {
  const map = JSON.parse(bundle.map);
  return JSON.stringify({ ...map, sourcesContent: map.sourcesContent.map((s: string, i: number) => (i === 0 ? s + '\n//' + 'x'.repeat(pad) : s)) });
};

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

test('a project holds source maps up to its quota: 413 past it, a replaced map counts once, a deletion frees room', async () => {
  const one = padded(100_000);
  const { send, as } = await setup({ sourceMapQuotaBytes: 2.5 * one.length });
  const upload = async (project: string, release: string, map = one, url = '~/app.js') => {
    const res = await send('POST', `/api/projects/${project}/sourcemaps`, { headers: as('u1'), body: { release, url, map } });
    return { status: res.status, body: await res.json() };
  };
  const first = await upload('7', '1');
  assert.is(first.status, 201);
  assert.is((await upload('7', '2')).status, 201);
  const over = await upload('7', '3');
  assert.equal([over.status, over.body.code], [413, 'source_map_quota_exceeded']);
  assert.match(over.body.error, /quota/);
  // The same release and URL again replaces its map: it counts once, so it fits.
  for (let i = 0; i < 3; i++) assert.is((await upload('7', '1')).status, 201, 'a re-upload replaces');
  assert.is((await upload('9', '1')).status, 201, "another project has its own quota");
  const list = await (await send('GET', '/api/projects/7/sourcemaps', { headers: as('u1') })).json();
  assert.equal(list.quota, { bytes: 2 * one.length, maxBytes: 2.5 * one.length, maps: 2, maxMaps: MAX_MAPS_PER_PROJECT });
  assert.is((await send('DELETE', `/api/projects/7/sourcemaps/${first.body.sourceMap.id}`, { headers: as('u1') })).status, 200);
  assert.is((await upload('7', '3')).status, 201, 'room again after a deletion');
  // Two uploads at once that fit only one at a time: one is refused.
  const both = await Promise.all([upload('9', '5'), upload('9', '6')]);
  assert.equal(both.map((r) => r.status).sort(), [201, 413]);
});

test('a project holds at most MAX_MAPS_PER_PROJECT maps: 409 too_many_source_maps; the default quota is 100 MiB', async () => {
  assert.is(DEFAULT_PROJECT_QUOTA_BYTES, 100 * 1024 * 1024);
  const store = new SourceMapStore(createMemoryRecords(), { maxMapsPerProject: 3 });
  const tiny = { version: 3, sources: ['a.js'], mappings: 'AAAA' };
  for (const release of ['1', '2', '3']) await store.upload('u1', '7', { release, url: '~/a.js', map: tiny });
  try {
    await store.upload('u1', '7', { release: '4', url: '~/a.js', map: tiny });
    assert.unreachable('a fourth map');
  } catch (e) {
    assert.equal([(e as { status: number }).status, (e as { code: string }).code], [409, 'too_many_source_maps']);
  }
  await store.upload('u1', '7', { release: '3', url: '~/a.js', map: tiny });
  await store.upload('u1', '8', { release: '4', url: '~/a.js', map: tiny });
  assert.equal(await store.usage('u1', '7'), { bytes: 3 * JSON.stringify(tiny).length, maxBytes: DEFAULT_PROJECT_QUOTA_BYTES, maps: 3, maxMaps: 3 });
});

test("deleting a project deletes its source maps and their text", async () => {
  const records = createMemoryRecords();
  const { send, as } = app({ records });
  const project = await (await send('POST', '/api/projects', { headers: as('u1'), body: { name: 'shop' } })).json();
  const kept = await (await send('POST', '/api/projects', { headers: as('u1'), body: { name: 'blog' } })).json();
  for (const p of [project, kept]) {
    const res = await send('POST', `/api/projects/${p.id}/sourcemaps`, { headers: as('u1'), body: { release: '1', url: '~/app.js', map: bundle.map } });
    assert.is(res.status, 201);
  }
  const before = (await records.list<{ project: string; blob: string }>('sourcemap', 'u1')).map((r) => r.body);
  assert.is(before.length, 2);
  assert.is((await send('DELETE', `/api/projects/${project.id}`, { headers: as('u1') })).status, 200);
  const after = (await records.list<{ project: string }>('sourcemap', 'u1')).map((r) => r.body.project);
  assert.equal(after, [kept.id]);
  assert.is(await records.getBlob(before.find((m) => m.project === project.id)!.blob), null, 'the text is gone too');
});

test('SERVICE_SOURCEMAP_MAX_MB bounds what a project of the real server holds', async () => {
  const server = await startServer({ SERVICE_SOURCEMAP_MAX_MB: '1' });
  try {
    const headers = { 'x-idp-user-id': 'u1', 'content-type': 'application/json' };
    const project = await (await fetch(`${server.url}/api/projects`, { method: 'POST', headers, body: JSON.stringify({ name: 'shop' }) })).json();
    const upload = (release: string) => fetch(`${server.url}/api/projects/${project.id}/sourcemaps`, { method: 'POST', headers, body: JSON.stringify({ release, url: '~/app.js', map: padded(600_000) }) });
    assert.is((await upload('1')).status, 201);
    const over = await upload('2');
    assert.equal([over.status, (await over.json()).code], [413, 'source_map_quota_exceeded']);
  } finally {
    await server.stop();
  }
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
