// Compiles the library for the npm package: lib/ → build/ (JavaScript and type declarations), and
// the browser SDK's type declarations sdk/ → build/sdk/ (its JavaScript is the esbuild bundle in
// dist/sdk/, which `npm run build` writes). `npm pack` runs this (prepack); build/ is not committed.
//
// build/ mirrors lib/ file for file, one directory below the package root like lib/ itself, so
// every path lib computes from its own module (the worker file next to the sqlite store, the
// pages/ and dist/ directories of the package) resolves the same from the compiled files.
// tsc rewrites the `.ts` import specifiers to `.js` (rewriteRelativeImportExtensions).
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const tsc = fileURLToPath(import.meta.resolve('typescript/bin/tsc'));

function compile(project) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`tsc -p ${project} exited with ${code}`))));
  });
}

await rm(root + 'build', { recursive: true, force: true });
await Promise.all([compile('tsconfig.build.json'), compile('tsconfig.sdk.json')]);
console.log('library compiled to build/');
