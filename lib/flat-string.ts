// A string held for long (a key of a set or cache kept for hours) should be its own flat copy.
// V8 may keep a string built at runtime as a tree of concatenated parts, as a slice that holds the
// whole string it was cut from (a header, a 64 KiB event field), or as two bytes a character where
// one would do (a decoded query value); a string parsed from JSON is none of these.

/** A flat, narrow copy of `s` that holds no other string. Costs about a µs per 100 characters. */
export function flatCopy(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string;
}
