// Deno: Deno.serve calls a fetch handler as it is, with the client address in its second argument.
// What it needs from here is file access for pages and the SDK, read with Deno's own API.
import type { FileAccess } from '../static.ts';

/** The runtime's host-name lookup, for createHandler's `monitoring.resolveHost` (webhook destinations). */
export { resolveHost } from './resolve.ts';

declare const Deno: {
  stat(path: string): Promise<{ isFile: boolean; isDirectory: boolean; size: number; mtime: Date | null }>;
  readFile(path: string): Promise<Uint8Array<ArrayBuffer>>;
};

/** Served files read with Deno.stat and Deno.readFile (for createHandler's `files`). */
export const denoFiles: FileAccess = {
  async stat(path) {
    const info = await Deno.stat(path).catch(() => null);
    return info && { isFile: info.isFile, isDirectory: info.isDirectory, size: info.size, mtimeMs: info.mtime?.getTime() ?? 0 };
  },
  readFile: (path) => Deno.readFile(path),
};
