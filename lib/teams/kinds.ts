// Where a project's team records live in the record store: their kinds, and the owner they are
// kept under (the project's scope, not a user), so one read lists a project's members, invitations,
// share links or audit entries, and a project's records are never another user's.
import type { RecordStore, StoredRecord } from '../records/types.ts';

export const MEMBER_KIND = 'member';
/** Under the member's own user id: finds the projects shared with them (the member record decides). */
export const MEMBERSHIP_KIND = 'membership';
export const INVITATION_KIND = 'invitation';
export const SHARE_KIND = 'share';
export const AUDIT_KIND = 'audit';
/** A project's goals (lib/goals/goals.ts). */
export const GOAL_KIND = 'goal';
/** Saved funnels (lib/funnels/saved.ts). */
export const FUNNEL_KIND = 'funnel';
/** Kinds under the project's scope besides its members: a deleted project's are dropped with it. */
export const SCOPED_KINDS = [INVITATION_KIND, SHARE_KIND, AUDIT_KIND, GOAL_KIND, FUNNEL_KIND] as const;

export const scopeOf = (projectId: string) => `project:${projectId}`;

/** What invitations and share links have in common: a public id, and when they were made. */
interface Listed {
  id: string;
  createdAt: string;
}

/** A project's records of a kind (invitations, share links), newest first, with their record ids (the token hashes). */
export async function listScoped<T extends Listed>(records: RecordStore, kind: string, projectId: string): Promise<StoredRecord<T>[]> {
  const all = await records.list<T>(kind, scopeOf(projectId));
  return all.sort((a, b) => b.body.createdAt.localeCompare(a.body.createdAt) || a.body.id.localeCompare(b.body.id));
}
