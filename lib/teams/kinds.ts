// Where a project's team records live in the record store: their kinds, and the owner they are
// kept under (the project's scope, not a user), so one read lists a project's members, invitations,
// share links or audit entries, and a project's records are never another user's.
export const MEMBER_KIND = 'member';
/** Under the member's own user id: finds the projects shared with them (the member record decides). */
export const MEMBERSHIP_KIND = 'membership';
export const INVITATION_KIND = 'invitation';
export const SHARE_KIND = 'share';
export const AUDIT_KIND = 'audit';
/** Kinds under the project's scope besides its members. */
export const SCOPED_KINDS = [INVITATION_KIND, SHARE_KIND, AUDIT_KIND] as const;

export const scopeOf = (projectId: string) => `project:${projectId}`;
