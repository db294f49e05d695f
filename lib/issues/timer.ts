// Background timers (issue processing, alert evaluation) must not keep a process alive by themselves.
// (lib/hub.ts has the same helper, private to it.)

/** Node's timers have unref(); Deno's are numbers handed to Deno.unrefTimer. */
export function unref<T>(timer: T): T {
  const t = timer as { unref?: () => void };
  if (typeof t.unref === 'function') t.unref();
  else if (typeof timer === 'number') (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(timer);
  return timer;
}
