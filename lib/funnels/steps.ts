// What a funnel step is and which events it matches (docs/api.md#funnels). Pure and a leaf besides
// the event keys: the reference evaluator, every store and the route share these definitions, so
// stores cannot disagree about what a step means, only about how they count.
import type { StoredEvent } from '../event.ts';
import { routeKey } from '../event-keys.ts';

/** A page step (a route pattern, see patternRegex) or a custom event step (an exact name). */
export type FunnelStep = { page: string } | { event: string };

/** Fewest and most steps a funnel has. */
export const MIN_STEPS = 2;
export const MAX_STEPS = 8;
/** Longest page pattern or event name, in UTF-16 code units. */
export const MAX_STEP_LENGTH = 200;

/**
 * The name of a custom event (type `custom`): its `name` field, else `eventName`, else `data.name`,
 * the first of them that is a non-empty string; null when none is (the event matches no event step).
 */
export function customEventName(e: Pick<StoredEvent, 'data'> & Record<string, unknown>): string | null {
  for (const v of [e.name, e.eventName, e.data?.name]) if (typeof v === 'string' && v !== '') return v;
  return null;
}

/**
 * A page pattern as an anchored regular expression source, for JavaScript and PostgreSQL alike.
 * Patterns follow Plausible's goals: `*` matches any run of characters within one path segment
 * (no `/`), `**` any run at all (across segments); every other character matches itself, case
 * included. So `/blog/*` matches `/blog/a` but not `/blog/a/b`, and `/blog/**` matches both.
 * ASCII punctuation is escaped with a backslash, which both dialects read as the character itself.
 * `any` is what `**` becomes: PostgreSQL's `.` matches newlines, JavaScript needs `[\s\S]`.
 */
export function patternRegex(pattern: string, any: string): string {
  let out = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        out += any;
        i++;
      } else out += '[^/]*';
    } else out += /[!-\/:-@[-`{-~]/.test(c) ? '\\' + c : c;
  }
  return out + '$';
}

/** The JavaScript form of patternRegex. */
export const patternMatcher = (pattern: string): RegExp => new RegExp(patternRegex(pattern, '[\\s\\S]*'));

/** What the funnel reads of an event, whichever store it comes from. */
export interface FunnelEventFields {
  type: string;
  /** The route key of a pageload (routeKey), else null. */
  page: string | null;
  /** The custom event name of a custom event (customEventName), else null. */
  name: string | null;
}

/** The funnel fields of a stored event. */
export function funnelFields(e: StoredEvent): FunnelEventFields {
  return {
    type: e.type,
    page: e.type === 'pageload' ? routeKey(e) : null,
    name: e.type === 'custom' ? customEventName(e) : null,
  };
}

/**
 * The steps an event matches, as a bit mask (bit k: step k + 1). A page step matches pageloads
 * whose route key matches its pattern; an event step, custom events of exactly that name.
 */
export function stepMatcher(steps: readonly FunnelStep[]): (f: FunnelEventFields) => number {
  const tests = steps.map((s) => {
    if ('page' in s) {
      const re = patternMatcher(s.page);
      return (f: FunnelEventFields) => f.type === 'pageload' && typeof f.page === 'string' && re.test(f.page);
    }
    return (f: FunnelEventFields) => f.type === 'custom' && f.name === s.event;
  });
  return (f) => {
    let mask = 0;
    for (let k = 0; k < tests.length; k++) if (tests[k](f)) mask |= 1 << k;
    return mask;
  };
}

/** The event types a funnel of these steps reads (others match no step). */
export const stepTypes = (steps: readonly FunnelStep[]): string[] =>
  [...new Set(steps.map((s) => ('page' in s ? 'pageload' : 'custom')))];
