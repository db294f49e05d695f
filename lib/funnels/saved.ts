// Saved funnels of a project (docs/api.md#saved-funnels): one record each under the project's
// scope, as its members and share links are kept (lib/teams/kinds.ts), so a deleted project takes
// them with it. Creating and deleting one is audited like the project's other changes.
import { HttpError } from '../http.ts';
import { creationTime, type RecordStore } from '../records/types.ts';
import { FUNNEL_KIND, listScoped, scopeOf } from '../teams/kinds.ts';
import type { ProjectAccess, Teams } from '../teams/teams.ts';
import { newPublicId } from '../teams/tokens.ts';
import { parseSavedFunnel } from './query.ts';
import type { FunnelStep } from './steps.ts';

export const MAX_FUNNELS_PER_PROJECT = 50;

export interface SavedFunnel {
  id: string;
  projectId: string;
  name: string;
  windowMinutes: number;
  steps: FunnelStep[];
  createdAt: string;
  createdBy: string;
}

export function savedFunnels(records: RecordStore, teams: Teams, clock: () => number) {
  const recordId = (projectId: string, id: string) => `${projectId}:${id}`;
  return {
    /** Newest first. */
    async list(projectId: string): Promise<SavedFunnel[]> {
      return (await listScoped<SavedFunnel>(records, FUNNEL_KIND, projectId)).map((r) => r.body);
    },
    async create(actor: ProjectAccess, body: unknown): Promise<SavedFunnel> {
      const input = parseSavedFunnel(body);
      const projectId = actor.project.id;
      const existing = (await records.list<SavedFunnel>(FUNNEL_KIND, scopeOf(projectId))).map((r) => r.body.createdAt);
      if (existing.length >= MAX_FUNNELS_PER_PROJECT) {
        throw new HttpError(409, 'too_many_funnels', `A project may have at most ${MAX_FUNNELS_PER_PROJECT} saved funnels`);
      }
      // After the newest, so that two saved in one millisecond still list in the order they were made.
      const createdAt = creationTime(clock(), existing);
      const funnel: SavedFunnel = { id: newPublicId(), projectId, ...input, createdAt, createdBy: actor.userId };
      await records.put([{ kind: FUNNEL_KIND, id: recordId(projectId, funnel.id), userId: scopeOf(projectId), body: funnel }]);
      await teams.audit.add(projectId, actor.userId, 'funnel.created', { target: funnel.id, to: funnel.name });
      return funnel;
    },
    async remove(actor: ProjectAccess, id: string): Promise<SavedFunnel> {
      const projectId = actor.project.id;
      const found = /^[0-9a-f]{16}$/.test(id) ? await records.get<SavedFunnel>(FUNNEL_KIND, recordId(projectId, id), scopeOf(projectId)) : null;
      if (!found) throw new HttpError(404, 'funnel_not_found', `No saved funnel ${id.slice(0, 40)}`);
      await records.delete(FUNNEL_KIND, found.id, scopeOf(projectId));
      await teams.audit.add(projectId, actor.userId, 'funnel.deleted', { target: id, from: found.body.name });
      return found.body;
    },
  };
}
