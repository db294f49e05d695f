// Arrays bound as one text parameter each, for every PostgreSQL module of the store.
/**
 * A PostgreSQL array literal, sent as one bound text parameter and cast in SQL (::text[], ::float8[]).
 * Elements are always double-quoted with \\ and " escaped, so no value can change the array's shape.
 */
export function pgArray(values: readonly (string | number | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i) out += ',';
    out += v === null ? 'NULL' : typeof v === 'number' ? String(v) : '"' + v.replace(/[\\"]/g, '\\$&') + '"';
  }
  return out + '}';
}
