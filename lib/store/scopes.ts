// What the sqlite store's worker counts statistics into: per owner, and per project of each owner,
// hourly rollups tagged by segment (lib/rollup/user.ts) and a live window (lib/live-window.ts).
// An event counts for its owner, and for its project too when it was ingested with a project key,
// so `/api/stats?project=` is assembled from the project's own rollups as the owner's answer is
// from the owner's; unowned events count for no one. An event with an environment counts in its
// environment's scopes too (lib/environment-scopes.ts: the owner's share and its project's, kept
// among the project scopes under keys no project id takes, at most MAX_ENVIRONMENT_SCOPES names
// per owner). Seals take a segment's parts and the windows from here, retention takes them back,
// and reads pick the owner's, a project's or an environment's.
import { admit, environmentKey, environmentOfEvent, isEnvironmentKey } from '../environment-scopes.ts';
import type { StoredEvent } from '../event.ts';
import { LiveWindow, type LiveWindowState } from '../live-window.ts';
import { FrozenHour } from '../rollup/codec.ts';
import type { RollupPart, RollupRow } from '../rollup/hour.ts';
import { UserRollups } from '../rollup/user.ts';

/** What statistics are assembled from: an owner's, or one project's of that owner. */
export interface Stat {
  rollups: UserRollups;
  window: LiveWindow;
}

interface Scope extends Stat {
  /** By project id, and by environmentKey for the environments' scopes. */
  projects: Map<string, Stat>;
  /** An environment name was refused a scope (lib/environment-scopes.ts): no further one is made. */
  environmentsFull: boolean;
}

/** A segment's share of one owner's statistics, for its manifest: its parts, and each project's. */
export interface SealedShare {
  owner: string;
  parts: RollupPart[];
  projects: Map<string, RollupPart[]>;
}

export class Scopes {
  private readonly byOwner = new Map<string, Scope>();
  /**
   * Where a project window made from nothing starts to be complete: one past the latest receive
   * time of the segments whose project events its window may never have seen (sealed before
   * project statistics were kept, or whose manifest kept no project windows). Such a window
   * answers only ranges after them; reads of earlier ones take the recents from rows.
   */
  projectWindowsFrom = -Infinity;
  /**
   * The same for environments' windows: one past the latest receive time of the segments sealed
   * before environments' statistics were kept (reads of earlier ranges take the events instead).
   */
  environmentWindowsFrom = -Infinity;

  get size(): number {
    return this.byOwner.size;
  }

  /** The owner's statistics, or one of its projects' (undefined: nothing of theirs is counted). */
  get(owner: string, project?: string): Stat | undefined {
    const scope = this.byOwner.get(owner);
    return project === undefined ? scope : scope?.projects.get(project);
  }

  /** Counts an event with its segment's tag. */
  add(owner: string, row: RollupRow, e: StoredEvent, tag: number): void {
    if (owner === '') return;
    const scope = this.scope(owner);
    scope.rollups.add(row, tag);
    scope.window.add(e, row.receivedMs, row.route);
    if (e.projectId !== undefined) {
      const project = this.project(scope, e.projectId);
      project.rollups.add(row, tag);
      project.window.add(e, row.receivedMs, row.route);
    }
    const environment = environmentOfEvent(e);
    if (environment === null) return;
    if (admit(scope.projects, scope.environmentsFull, environment) === 'full') {
      scope.environmentsFull = true;
      return;
    }
    for (const key of environmentKeys(environment, e.projectId)) {
      const stat = this.project(scope, key);
      stat.rollups.add(row, tag);
      stat.window.add(e, row.receivedMs, row.route);
    }
  }

  /** Takes back an event counted with `tag`: always the oldest counted (LiveWindow.remove). */
  remove(owner: string, row: RollupRow, e: StoredEvent, tag: number): void {
    const scope = this.byOwner.get(owner);
    if (!scope) return;
    scope.rollups.remove(row, tag);
    scope.window.remove(e, row.receivedMs, row.route);
    // The event was counted in each of its scopes that exists: an environment's scope is made at
    // its name's first event and is never made later for a name whose events were refused.
    const environment = environmentOfEvent(e);
    const keys = environment === null ? [] : environmentKeys(environment, e.projectId);
    if (e.projectId !== undefined) keys.push(e.projectId);
    for (const key of keys) {
      const stat = scope.projects.get(key);
      if (!stat) continue;
      stat.rollups.remove(row, tag);
      stat.window.remove(e, row.receivedMs, row.route);
      if (stat.rollups.empty) scope.projects.delete(key);
    }
    if (scope.rollups.empty) this.byOwner.delete(owner);
  }

