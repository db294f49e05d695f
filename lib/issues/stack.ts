// Stack traces → frames. Browsers write stacks as text in two dialects (V8's "at fn (url:line:col)",
// Firefox/Safari's "fn@url:line:col"); Sentry SDKs send frames already structured. Both become one
// Frame shape, innermost (the throwing frame) first.

export interface Frame {
  /** Function name as reported (null for anonymous and top-level code). */
  function: string | null;
  /** Script URL or path as reported, query string included. */
  file: string | null;
  /** 1-based line and column, as browsers and Sentry report them. */
  line: number | null;
  column: number | null;
  /** Whether the frame is the monitored app's own code (see isInApp). */
  inApp: boolean;
}

// Bounds on the stack text read, against hostile or runaway input: a stack is client text, and
// grouping runs on the event loop that every tenant of the process shares. Real stacks sit far
// inside them (V8 prints 10 frames by default, Firefox and Safari at most about 100; a line is a
// function name and a URL). Within them, parsing is linear in what is read: every regular expression
// here runs in linear time on any input, and suffixes and query strings are found by scanning, so a
// crafted stack costs what an ordinary one of the same length costs (test/hostile-stacks.test.ts).
/** Stack text considered: its first 64 KiB (UTF-16 code units); an event is at most 64 KiB anyway. */
export const MAX_STACK_CHARS = 64 * 1024;
/** Lines of stack text read. */
export const MAX_STACK_LINES = 1000;
/** Longer lines are not frames; a structured (Sentry) frame's function and file are cut to this. */
export const MAX_LINE = 2048;
/** Frames kept from one stack: enough for grouping and display, bounded against huge recursions. */
export const MAX_FRAMES = 50;
/** Structured frames examined, from the innermost: skipped entries (not objects, nameless) count too. */
export const MAX_STRUCTURED_FRAMES = 1000;

const V8_LINE = /^\s*at\s+/;

/** The lines of a stack that are read (MAX_STACK_CHARS, MAX_STACK_LINES). */
export function stackLines(stack: string): string[] {
  const text = stack.length > MAX_STACK_CHARS ? stack.slice(0, MAX_STACK_CHARS) : stack;
  return text.split('\n', MAX_STACK_LINES);
}

/** Whether a line is a V8 frame line (`    at …`); longer lines than MAX_LINE are not read. */
export function isV8Line(line: string): boolean {
  return line.length <= MAX_LINE && V8_LINE.test(line);
}

/** Parses V8, Firefox and Safari stack text; lines that name no frame (the message) are skipped. */
export function parseStack(stack: unknown): Frame[] {
  if (typeof stack !== 'string' || stack === '') return [];
  const lines = stackLines(stack);
  // A V8 stack starts with the message, which may itself contain "@" or ":12": only "at" lines count.
  const v8 = lines.some(isV8Line);
  const frames: Frame[] = [];
  for (const line of lines) {
    if (line.length > MAX_LINE) continue;
    const frame = v8 ? parseV8Line(line) : parseGeckoLine(line);
    if (frame) frames.push(frame);
    if (frames.length === MAX_FRAMES) break;
  }
  return frames;
}

function parseV8Line(text: string): Frame | null {
  const at = V8_LINE.exec(text);
  if (!at) return null;
  const rest = text.slice(at[0].length).trim();
  // "fn (location)" or a bare "location". (Found by index, not a backtracking regular expression.)
  const open = rest.endsWith(')') ? rest.indexOf(' (') : -1;
  let fn = open > 0 ? rest.slice(0, open) : null;
  let location = open > 0 ? rest.slice(open + 2, -1) : rest;
  // "eval at outer (url:1:2), <anonymous>:1:5": the code ran from an eval; its own position is last.
  if (location.startsWith('eval at ')) location = location.slice(location.lastIndexOf(', ') + 2);
  if (fn !== null) fn = withoutAlias(fn.replace(/^(?:async|new)\s+/, ''));
  return frame(fn, location);
}

const isSpace = (s: string, i: number) => /\s/.test(s[i]);

/**
 * `Object.handler [as onload]` → `Object.handler`: V8's `[as alias]` suffix, with the white space
 * before it, removed. Found by scanning: `/\s+\[as [^\]]+\]$/` backtracks quadratically over a long
 * run of spaces not followed by a suffix (60 ms for one 2 KB line).
 */
export function withoutAlias(fn: string): string {
  if (!fn.endsWith(']')) return fn;
  // The alias holds no "]": a suffix starts after the last "]" but the final one.
  let at = fn.indexOf('[as ', fn.lastIndexOf(']', fn.length - 2) + 1);
  // The leftmost "[as " after white space with a non-empty alias before the final "]".
  while (at >= 0 && !(at > 0 && isSpace(fn, at - 1))) at = fn.indexOf('[as ', at + 1);
  if (at < 0 || at + 4 >= fn.length - 1) return fn;
  let start = at;
  while (start > 0 && isSpace(fn, start - 1)) start--;
  return fn.slice(0, start);
}

