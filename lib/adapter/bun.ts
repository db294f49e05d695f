// Bun: Bun.serve calls `fetch(request, server)`; the client address comes from server.requestIP,
// which this adapter passes on so that rate limiting is per client.
import type { ServeInfo } from '../context.ts';
import type { FileAccess } from '../static.ts';

/** The runtime's host-name lookup, for createHandler's `monitoring.resolveHost` (webhook destinations). */
export { resolveHost } from './resolve.ts';

interface BunFile extends Blob {
  stat(): Promise<{ isFile(): boolean; isDirectory(): boolean; size: number; mtimeMs: number }>;
}
declare const Bun: { file(path: string): BunFile };

/** What Bun.serve passes beside the Request. */
export interface BunServer {
  requestIP(request: Request): { address: string } | null;
}

/** Bun.serve's `fetch` for a fetch handler. */
export function toBunFetch<R extends Response | null>(handler: (request: Request, info?: ServeInfo) => Promise<R>) {
  return (request: Request, server: BunServer): Promise<R> => handler(request, { remoteAddr: { hostname: server.requestIP(request)?.address } });
}

/** Served files read with Bun.file, whose body Bun sends straight from the file (for createHandler's `files`). */
export const bunFiles: FileAccess = {
  async stat(path) {
    const info = await Bun.file(path).stat().catch(() => null);
    return info && { isFile: info.isFile(), isDirectory: info.isDirectory(), size: info.size, mtimeMs: info.mtimeMs };
  },
  readFile: async (path) => Bun.file(path),
};
