// POST /api/events, POST /api/beacon, GET /api/events and GET /api/events/export (docs/api.md).
import { checkContentType, parseJson, readBody } from '../body.ts';
import { isoTime, normalise, type StoredEvent } from '../event.ts';
import { CORS_HEADERS, HttpError, json, jsonText, NOSNIFF, type JsonReply } from '../http.ts';
import { resolveOwner } from '../owner.ts';
import { limitProject, projectOfKey, requestKey, type KeyedProject } from '../projects.ts';
import { batchItems, batchSentAt, parseEventsQuery, parseExportQuery, validateEvents } from '../schema.ts';
import { clientInfo } from '../client-info.ts';
import { countryOfAddress } from '../geo.ts';
import { asciiJson, wideCampaign } from '../event-fields.ts';
import { announceStored, clientAddress, readScope, requireUser, type Context, type ServeInfo } from '../context.ts';
import { InvalidCursorError } from '../store/types.ts';

/** POST /api/events: the persisted stores answer with the stored events too. */
export const ingest = (request: Request, ctx: Context, info?: ServeInfo) => receive(request, ctx, info, ctx.store.persisted);
/** POST /api/beacon: sendBeacon never reads the answer, so it carries the counts only. */
export const beacon = (request: Request, ctx: Context, info?: ServeInfo) => receive(request, ctx, info, false);

const BOT_ANSWER = '{"accepted":0,"rejected":0,"bot":true}';

async function receive(request: Request, ctx: Context, info: ServeInfo | undefined, echo: boolean): Promise<JsonReply> {
  const batch = await accept(request, ctx, info);
  if (batch === null) return jsonText(BOT_ANSWER, 202);
  const { events, rejected } = batch;
  // Each event is serialised once, for the answer and for a store that journals JSON.
  const texts = echo ? events.map((e) => JSON.stringify(e)) : undefined;
  const stored = events.length ? await ctx.store.insert(events, texts) : [];
  announceStored(ctx, stored);
  const counts = `{"accepted":${events.length},"rejected":${rejected}`;
  // An event whose campaign alone is not ASCII is answered in ASCII (wideCampaign).
  return jsonText(texts ? `${counts},"events":[${texts.map((t, i) => (wideCampaign(events[i].utm) ? asciiJson(t) : t)).join(',')}]}` : counts + '}');
}

/**
 * Reads, checks and normalises a request's events; null for a crawler's request, dropped unread.
 * A function of its own so that the parsed body dies with it: an async function keeps every local
 * alive across its awaits, and the store's wait for the journal outlives a young-generation
 * collection, so the raw events would be copied and promoted with the normalised ones.
 */
async function accept(request: Request, ctx: Context, info: ServeInfo | undefined): Promise<{ events: StoredEvent[]; rejected: number } | null> {
  const address = clientAddress(ctx, request, info);
  const wait = ctx.limiter.take(address, ctx.now());
  if (wait) throw new HttpError(429, 'rate_limited', 'Too many requests; retry later', { 'retry-after': String(wait) });
  // Browser, OS and device, from a cache of recent user agents: the raw header is never stored.
  const agent = clientInfo(request.headers.get('user-agent'));
  // A project key in the X-Watchtower-Key header marks a backend or script sending on purpose: the
  // browser SDK puts its key in the query string (a header would cost a CORS preflight), so a
  // crawler rendering a page with the SDK is still dropped. The key itself is checked below as ever.
  if (agent.device === 'bot' && !ctx.keepBots && !request.headers.has('x-watchtower-key')) {
    // Answered as a success, so crawlers and SDKs do not retry, before the body is even read; the
    // answer says why nothing was stored, for a person trying the endpoint with curl (README "Bots").
    ctx.botsDropped++;
    return null;
  }
  checkContentType(request);
  // The country of the address, never the address itself (README "Countries").
  const client = { ...agent, country: ctx.geo ? await countryOfAddress(address, ctx.log) : null };
  // A bad or forged token never claims ownership: the sender is then simply unidentified.
  const { userId: authUser } = await ctx.auth.resolve(request);
  const bytes = await readBody(request);
  // Not bounded as a whole: a deep event is rejected by validateEvents and counted, the rest kept.
  const body = parseJson(bytes, Infinity);
  const items = batchItems(body);
  const key = requestKey(request, body);
  const keyed: KeyedProject | null = key === null ? null : await projectOfKey(ctx.projects, key, request);
  const { valid, rejected } = validateEvents(items, bytes.byteLength);
  const now = ctx.now();
  if (keyed) limitProject(ctx.projects, keyed.project, valid.length, now);
  const sentAt = items.length && items[0] !== body ? batchSentAt(body) : null;
  const clockOffsetMs = sentAt === null ? 0 : now - sentAt;
  const receivedAt = isoTime(now);
  const projectOwner = keyed?.owner ?? null;
  const events = valid.map((raw) => {
    const owner = resolveOwner({ authUser, projectOwner, defaultOwner: ctx.defaultOwner, eventUserId: raw.userId, trustEventUserId: ctx.trustEventUserId });
    const event = normalise(raw, { now, receivedAt, clockOffsetMs, owner });
    // One object shared by the request's events; it replaces a client's own `client` field.
    event.client = client;
    // The project only on its owner's events: a signed-in user's own events never join another's project.
    if (keyed && owner === projectOwner) event.projectId = keyed.project.id;
    return event;
  });
  return { events, rejected };
}

