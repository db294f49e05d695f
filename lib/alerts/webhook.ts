// Webhook delivery, one attempt: a signed JSON POST. Retries are delivery.ts's.
//
// Verifying a delivery (receivers): compute HMAC-SHA256 of the raw request body, exactly as received
// (before any JSON parsing), with the rule's secret as the key; hex-encode it; compare it in constant
// time with the part of `X-Watchtower-Signature` after `sha256=`. `X-Watchtower-Delivery` is the
// notification id, the same on every retry: a receiver that has seen it may drop the duplicate.
// For example, in Node:
//   const expected = 'sha256=' + createHmac('sha256', secret).update(rawBody).digest('hex');
//   const ok = timingSafeEqual(Buffer.from(expected), Buffer.from(header));   // lengths equal first
import { checkDestination, DEFAULT_DESTINATIONS, type DestinationPolicy, describeRefusal, type Refusal, refusalMessage } from './destination.ts';

export const SIGNATURE_HEADER = 'X-Watchtower-Signature';
export const DELIVERY_HEADER = 'X-Watchtower-Delivery';
/** An attempt that has not answered within this is abandoned (and retried). */
export const WEBHOOK_TIMEOUT_MS = 10_000;

const utf8 = new TextEncoder();

async function hmacKey(secret: string, usage: 'sign' | 'verify'): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [usage]);
}

/** `sha256=<hex HMAC-SHA256 of body>`: the header value. WebCrypto, so it runs on every runtime. */
export async function signBody(secret: string, body: string): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey(secret, 'sign'), utf8.encode(body)));
  return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** Checks a signature header against a body (constant time, through WebCrypto's verify). */
export async function verifySignature(secret: string, body: string | Uint8Array<ArrayBuffer>, header: string | null): Promise<boolean> {
  const m = /^sha256=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const mac = new Uint8Array(32);
  for (let i = 0; i < 32; i++) mac[i] = parseInt(m[1].slice(i * 2, i * 2 + 2), 16);
  const data = typeof body === 'string' ? utf8.encode(body) : body;
  return crypto.subtle.verify('HMAC', await hmacKey(secret, 'verify'), mac, data);
}

export interface WebhookRequest {
  url: string;
  secret: string;
  /** The exact JSON text to send (message.ts webhookBody). */
  body: string;
  deliveryId: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
  /** Which destinations may be posted to (destination.ts); by default public addresses only, and no host names (no resolver). */
  destinations?: DestinationPolicy;
}

/**
 * A failed attempt. Its message is what the rule's owner sees (`refused: …`, `request failed`,
 * `no answer within … ms`, `answered 405`): never the connection's error, which would tell open
 * ports from closed ones and name internal addresses. That goes in `detail`, for the server log.
 * `final`: no retry can succeed (a refused destination).
 */
export class WebhookError extends Error {
  constructor(message: string, readonly detail: string | null = null, readonly final = false) {
    super(message);
    this.name = 'WebhookError';
  }
}

/**
 * One POST. Resolves on a 2xx answer; throws a WebhookError on anything else (a refused
 * destination, a non-2xx status, a network error, no answer within the timeout). Redirects are not
 * followed: the signed body goes only to the URL the user gave, whose destination was checked (a
 * redirect followed would need the same check on its target).
 */
export async function postWebhook(req: WebhookRequest): Promise<void> {
  const doFetch = req.fetch ?? fetch;
  const timeoutMs = req.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const timedOut = () => new WebhookError(`no answer within ${timeoutMs} ms`);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Watchtower-Alerts',
    [SIGNATURE_HEADER]: await signBody(req.secret, req.body),
    [DELIVERY_HEADER]: req.deliveryId,
  };
  const signal = AbortSignal.timeout(timeoutMs);
  // Checked last before fetch, on what the host resolves to now, to keep the gap before fetch's own
  // lookup short (destination.ts says what remains of it).
  let refusal: Refusal | null;
  try {
    refusal = await checkDestination(req.url, req.destinations ?? DEFAULT_DESTINATIONS, signal);
  } catch (e) {
    if (isTimeout(e)) throw timedOut();
    throw new WebhookError('request failed', `the host did not resolve: ${errorText(e)}`);
  }
  if (refusal) throw new WebhookError(`refused: ${refusalMessage(refusal)}`, `refused: ${describeRefusal(refusal)}`, true);
  let res: Response;
  try {
    res = await doFetch(req.url, { method: 'POST', headers, body: req.body, redirect: 'manual', signal });
  } catch (e) {
    if (isTimeout(e)) throw timedOut();
    throw new WebhookError('request failed', errorText(e));
  }
  // The answer's body is not needed; cancelling it releases the connection.
  await res.body?.cancel().catch(() => {});
  if (res.status < 200 || res.status > 299) throw new WebhookError(`answered ${res.status}`);
}

const isTimeout = (e: unknown) => (e as Error)?.name === 'TimeoutError';

/** An error with its causes (Node's fetch says `fetch failed`, its cause `connect ECONNREFUSED …`). */
function errorText(e: unknown): string {
  const parts: string[] = [];
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    parts.push(c instanceof Error ? c.message || c.name : String(c));
  }
  return parts.join(': ');
}
