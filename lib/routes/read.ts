// GET /api/stats (time ranges: docs/api.md#stats), GET /api/health and POST /api/users/sync (README, "API").
import { parseJson, readBody } from '../body.ts';
import { KNOWN_EVENT_TYPES } from '../event.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { parseStatsQuery, parseUserSync } from '../schema.ts';
import { readScope, requireUser, type Context } from '../context.ts';
import type { StatsRange } from '../stats.ts';
import { environmentOf, MAX_ENVIRONMENT, MAX_EVENT_NAME } from '../event-fields.ts';
import { isPropertyKey, MAX_PROPERTY_KEY, type PropertyQuery } from '../properties.ts';
import { ENVIRONMENT_STATS_BUDGET_MS, environmentStats, EnvironmentStatsTooLargeError } from '../environment-stats.ts';

export async function stats(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const now = ctx.now();
  const params = new URL(request.url).searchParams;
  // Without from/to/interval, undefined: the answer over every event, as it always was.
  const range = parseStatsQuery(params, now);
  const { owner, projectId } = await readScope(ctx, userId, params);
  const environment = environmentParam(params);
  const property = propertyParams(params, range);
  const asked = await withGoals(ctx, property ? { ...range, property } : range, projectId);
  if (environment === undefined) return json(await ctx.store.stats(owner, now, asked, projectId));
  // From the environment's rollups; only an environment they cannot tell for is read from its events.
  const fromRollups = await ctx.store.statsOfEnvironment?.(owner, now, asked, projectId, environment);
  if (fromRollups) return json(fromRollups);
  try {
    return json(await environmentStats(ctx.store, { owner, projectId, environment, now, range: asked }));
  } catch (err) {
    if (err instanceof EnvironmentStatsTooLargeError) {
      throw new HttpError(422, 'stats_too_large', `This environment's events take more than ${ENVIRONMENT_STATS_BUDGET_MS / 1000} s to read; narrow the range`);
    }
    throw err;
  }
}

/** `environment=`: a name as ingest keeps them (lib/event-fields.ts); absent or empty: none. */
function environmentParam(params: URLSearchParams): string | undefined {
  const v = params.get('environment');
  if (v === null || v === '') return undefined;
  if (environmentOf(v) !== v) {
    throw new HttpError(400, 'invalid_query', `Query parameter "environment" must be an environment name as stored: 1-${MAX_ENVIRONMENT} characters, no control characters, no surrounding spaces`);
  }
  return v;
}

/**
 * `property=<key>`, `propertyKeys=1` and `event=<name>` (docs/api.md#properties): with a range
 * only, a key as ingest counts them, a name as ingest keeps them. Absent or empty: none.
 */
function propertyParams(params: URLSearchParams, range: StatsRange | undefined): PropertyQuery | undefined {
  const key = params.get('property') || undefined;
  const keys = params.get('propertyKeys') || undefined;
  const event = params.get('event') || undefined;
  const bad = (message: string) => new HttpError(400, 'invalid_query', message);
  if (key === undefined && keys === undefined) {
    if (event !== undefined) throw bad('Query parameter "event" needs "property" or "propertyKeys"');
    return undefined;
  }
  if (range?.from === undefined) throw bad('Query parameters "property" and "propertyKeys" need a range ("from")');
  if (key !== undefined && !isPropertyKey(key)) {
    throw bad(`Query parameter "property" must be a property key: 1-${MAX_PROPERTY_KEY} characters, no control characters`);
  }
  if (keys !== undefined && keys !== '1' && keys !== 'true') throw bad('Query parameter "propertyKeys" must be "1" or "true"');
  if (event !== undefined && (event.trim() !== event || event.length > MAX_EVENT_NAME)) {
    throw bad(`Query parameter "event" must be a custom event name as stored: 1-${MAX_EVENT_NAME} characters, no surrounding spaces`);
  }
  return { ...(key !== undefined ? { key } : {}), ...(event !== undefined ? { event } : {}), ...(keys !== undefined ? { keys: true } : {}) };
}

/** A project's range counts its goals too (docs/api.md#goals); without a range or a project, none. */
export async function withGoals(ctx: Context, range: StatsRange | undefined, projectId: string | undefined): Promise<StatsRange | undefined> {
  if (range?.from === undefined || projectId === undefined) return range;
  const goals = await ctx.goals.list(projectId);
  return goals.length ? { ...range, goals } : range;
}

export async function health(_request: Request, ctx: Context): Promise<JsonReply> {
  const store = await ctx.store.health();
  return json({
    status: 'ok',
    ...store,
    knownEventTypes: KNOWN_EVENT_TYPES,
    streamSubscribers: ctx.hub.size,
    botsDropped: ctx.botsDropped,
    issues: issueHealth(ctx),
    alerts: { email: ctx.monitor.alerts.emailEnabled ? 'enabled' : 'disabled (SMTP_URL is not set)', webhook: 'enabled' },
    timestamp: new Date(ctx.now()).toISOString(),
  });
}

/** Where issue grouping stands (docs/api.md#health). */
function issueHealth(ctx: Context) {
  const p = ctx.monitor.processor;
  const { errors, ownersBehind, checkpoint } = p.waiting;
  return { waiting: errors, ownersBehind, checkpoint, failed: p.failed, overLimit: p.overflowed, metricsDropped: p.metricsDropped };
}

export async function syncUser(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const body = parseUserSync(parseJson(await readBody(request, 64 * 1024)));
  if (body.idpUserId !== userId) {
    throw new HttpError(403, 'forbidden', 'idpUserId must be the signed-in user');
  }
  return json(await ctx.store.upsertUser(body, ctx.now()));
}
