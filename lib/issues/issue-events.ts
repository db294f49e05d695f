// An issue's events read from the event store by their positions (positions.ts), newest first: the
// walk behind the issue page's older/newer navigation and GET /api/issues/:id/events. Each event is
// read by its position (Store.scanErrors bounded to it), so a page costs a few record reads and one
// bounded store read per event, however many other errors the owner has.
import type { StoredEvent } from '../event.ts';
import type { RecordStore } from '../records/types.ts';
import type { Store } from '../store/types.ts';
import { positionAbove, positionsBelow } from './positions.ts';
import type { Issue } from './state.ts';

export interface Positioned { event: StoredEvent; seq: number }

/** The event stored at `seq` for `owner`, or null (removed by retention, or never this owner's error). */
async function eventAt(store: Store, owner: string, seq: number): Promise<StoredEvent | null> {
  const { events, seqs } = await store.scanErrors({ after: seq - 1, upTo: seq, limit: 1, userId: owner });
  return seqs[0] === seq ? events[0] : null;
}

/**
 * The issue's stored events below position `before` (all when undefined), newest first, at most
 * `limit`, and whether an older one is stored. Retention removes the oldest events first, so the
 * walk ends at the first position whose event is gone.
 */
export async function issueEventsBelow(store: Store, records: RecordStore, owner: string, issue: Issue, before: number | undefined, limit: number): Promise<{ events: Positioned[]; more: boolean }> {
  const seqs = await positionsBelow(records, owner, issue.id, issue.positions, before, limit + 1);
  const events: Positioned[] = [];
  for (const seq of seqs) {
    const event = await eventAt(store, owner, seq);
    if (!event) return { events, more: false };
    if (events.length === limit) return { events, more: true };
    events.push({ event, seq });
  }
  return { events, more: false };
}

/**
 * The position of the issue's event `id` among its newest `within` positions, or null. Read newest
 * first and stopped at the match: the page shows the latest event by default, one read.
 */
export async function positionOf(store: Store, records: RecordStore, owner: string, issue: Issue, id: string, within: number): Promise<number | null> {
  for (const seq of await positionsBelow(records, owner, issue.id, issue.positions, undefined, within)) {
    const event = await eventAt(store, owner, seq);
    if (!event) return null;
    if (event.id === id) return seq;
  }
  return null;
}

/** The issue's next newer event than position `seq` (its position), or null. */
export async function newerPosition(store: Store, records: RecordStore, owner: string, issue: Issue, seq: number): Promise<number | null> {
  const next = await positionAbove(records, owner, issue.id, issue.positions, seq);
  return next !== null && (await eventAt(store, owner, next)) ? next : null;
}
