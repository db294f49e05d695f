// Builds fixtures/sourcemap-app with esbuild (minified, with a source map, hashed file names) into a
// fresh temporary directory, as a monitored app's build would.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './server.ts';

export const APP_SOURCES = join(ROOT, 'fixtures/sourcemap-app');

export interface Bundle {
  dir: string;
  /** The minified script's file name (`main-<hash>.mjs`) and its text. */
  script: string;
  code: string;
  /** The source map's file name and text. */
  mapName: string;
  map: string;
  remove(): void;
}

/**
 * `external` writes the map without a `sourceMappingURL` comment: a runtime that applies linked maps
 * to its own stacks (Node with source maps on, Deno) would otherwise report original positions.
 */
export async function buildApp(sourcemap: 'linked' | 'external'): Promise<Bundle> {
  const esbuild = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-sourcemap-'));
  try {
    const result = await esbuild.build({
      entryPoints: [join(APP_SOURCES, 'main.ts')],
      bundle: true,
      minify: true,
      sourcemap,
      format: 'esm',
      outdir: dir,
      entryNames: '[name]-[hash]',
      outExtension: { '.js': '.mjs' },
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = Object.keys(result.metafile.outputs).map((p) => p.slice(p.lastIndexOf('/') + 1));
    const script = outputs.find((f) => f.endsWith('.mjs'))!;
    const mapName = outputs.find((f) => f.endsWith('.map'))!;
    return {
      dir,
      script,
      code: readFileSync(join(dir, script), 'utf8'),
      mapName,
      map: readFileSync(join(dir, mapName), 'utf8'),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  } finally {
    await esbuild.stop();
  }
}

/** The 1-based line of the first line of a fixture source that contains `text`. */
export function lineOf(file: string, text: string): number {
  const lines = readFileSync(join(APP_SOURCES, file), 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes(text));
  if (i < 0) throw new Error(`${text} not in ${file}`);
  return i + 1;
}
