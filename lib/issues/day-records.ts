// The counters of an issue's closed days (activity.ts), one record each beside the issue, so the
// issue record itself stays small while a late event of any kept day is still counted exactly.
//
// A record's id is the issue's id and a slot, the day's number modulo DAY_SLOTS: an issue never has
// more than DAY_SLOTS of them, a day reuses the slot of the day DAY_SLOTS days before it (whose
// events retention has removed by then), and nothing has to be deleted as days pass. A slot
// holding another day than the one asked for is no counter of it. Bounded: at most DAY_SLOTS
// records of two counters each, and a counter is at most EXACT_SESSIONS 32-bit hashes and a
// 64-register sketch (about 1.2 KB as JSON), so under 250 KB per issue at worst and a few hundred
// bytes for the usual issue whose days have few sessions.
import type { RecordStore, StoredRecord } from '../records/types.ts';
import { type ClosedDays, closedDays, type IssueActivity, type OpenDay } from './activity.ts';

export const DAY_KIND = 'issue-day';
/** More than the days the series keeps (DAILY_DAYS), so two kept days never share a slot unless 100 days apart. */
export const DAY_SLOTS = 100;

const dayNumber = (day: string) => Math.floor(Date.parse(`${day}T00:00:00.000Z`) / 86_400_000);
export const dayRecordId = (issueId: string, day: string) => `${issueId}.${((dayNumber(day) % DAY_SLOTS) + DAY_SLOTS) % DAY_SLOTS}`;

/**
 * The days among `days` (of events about to be applied) that may be closed days of the issue with
 * `activity`: older than its newest open day and not open. Days newer than that are open or new.
 */
export function closedCandidates(activity: IssueActivity | undefined, days: Iterable<string>): string[] {
  const open = activity?.open ?? [];
  if (!open.length) return [];
  const newest = open.reduce((m, o) => (o.day > m ? o.day : m), '');
  const out = new Set<string>();
  for (const d of days) if (d < newest && !open.some((o) => o.day === d)) out.add(d);
  return [...out];
}

/** The stored counters of those days of an issue (a slot of another day is left out). */
export async function loadClosedDays(records: RecordStore, owner: string, issueId: string, days: readonly string[]): Promise<ClosedDays> {
  const found = await Promise.all(days.map((d) => records.get<OpenDay>(DAY_KIND, dayRecordId(issueId, d), owner)));
  return closedDays(found.filter((r): r is StoredRecord<OpenDay> => r !== null && days.includes(r.body.day)).map((r) => r.body));
}

/** The records to write for the counters addActivity changed. */
export function changedDayRecords(owner: string, issueId: string, closed: ClosedDays): StoredRecord<OpenDay>[] {
  return [...closed.changed].map((d) => ({ kind: DAY_KIND, id: dayRecordId(issueId, d), userId: owner, body: closed.counters.get(d)! }));
}

/** Removes an issue's day records (the issue is deleted): the slots of the days it lists. */
export async function deleteDayRecords(records: RecordStore, owner: string, issueId: string, activity: IssueActivity | undefined): Promise<void> {
  const ids = new Set((activity?.days ?? []).map(([d]) => dayRecordId(issueId, d)));
  for (const id of ids) await records.delete(DAY_KIND, id, owner);
}
