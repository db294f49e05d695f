// Members of projects, kept in the record store (docs/api.md#teams). Each member is one record
// (kind 'member', id `<project>:<user>`) held under the project's scope, so one read lists a
// project's members; a second record under the user (kind 'membership') lists a user's shared
// projects. The member record decides; the membership record only finds it. Nothing is cached:
// every check reads the store, so a removal on one instance is honoured by every instance sharing
// its database on the next request.
import { HttpError } from '../http.ts';
import { PROJECT_KIND, projectNotFound, type Project } from '../projects.ts';
import type { RecordStore, StoredRecord } from '../records/types.ts';
import { atLeast, decide, effectiveMembers, LEAST_ROLE, type Action, type Membership, type Role } from './access.ts';
import { createAudit, type Audit } from './audit.ts';
import { MEMBER_KIND, MEMBERSHIP_KIND, SCOPED_KINDS, scopeOf } from './kinds.ts';

export const MAX_MEMBERS_PER_PROJECT = 200;

/** What an allowed request works with: the project, whose events it reads, and the asker's role. */
export interface ProjectAccess {
  project: Project;
  /** The user the project's events belong to (its creator): they stay theirs whatever the roles. */
  owner: string;
  /** Who asked, and their role. */
  userId: string;
  role: Role;
}

export interface Teams {
  /** The project if `userId` may do `action` on it; else 404 project_not_found (nobody to it) or 403. */
  access(userId: string | null, projectId: string, action: Action): Promise<ProjectAccess>;
  /** The user's role on the project, or null (no project, or nobody to it). */
  roleOf(userId: string, projectId: string): Promise<ProjectAccess | null>;
  /** Every project the user has a role on: made by them (and not given away) or shared with them. */
  projectsOf(userId: string): Promise<ProjectAccess[]>;
  /** The project's members as they count (the creator stands as owner until one is stored). */
  members(projectId: string): Promise<Membership[]>;
  /** Adds a member (an accepted invitation); someone already a member keeps the role they hold. */
  join(projectId: string, userId: string, role: Role, by: string): Promise<Membership>;
  /** PATCH …/members/:userId: a new role; `owner` transfers ownership (the old owner becomes admin). */
  setRole(actor: ProjectAccess, target: string, role: Role): Promise<Membership>;
  /** DELETE …/members/:userId: removal, or leaving when the target is the actor. */
  remove(actor: ProjectAccess, target: string): Promise<void>;
  /** Drops every team record of a deleted project. */
  forget(projectId: string): Promise<void>;
  audit: Audit;
}

const id = (projectId: string, userId: string) => `${projectId}:${userId}`;
const forbidden = (message: string) => new HttpError(403, 'forbidden', message);
const memberNotFound = (userId: string) => new HttpError(404, 'member_not_found', `No member ${userId}`);

