// The funnel reference: computed from raw events the plainest way, sharing no counting code with
// the stores (./count.ts), which the contract and property tests hold to it.
import type { StoredEvent } from '../event.ts';
import type { FunnelCounts, FunnelQuery } from './count.ts';
import { funnelFields, stepMatcher } from './steps.ts';

/**
 * Sessions that reached each step of the query, over events given in insertion order (oldest
 * first). An event counts when it is the query's owner's, of its project, has a session and was
 * received in [from, to). Within a session, event i ends a chain of k steps when it matches step
 * k and either k = 1, or an earlier event ends a chain of k - 1 steps and was received at most
 * windowMs before it. A session reached step k when some event ends a chain of k steps.
 */
export function referenceFunnel(events: readonly StoredEvent[], q: FunnelQuery): FunnelCounts {
  const match = stepMatcher(q.steps);
  const bySession = new Map<string, { t: number; mask: number }[]>();
  for (const e of events) {
    if (e.user_id !== q.userId || e.projectId !== q.projectId || !e.sessionId) continue;
    const t = Date.parse(e.receivedAt);
    if (!(t >= q.from && t < q.to)) continue;
    let list = bySession.get(e.sessionId);
    if (!list) bySession.set(e.sessionId, (list = []));
    list.push({ t, mask: match(funnelFields(e)) });
  }
  const n = q.steps.length;
  const out = new Array<number>(n).fill(0);
  for (const list of bySession.values()) {
    // ends[i][k]: event i ends a chain of k + 1 steps.
    const ends = list.map(() => new Array<boolean>(n).fill(false));
    let depth = 0;
    list.forEach((e, i) => {
      for (let k = 0; k < n; k++) {
        if (!(e.mask & (1 << k))) continue;
        const ok = k === 0 || list.some((p, j) => j < i && ends[j][k - 1] && e.t - p.t <= q.windowMs);
        if (ok) {
          ends[i][k] = true;
          depth = Math.max(depth, k + 1);
        }
      }
    });
    for (let k = 0; k < depth; k++) out[k]++;
  }
  return out;
}
