// Builds the browser SDK (sdk/ → dist/sdk/): the script-tag core, the opt-in web-vitals script,
// and ESM entries for bundlers. Prints each file's minified and gzipped size.
// Usage: node scripts/build-sdk.mjs [--quiet | --sizes-json]  (--sizes-json: bundle in memory, write nothing,
// print [{file, minified, gzipped}] for the size budget test)
import { build } from 'esbuild';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('../', import.meta.url));
const outdir = root + 'dist/sdk';

// Safari 14 / Chrome 80 / Firefox 72: `??` and `?.` stay native, which keeps the bundle small.
const common = { bundle: true, minify: true, target: ['es2020'], legalComments: 'none', logLevel: 'warning', absWorkingDir: root };

export const OUTPUTS = [
  { file: 'watchtower.js', entry: 'sdk/browser.ts', format: 'iife' },
  { file: 'watchtower-vitals.js', entry: 'sdk/vitals-browser.ts', format: 'iife' },
  { file: 'index.js', entry: 'sdk/index.ts', format: 'esm' },
  { file: 'vitals.js', entry: 'sdk/vitals.ts', format: 'esm' },
];

/** Bundles every output in memory: [{ file, code, minified, gzipped }] (sizes in bytes). */
export async function bundleSdk() {
  // web-vitals is only needed by the opt-in vitals bundle: an install without it (production
  // install without dev packages) still gets the core, with a warning.
  const vitals = await import('web-vitals').then(() => true, () => false);
  if (!vitals) console.warn('build-sdk: web-vitals is not installed; skipping watchtower-vitals.js and vitals.js');
  const wanted = OUTPUTS.filter((o) => vitals || !o.entry.includes('vitals'));
  return Promise.all(
    wanted.map(async (o) => {
      const result = await build({ ...common, entryPoints: [root + o.entry], outfile: `${outdir}/${o.file}`, format: o.format, write: false });
      const code = result.outputFiles[0].contents;
      return { file: o.file, code, minified: code.length, gzipped: gzipSync(code).length };
    }),
  );
}

/** Writes dist/sdk/ afresh and returns the sizes. */
export async function buildSdk() {
  const outputs = await bundleSdk();
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  await Promise.all(outputs.map((o) => writeFile(`${outdir}/${o.file}`, o.code)));
  return outputs;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--sizes-json')) {
    const sizes = await bundleSdk();
    console.log(JSON.stringify(sizes.map(({ file, minified, gzipped }) => ({ file, minified, gzipped }))));
  } else {
    const sizes = await buildSdk();
    if (!process.argv.includes('--quiet')) {
      for (const s of sizes) console.log(`dist/sdk/${s.file.padEnd(22)} ${String(s.minified).padStart(6)} B minified, ${String(s.gzipped).padStart(5)} B gzipped`);
    }
  }
}
