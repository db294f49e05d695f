// POST/GET /api/projects/:id/sourcemaps and DELETE /api/projects/:id/sourcemaps/:mapId (docs/api.md#source-maps).
import { parseJson, readBody } from '../body.ts';
import { HttpError, json, type JsonReply } from '../http.ts';
import { MAX_SOURCE_MAP_BYTES } from '../issues/sourcemap.ts';
import { parseSourceMapUpload, type SourceMapRecord } from '../issues/sourcemap-store.ts';
import { requireUser, type Context, type RouteRequest } from '../context.ts';

/**
 * A request may be larger than the map it carries: a map sent as a JSON string escapes its quotes
 * and backslashes. The map itself is held to MAX_SOURCE_MAP_BYTES.
 */
export const MAX_UPLOAD_BYTES = MAX_SOURCE_MAP_BYTES + MAX_SOURCE_MAP_BYTES / 2;

/** The events' owner and the project, for an admin of it; anyone with no role on it gets a 404. */
async function ownProject(request: RouteRequest, ctx: Context): Promise<{ userId: string; project: string }> {
  const userId = await requireUser(ctx, request);
  const access = await ctx.teams.access(userId, request.params.id, 'manage');
  // Maps are kept under the events' owner: symbolication finds them by the events' owner.
  return { userId: access.owner, project: access.project.id };
}

const shown = ({ blob: _blob, ...map }: SourceMapRecord) => map;

export async function uploadSourceMap(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { userId, project } = await ownProject(request, ctx);
  const upload = parseSourceMapUpload(parseJson(await readBody(request, MAX_UPLOAD_BYTES)));
  return json({ sourceMap: shown(await ctx.monitor.sourceMaps.upload(userId, project, upload)) }, 201);
}

export async function listSourceMaps(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { userId, project } = await ownProject(request, ctx);
  const [maps, quota] = await Promise.all([ctx.monitor.sourceMaps.list(userId, project), ctx.monitor.sourceMaps.usage(userId, project)]);
  return json({ sourceMaps: maps.map(shown), quota });
}

export async function deleteSourceMap(request: RouteRequest, ctx: Context): Promise<JsonReply> {
  const { userId, project } = await ownProject(request, ctx);
  const id = request.params.mapId;
  if (!(await ctx.monitor.sourceMaps.delete(userId, project, id))) throw new HttpError(404, 'not_found', `No source map ${id} in project ${project}`);
  return json({ deleted: id });
}
