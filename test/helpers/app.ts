// Builds a handler on a memory store and sends it web Requests, as any embedding server would.
import { createHandler, type HandlerDeps } from '../../lib/handler.ts';
import { createMemoryStore } from '../../lib/store/memory.ts';
import { nodeFiles } from '../../lib/adapter/node.ts';
import { denoFiles } from '../../lib/adapter/deno.ts';
import type { FileAccess } from '../../lib/static.ts';

declare const Deno: unknown;
/** The file access of the runtime running the tests, as server.ts picks it. */
export const runtimeFiles: FileAccess = typeof Deno !== 'undefined' ? denoFiles : nodeFiles;

export const BASE = 'http://watchtower.test';

export function app(deps: Partial<HandlerDeps> & { fallthrough?: false } = {}) {
  const store = deps.store ?? createMemoryStore();
  const handler = createHandler({ log: () => {}, files: runtimeFiles, ...deps, store });
  const send = (method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; raw?: BodyInit } = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    let body: BodyInit | undefined = init.raw;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    return handler(new Request(BASE + path, { method, headers, body }));
  };
  const as = (user: string) => ({ 'x-idp-user-id': user });
  return { handler, store, send, as };
}

export async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, needle: string, timeoutMs = 2000): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + timeoutMs;
  while (!text.includes(needle)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`stream did not deliver ${JSON.stringify(needle)} in ${timeoutMs} ms; got ${JSON.stringify(text)}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const chunk = await Promise.race([
      reader.read(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`stream timeout; got ${JSON.stringify(text)}`)), left))),
    ]).finally(() => clearTimeout(timer));
    if (chunk.done) throw new Error(`stream ended before ${JSON.stringify(needle)}; got ${JSON.stringify(text)}`);
    text += decoder.decode(chunk.value, { stream: true });
  }
  return text;
}

/** The JSON arrays of the `data:` lines in an SSE text. */
export const dataFrames = (text: string): unknown[][] =>
  text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
