// Checking funnel input (docs/api.md#funnels): a query's body and a saved funnel's definition.
// Hostile input is bounded before anything reads the store; every refusal is a 400 naming the field.
import { isPlainObject } from '../event.ts';
import { HttpError } from '../http.ts';
import { parseIsoTime } from '../schema.ts';
import type { FunnelQuery } from './count.ts';
import { MAX_STEP_LENGTH, MAX_STEPS, MIN_STEPS, type FunnelStep } from './steps.ts';

/** Longest span a query covers: a little over the default 90-day retention. */
export const MAX_RANGE_DAYS = 93;
/** Most minutes allowed between one step and the next. */
export const MAX_WINDOW_MINUTES = 30 * 24 * 60;
const DAY_MS = 86_400_000;

const invalid = (message: string) => new HttpError(400, 'invalid_funnel', message);

// Control characters, backslash, U+FFFD, and unpaired surrogates: none is in a route a browser
// sends or a name an SDK sets, and excluding them lets PostgreSQL (which stores NUL and unpaired
// surrogates as U+FFFD) match exactly what the reference matches.
const UNSAFE = /[\u0000-\u001f\u007f\\\uFFFD]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a page pattern or event name is free of what UNSAFE refuses (goals use the same rule). */
export const isSafeStepText = (text: string): boolean => !UNSAFE.test(text);

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[], what: string): void {
  for (const key of Object.keys(o)) if (!allowed.includes(key)) throw invalid(`"${key}" is not a field of ${what} (${allowed.join(', ')})`);
}

/** The steps of a body: 2–8 objects, each { page } or { event } with a bounded, printable string. */
export function parseSteps(value: unknown): FunnelStep[] {
  if (!Array.isArray(value) || value.length < MIN_STEPS || value.length > MAX_STEPS) {
    throw invalid(`"steps" must be an array of ${MIN_STEPS} to ${MAX_STEPS} steps, each { "page": pattern } or { "event": name }`);
  }
  return value.map((s, i) => {
    const at = `steps[${i}]`;
    if (!isPlainObject(s)) throw invalid(`${at} must be an object { "page": pattern } or { "event": name }`);
    const keys = Object.keys(s);
    if (keys.length !== 1 || (keys[0] !== 'page' && keys[0] !== 'event')) throw invalid(`${at} must have exactly one of "page" or "event"`);
    const kind = keys[0] as 'page' | 'event';
    const text = s[kind];
    if (typeof text !== 'string' || text === '' || text.length > MAX_STEP_LENGTH) {
      throw invalid(`${at}.${kind} must be a non-empty string of at most ${MAX_STEP_LENGTH} characters`);
    }
    if (UNSAFE.test(text)) throw invalid(`${at}.${kind} must not hold control characters, backslashes, U+FFFD or unpaired surrogates`);
    return kind === 'page' ? { page: text } : { event: text };
  });
}

export function parseWindow(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_WINDOW_MINUTES) {
    throw invalid(`"windowMinutes" must be a whole number from 1 to ${MAX_WINDOW_MINUTES}`);
  }
  return value;
}

function parseTime(value: unknown, name: string): number {
  const t = typeof value === 'string' ? parseIsoTime(value) : typeof value === 'number' && Number.isFinite(value) ? value : null;
  if (t === null || Math.abs(t) > 8.64e15) throw invalid(`"${name}" must be an ISO 8601 date or date-time, or ms since the epoch`);
  return t;
}

/** The body of POST /api/funnels/query, as its project id and the store's query (userId left to the caller). */
export function parseFunnelQuery(body: unknown, now: number): { project: string; query: Omit<FunnelQuery, 'userId'> } {
  if (!isPlainObject(body)) throw invalid('Body must be a JSON object { project, from, to?, windowMinutes, steps }');
  onlyKeys(body, ['project', 'from', 'to', 'windowMinutes', 'steps'], 'a funnel query');
  const project = body.project;
  if (typeof project !== 'string' || !/^\d{1,20}$/.test(project)) throw invalid('"project" must be a project id (digits)');
  const from = parseTime(body.from, 'from');
  const to = body.to === undefined || body.to === null ? now : parseTime(body.to, 'to');
  if (from >= to) throw invalid('"from" must be before "to"');
  if (to - from > MAX_RANGE_DAYS * DAY_MS) throw invalid(`The range may span at most ${MAX_RANGE_DAYS} days`);
  const windowMinutes = parseWindow(body.windowMinutes);
  return { project, query: { projectId: project, from, to, windowMs: windowMinutes * 60_000, steps: parseSteps(body.steps) } };
}

/** Longest name of a saved funnel. */
export const MAX_NAME_LENGTH = 100;

/** The body of POST /api/projects/:id/funnels. */
export function parseSavedFunnel(body: unknown): { name: string; windowMinutes: number; steps: FunnelStep[] } {
  if (!isPlainObject(body)) throw invalid('Body must be a JSON object { name, windowMinutes, steps }');
  onlyKeys(body, ['name', 'windowMinutes', 'steps'], 'a saved funnel');
  const name = typeof body.name === 'string' ? body.name.trim() : '';
  if (name === '' || name.length > MAX_NAME_LENGTH || UNSAFE.test(name)) {
    throw invalid(`"name" must be a non-empty string of at most ${MAX_NAME_LENGTH} printable characters`);
  }
  return { name, windowMinutes: parseWindow(body.windowMinutes), steps: parseSteps(body.steps) };
}