function parseGeckoLine(text: string): Frame | null {
  const line = text.trim();
  const at = line.indexOf('@');
  if (at < 0) {
    // Safari writes some frames without "@": a bare URL with a position.
    return /^[a-z][a-z0-9+.-]*:\/\/.*:\d+(?::\d+)?$/i.test(line) ? frame(null, line) : null;
  }
  let location = line.slice(at + 1);
  if (location !== '[native code]' && !/:\d+(?::\d+)?$/.test(location)) return null;
  // Firefox: "url line 12 > eval:1:5" — the eval'd code ran from line 12 of url.
  const evalled = / line (\d+) > (?:eval|Function)/.exec(location);
  if (evalled) location = `${location.slice(0, evalled.index)}:${evalled[1]}`;
  let fn = line.slice(0, at);
  // Firefox marks anonymous inner functions "outer/<" and generators "gen*"; Safari names top-level code.
  let end = fn.length;
  while (end >= 2 && fn.startsWith('/<', end - 2)) end -= 2; // not /(?:\/<)+$/, quadratic on "/</</<…x"
  fn = fn.slice(0, end).replace(/\*$/, '').replace(/^(?:async\*|async )/, '');
  if (/^(?:global|eval|module) code$/.test(fn)) fn = '';
  return frame(fn, location);
}

function frame(fn: string | null, location: string): Frame {
  const pos = /^(.*?):(\d+)(?::(\d+))?$/.exec(location);
  const file = pos ? pos[1] : location;
  return {
    function: fn ? fn : null,
    file: file === '' ? null : file,
    line: pos ? Number(pos[2]) : null,
    column: pos && pos[3] !== undefined ? Number(pos[3]) : null,
    inApp: isInApp(file),
  };
}

/**
 * Frames as a Sentry event carries them (`stacktrace.frames`: `function`, `filename`/`abs_path`,
 * `lineno`, `colno`, `in_app`), which Sentry orders outermost first; returned innermost first like
 * parseStack. An explicit `in_app` from the SDK wins over isInApp.
 */
export function framesFromSentry(frames: unknown): Frame[] {
  if (!Array.isArray(frames)) return [];
  const out: Frame[] = [];
  const last = Math.max(0, frames.length - MAX_STRUCTURED_FRAMES);
  for (let i = frames.length - 1; i >= last && out.length < MAX_FRAMES; i--) {
    const f = frames[i];
    if (typeof f !== 'object' || f === null) continue;
    const r = f as Record<string, unknown>;
    const file = text(r.abs_path) ?? text(r.filename) ?? text(r.module);
    const fn = text(r.function);
    if (file === null && fn === null) continue;
    out.push({
      function: fn === '?' ? null : fn,
      file,
      line: positive(r.lineno),
      column: positive(r.colno),
      inApp: typeof r.in_app === 'boolean' ? r.in_app : isInApp(file),
    });
  }
  return out;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v.slice(0, MAX_LINE) : null);
const positive = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null);

/**
 * Hosts of public CDNs and third-party services whose scripts are never the app's own. Apps often
 * serve their own bundles from another host of theirs (static., cdn.), so other hosts count as the app.
 */
export const THIRD_PARTY_HOSTS = [
  'cdn.jsdelivr.net', 'unpkg.com', 'cdnjs.cloudflare.com', 'ajax.googleapis.com', 'code.jquery.com',
  'www.googletagmanager.com', 'www.google-analytics.com', 'connect.facebook.net', 'js.stripe.com',
  'static.cloudflareinsights.com', 'cdn.segment.com', 'esm.sh', 'cdn.skypack.dev', 'polyfill.io',
];

/** Bundle chunks that hold dependencies rather than the app: vendor, vendors~main, chunk-vendors, framework-…, polyfills. */
const VENDOR_CHUNK = /(?:^|[/.~_-])(?:vendors?|chunk-vendors|framework|polyfills?)(?=[/.~_-]|$)/i;

/**
 * The in-app rule: a frame is the app's own code unless its file is
 * - missing, or not a script URL, path or file name (`<anonymous>`, `native`, `[native code]`,
 *   `node:…`, V8's `index 0`);
 * - a browser extension (`chrome-extension:`, `moz-extension:`, `safari-extension:`, `safari-web-extension:`);
 * - served by a host of THIRD_PARTY_HOSTS;
 * - under `node_modules/`, or a vendor chunk (`vendor.js`, `vendors~main.js`, `chunk-vendors.js`,
 *   `framework-….js`, `polyfills.js`).
 */
export function isInApp(file: string | null): boolean {
  if (file === null || file === '') return false;
  if (/^(?:<anonymous>|native|\[native code\]|node:|webpack\/bootstrap)/.test(file)) return false;
  if (/^[a-z-]*-extension:/i.test(file)) return false;
  let path = file;
  const url = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)([^?#]*)/i.exec(file);
  // Neither a URL nor a path nor a file name: V8's "index 0" of Promise.all and the like.
  if (!url && !file.includes('/') && !/\.\w+$/.test(file)) return false;
  if (url) {
    const host = url[1].replace(/^[^@]*@/, '').replace(/:\d+$/, '').toLowerCase();
    if (THIRD_PARTY_HOSTS.includes(host)) return false;
    path = url[2];
  }
  if (path.includes('node_modules/')) return false;
  const base = path.slice(path.lastIndexOf('/') + 1);
  return !VENDOR_CHUNK.test(base);
}

/** A file for display: the path without origin, query string or fragment (`/assets/app-3f9a1c.js`). */
export function displayFile(file: string | null): string | null {
  if (file === null) return null;
  const url = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*([^?#]*)/i.exec(file);
  return url ? url[1] || '/' : withoutQuery(file);
}

/**
 * The text before the first `?` or `#`. (Not `/[?#].*$/`: `.` stops at a line break, so on
 * `????…?\r` every `?` scans to the end, quadratic in the length.)
 */
export function withoutQuery(s: string): string {
  const q = s.indexOf('?');
  const h = s.indexOf('#');
  const cut = q < 0 ? h : h < 0 ? q : Math.min(q, h);
  return cut < 0 ? s : s.slice(0, cut);
}
