// Page patterns of goals (and funnel steps): a route key with wildcards. `*` stands for any run of
// characters within one path segment (no `/`), `**` for any run including `/`, so `/blog/*` is a
// post and not a post's comments, and `/docs/**` is everything below /docs/. The rest matches
// exactly. Compiled once into a RegExp with every other character escaped: a pattern can never be
// a regular expression of the sender's choosing.

export const MAX_PATTERN_LENGTH = 200;

/** A valid pattern: starts with `/`, at most MAX_PATTERN_LENGTH characters, no control characters. */
export function isPagePattern(v: unknown): v is string {
  return typeof v === 'string' && v.startsWith('/') && v.length <= MAX_PATTERN_LENGTH && !/[\u0000-\u001f]/.test(v);
}

/** A predicate over route keys. */
export function pageMatcher(pattern: string): (route: string) => boolean {
  if (!pattern.includes('*')) return (route) => route === pattern;
  const source = pattern
    .split('**')
    .map((part) => part.split('*').map(escape).join('[^/]*'))
    .join('.*');
  const re = new RegExp(`^${source}$`, 's');
  return (route) => re.test(route);
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
