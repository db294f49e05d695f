// Issues in the record store (lib/records/types.ts): one record of kind 'issue' per issue, owned by
// the user whose events it groups, so issues last exactly as long as the record store does (memory,
// the sqlite companion file, the PostgreSQL table). Events nobody owns have no issues: nobody could
// read them.
import type { RecordStore } from '../records/types.ts';
import type { IssueStore } from './processor.ts';
import type { Issue } from './state.ts';

export const ISSUE_KIND = 'issue';
/** Issues kept per owner; past it, the ones seen least recently are deleted. */
export const ISSUES_PER_OWNER = 10_000;

export interface RecordIssueStoreOptions {
  /** Issues whose last event is older than this are deleted (the events themselves are gone by then). */
  retentionMs?: number;
  perOwner?: number;
}

export class RecordIssueStore implements IssueStore {
  constructor(private readonly records: RecordStore, private readonly options: RecordIssueStoreOptions = {}) {}

  async getIssue(owner: string | null, id: string): Promise<Issue | null> {
    if (owner === null) return null;
    return (await this.records.get<Issue>(ISSUE_KIND, id, owner))?.body ?? null;
  }

  async putIssue(issue: Issue): Promise<void> {
    if (issue.owner === null) return;
    await this.records.put([{ kind: ISSUE_KIND, id: issue.id, userId: issue.owner, body: issue }]);
  }

  /**
   * An owner's issues, most recently seen first. Retention happens here, on the owner's own read:
   * issues without an event in the retention period, and the least recently seen beyond the
   * per-owner bound, are deleted.
   */
  async listIssues(owner: string, now: number): Promise<Issue[]> {
    const all = (await this.records.list<Issue>(ISSUE_KIND, owner)).map((r) => r.body);
    all.sort((a, b) => (a.lastSeen < b.lastSeen ? 1 : a.lastSeen > b.lastSeen ? -1 : 0));
    const cutoff = this.options.retentionMs ? new Date(now - this.options.retentionMs).toISOString() : '';
    const perOwner = this.options.perOwner ?? ISSUES_PER_OWNER;
    const kept: Issue[] = [];
    const expired: Issue[] = [];
    for (const issue of all) (issue.lastSeen >= cutoff && kept.length < perOwner ? kept : expired).push(issue);
    for (const issue of expired) await this.records.delete(ISSUE_KIND, issue.id, owner);
    return kept;
  }
}
