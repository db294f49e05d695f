// Who may do what on a project: decided here and nowhere else (docs/api.md#teams). A pure function
// of the project's members and the asker, so the access matrix test can enumerate it and every
// route asks it the same question.

export type Role = 'owner' | 'admin' | 'member' | 'viewer';
/** Weakest first: a role may do what every role before it may. */
export const ROLES: readonly Role[] = ['viewer', 'member', 'admin', 'owner'];

/**
 * What a request does to a project: read it (events, stats, streams, issues, members, goals,
 * funnels), triage its issues, keep alert rules on it, keep its goals and saved funnels, manage it
 * (members, invitations, share links, keys, source maps, settings, the audit trail), or own it
 * (delete, transfer).
 */
export type Action = 'read' | 'triage' | 'alerts' | 'analyse' | 'manage' | 'own';

export const LEAST_ROLE: Readonly<Record<Action, Role>> = { read: 'viewer', triage: 'member', alerts: 'member', analyse: 'member', manage: 'admin', own: 'owner' };

export interface Membership {
  userId: string;
  role: Role;
  addedAt: string;
}

export interface AccessInput {
  /** The signed-in user; null for anyone else (a share token is not a user). */
  userId: string | null;
  /** The project, or null when there is none by that id. */
  project: { creator: string; createdAt: string } | null;
  /** Its stored members (lib/teams/teams.ts). */
  members: readonly Membership[];
  action: Action;
}

/**
 * `allowed` with the asker's role, or not: `role` null means the asker is nobody to the project
 * (the route answers as for a project that does not exist); a role means they may see it but not
 * do this (403).
 */
export type Decision = { allowed: true; role: Role } | { allowed: false; role: Role | null };

export const isRole = (v: unknown): v is Role => typeof v === 'string' && (ROLES as readonly string[]).includes(v);
export const atLeast = (role: Role, least: Role) => ROLES.indexOf(role) >= ROLES.indexOf(least);

/**
 * The members as they count: a project made before teams existed has no stored members, and one
 * with no stored owner is its creator's (a project always has exactly one owner).
 */
export function effectiveMembers(project: { creator: string; createdAt: string }, members: readonly Membership[]): Membership[] {
  if (members.some((m) => m.role === 'owner')) return [...members];
  return [{ userId: project.creator, role: 'owner', addedAt: project.createdAt }, ...members.filter((m) => m.userId !== project.creator)];
}

export function decide({ userId, project, members, action }: AccessInput): Decision {
  if (userId === null || project === null) return { allowed: false, role: null };
  const role = effectiveMembers(project, members).find((m) => m.userId === userId)?.role ?? null;
  if (role === null) return { allowed: false, role: null };
  return atLeast(role, LEAST_ROLE[action]) ? { allowed: true, role } : { allowed: false, role };
}
