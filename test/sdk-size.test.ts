// Size budget of the SDK (docs/architecture.md#browser-side): the minified, gzipped core under 5 KB. The build
// script bundles in memory here, so the figure is always that of the current sources.
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from './helpers/server.ts';

declare const Deno: unknown;

const CORE_BUDGET = 5 * 1024;

test('sdk size: core under 5 KB minified + gzipped; vitals bundle reported', () => {
  const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
  const r = spawnSync(node, ['scripts/build-sdk.mjs', '--sizes-json'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.is(r.status, 0, r.stderr || String(r.error));
  const sizes = JSON.parse(r.stdout) as { file: string; minified: number; gzipped: number }[];
  for (const s of sizes) console.log(`  SDK size: ${s.file}: ${s.minified} B minified, ${s.gzipped} B gzipped`);
  const core = sizes.find((s) => s.file === 'watchtower.js');
  assert.ok(core, 'watchtower.js is built');
  assert.ok(core.gzipped < CORE_BUDGET, `core is ${core.gzipped} B gzipped; the budget is ${CORE_BUDGET} B`);
  assert.ok(core.gzipped > 1000, 'a real bundle, not an empty file');
  assert.ok(sizes.find((s) => s.file === 'watchtower-vitals.js'), 'the vitals bundle is built');
  assert.ok(sizes.find((s) => s.file === 'index.js'), 'the ESM entry is built');
});

test.run();
