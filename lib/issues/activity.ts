// Distinct sessions and users of an issue per UTC day, next to its events per day (`daily`).
// Distinct counts need the ids seen, which an issue rewritten on every slice cannot keep for 90
// days: the counters (sessions.ts, small sketch) of the OPEN_DAYS latest days are kept, older days
// keep their numbers only. Errors are grouped in the order they were stored, which is the order of
// their receive times give or take a batch, so an event of a closed day only happens across
// midnight under a long backlog; it then leaves that day's numbers as they are.
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

/** A copy addActivity may change (the counters themselves are never changed, only replaced). */
export const copyActivity = (a: IssueActivity | undefined): IssueActivity => ({
  days: (a?.days ?? []).map(([d, s, u]): [string, number, number] => [d, s, u]),
  open: (a?.open ?? []).map((o) => ({ ...o })),
});

/**
 * One event of `day`, with its session's and user's hashes (hashId), on a copy (copyActivity) that
 * is changed. `keep` is how many days the series keeps (the days of `daily`). Exact up to
 * EXACT_SESSIONS a day, estimated past it, like the issue's own session count.
 */
export function addActivity(a: IssueActivity, day: string, session: IdHash | null, user: IdHash | null, keep: number): void {
  let open = a.open.find((o) => o.day === day);
  if (!open) {
    if (a.open.length >= OPEN_DAYS && a.open.every((o) => o.day > day)) {
      // A closed day: its ids are gone, so this event cannot be told apart. Only make sure the day is listed.
      entry(a, day, keep);
      return;
    }
    open = { day, sessions: emptySessions(DAY_SKETCH_BITS), users: emptySessions(DAY_SKETCH_BITS) };
    a.open = [...a.open, open].sort((x, y) => (x.day < y.day ? -1 : 1)).slice(-OPEN_DAYS);
  }
  if (session) open.sessions = addHashed(open.sessions, session);
  if (user) open.users = addHashed(open.users, user);
  const e = entry(a, day, keep);
  e[1] = open.sessions.count;
  e[2] = open.users.count;
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
