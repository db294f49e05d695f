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

/** The signed-in user and a project they own; anyone else's project, like a missing one, is a 404. */
async function ownProject(request: RouteRequest, ctx: Context): Promise<{ userId: string; project: string }> {
  const userId = await requireUser(ctx, request);
  const project = request.params.id;
  if (!/^\d{1,20}$/.test(project) || !(await ctx.records.get('project', project, userId))) {
    throw new HttpError(404, 'project_not_found', `No project ${project}`);
  }
  return { userId, project };
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
