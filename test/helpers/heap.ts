// How much the live heap grows over some work, between two full collections: whether something
// holds what it should have let go (a slice that keeps the long string it was cut from, say).

declare const Deno: unknown;
/** Node only: Deno does not let a running program call the garbage collector. */
export const canCollect = typeof Deno === 'undefined';

/** Bytes the heap grew by over `work` (run it only where canCollect). */
export async function heapGrowth(work: () => void): Promise<number> {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  work();
  gc();
  return process.memoryUsage().heapUsed - before;
}
