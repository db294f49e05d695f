// The memory store's statistics side: rollups and a live window per scope, kept on insert and
// eviction. Owned events only: statistics are per user, unowned events appear for no one. A
// user's scope holds every event they own; a keyed event also counts in the user's scope within
// its project, so `project=` statistics cost what a user's do. An event with an environment counts
// in its environment's scopes too (lib/environment-scopes.ts), kept beside the projects' under keys
// no project id takes, at most MAX_ENVIRONMENT_SCOPES names per user.
import { admit, environmentKey, environmentOfEvent } from '../environment-scopes.ts';
import type { StoredEvent } from '../event.ts';
import { LiveWindow } from '../live-window.ts';
import { HourRollup, rollupRow, type RollupRow } from '../rollup/hour.ts';
import { UserRollups } from '../rollup/user.ts';

export interface Scope { rollups: UserRollups; window: LiveWindow }

const USER_ONLY = [undefined];
const scopesOf = (e: StoredEvent) => (e.projectId === undefined ? USER_ONLY : [undefined, e.projectId]);
/** The environment scopes an event of `environment` counts in. */
const environmentScopes = (environment: string, projectId: string | undefined) =>
  projectId === undefined ? [environmentKey(environment)] : [environmentKey(environment), environmentKey(environment, projectId)];

/** A batch's events share one receivedAt: parse it once per run of equal strings. */
function receiveParser() {
  let iso = '', ms = NaN;
  return (e: StoredEvent) => (e.receivedAt === iso ? ms : (ms = Date.parse((iso = e.receivedAt))));
}

export class MemoryScopes {
  private readonly users = new Map<string, Scope>();
  private readonly projects = new Map<string, Map<string, Scope>>();
  /** Users that refused an environment name a scope: none is made for them until they hold no events. */
  private readonly environmentsFull = new Set<string>();
  private readonly insertedMs = receiveParser();

  get(userId: string, projectId: string | undefined, create = false): Scope | undefined {
    let scopes = this.users;
    let key = userId;
    if (projectId !== undefined) {
      let m = this.projects.get(userId);
      if (!m && create) this.projects.set(userId, (m = new Map()));
      if (!m) return undefined;
      [scopes, key] = [m, projectId];
    }
    let u = scopes.get(key);
    if (!u && create) scopes.set(key, (u = { rollups: new UserRollups(), window: new LiveWindow() }));
    return u;
  }

  /** Counts an event in its scopes; the row it was counted with, for remove (null: no owner, not counted). */
  add(e: StoredEvent): RollupRow | null {
    if (e.user_id === null) return null;
    const row = rollupRow(e, this.insertedMs(e));
    for (const project of scopesOf(e)) {
      const u = this.get(e.user_id, project, true)!;
      u.rollups.add(row);
      u.window.add(e, row.receivedMs, row.route);
    }
    const environment = environmentOfEvent(e);
    if (environment === null) return row;
    const scopes = this.projects.get(e.user_id) ?? new Map<string, Scope>();
    if (admit(scopes, this.environmentsFull.has(e.user_id), environment) === 'full') {
      this.environmentsFull.add(e.user_id);
      return row;
    }
    for (const key of environmentScopes(environment, e.projectId)) {
      const u = this.get(e.user_id, key, true)!;
      u.rollups.add(row);
      u.window.add(e, row.receivedMs, row.route);
    }
    return row;
  }

  /** Whether a user refused an environment name a scope (lib/environment-scopes.ts). */
  isEnvironmentsFull(userId: string): boolean {
    return this.environmentsFull.has(userId);
  }

  /** Takes back an event add counted, with the row add gave for it. */
  remove(e: StoredEvent, row: RollupRow): void {
    if (e.user_id === null) return;
    // Counted in each of its environment's scopes that exists (none is made after a refusal).
    const environment = environmentOfEvent(e);
    const keys = environment === null ? scopesOf(e) : [...scopesOf(e), ...environmentScopes(environment, e.projectId)];
    for (const project of keys) {
      const u = this.get(e.user_id, project);
      if (!u) continue;
      u.rollups.remove(row);
      u.window.remove(e, row.receivedMs, row.route);
      if (u.rollups.empty) this.drop(e.user_id, project);
    }
  }

  private drop(userId: string, projectId: string | undefined): void {
    if (projectId === undefined) {
      this.environmentsFull.delete(userId);
      return void this.users.delete(userId);
    }
    const m = this.projects.get(userId)!;
    m.delete(projectId);
    if (m.size === 0) this.projects.delete(userId);
  }
}

/**
 * Hour rollups of the held events received within `spans` (a range's partial edge hours): only
 * those are rolled up, since a row costs a route key and breakdown names. Receive times are
 * canonical ISO strings (24 characters), which sort like the instants they name: comparing them
 * spares a Date.parse per held event.
 */
export function edgeRollups(held: readonly StoredEvent[], spans: readonly (readonly [number, number])[]) {
  if (spans.length === 0) return [];
  const iso = spans.map(([start, end]) => [new Date(start).toISOString(), new Date(end).toISOString()]);
  const canonical = iso.every(([a, b]) => a.length === 24 && b.length === 24);
  const inSpans = (t: string) =>
    canonical && t.length === 24 ? iso.some(([a, b]) => t >= a && t < b) : spans.some(([a, b]) => Date.parse(t) >= a && Date.parse(t) < b);
  return HourRollup.fromRows(held.flatMap((e) => (inSpans(e.receivedAt) ? [rollupRow(e)] : [])));
}
