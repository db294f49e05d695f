// The audit trail of a project (GET /api/projects/:id/audit): who changed members, roles,
// invitations, share links, keys and issue statuses, when, from what to what. One record per entry
// under the project's scope, so concurrent changes never overwrite each other's entries.
import type { RecordStore } from '../records/types.ts';
import { AUDIT_KIND, scopeOf } from './kinds.ts';
/** Entries answered at most (the newest). */
export const AUDIT_LIMIT = 1000;

export interface AuditEntry {
  at: string;
  /** The user who acted. */
  actor: string;
  /** 'member.added', 'member.role_changed', 'invitation.created', 'share.revoked', 'key.rotated', 'issue.status_changed', … */
  action: string;
  /** What it was done to: a user, an invitation or link id, an issue id. */
  target?: string;
  from?: string | null;
  to?: string | null;
}

export interface Audit {
  add(projectId: string, actor: string, action: string, details?: Omit<AuditEntry, 'at' | 'actor' | 'action'>): Promise<void>;
  /** Newest first; only entries about `target` when given. */
  list(projectId: string, target?: string): Promise<AuditEntry[]>;
}

export function createAudit(records: RecordStore, clock: () => number): Audit {
  // Orders this process's entries of one millisecond; the random tail keeps instances' ids apart.
  let seq = 0;
  return {
    async add(projectId, actor, action, details = {}) {
      const at = new Date(clock()).toISOString();
      const rand = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('');
      await records.put([{ kind: AUDIT_KIND, id: `${projectId}:${at}:${String(++seq).padStart(12, '0')}:${rand}`, userId: scopeOf(projectId), body: { at, actor, action, ...details } }]);
    },
    async list(projectId, target) {
      const all = await records.list<AuditEntry>(AUDIT_KIND, scopeOf(projectId));
      // Ids start with the time: sorting them orders entries made in one millisecond stably.
      all.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      return all.map((r) => r.body).filter((e) => target === undefined || e.target === target).slice(0, AUDIT_LIMIT);
    },
  };
}
