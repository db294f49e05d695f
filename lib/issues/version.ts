// Ordering deploy versions, for "resolved in version X": an error from a later version is a regression.

const SEMVER = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]*)?$/;

/**
 * Compares two versions: negative when a is older, 0 when equal, positive when a is later, and
 * null when they cannot be ordered.
 * - Semantic versions (`1.4.0`, `v2.0.0-rc.1`, also `1.4`) follow semver precedence: numbers, then a
 *   pre-release before its release; build metadata (`+…`) is ignored.
 * - Otherwise, versions that differ only in their numbers (`build-99` / `build-123`,
 *   `2026.05.01` / `2026.06.01`) compare number by number.
 * - Anything else (commit hashes, names) cannot be ordered: null.
 */
export function compareVersions(a: string, b: string): number | null {
  if (a === b) return 0;
  const sa = SEMVER.exec(a);
  const sb = SEMVER.exec(b);
  if (sa && sb) {
    for (let i = 1; i <= 3; i++) {
      const d = Number(sa[i] ?? 0) - Number(sb[i] ?? 0);
      if (d !== 0) return Math.sign(d);
    }
    return comparePrerelease(sa[4], sb[4]);
  }
  const na = a.split(/(\d+)/);
  const nb = b.split(/(\d+)/);
  // Same text around the numbers: odd indices are the numbers.
  if (na.length !== nb.length || na.some((part, i) => i % 2 === 0 && part !== nb[i])) return null;
  for (let i = 1; i < na.length; i += 2) {
    const d = Number(na[i]) - Number(nb[i]);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** Semver rule 11: no pre-release ranks above any; identifiers compare numerically or in ASCII order. */
function comparePrerelease(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === y) continue;
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    if (nx && ny) return Math.sign(Number(x) - Number(y));
    if (nx !== ny) return nx ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return Math.sign(pa.length - pb.length);
}

/**
 * Whether `version` is later than `fixedIn`. Versions that cannot be ordered count as later: a fix
 * was declared in `fixedIn`, and the error came from another build.
 */
export function isLaterVersion(version: string, fixedIn: string): boolean {
  const c = compareVersions(version, fixedIn);
  return c === null ? true : c > 0;
}
