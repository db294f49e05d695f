// Runs every test/*.test.ts with uvu in one process, on whichever runtime started it.
// Usage: run.ts [name-filter]
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

(globalThis as { UVU_DEFER?: number }).UVU_DEFER = 1;
const uvu = await import('uvu');
const dir = fileURLToPath(new URL('.', import.meta.url));
const filter = (typeof Deno !== 'undefined' ? Deno.args : process.argv.slice(2))[0] ?? '';
const files = readdirSync(dir).filter((f) => f.endsWith('.test.ts') && f.includes(filter)).sort();
const queue = (globalThis as unknown as { UVU_QUEUE: unknown[][] }).UVU_QUEUE;
let index = 0;
for (const file of files) {
  (globalThis as { UVU_INDEX?: number }).UVU_INDEX = index++;
  queue.push([file]);
  await import(pathToFileURL(dir + file).href);
}
await uvu.exec();
declare const Deno: { args: string[] } | undefined;
