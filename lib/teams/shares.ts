// Public share links of a project's dashboard (docs/api.md#share-links): a random token, stored only
// as its SHA-256 (the record's id), that reads the project's statistics without signing in.
import { HttpError } from '../http.ts';
import { isPlainObject } from '../event.ts';
import { PROJECT_KIND, type Project } from '../projects.ts';
import type { RecordStore } from '../records/types.ts';
import { parseIsoTime } from '../schema.ts';
import { listScoped, SHARE_KIND, scopeOf } from './kinds.ts';
import type { ProjectAccess, Teams } from './teams.ts';
import { hashToken, newPublicId, newToken, TOKEN_PATTERN } from './tokens.ts';

export const MAX_SHARES_PER_PROJECT = 50;
/** Requests one share link may make: 60 a minute, in bursts of up to 60 (docs/api.md#share-links). */
export const SHARE_RATE_LIMIT = { rate: 1, burst: 60, maxClients: 10_000 };

export interface ShareLink {
  id: string;
  projectId: string;
  createdAt: string;
  createdBy: string;
  /** Null: until revoked. */
  expiresAt: string | null;
  revokedAt: string | null;
}

export interface Shares {
  create(actor: ProjectAccess, body: unknown): Promise<{ share: ShareLink; token: string }>;
  list(projectId: string): Promise<ShareLink[]>;
  revoke(actor: ProjectAccess, id: string): Promise<ShareLink>;
  /** The project a live link reads, and whose events those are; 404 for an unknown, revoked or expired link. */
  open(token: string): Promise<{ share: ShareLink; project: Project; owner: string }>;
}

const invalid = (message: string) => new HttpError(400, 'invalid_body', message);
export const shareNotFound = () => new HttpError(404, 'share_not_found', 'No such share link (revoked and expired links answer this too)');

export function createShares(records: RecordStore, teams: Teams, clock: () => number): Shares {
  const save = (hash: string, share: ShareLink) => records.put([{ kind: SHARE_KIND, id: hash, userId: scopeOf(share.projectId), body: share }]);

  return {
    async create(actor, body) {
      if (body !== null && !isPlainObject(body)) throw invalid('Body must be a JSON object { expiresAt? }');
      const input = (body ?? {}) as Record<string, unknown>;
      for (const key of Object.keys(input)) if (key !== 'expiresAt') throw invalid(`"${key}" is not a known field (expiresAt)`);
      let expiresAt: string | null = null;
      if (input.expiresAt !== undefined && input.expiresAt !== null) {
        const t = typeof input.expiresAt === 'string' ? parseIsoTime(input.expiresAt) : null;
        if (t === null || t <= clock()) throw invalid('"expiresAt" must be an ISO 8601 date-time in the future');
        expiresAt = new Date(t).toISOString();
      }
      const projectId = actor.project.id;
      const live = (await this.list(projectId)).filter((s) => !s.revokedAt);
      if (live.length >= MAX_SHARES_PER_PROJECT) throw new HttpError(409, 'too_many_shares', `A project may have at most ${MAX_SHARES_PER_PROJECT} share links`);
      const token = newToken();
      const share: ShareLink = { id: newPublicId(), projectId, createdAt: new Date(clock()).toISOString(), createdBy: actor.userId, expiresAt, revokedAt: null };
      await save(await hashToken(token), share);
      await teams.audit.add(projectId, actor.userId, 'share.created', { target: share.id, to: expiresAt });
      return { share, token };
    },
    async list(projectId) {
      return (await listScoped<ShareLink>(records, SHARE_KIND, projectId)).map((r) => r.body);
    },
    async revoke(actor, id) {
      const projectId = actor.project.id;
      const record = (await listScoped<ShareLink>(records, SHARE_KIND, projectId)).find((r) => r.body.id === id);
      if (!record) throw new HttpError(404, 'share_not_found', `No share link ${id}`);
      if (record.body.revokedAt) return record.body;
      const share = { ...record.body, revokedAt: new Date(clock()).toISOString() };
      await save(record.id, share);
      await teams.audit.add(projectId, actor.userId, 'share.revoked', { target: id });
      return share;
    },
    async open(token) {
      const record = TOKEN_PATTERN.test(token) ? await records.find<ShareLink>(SHARE_KIND, await hashToken(token)) : null;
      const share = record?.body;
      if (!share || share.revokedAt || (share.expiresAt !== null && Date.parse(share.expiresAt) <= clock())) throw shareNotFound();
      const project = await records.find<Project>(PROJECT_KIND, share.projectId);
      if (!project) throw shareNotFound();
      return { share, project: project.body, owner: project.userId };
    },
  };
}
