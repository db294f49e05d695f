// Distinct sessions and users of an issue per UTC day, next to its events per day (`daily`).
// Distinct counts need the ids seen, which an issue rewritten on every slice cannot carry for 90
// days: the issue keeps the counters (sessions.ts, small sketch) of its OPEN_DAYS latest days, and
// the counter of an older ("closed") day lives in a record of its own (lib/issues/day-records.ts),
// written when the day closes and read again only when a late event of that day comes (a long
// backlog across midnight). So every kept day's numbers are exact up to EXACT_SESSIONS distinct ids
// a day and estimated past it, however late its events are grouped.
import { addHashed, DAY_SKETCH_BITS, emptySessions, type IdHash, type SessionCount } from './sessions.ts';

export const OPEN_DAYS = 2;

export interface OpenDay {
  day: string;
  sessions: SessionCount;
  users: SessionCount;
}

export interface IssueActivity {
  /** `[YYYY-MM-DD, distinct sessions, distinct users]`, oldest first, the days of `daily`. */
  days: [string, number, number][];
  open: OpenDay[];
}

export const emptyActivity = (): IssueActivity => ({ days: [], open: [] });

/**
 * Counters of closed days, as the caller loaded them (day-records.ts), for addActivity to update:
 * `changed` lists the days whose counter must be written back (updated by a late event, or closed
 * just now by a newer day). A closed day absent from `counters` had no counter to load: it starts
 * from nothing (its events before, if any, were counted by a version that kept no counter).
 */
export interface ClosedDays {
  counters: Map<string, OpenDay>;
  changed: Set<string>;
}

export const closedDays = (counters: Iterable<OpenDay> = []): ClosedDays => ({
  counters: new Map([...counters].map((c) => [c.day, c])),
  changed: new Set(),
});

const emptyDay = (day: string): OpenDay => ({ day, sessions: emptySessions(DAY_SKETCH_BITS), users: emptySessions(DAY_SKETCH_BITS) });

/** A copy addActivity may change (the counters themselves are never changed, only replaced). */
export const copyActivity = (a: IssueActivity | undefined): IssueActivity => ({
  days: (a?.days ?? []).map(([d, s, u]): [string, number, number] => [d, s, u]),
  open: (a?.open ?? []).map((o) => ({ ...o })),
});

/**
 * One event of `day`, with its session's and user's hashes (hashId), on a copy (copyActivity) that
 * is changed. `keep` is how many days the series keeps (the days of `daily`). Exact up to
 * EXACT_SESSIONS a day, estimated past it, like the issue's own session count. Without `closed`,
 * an event of a closed day only makes sure the day is listed (its counter is not at hand).
 */
export function addActivity(a: IssueActivity, day: string, session: IdHash | null, user: IdHash | null, keep: number, closed?: ClosedDays): void {
  let open = a.open.find((o) => o.day === day);
  let counter: OpenDay;
  if (open) counter = open;
  else if (a.open.length >= OPEN_DAYS && a.open.every((o) => o.day > day)) {
    if (!closed) {
      entry(a, day, keep);
      return;
    }
    counter = { ...(closed.counters.get(day) ?? emptyDay(day)) };
    closed.counters.set(day, counter);
    closed.changed.add(day);
  } else {
    counter = open = emptyDay(day);
    const all = [...a.open, open].sort((x, y) => (x.day < y.day ? -1 : 1));
    a.open = all.slice(-OPEN_DAYS);
    // The day that closes now keeps its counter in a record, for late events of it.
    for (const gone of all.slice(0, -OPEN_DAYS)) {
      closed?.counters.set(gone.day, gone);
      closed?.changed.add(gone.day);
    }
  }
  if (session) counter.sessions = addHashed(counter.sessions, session);
  if (user) counter.users = addHashed(counter.users, user);
  const e = entry(a, day, keep);
  // A day counted by a version that kept no counter for it never shows fewer than it did.
  e[1] = open ? counter.sessions.count : Math.max(e[1], counter.sessions.count);
  e[2] = open ? counter.users.count : Math.max(e[2], counter.users.count);
}

function entry(a: IssueActivity, day: string, keep: number): [string, number, number] {
  // Nearly always the latest day: looked at first.
  const last = a.days[a.days.length - 1];
  let e = last?.[0] === day ? last : a.days.find(([d]) => d === day);
  if (!e) {
    a.days.push((e = [day, 0, 0]));
    a.days.sort((x, y) => (x[0] < y[0] ? -1 : 1));
    if (a.days.length > keep) a.days.splice(0, a.days.length - keep);
  }
  return e;
}

/** The series as the API shows it: `[day, sessions, users]`, without the counters. */
export const publicActivity = (a: IssueActivity | undefined) => ({
  sessions: (a?.days ?? []).map(([d, s]): [string, number] => [d, s]),
  users: (a?.days ?? []).map(([d, , u]): [string, number] => [d, u]),
});
