// POST /api/<project id>/envelope/ and /api/<project id>/store/: what Sentry SDKs send, with the
// project's key as their DSN's public key (docs/sentry.md). The protocol is lib/sentry/'s; this
// route checks the key, the origin and the limits, and stores the events as POST /api/events does.
import { readBody } from '../body.ts';
import { isoTime, normalise } from '../event.ts';
import { HttpError, type JsonReply } from '../http.ts';
import { limitProject, projectOfKey } from '../projects.ts';
import { validateEvents } from '../schema.ts';
import { envelopeToEvents, parseEnvelope, sentryAnswer, sentryAuth, storeBodyToEvents } from '../sentry/mod.ts';
import { announceStored, clientAddress, type Context, type RouteRequest, type ServeInfo } from '../context.ts';

/**
 * Sentry SDKs read `X-Sentry-Rate-Limits` (all categories, for the project) before `Retry-After`;
 * a browser SDK on another origin reads either only when the answer exposes it.
 */
const limitHeaders = (wait: number) => ({
  'x-sentry-rate-limits': `${wait}::project`,
  'access-control-expose-headers': 'Retry-After, X-Sentry-Rate-Limits',
});

export const sentryEnvelope = (request: RouteRequest, ctx: Context, info?: ServeInfo) => receive(request, ctx, info, true);
export const sentryStore = (request: RouteRequest, ctx: Context, info?: ServeInfo) => receive(request, ctx, info, false);

async function receive(request: RouteRequest, ctx: Context, info: ServeInfo | undefined, isEnvelope: boolean): Promise<JsonReply> {
  const projectId = request.params.projectId;
  if (!/^\d{1,20}$/.test(projectId)) throw new HttpError(404, 'not_found', `Not found: a Sentry project id is a number, not ${JSON.stringify(projectId.slice(0, 64))}`);
  const wait = ctx.limiter.take(clientAddress(ctx, request, info), ctx.now());
  if (wait) throw new HttpError(429, 'rate_limited', 'Too many requests; retry later', { 'retry-after': String(wait), ...limitHeaders(wait) });
  // Any Content-Type: the SDKs send text/plain, none, or envelope types; the framing decides.
  const bytes = await readBody(request);
  const envelope = isEnvelope ? parseEnvelope(bytes) : null;
  const { publicKey } = sentryAuth(request, projectId, envelope?.header);
  const keyed = await projectOfKey(ctx.projects, publicKey, request);
  if (keyed.project.id !== projectId) throw new HttpError(401, 'invalid_key', `The key does not belong to project ${projectId}`);

  const ingest = envelope ? envelopeToEvents(envelope) : storeBodyToEvents(bytes);
  const { valid } = validateEvents(ingest.events, bytes.byteLength);
  const now = ctx.now();
  limitProject(ctx.projects, keyed.project, valid.length, now, limitHeaders);
  const receivedAt = isoTime(now);
  const clockOffsetMs = ingest.sentAt === null ? 0 : now - ingest.sentAt;
  const events = valid.map((raw) => {
    const event = normalise(raw, { now, receivedAt, clockOffsetMs, owner: keyed.owner });
    event.projectId = keyed.project.id;
    return event;
  });
  const stored = events.length ? await ctx.store.insert(events) : [];
  announceStored(ctx, stored);
  return sentryAnswer(ingest);
}
