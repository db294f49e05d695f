// SDK bundle sizes (minified and gzipped), beside the figures of the SDKs people use today.
// @ts-expect-error: a plain ESM build script without type declarations
import { bundleSdk } from '../scripts/build-sdk.mjs';
import { machine, writeSection } from './lib.ts';

const sizes: { file: string; minified: number; gzipped: number }[] = await bundleSdk();
const what: Record<string, string> = {
  'watchtower.js': 'Core, script tag (`/sdk/watchtower.js`): batching, beacon, retry and backoff, stored queue, sessions, ingest key, pageload with referrer, errors, clicks',
  'watchtower-vitals.js': 'Web vitals, opt-in (`/sdk/watchtower-vitals.js`, includes web-vitals)',
  'index.js': 'Core, ESM (`watchtower/sdk`)',
  'vitals.js': 'Vitals, ESM (`watchtower/sdk/vitals`)',
};
const fmt = (n: number) => n.toLocaleString('en-US');
writeSection(
  'sdk',
  `## SDK size

\`npm run bench:sdk\` — esbuild, minified, target es2020; gzip at zlib's default level. Budget for the core: 5,120 B gzipped (\`test/sdk-size.test.ts\` enforces it). For comparison, gzipped: Sentry ~33 KB, PostHog 55–127 KB, Grafana Faro ~42 KB; Umami and Plausible ~2.5 KB but they neither batch nor retry. ${machine()}.

| Bundle | Minified | Gzipped |
|---|---|---|
${sizes.map((s) => `| ${what[s.file] ?? s.file} | ${fmt(s.minified)} B | ${fmt(s.gzipped)} B |`).join('\n')}`,
);
for (const s of sizes) console.log(`${s.file}: ${s.minified} B minified, ${s.gzipped} B gzipped`);