  /** Retention dropped segment `tag`: its parts go, and the windows forget what came before `cutoff`. */
  drop(tag: number, cutoff: number): void {
    for (const [owner, scope] of this.byOwner) {
      for (const [id, project] of scope.projects) {
        project.rollups.drop(tag);
        project.window.dropBefore(cutoff);
        if (project.rollups.empty) scope.projects.delete(id);
      }
      scope.rollups.drop(tag);
      scope.window.dropBefore(cutoff);
      if (scope.rollups.empty) this.byOwner.delete(owner);
    }
  }

  /** Sets a frozen part of segment `tag` (from a manifest, a seal or a backfill). */
  setPart(owner: string, project: string | undefined, part: FrozenHour, tag: number): void {
    const scope = this.scope(owner);
    (project === undefined ? scope : this.project(scope, project)).rollups.setPart(part, tag);
  }

  /** Replaces a window with the state a manifest kept, forgetting what came before `cutoff`. */
  setWindow(owner: string, project: string | undefined, state: LiveWindowState, cutoff: number): void {
    const stat = this.get(owner, project);
    if (!stat) return;
    stat.window = LiveWindow.fromJSON(state);
    if (cutoff > -Infinity) stat.window.dropBefore(cutoff);
  }

  /** Marks an owner whose environments were full when the newest manifest was written. */
  setEnvironmentsFull(owner: string): void {
    const scope = this.byOwner.get(owner);
    if (scope) scope.environmentsFull = true;
  }

  /** Whether an owner refused an environment name a scope (lib/environment-scopes.ts). */
  environmentsFull(owner: string): boolean {
    return this.byOwner.get(owner)?.environmentsFull ?? false;
  }

  /** What a seal writes of segment `tag`: each owner's parts and its projects', and every window. */
  sealed(tag: number): {
    shares: SealedShare[];
    windows: Record<string, LiveWindowState>;
    projectWindows: Record<string, Record<string, LiveWindowState>>;
    environmentsFull: string[];
  } {
    const environmentsFull: string[] = [];
    const shares: SealedShare[] = [];
    const windows: Record<string, LiveWindowState> = {};
    const projectWindows: Record<string, Record<string, LiveWindowState>> = {};
    for (const [owner, scope] of this.byOwner) {
      const parts = scope.rollups.parts(tag);
      const projects = new Map<string, RollupPart[]>();
      for (const [id, project] of scope.projects) {
        const own = project.rollups.parts(tag);
        if (own.length) projects.set(id, own);
        (projectWindows[owner] ??= {})[id] = project.window.toJSON();
      }
      if (parts.length) shares.push({ owner, parts, projects });
      // As of the seal: start-up adds the later hot rows on top of it.
      windows[owner] = scope.window.toJSON();
      if (scope.environmentsFull) environmentsFull.push(owner);
    }
    return { shares, windows, projectWindows, environmentsFull };
  }

  /** Merges days reads left hour by hour, one owner's or project's budget at a time; true while some are left. */
  mergeIdle(): boolean {
    for (const scope of this.byOwner.values()) {
      for (const stat of [scope, ...scope.projects.values()]) {
        if (stat.rollups.mergesPending) {
          stat.rollups.mergePending();
          return true;
        }
      }
    }
    return false;
  }

  clear(): void {
    this.byOwner.clear();
  }

  private scope(owner: string): Scope {
    let scope = this.byOwner.get(owner);
    if (!scope) this.byOwner.set(owner, (scope = { rollups: new UserRollups(), window: new LiveWindow(), projects: new Map(), environmentsFull: false }));
    return scope;
  }

  private project(scope: Scope, id: string): Stat {
    let project = scope.projects.get(id);
    if (!project) {
      scope.projects.set(id, (project = { rollups: new UserRollups(), window: new LiveWindow() }));
      // Complete from there on, and `newest` stays an upper bound of the project's receive times
      // (assembleStats counts a range's last hour whole when nothing was received after it).
      const from = isEnvironmentKey(id) ? Math.max(this.projectWindowsFrom, this.environmentWindowsFrom) : this.projectWindowsFrom;
      project.window.completeFrom = from;
      if (from > -Infinity) project.window.newest = from - 1;
    }
    return project;
  }
}

/** The scopes an event of `environment` counts in beside its owner's and project's. */
const environmentKeys = (environment: string, projectId: string | undefined) =>
  projectId === undefined ? [environmentKey(environment)] : [environmentKey(environment), environmentKey(environment, projectId)];
