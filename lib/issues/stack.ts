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

/** Frames kept from one stack: enough for grouping and display, bounded against huge recursions. */
export const MAX_FRAMES = 50;
/** Longer lines are not frames (a stack is client input: this bounds the work per line). */
const MAX_LINE = 2048;

const V8_LINE = /^\s*at\s+/;

/** Parses V8, Firefox and Safari stack text; lines that name no frame (the message) are skipped. */
export function parseStack(stack: unknown): Frame[] {
  if (typeof stack !== 'string' || stack === '') return [];
  const lines = stack.split('\n');
  // A V8 stack starts with the message, which may itself contain "@" or ":12": only "at" lines count.
  const v8 = lines.some((l) => V8_LINE.test(l));
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
  if (!V8_LINE.test(text)) return null;
  const rest = text.replace(V8_LINE, '').trim();
  // "fn (location)" or a bare "location". (Found by index, not a backtracking regular expression.)
  const open = rest.endsWith(')') ? rest.indexOf(' (') : -1;
  let fn = open > 0 ? rest.slice(0, open) : null;
  let location = open > 0 ? rest.slice(open + 2, -1) : rest;
  // "eval at outer (url:1:2), <anonymous>:1:5": the code ran from an eval; its own position is last.
  if (location.startsWith('eval at ')) location = location.slice(location.lastIndexOf(', ') + 2);
  if (fn !== null) {
    fn = fn.replace(/^(?:async|new)\s+/, '').replace(/\s+\[as [^\]]+\]$/, '');
  }
  return frame(fn, location);
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
  fn = fn.replace(/(?:\/<)+$/, '').replace(/\*$/, '').replace(/^(?:async\*|async )/, '');
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
  for (let i = frames.length - 1; i >= 0 && out.length < MAX_FRAMES; i--) {
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

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
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
  const path = url ? url[1] || '/' : file.replace(/[?#].*$/, '');
  return path;
}
