// A project's goals (docs/api.md#goals): a page pattern reached or a custom event sent. Kept as
// records under the project's scope, like its share links; what they count is computed from the
// stored events whenever statistics are asked for (lib/goals/evaluate.ts), so a goal made today
// reports last month too.
import { HttpError } from '../http.ts';
import { isPlainObject } from '../event.ts';
import { creationTime, type RecordStore } from '../records/types.ts';
import { GOAL_KIND, scopeOf } from '../teams/kinds.ts';
import type { ProjectAccess, Teams } from '../teams/teams.ts';
import { newPublicId } from '../teams/tokens.ts';
import { isSafeStepText } from '../funnels/query.ts';
import { MAX_STEP_LENGTH } from '../funnels/steps.ts';

export const MAX_GOALS_PER_PROJECT = 20;
export const MAX_GOAL_NAME = 100;
/** Longest custom event name a goal may name (custom event names are cut to this at ingest too). */
export const MAX_EVENT_NAME = 100;

export interface Goal {
  id: string;
  projectId: string;
  name: string;
  /** Exactly one of page and event is set. */
  page: string | null;
  event: string | null;
  createdAt: string;
  createdBy: string;
}

export interface Goals {
  create(actor: ProjectAccess, body: unknown): Promise<Goal>;
  /** In the order they were made (two instances making one in the same millisecond: by name). */
  list(projectId: string): Promise<Goal[]>;
  remove(actor: ProjectAccess, id: string): Promise<Goal>;
}

const byAge = (a: Goal, b: Goal) => a.createdAt.localeCompare(b.createdAt) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) || a.id.localeCompare(b.id);
const invalid = (message: string) => new HttpError(400, 'invalid_body', message);

/** The goal a POST body describes, or a 400 that says what is wrong. */
export function parseGoal(body: unknown): Pick<Goal, 'name' | 'page' | 'event'> {
  if (!isPlainObject(body)) throw invalid('Body must be a JSON object { name, page } or { name, event }');
  for (const key of Object.keys(body)) if (!['name', 'page', 'event'].includes(key)) throw invalid(`"${key}" is not a known field (name, page, event)`);
  const { name, page, event } = body;
  if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_GOAL_NAME) throw invalid(`"name" must be a string of 1-${MAX_GOAL_NAME} characters`);
  const hasPage = page !== undefined && page !== null, hasEvent = event !== undefined && event !== null;
  if (hasPage === hasEvent) throw invalid('A goal has exactly one of "page" (a route pattern) and "event" (a custom event name)');
  // Patterns and names as funnel steps take them (lib/funnels/query.ts), so one can become the other.
  if (hasPage && (typeof page !== 'string' || page === '' || page.length > MAX_STEP_LENGTH || !isSafeStepText(page))) {
    throw invalid(`"page" must be a route pattern of 1-${MAX_STEP_LENGTH} characters (* within a segment, ** across), without control characters or backslashes`);
  }
  if (hasEvent && (typeof event !== 'string' || event === '' || event.length > MAX_EVENT_NAME || !isSafeStepText(event))) {
    throw invalid(`"event" must be a custom event name of 1-${MAX_EVENT_NAME} characters, without control characters or backslashes`);
  }
  return { name: name.trim(), page: hasPage ? (page as string) : null, event: hasEvent ? (event as string) : null };
}

export function createGoals(records: RecordStore, teams: Teams, clock: () => number): Goals {
  const list = async (projectId: string) =>
    (await records.list<Goal>(GOAL_KIND, scopeOf(projectId))).map((r) => r.body).sort(byAge);
  return {
    list,
    async create(actor, body) {
      const fields = parseGoal(body);
      const projectId = actor.project.id;
      const existing = await list(projectId);
      if (existing.length >= MAX_GOALS_PER_PROJECT) throw new HttpError(409, 'too_many_goals', `A project may have at most ${MAX_GOALS_PER_PROJECT} goals`);
      // After the newest goal, so that goals list in the order they were made.
      const createdAt = creationTime(clock(), existing.map((g) => g.createdAt));
      const goal: Goal = { id: newPublicId(), projectId, ...fields, createdAt, createdBy: actor.userId };
      await records.put([{ kind: GOAL_KIND, id: goal.id, userId: scopeOf(projectId), body: goal }]);
      await teams.audit.add(projectId, actor.userId, 'goal.created', { target: goal.id, to: goal.name });
      return goal;
    },
    async remove(actor, id) {
      const projectId = actor.project.id;
      const goal = (await list(projectId)).find((g) => g.id === id);
      if (!goal) throw new HttpError(404, 'goal_not_found', `No goal ${id}`);
      await records.delete(GOAL_KIND, id, scopeOf(projectId));
      await teams.audit.add(projectId, actor.userId, 'goal.deleted', { target: id, from: goal.name });
      return goal;
    },
  };
}