export function createTeams(records: RecordStore, clock: () => number): Teams {
  const audit = createAudit(records, clock);
  // Changes to one project's members run one at a time in this process, each on a fresh read.
  const queues = new Map<string, Promise<unknown>>();
  const serial = <T>(projectId: string, op: () => Promise<T>): Promise<T> => {
    const run = (queues.get(projectId) ?? Promise.resolve()).then(op);
    const tail = run.catch(() => {});
    queues.set(projectId, tail);
    void tail.then(() => { if (queues.get(projectId) === tail) queues.delete(projectId); });
    return run;
  };

  const stored = async (projectId: string) => (await records.list<Membership>(MEMBER_KIND, scopeOf(projectId))).map((r) => r.body);

  async function load(projectId: string): Promise<{ project: StoredRecord<Project>; members: Membership[] } | null> {
    if (!/^\d{1,20}$/.test(projectId)) return null;
    const [project, members] = await Promise.all([records.find<Project>(PROJECT_KIND, projectId), stored(projectId)]);
    return project ? { project, members } : null;
  }

  const inputOf = (p: StoredRecord<Project>) => ({ creator: p.userId, createdAt: p.body.createdAt ?? '' });
  // The record's id is the project's id, whatever its body holds.
  const bodyOf = (p: StoredRecord<Project>): Project => ({ ...p.body, id: p.id });

  async function roleOf(userId: string, projectId: string): Promise<ProjectAccess | null> {
    const found = await load(projectId);
    if (!found) return null;
    const d = decide({ userId, project: inputOf(found.project), members: found.members, action: 'read' });
    return d.role === null ? null : { project: bodyOf(found.project), owner: found.project.userId, userId, role: d.role };
  }

  async function members(projectId: string): Promise<Membership[]> {
    const found = await load(projectId);
    if (!found) throw projectNotFound(projectId);
    return effectiveMembers(inputOf(found.project), found.members).sort((a, b) => a.addedAt.localeCompare(b.addedAt) || a.userId.localeCompare(b.userId));
  }

  const put = (projectId: string, list: Membership[]) =>
    records.put(list.flatMap((m) => [
      { kind: MEMBER_KIND, id: id(projectId, m.userId), userId: scopeOf(projectId), body: m },
      { kind: MEMBERSHIP_KIND, id: id(projectId, m.userId), userId: m.userId, body: { projectId } },
    ]));

  /** The members with the owner stored: a legacy project's creator gets their record on its first change. */
  async function current(projectId: string): Promise<Membership[]> {
    const list = await members(projectId);
    const owner = list.find((m) => m.role === 'owner')!;
    if (!(await records.get(MEMBER_KIND, id(projectId, owner.userId), scopeOf(projectId)))) await put(projectId, [owner]);
    return list;
  }

  return {
    audit,
    roleOf,
    members,
    async access(userId, projectId, action) {
      const found = userId === null ? null : await load(projectId);
      const d = decide({ userId, project: found ? inputOf(found.project) : null, members: found?.members ?? [], action });
      if (d.role === null || !found) throw projectNotFound(projectId);
      if (!d.allowed) throw forbidden(`Your role on project ${projectId} (${d.role}) may not do this; it needs ${LEAST_ROLE[action]}`);
      return { project: bodyOf(found.project), owner: found.project.userId, userId: userId!, role: d.role };
    },
    async projectsOf(userId) {
      const [made, shared] = await Promise.all([
        records.list<Project>(PROJECT_KIND, userId),
        records.list<{ projectId: string }>(MEMBERSHIP_KIND, userId),
      ]);
      const ids = new Set([...made.map((r) => r.id), ...shared.map((r) => r.body.projectId)]);
      const found = await Promise.all([...ids].map((p) => roleOf(userId, p)));
      return found.filter((a): a is ProjectAccess => a !== null)
        .sort((a, b) => (a.project.createdAt ?? '').localeCompare(b.project.createdAt ?? '') || a.project.id.localeCompare(b.project.id));
    },
    join(projectId, userId, role, by) {
      return serial(projectId, async () => {
        const list = await current(projectId);
        const held = list.find((m) => m.userId === userId);
        if (held) return held;
        if (list.length >= MAX_MEMBERS_PER_PROJECT) throw new HttpError(409, 'too_many_members', `A project may have at most ${MAX_MEMBERS_PER_PROJECT} members`);
        const member: Membership = { userId, role, addedAt: new Date(clock()).toISOString() };
        await put(projectId, [member]);
        await audit.add(projectId, by, 'member.added', { target: userId, to: role });
        return member;
      });
    },
    setRole(actor, target, role) {
      const projectId = actor.project.id;
      return serial(projectId, async () => {
        const list = await current(projectId);
        const member = list.find((m) => m.userId === target);
        if (!member) throw memberNotFound(target);
        if (member.role === role) return member;
        if (role === 'owner' || member.role === 'owner') {
          if (actor.role !== 'owner') throw forbidden('Only the owner may transfer ownership');
          if (member.role === 'owner') throw new HttpError(409, 'owner_required', 'A project always has one owner: transfer ownership to another member instead');
          // Both records in one put: all or none, so there is never no owner, nor two.
          const old = list.find((m) => m.role === 'owner')!;
          await put(projectId, [{ ...old, role: 'admin' }, { ...member, role: 'owner' }]);
          await audit.add(projectId, actor.userId, 'ownership.transferred', { target, from: old.userId, to: target });
          return { ...member, role };
        }
        const next = { ...member, role };
        await put(projectId, [next]);
        await audit.add(projectId, actor.userId, 'member.role_changed', { target, from: member.role, to: role });
        return next;
      });
    },
    remove(actor, target) {
      const projectId = actor.project.id;
      return serial(projectId, async () => {
        const list = await current(projectId);
        const member = list.find((m) => m.userId === target);
        if (!member) throw memberNotFound(target);
        if (target !== actor.userId && !atLeast(actor.role, 'admin')) throw forbidden('Only admins may remove members');
        if (member.role === 'owner') throw new HttpError(409, 'owner_required', 'The owner cannot leave or be removed: transfer ownership first');
        // The member record decides: once it is gone the user has no access, even if the index lingers.
        await records.delete(MEMBER_KIND, id(projectId, target), scopeOf(projectId));
        await records.delete(MEMBERSHIP_KIND, id(projectId, target), target);
        await audit.add(projectId, actor.userId, target === actor.userId ? 'member.left' : 'member.removed', { target, from: member.role });
      });
    },
    async forget(projectId) {
      const scope = scopeOf(projectId);
      for (const m of await records.list<Membership>(MEMBER_KIND, scope)) {
        await records.delete(MEMBER_KIND, m.id, scope);
        await records.delete(MEMBERSHIP_KIND, m.id, m.body.userId);
      }
      for (const kind of SCOPED_KINDS) for (const r of await records.list(kind, scope)) await records.delete(kind, r.id, scope);
    },
  };
}
