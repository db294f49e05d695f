// POST /api/events, POST /api/beacon and GET /api/events (README, "API").
import { checkContentType, parseJson, readBody } from '../body.ts';
import { isoTime, normalise } from '../event.ts';
import { HttpError, json, jsonText, type JsonReply } from '../http.ts';
import { resolveOwner } from '../owner.ts';
import { batchItems, batchSentAt, parseEventsQuery, validateEvents } from '../schema.ts';
import { clientAddress, requireUser, type Context, type ServeInfo } from '../context.ts';

/** POST /api/events: the persisted stores answer with the stored events too. */
export const ingest = (request: Request, ctx: Context, info?: ServeInfo) => receive(request, ctx, info, ctx.store.persisted);
/** POST /api/beacon: sendBeacon never reads the answer, so it carries the counts only. */
export const beacon = (request: Request, ctx: Context, info?: ServeInfo) => receive(request, ctx, info, false);

async function receive(request: Request, ctx: Context, info: ServeInfo | undefined, echo: boolean): Promise<JsonReply> {
  const wait = ctx.limiter.take(clientAddress(ctx, request, info), ctx.now());
  if (wait) throw new HttpError(429, 'rate_limited', 'Too many requests; retry later', { 'retry-after': String(wait) });
  checkContentType(request);
  // A bad or forged token never claims ownership: the sender is then simply unidentified.
  const { userId: authUser } = await ctx.auth.resolve(request);
  const bytes = await readBody(request);
  const body = parseJson(bytes);
  const items = batchItems(body);
  const { valid, rejected } = validateEvents(items, bytes.byteLength);
  const now = ctx.now();
  const sentAt = items.length && items[0] !== body ? batchSentAt(body) : null;
  const clockOffsetMs = sentAt === null ? 0 : now - sentAt;
  const receivedAt = isoTime(now);
  const events = valid.map((raw) =>
    normalise(raw, { now, receivedAt, clockOffsetMs, owner: resolveOwner({ authUser, defaultOwner: ctx.defaultOwner, eventUserId: raw.userId }) }),
  );
  // Each event is serialised once, for the answer and for a store that journals JSON.
  const texts = echo ? events.map((e) => JSON.stringify(e)) : undefined;
  const stored = events.length ? await ctx.store.insert(events, texts) : [];
  ctx.hub.publish(stored);
  const counts = `{"accepted":${events.length},"rejected":${rejected}`;
  return jsonText(texts ? `${counts},"events":[${texts.join(',')}]}` : counts + '}');
}

export async function listEvents(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const query = parseEventsQuery(new URL(request.url).searchParams);
  return json({ events: await ctx.store.list({ userId, ...query }) });
}
