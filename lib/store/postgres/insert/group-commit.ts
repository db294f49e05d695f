// Group commit in front of the PostgreSQL store's insert statement (see
// docs/architecture.md#postgresql-store). Every insert statement of a user upserts the same rollup
// counter rows (the user's types, routes and sessions of the hour), so two statements of one user
// running at once serialise on those row locks, each paying its own round trip and commit. Here
// a user has at most one statement in flight per instance: requests that arrive meanwhile wait and
// are merged into the next statement, whatever their number (up to a bound), as the sqlite store's
// journal shares one fsync among the requests waiting for it. Statements of different users do
// not share counter rows, and still run side by side.
import type { StoredEvent } from '../../../event.ts';

export interface GroupCommitLimits {
  /** Statements running at once (of different owners). */
  maxInflight: number;
  /** The most events one statement carries (a single larger request still goes alone). */
  maxEvents: number;
}

/**
 * Writes distinct events (no two with the same owner and id) in one transaction and resolves to
 * the ones it newly stored, the others having been stored before.
 */
export type WriteDistinct = (events: StoredEvent[]) => Promise<Set<StoredEvent>>;

interface Request {
  events: StoredEvent[];
  /** The owners of its events ('' for unowned), whose counter rows its statement writes. */
  owners: Set<string>;
  resolve: (stored: StoredEvent[]) => void;
  reject: (err: unknown) => void;
}

const ownerOf = (e: StoredEvent) => e.user_id ?? '';
const keyOf = (e: StoredEvent) => `${ownerOf(e)}\u0000${e.id}`;

/**
 * An insert function that groups requests into statements of `write`. Each request resolves to its
 * own events that were newly stored (as it would alone: an (owner, id) stored before, or earlier in
 * the same request, or by an earlier request of the same group, is not), and only once the
 * statement carrying it has committed; a statement that fails rejects every request in it, and
 * requests after it are written as usual. A user's requests are written in the order they arrived.
 */
export function groupCommit(write: WriteDistinct, limits: GroupCommitLimits): (events: StoredEvent[]) => Promise<StoredEvent[]> {
  let pending: Request[] = [];
  /** Owners with a statement in flight. */
  const busy = new Set<string>();
  let inflight = 0;

  const pump = () => {
    while (inflight < limits.maxInflight && pending.length) {
      const group: Request[] = [];
      const owners = new Set<string>();
      // Owners of requests left waiting in this pass: their later requests wait behind them.
      const held = new Set<string>();
      const rest: Request[] = [];
      let size = 0;
      for (const req of pending) {
        const blocked = [...req.owners].some((o) => busy.has(o) || held.has(o));
        if (blocked || (group.length > 0 && size + req.events.length > limits.maxEvents)) {
          for (const o of req.owners) held.add(o);
          rest.push(req);
          continue;
        }
        group.push(req);
        size += req.events.length;
        for (const o of req.owners) owners.add(o);
      }
      pending = rest;
      if (!group.length) return;
      for (const o of owners) busy.add(o);
      inflight++;
      void run(group).finally(() => {
        inflight--;
        for (const o of owners) busy.delete(o);
        pump();
      });
    }
  };

  const run = async (group: Request[]) => {
    // The first occurrence of an (owner, id) wins, within a request and across the group, in order.
    const first = new Map<string, StoredEvent>();
    for (const { events } of group) for (const e of events) if (!first.has(keyOf(e))) first.set(keyOf(e), e);
    let stored: Set<StoredEvent>;
    try {
      stored = await write([...first.values()]);
    } catch (err) {
      for (const req of group) req.reject(err);
      return;
    }
    for (const req of group) req.resolve(req.events.filter((e) => stored.has(e)));
  };

  return (events) => {
    if (!events.length) return Promise.resolve([]);
    return new Promise<StoredEvent[]>((resolve, reject) => {
      pending.push({ events, owners: new Set(events.map(ownerOf)), resolve, reject });
      pump();
    });
  };
}
