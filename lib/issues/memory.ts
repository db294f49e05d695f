// Issues in memory, for the memory store (whose events are in memory too) and tests. Bounded per
// owner: the issues seen least recently are forgotten first.
import type { IssueStore } from './processor.ts';
import type { Issue } from './state.ts';

export const MEMORY_ISSUES_PER_OWNER = 10_000;

export class MemoryIssueStore implements IssueStore {
  /** owner ('' for none) → issue id → issue, least recently seen first. */
  private owners = new Map<string, Map<string, Issue>>();

  constructor(readonly perOwner = MEMORY_ISSUES_PER_OWNER) {}

  async getIssue(owner: string | null, id: string): Promise<Issue | null> {
    return this.owners.get(owner ?? '')?.get(id) ?? null;
  }

  async putIssue(issue: Issue): Promise<void> {
    const key = issue.owner ?? '';
    let issues = this.owners.get(key);
    if (!issues) this.owners.set(key, (issues = new Map()));
    issues.delete(issue.id); // re-inserted last: the map's order is recency
    issues.set(issue.id, issue);
    if (issues.size > this.perOwner) issues.delete(issues.keys().next().value!);
  }

  /** An owner's issues, most recently seen first. */
  async listIssues(owner: string | null): Promise<Issue[]> {
    return [...(this.owners.get(owner ?? '')?.values() ?? [])].sort((a, b) => (a.lastSeen < b.lastSeen ? 1 : a.lastSeen > b.lastSeen ? -1 : 0));
  }
}
