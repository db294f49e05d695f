// Invitations to a project (docs/api.md#invitations): a random one-time token, shown once and
// stored only as its SHA-256 (the record's id), expiring after INVITATION_TTL_MS by default.
import { HttpError } from '../http.ts';
import { isPlainObject } from '../event.ts';
import { PROJECT_KIND, type Project } from '../projects.ts';
import type { RecordStore } from '../records/types.ts';
import { isRole, type Membership, type Role } from './access.ts';
import { listScoped, INVITATION_KIND, scopeOf } from './kinds.ts';
import type { ProjectAccess, Teams } from './teams.ts';
import { hashToken, newPublicId, newToken, TOKEN_PATTERN } from './tokens.ts';

export const INVITATION_TTL_MS = 7 * 86_400_000;
export const MAX_INVITATION_DAYS = 30;
export const MAX_OPEN_INVITATIONS = 100;

export interface Invitation {
  id: string;
  projectId: string;
  role: Exclude<Role, 'owner'>;
  email: string | null;
  createdAt: string;
  createdBy: string;
  expiresAt: string;
  usedAt: string | null;
  usedBy: string | null;
  revokedAt: string | null;
}

export interface Invitations {
  create(actor: ProjectAccess, body: unknown): Promise<{ invitation: Invitation; token: string }>;
  /** Newest first. */
  list(projectId: string): Promise<Invitation[]>;
  revoke(actor: ProjectAccess, id: string): Promise<Invitation>;
  /** The invitation of a token with its project: 404 unknown, 410 used, revoked or expired. */
  open(token: string): Promise<{ invitation: Invitation; project: Project }>;
  /** Makes the signed-in user a member, once. */
  accept(token: string, userId: string): Promise<{ invitation: Invitation; member: Membership; project: Project }>;
}

const EMAIL = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+\.[^\s@<>(),;:"]+$/;
const invalid = (message: string) => new HttpError(400, 'invalid_body', message);
const gone = (why: string) => new HttpError(410, 'invitation_gone', `This invitation ${why}`);

export function createInvitations(records: RecordStore, teams: Teams, clock: () => number): Invitations {
  const accepting = new Set<string>();

  async function find(token: string) {
    const record = TOKEN_PATTERN.test(token) ? await records.find<Invitation>(INVITATION_KIND, await hashToken(token)) : null;
    if (!record) throw new HttpError(404, 'invitation_not_found', 'No such invitation');
    const invitation = record.body;
    if (invitation.usedAt) throw gone('has been used');
    if (invitation.revokedAt) throw gone('was revoked');
    if (Date.parse(invitation.expiresAt) <= clock()) throw gone('has expired');
    const project = await records.find<Project>(PROJECT_KIND, invitation.projectId);
    if (!project) throw gone('is for a project that was deleted');
    return { record, invitation, project: project.body };
  }

  const save = (hash: string, invitation: Invitation) =>
    records.put([{ kind: INVITATION_KIND, id: hash, userId: scopeOf(invitation.projectId), body: invitation }]);

  return {
    async create(actor, body) {
      if (!isPlainObject(body)) throw invalid('Body must be a JSON object { role, email?, expiresInDays? }');
      for (const key of Object.keys(body)) if (!['role', 'email', 'expiresInDays'].includes(key)) throw invalid(`"${key}" is not a known field (role, email, expiresInDays)`);
      const { role, email, expiresInDays } = body as Record<string, unknown>;
      if (!isRole(role) || role === 'owner') throw invalid('"role" must be admin, member or viewer (ownership is transferred, not invited)');
      if (email !== undefined && email !== null && (typeof email !== 'string' || email.length > 254 || !EMAIL.test(email))) throw invalid('"email" must be an e-mail address');
      let ttl = INVITATION_TTL_MS;
      if (expiresInDays !== undefined) {
        if (typeof expiresInDays !== 'number' || !(expiresInDays > 0) || expiresInDays > MAX_INVITATION_DAYS) throw invalid(`"expiresInDays" must be a number from above 0 to ${MAX_INVITATION_DAYS}`);
        ttl = expiresInDays * 86_400_000;
      }
      const projectId = actor.project.id;
      const open = (await this.list(projectId)).filter((i) => !i.usedAt && !i.revokedAt && Date.parse(i.expiresAt) > clock());
      if (open.length >= MAX_OPEN_INVITATIONS) throw new HttpError(409, 'too_many_invitations', `A project may have at most ${MAX_OPEN_INVITATIONS} open invitations`);
      const now = clock();
      const token = newToken();
      const invitation: Invitation = {
        id: newPublicId(), projectId, role, email: typeof email === 'string' ? email : null,
        createdAt: new Date(now).toISOString(), createdBy: actor.userId, expiresAt: new Date(now + ttl).toISOString(),
        usedAt: null, usedBy: null, revokedAt: null,
      };
      await save(await hashToken(token), invitation);
      await teams.audit.add(projectId, actor.userId, 'invitation.created', { target: invitation.id, to: role });
      return { invitation, token };
    },
    async list(projectId) {
      return (await listScoped<Invitation>(records, INVITATION_KIND, projectId)).map((r) => r.body);
    },
    async revoke(actor, id) {
      const projectId = actor.project.id;
      const record = (await listScoped<Invitation>(records, INVITATION_KIND, projectId)).find((r) => r.body.id === id);
      if (!record) throw new HttpError(404, 'invitation_not_found', `No invitation ${id}`);
      if (record.body.revokedAt || record.body.usedAt) return record.body;
      const invitation = { ...record.body, revokedAt: new Date(clock()).toISOString() };
      await save(record.id, invitation);
      await teams.audit.add(projectId, actor.userId, 'invitation.revoked', { target: id });
      return invitation;
    },
    async open(token) {
      const { invitation, project } = await find(token);
      return { invitation, project };
    },
    async accept(token, userId) {
      // One acceptance at a time per token in this process: the second finds it used.
      const hash = TOKEN_PATTERN.test(token) ? await hashToken(token) : token;
      if (accepting.has(hash)) throw gone('has been used');
      accepting.add(hash);
      try {
        const { record, invitation, project } = await find(token);
        const used = { ...invitation, usedAt: new Date(clock()).toISOString(), usedBy: userId };
        // Marked used first: were the join lost to a crash, the token is spent rather than reusable.
        await save(record.id, used);
        const member = await teams.join(project.id, userId, invitation.role, userId);
        await teams.audit.add(project.id, userId, 'invitation.accepted', { target: invitation.id, to: member.role });
        return { invitation: used, member, project };
      } finally {
        accepting.delete(hash);
      }
    },
  };
}
