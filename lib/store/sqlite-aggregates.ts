// Per-user aggregates kept up to date on insert and on retention pruning, so /api/stats does not
// scan a user's events: at 1M events the naive SQL took seconds. Everything here
// reproduces computeStats exactly, percentiles included.
import { LATENCY_POINTS, UNKNOWN, type LatencyPoint } from '../stats.ts';

const DAY_MS = 86_400_000;

/** The columns of one event the aggregates need (also what a pruned row is read back as). */
export interface AggRow {
  seq: number;
  type: string;
  version: string | null;
  receivedMs: number;
  session: string | null;
  route: string | null;
  duration: number | null;
  ttfb: number | null;
  timestamp: string;
  rating: number | null;
}

/**
 * Exact multiset of numbers with cheap insert/remove and nearest-rank percentiles. Inserts and
 * removals are buffered and merged into sorted (value, count) arrays on the next read, so a read
 * costs O(distinct values + changes·log changes) and an insert O(1).
 */
export class Multiset {
  private values = new Float64Array(0);
  private counts = new Float64Array(0);
  private adds: number[] = [];
  private removes: number[] = [];
  size = 0;

  add(v: number) {
    this.adds.push(v);
    this.size++;
  }

  remove(v: number) {
    this.removes.push(v);
    this.size--;
  }

  private settle() {
    if (this.adds.length === 0 && this.removes.length === 0) return;
    const adds = Float64Array.from(this.adds).sort();
    this.adds = [];
    const n = this.values.length;
    const values = new Float64Array(n + adds.length);
    const counts = new Float64Array(n + adds.length);
    let i = 0, j = 0, k = 0;
    while (i < n || j < adds.length) {
      let v: number, c: number;
      if (j >= adds.length || (i < n && this.values[i] <= adds[j])) {
        v = this.values[i];
        c = this.counts[i++];
      } else {
        v = adds[j++];
        c = 1;
      }
      if (k > 0 && values[k - 1] === v) counts[k - 1] += c;
      else {
        values[k] = v;
        counts[k++] = c;
      }
    }
    for (const r of this.removes) {
      const at = lowerBound(values, k, r);
      if (at < k && values[at] === r) counts[at]--;
    }
    this.removes = [];
    // Drop values whose count reached zero.
    let w = 0;
    for (let r = 0; r < k; r++) {
      if (counts[r] > 0) {
        values[w] = values[r];
        counts[w++] = counts[r];
      }
    }
    this.values = values.subarray(0, w);
    this.counts = counts.subarray(0, w);
  }

  /** Nearest-rank percentiles (same definition as stats.ts `percentile`) for several p at once. */
  percentiles(ps: number[]): number[] {
    this.settle();
    const n = this.size;
    if (n === 0) return ps.map(() => 0);
    const ranks = ps.map((p) => Math.min(n, Math.max(1, Math.ceil((p / 100) * n))));
    const out = new Array<number>(ps.length).fill(0);
    let seen = 0;
    for (let i = 0, pending = ps.length; i < this.values.length && pending > 0; i++) {
      const before = seen;
      seen += this.counts[i];
      for (let q = 0; q < ranks.length; q++) {
        if (ranks[q] > before && ranks[q] <= seen) {
          out[q] = this.values[i];
          pending--;
        }
      }
    }
    return out;
  }
}

function lowerBound(a: Float64Array, n: number, v: number): number {
  let lo = 0, hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface RouteAgg {
  durations: Multiset;
  sum: number;
  /** Most recent samples, oldest first, with their row number so pruning can drop them. */
  points: (LatencyPoint & { seq: number })[];
}

const inc = (m: Map<string, number>, k: string, by: number) => {
  const v = (m.get(k) ?? 0) + by;
  if (v === 0) m.delete(k);
  else m.set(k, v);
};

export class UserAgg {
  total = 0;
  byType = new Map<string, number>();
  errorsByVersion = new Map<string, number>();
  routes = new Map<string, RouteAgg>();
  latencySum = 0;
  latencyCount = 0;
  feedback = [0, 0, 0, 0, 0];
  feedbackSum = 0;
  /** UTC day number → events that day and sessions seen that day (with multiplicity). */
  days = new Map<number, { events: number; sessions: Map<string, number> }>();

  apply(r: AggRow, sign: 1 | -1) {
    this.total += sign;
    inc(this.byType, r.type, sign);
    if (r.type === 'error') inc(this.errorsByVersion, r.version ?? UNKNOWN, sign);
    const dayNo = Math.floor(r.receivedMs / DAY_MS);
    let day = this.days.get(dayNo);
    if (!day) this.days.set(dayNo, (day = { events: 0, sessions: new Map() }));
    day.events += sign;
    if (r.session) inc(day.sessions, r.session, sign);
    if (day.events === 0) this.days.delete(dayNo);
    if (r.duration !== null && r.route !== null) {
      let route = this.routes.get(r.route);
      if (!route) this.routes.set(r.route, (route = { durations: new Multiset(), sum: 0, points: [] }));
      if (sign === 1) {
        route.durations.add(r.duration);
        route.sum += r.duration;
        route.points.push({ duration: r.duration, ttfb: r.ttfb, timestamp: r.timestamp, seq: r.seq });
        if (route.points.length > LATENCY_POINTS) route.points.shift();
      } else {
        route.durations.remove(r.duration);
        route.sum -= r.duration;
        // Pruning removes the oldest rows first, so a pruned sample can only be the oldest point.
        if (route.points.length && route.points[0].seq === r.seq) route.points.shift();
        if (route.durations.size === 0) this.routes.delete(r.route);
      }
      this.latencySum += sign * r.duration;
      this.latencyCount += sign;
    }
    if (r.rating !== null) {
      this.feedback[r.rating - 1] += sign;
      this.feedbackSum += sign * r.rating;
    }
  }
}