export async function listEvents(request: Request, ctx: Context): Promise<JsonReply> {
  const userId = await requireUser(ctx, request);
  const params = new URL(request.url).searchParams;
  const query = parseEventsQuery(params);
  const { owner, projectId } = await readScope(ctx, userId, params);
  try {
    return json(await ctx.store.list({ userId: owner, ...query, ...(projectId ? { projectId } : {}) }));
  } catch (err) {
    if (err instanceof InvalidCursorError) throw new HttpError(400, 'invalid_cursor', err.message);
    throw err;
  }
}

/**
 * GET /api/events/export: the user's events as NDJSON, oldest first, in constant memory. The body
 * pulls the store's next batch only when the client has read the previous one (highWaterMark 0:
 * nothing is read ahead), and a client that goes away cancels the body, which stops the store.
 */
export async function exportEvents(request: Request, ctx: Context): Promise<Response> {
  const userId = await requireUser(ctx, request);
  const params = new URL(request.url).searchParams;
  const filter = parseExportQuery(params);
  const { owner, projectId } = await readScope(ctx, userId, params);
  const batches = ctx.store.export({ userId: owner, ...filter, ...(projectId ? { projectId } : {}) })[Symbol.asyncIterator]();
  // The first batch before the answer: a store that cannot serve is a 503, not a 200 cut short.
  const first = await batches.next();
  const stamp = new Date(ctx.now()).toISOString().replace(/[:.]/g, '-');
  return new Response(ndjson(ctx, batches, first), {
    status: 200,
    headers: {
      'content-type': 'application/x-ndjson',
      'content-disposition': `attachment; filename="watchtower-events-${stamp}.ndjson"`,
      'cache-control': 'no-store',
      ...CORS_HEADERS,
      ...NOSNIFF,
      'access-control-expose-headers': 'Content-Disposition',
    },
  });
}

function ndjson(ctx: Context, batches: AsyncIterator<StoredEvent[]>, first: IteratorResult<StoredEvent[]>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let pending: IteratorResult<StoredEvent[]> | null = first;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          for (;;) {
            const next = pending ?? (await batches.next());
            pending = null;
            if (next.done) return controller.close();
            if (!next.value.length) continue;
            let text = '';
            for (const e of next.value) text += JSON.stringify(e) + '\n';
            return controller.enqueue(encoder.encode(text));
          }
        } catch (err) {
          // Headers are gone: the body ends in an error, which a server passes on by aborting it.
          ctx.log(`export failed mid-way: ${err instanceof Error ? err.message : String(err)}`);
          controller.error(err);
          await batches.return?.();
        }
      },
      async cancel() {
        await batches.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}
