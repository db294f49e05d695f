// Error event → the issue it belongs to: a fingerprint, a title and a culprit. The rules follow
// Sentry's default grouping, so that the same bug seen twice is one issue however its details vary.
import { fnv1a64 } from './hash.ts';
import { displayFile, type Frame, framesFromSentry, isV8Line, MAX_LINE, parseStack, stackLines } from './stack.ts';

/**
 * What grouping reads from an error event, the stored shape of lib/event.ts or one made from a
 * Sentry event: `message` (else `data.message`, `data.value`); `data.stack` (else `stack`) as text,
 * or structured frames in `data.frames` or `data.exception.values[-1].stacktrace.frames` (Sentry's
 * order, outermost first); the type in `data.exceptionType` / `data.exception_type` or the Sentry
 * exception's `type`; and a client `fingerprint` (top level or `data.fingerprint`).
 */
export interface ErrorLike {
  [field: string]: unknown;
  message?: string | null;
  data?: Record<string, unknown>;
}

export interface Grouping {
  /** 16 hex digits: FNV-1a 64 of `components` joined by newlines. */
  fingerprint: string;
  /** What the fingerprint was computed from, for display and debugging ("why are these grouped?"). */
  components: string[];
  /** `TypeError: x is undefined`; the message alone when there is no exception type. */
  title: string;
  /** The top in-app frame, `fn (/path/file.js)`; null without frames. */
  culprit: string | null;
  /** Exception type (`TypeError`), when known. */
  type: string | null;
  /** Frames of the event, innermost first (the ones given, or those parsed from it). */
  frames: Frame[];
}

/** In-app frames, from the top, that identify a bug: enough to tell call sites apart, few enough that another caller deep down the stack does not split the issue. */
export const GROUPING_FRAMES = 5;
/** Titles and culprits are cut to this many characters. */
export const TITLE_MAX = 200;

const DEFAULT_MARKER = /^\{\{\s*default\s*\}\}$/;

/**
 * Groups an error event. The fingerprint is, in order of preference:
 * 1. the client's own `fingerprint` (an array of strings, at the top level or in `data`), where
 *    `{{ default }}` stands for the default components below;
 * 2. the exception type and the top GROUPING_FRAMES in-app frames (all frames when none is in-app),
 *    each as function name and file name only: no line or column, no origin or path, no query string
 *    and no content hash (`app-3f9a1c.js` and `app-77b0e2.js` are both `app.js`);
 * 3. the exception type and the message with its variable parts replaced (normaliseMessage).
 *
 * Pass `frames` when the caller already has them (for instance symbolicated by sourcemap.ts, which
 * keeps minified names that change from build to build out of the fingerprint).
 */
export function groupEvent(event: ErrorLike, frames?: Frame[]): Grouping {
  const data = event.data ?? {};
  const exception = sentryException(data.exception);
  const stack = stackText(event);
  const parsed = frames ?? eventFrames(event);
  const rawMessage = firstString(exception?.value, event.message, data.message, data.value) ?? '';
  const type = firstString(exception?.type) ?? exceptionType(data, stack, rawMessage);
  const message = stripType(rawMessage, type);

  const usable = parsed.filter((f) => f.function !== null || f.file !== null);
  const inApp = usable.filter((f) => f.inApp);
  const grouped = (inApp.length > 0 ? inApp : usable).slice(0, GROUPING_FRAMES);
  const defaults = grouped.length > 0
    ? [`type:${type ?? ''}`, ...grouped.map((f) => `frame:${f.function ?? ''}@${groupingFile(f.file) ?? ''}`)]
    : [`type:${type ?? ''}`, `message:${normaliseMessage(message)}`];

  const custom = clientFingerprint(event.fingerprint ?? data.fingerprint);
  const components = custom ? custom.flatMap((part) => (DEFAULT_MARKER.test(part) ? defaults : [`custom:${part}`])) : defaults;

  const top = inApp[0] ?? null;
  return {
    fingerprint: fnv1a64(components.join('\n')),
    components,
    title: cut(type ? (message ? `${type}: ${message}` : type) : message || '(no message)'),
    culprit: top ? cut(culpritOf(top)) : null,
    type,
    frames: parsed,
  };
}

/** The frames of an error event, innermost first: structured (Sentry) frames when it has them, else its parsed stack text. */
export function eventFrames(event: ErrorLike): Frame[] {
  const data = event.data ?? {};
  const structured = sentryException(data.exception)?.stacktrace?.frames ?? data.frames;
  return Array.isArray(structured) ? framesFromSentry(structured) : parseStack(stackText(event));
}

const stackText = (event: ErrorLike): string | null =>
  typeof event.data?.stack === 'string' ? event.data.stack : typeof event.stack === 'string' ? event.stack : null;

function culpritOf(f: Frame): string {
  const file = displayFile(f.file);
  if (f.function && file) return `${f.function} (${file})`;
  return f.function ?? file ?? '?';
}

/** A client fingerprint: 1–20 non-empty strings of at most 200 characters; anything else is ignored. */
function clientFingerprint(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0 || value.length > 20) return null;
  return value.every((v) => typeof v === 'string' && v !== '' && v.length <= 200) ? (value as string[]) : null;
}

interface SentryException { type?: unknown; value?: unknown; stacktrace?: { frames?: unknown } }

