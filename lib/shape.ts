// The bounded shape of client JSON (docs/api.md#shape-of-events): how deep it nests and
// how many keys one object has. Every event is checked on ingest, and every event a store reads back
// is cut at the same depth, so that no event, however it was stored, can exhaust a call stack.
//
// Why: JSON.parse is iterative on every runtime Watchtower runs on (V8, JavaScriptCore) and parses a
// 1 MiB body nested 500,000 deep, but what follows it is not: JSON.stringify overflows on Node from
// ~10,000 levels, and structured clone (postMessage between the sqlite store's threads) from a few
// thousand. A 24 KB event nested 4,000 deep was accepted, and every later read of its owner's events
// waited forever for an answer the store's worker could not send (issue 33). Both walks below use
// an explicit stack, never recursion, so no input can exhaust the call stack they run on.

/** Objects and arrays an event may nest: the event itself is level 1, its `data` level 2. */
export const MAX_DEPTH = 32;
/** Keys one object of an event may have (the event's own fields included). */
export const MAX_KEYS = 1000;
/** What replaces an object or array below MAX_DEPTH when a store reads an event stored before these bounds. */
export const TRUNCATED = '[truncated]';

export type ShapeProblem = 'depth' | 'keys';

// One walk at a time (it never yields), so the stacks are shared and emptied after each.
const stack: object[] = [];
const depths: number[] = [];

/**
 * Whether a JSON value nests more than `maxDepth` objects and arrays (`depth`), or has an object
 * with more than `maxKeys` keys (`keys`); null when it has neither. A scalar is level 0, `{}` and
 * `[]` level 1. Stops at the first problem: it costs at most one visit of each value.
 */
export function shapeProblem(value: unknown, maxDepth = MAX_DEPTH, maxKeys = MAX_KEYS): ShapeProblem | null {
  if (typeof value !== 'object' || value === null) return null;
  if (maxDepth < 1) return 'depth';
  stack[0] = value;
  depths[0] = 1;
  let top = 1;
  let used = 1;
  let problem: ShapeProblem | null = null;
  walk: while (top > 0) {
    if (top > used) used = top;
    const o = stack[--top];
    const d = depths[top];
    if (Array.isArray(o)) {
      for (let i = 0; i < o.length; i++) {
        const v: unknown = o[i];
        if (typeof v !== 'object' || v === null) continue;
        if (d >= maxDepth) {
          problem = 'depth';
          break walk;
        }
        stack[top] = v;
        depths[top++] = d + 1;
      }
    } else {
      let keys = 0;
      for (const k in o) {
        if (++keys > maxKeys) {
          problem = 'keys';
          break walk;
        }
        const v = (o as Record<string, unknown>)[k];
        if (typeof v !== 'object' || v === null) continue;
        if (d >= maxDepth) {
          problem = 'depth';
          break walk;
        }
        stack[top] = v;
        depths[top++] = d + 1;
      }
    }
  }
  // Dropped, so that the walk keeps nothing of the value alive (a long stack is let go whole).
  if (top > used) used = top;
  if (used > 1024) stack.length = depths.length = 0;
  else stack.fill(undefined as unknown as object, 0, used);
  return problem;
}

/**
 * The value itself when it nests at most `maxDepth` levels; otherwise a copy in which every object
 * or array below that level is replaced by TRUNCATED (the rest kept, keys in their order). For
 * events stored before ingest bounded their shape: reads return them instead of failing on them.
 */
export function withinDepth<T>(value: T, maxDepth = MAX_DEPTH): T {
  if (shapeProblem(value, maxDepth, Infinity) === null) return value;
  const todo: [from: object, to: Record<string, unknown> | unknown[], depth: number][] = [];
  const child = (v: unknown, depth: number): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (depth > maxDepth) return TRUNCATED;
    const copy: Record<string, unknown> | unknown[] = Array.isArray(v) ? [] : {};
    todo.push([v, copy, depth]);
    return copy;
  };
  const root = child(value, 1);
  while (todo.length) {
    const [from, to, depth] = todo.pop()!;
    if (Array.isArray(from)) {
      for (let i = 0; i < from.length; i++) (to as unknown[])[i] = child(from[i], depth + 1);
      continue;
    }
    for (const k of Object.keys(from)) {
      const v = child((from as Record<string, unknown>)[k], depth + 1);
      // JSON.parse makes `__proto__` an own key; assigning it would set the copy's prototype instead.
      if (k === '__proto__') Object.defineProperty(to, k, { value: v, enumerable: true, writable: true, configurable: true });
      else (to as Record<string, unknown>)[k] = v;
    }
  }
  return root as T;
}
