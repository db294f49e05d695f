// Which environments get rollups of their own (docs/api.md#stats, "One environment"). Every store
// keeps statistics scopes per owner and per project; an environment's events are counted in scopes
// of their own too, one for the owner's events of that environment and one per project of it, so
// `environment=` is read from rollups like an unfiltered read. An ingest key may send any number of
// environment names, so an owner has at most MAX_ENVIRONMENT_SCOPES of them, given to the first
// names the owner sends. Once a name is refused, the owner's environments are "full" and stay so
// until the store holds none of the owner's events: every scope made before that point counted
// each event of its environment, and no scope is made after it (it would have missed the refused
// name's earlier events). A name without a scope of a full owner is answered from its events
// (lib/environment-stats.ts); a name without a scope of an owner that is not full has no events.
import { environmentOf } from './event-fields.ts';
import type { StoredEvent } from './event.ts';

/** Environments per owner with rollups of their own; further ones are read from their events. */
export const MAX_ENVIRONMENT_SCOPES = 10;

// Environment names hold no control character (environmentOf), project ids are generated without
// one: a key with U+0001 is an environment's scope, whatever the project ids are.
const SEP = '\u0001';

/** The key of an environment's scope among an owner's project scopes (projectId: the project's share of it). */
export const environmentKey = (environment: string, projectId?: string) => (projectId ?? '') + SEP + environment;

/** Whether a project-scope key is an environment's scope of the owner (not of a project). */
export const isOwnerEnvironmentKey = (key: string) => key.startsWith(SEP);

/**
 * The environment an event counts under: its name as ingest keeps them, or null (none, or an
 * embedder's event with a name ingest would not keep, which no query can ask for).
 */
export function environmentOfEvent(e: StoredEvent): string | null {
  const v = e.environment;
  return typeof v === 'string' && environmentOf(v) === v ? v : null;
}

/**
 * Whether an owner's event of `environment` is counted in its scopes, making the owner's scope of it
 * when admitted. `scopes` holds the owner's project scopes by key; `full` says whether a name was
 * refused already (the caller keeps it and sets it when this answers 'full').
 */
export function admit(scopes: { has(key: string): boolean; keys(): Iterable<string> }, full: boolean, environment: string): 'counted' | 'new' | 'full' {
  if (scopes.has(environmentKey(environment))) return 'counted';
  if (full) return 'full';
  let n = 0;
  for (const key of scopes.keys()) if (isOwnerEnvironmentKey(key)) n++;
  return n < MAX_ENVIRONMENT_SCOPES ? 'new' : 'full';
}

/** Whether a project-scope key is an environment's scope (the owner's or a project's share of it). */
export const isEnvironmentKey = (key: string) => key.includes(SEP);