/** A Sentry `exception` ({ values: [...] }, oldest first): the last value is the error that was thrown. */
function sentryException(value: unknown): SentryException | null {
  const values = (value as { values?: unknown } | null)?.values;
  if (!Array.isArray(values) || values.length === 0) return null;
  const last = values[values.length - 1];
  return typeof last === 'object' && last !== null ? (last as SentryException) : null;
}

/**
 * The exception type: given by the event (`data.exceptionType` or `data.exception_type`), else the head of a V8 stack (`TypeError: …`), else a message
 * that starts like one (`Uncaught TypeError: …`, as window.onerror reports it).
 */
function exceptionType(data: Record<string, unknown>, stack: string | null, message: string): string | null {
  const given = firstString(data.exceptionType, data.exception_type);
  if (given) return given;
  // A V8 stack: an "at" line after the first. (Not /\n\s*at\s/, whose \s* also takes line breaks:
  // on a stack of blank lines every start scans to the end, quadratic in the length.)
  const lines = stack ? stackLines(stack) : [];
  if (lines.length > 1 && lines.some((l, i) => i > 0 && isV8Line(l))) {
    const head = /^(?:Uncaught\s+)?([A-Za-z_$][\w$.]*):\s/.exec(stack!.slice(0, MAX_LINE + 1));
    if (head) return head[1];
  }
  const m = /^(?:Uncaught\s+)?([A-Z][\w$]*(?:Error|Exception))(?::|$)/.exec(message);
  return m ? m[1] : null;
}

/** "Uncaught TypeError: x" → "x" when the type is known; "Uncaught x" → "x". */
function stripType(message: string, type: string | null): string {
  let m = message.replace(/^Uncaught\s+/, '');
  if (type && m.startsWith(`${type}:`)) m = m.slice(type.length + 1);
  else if (type && m === type) m = '';
  return m.trim();
}

/**
 * A file name for grouping: the last path segment without query string, fragment or content hash.
 * Origins and directories differ between hosts, CDNs and version folders of the same build.
 */
export function groupingFile(file: string | null): string | null {
  const path = displayFile(file);
  if (path === null) return null;
  const base = path.slice(path.lastIndexOf('/') + 1);
  return stripContentHash(base);
}

/**
 * Removes bundler content hashes from a file name: `app-3f9a1c.js` → `app.js`,
 * `main.3f9a1c2b.chunk.js` → `main.chunk.js`, `main-N3GXTLWO.js` (esbuild) → `main.js`,
 * `index-BxKqTzAa.js` (Vite) → `index.js`. A hash is a part between `.`, `-` or `~`, neither the
 * first nor the extension, of at least 6 letters, digits or `_` that mixes letters and digits, is
 * hex of 8 or more, is 8 or more capitals, or mixes cases after its first letter.
 */
export function stripContentHash(name: string): string {
  // One scan, copying only around the hashes found: splitting a name of many short parts made a
  // string of each, several times the cost per character of an ordinary name.
  let out = '';
  let from = 0; // the start of the text not copied yet
  let sep = -1; // the separator before the current part (-1: the first part)
  for (let i = 0; i <= name.length; i++) {
    if (i < name.length && !isSeparator(name.charCodeAt(i))) continue;
    if (sep >= 0 && i < name.length && i - sep > 6 && isHashLike(name.slice(sep + 1, i))) {
      out += name.slice(from, sep); // the hash goes with the separator before it
      from = i;
    }
    sep = i;
  }
  return from === 0 ? name : out + name.slice(from);
}

/** `.`, `~` and `-`. */
const isSeparator = (c: number) => c === 46 || c === 126 || c === 45;

function isHashLike(s: string): boolean {
  if (s.length < 6 || !/^\w+$/.test(s)) return false;
  const rest = s.slice(1);
  return (/\d/.test(s) && /[A-Za-z]/.test(s)) || /^[0-9a-f]{8,}$/i.test(s) || /^[A-Z]{8,}$/.test(s) || (/[a-z]/.test(rest) && /[A-Z]/.test(rest));
}

/**
 * Replaces the parts of a message that vary between occurrences of one bug: URLs, e-mail
 * addresses, UUIDs, quoted strings, hex numbers and ids, and numbers.
 */
export function normaliseMessage(message: string): string {
  return message
    .slice(0, 1000)
    // Bounded repetitions where a failed match would otherwise rescan the rest of a long run from
    // every start (quadratic): a scheme is at most 32 characters, an address's local part 64.
    .replace(/\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s'"`<>()]+/gi, '<url>')
    .replace(/[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+/g, '<email>')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>')
    // A quote after a letter is an apostrophe ("can't"), not the start of a quoted value.
    .replace(/(?<![\w])'[^'\n]*'|"[^"\n]*"|`[^`\n]*`/g, '<str>')
    .replace(/\b0x[0-9a-f]+\b/gi, '<hex>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<hex>')
    .replace(/\d+(?:\.\d+)?/g, '<n>');
}

function firstString(...values: unknown[]): string | null {
  for (const v of values) if (typeof v === 'string' && v !== '') return v;
  return null;
}

const cut = (s: string) => (s.length > TITLE_MAX ? `${s.slice(0, TITLE_MAX - 1)}…` : s);
