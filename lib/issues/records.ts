// Issues in the record store (lib/records/types.ts): one record of kind 'issue' per issue, owned by
// the user whose events it groups, so issues last exactly as long as the record store does (memory,
// the sqlite companion file, the PostgreSQL table). Events nobody owns have no issues: nobody could
// read them.
import type { RecordStore, StoredRecord } from '../records/types.ts';
import { deleteDayRecords } from './day-records.ts';
import { deletePositions } from './positions.ts';
import type { Issue } from './state.ts';

export const ISSUE_KIND = 'issue';
/** Issues kept per owner; a new fingerprint past it is counted in the project's overflow issue. */
export const ISSUES_PER_OWNER = 10_000;

/** The fingerprint of a project's overflow issue: errors of new fingerprints once the owner is at the bound. */
export const OVERFLOW_FINGERPRINT = 'watchtower:overflow';

export interface RecordIssueStoreOptions {
  /** Issues whose last event is older than this are deleted (the events themselves are gone by then). */
  retentionMs?: number;
  perOwner?: number;
}

export class RecordIssueStore {
  /** Issues per owner, counted once from the record store and then kept as issues are made. */
  private readonly counts = new Map<string, number>();

  constructor(private readonly records: RecordStore, private readonly options: RecordIssueStoreOptions = {}) {}

  get perOwner(): number {
    return this.options.perOwner ?? ISSUES_PER_OWNER;
  }

  async getIssue(owner: string | null, id: string): Promise<Issue | null> {
    if (owner === null) return null;
    return (await this.records.get<Issue>(ISSUE_KIND, id, owner))?.body ?? null;
  }

  async putIssue(issue: Issue): Promise<void> {
    await this.commit([issue], []);
  }

  /**
   * Whether `owner` may have one more issue, with `making` more about to be made (the bound holds
   * when an issue is made, not later).
   */
  async hasRoom(owner: string, making = 0): Promise<boolean> {
    return (await this.countOf(owner)) + making < this.perOwner;
  }

  /**
   * Writes issues, and whatever must be durable with them (grouping's progress), in one put: all or
   * none. `created` are the ones that did not exist before.
   */
  async commit(issues: readonly Issue[], also: readonly StoredRecord[], created: readonly Issue[] = []): Promise<void> {
    const records: StoredRecord[] = [...also];
    for (const issue of issues) if (issue.owner !== null) records.push({ kind: ISSUE_KIND, id: issue.id, userId: issue.owner, body: issue });
    if (!records.length) return;
    await this.records.put(records);
    for (const issue of created) {
      const n = this.counts.get(issue.owner!);
      if (n !== undefined) this.counts.set(issue.owner!, n + 1);
    }
  }

  /**
   * An owner's issues, most recently seen first. Retention happens here, on the owner's own read:
   * issues without an event in the retention period, and the least recently seen beyond the
   * per-owner bound (issues made by earlier versions, before the bound held at creation), are deleted.
   */
  async listIssues(owner: string, now: number): Promise<Issue[]> {
    const all = (await this.records.list<Issue>(ISSUE_KIND, owner)).map((r) => r.body);
    all.sort((a, b) => (a.lastSeen < b.lastSeen ? 1 : a.lastSeen > b.lastSeen ? -1 : 0));
    const cutoff = this.options.retentionMs ? new Date(now - this.options.retentionMs).toISOString() : '';
    const kept: Issue[] = [];
    const expired: Issue[] = [];
    let counted = 0;
    for (const issue of all) {
      // The overflow issues (one per project at most) come on top of the bound.
      const room = issue.fingerprint === OVERFLOW_FINGERPRINT || counted++ < this.perOwner;
      (issue.lastSeen >= cutoff && room ? kept : expired).push(issue);
    }
    for (const issue of expired) {
      await this.records.delete(ISSUE_KIND, issue.id, owner);
      // What was kept beside it: the positions of its events and its closed days' counters.
      await deletePositions(this.records, owner, issue.id, issue.positions);
      await deleteDayRecords(this.records, owner, issue.id, issue.activity);
    }
    if (expired.length) this.counts.delete(owner);
    return kept;
  }

  private async countOf(owner: string): Promise<number> {
    let n = this.counts.get(owner);
    if (n === undefined) {
      n = await this.records.count(ISSUE_KIND, owner);
      // Bounded like the owners it describes: forgetting one only costs a count.
      if (this.counts.size >= 100_000) this.counts.clear();
      this.counts.set(owner, n);
    }
    return n;
  }
}
