// Who is asking (docs/api.md#identity). A bearer token verified against the provider's JWKS wins; the
// X-IdP-User-Id header counts only where it is trusted (no provider, or SERVICE_TRUST_USER_HEADER).
import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';

/** The outcome of resolving a request's user. */
export interface Identity {
  /** The provider's user id, or null when the request identifies no one. */
  userId: string | null;
  /**
   * Why no user was resolved although the request tried: `invalid` (bad token, untrusted header)
   * or `unavailable` (the provider's keys could not be fetched). Protected reads answer 401 / 503.
   */
  failure?: 'invalid' | 'unavailable';
  /** When the credentials stop being valid (a token's `exp`, ms): live streams close then. */
  expiresAt?: number;
}

export interface Authenticator {
  resolve(request: Request): Promise<Identity>;
  /**
   * Header-trust development mode: X-IdP-User-Id is believed, so an event's own userId may name
   * its owner too (docs/api.md#ownership). Absent means false.
   */
  readonly trustsHeader?: boolean;
}

export interface AuthOptions {
  /** Trust `X-IdP-User-Id` (no provider configured, or SERVICE_TRUST_USER_HEADER=true). */
  trustHeader: boolean;
  /** The provider's issuer (`iss`). Setting it configures a provider and enables bearer tokens. */
  issuer?: string | null;
  /** Where the provider publishes its keys; `<issuer>/.well-known/jwks.json` when absent. */
  jwksUrl?: string | null;
  /** When non-empty, a token's `azp` claim must be one of these. */
  authorizedParties?: readonly string[];
  /** Allowed clock skew for `exp` / `nbf`, seconds. Default 5. */
  clockToleranceSec?: number;
  /** Minimum time between two JWKS fetches caused by an unknown `kid`, ms. Default 30 s. */
  cooldownMs?: number;
  /** How long fetched keys are used before they are fetched again, ms. Default 10 min. */
  cacheMaxAgeMs?: number;
  /** JWKS fetch timeout, ms. Default 5 s. */
  timeoutMs?: number;
}

export const USER_HEADER = 'x-idp-user-id';
const MAX_USER_ID = 256;
/** Asymmetric only: an HMAC "alg" would let anyone holding the public key mint tokens. */
export const ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;

const INVALID: Identity = Object.freeze({ userId: null, failure: 'invalid' });
const UNAVAILABLE: Identity = Object.freeze({ userId: null, failure: 'unavailable' });

/** The key set could not be fetched or parsed: the token's validity is unknown, not false. */
class KeysUnavailable extends Error {}

export function createAuthenticator(options: AuthOptions): Authenticator {
  const verify = options.issuer ? createVerifier(options, options.issuer) : null;
  return {
    trustsHeader: options.trustHeader,
    async resolve(request) {
      const authorization = request.headers.get('authorization');
      if (authorization !== null && /^\s*bearer(\s|$)/i.test(authorization)) {
        // No provider means nothing to check a token against; it must not count as a sign-in.
        if (!verify) return INVALID;
        return verify(authorization.trim().slice(6).trim());
      }
      const header = request.headers.get(USER_HEADER)?.trim();
      if (!header) return { userId: null };
      if (!options.trustHeader || header.length > MAX_USER_ID) return INVALID;
      return { userId: header };
    },
  };
}

function createVerifier(options: AuthOptions, issuer: string): (token: string) => Promise<Identity> {
  // Providers disagree on a trailing slash in `iss`; both spellings name the same origin and path.
  const base = issuer.replace(/\/+$/, '');
  const issuers = [base, base + '/'];
  const remote = createRemoteJWKSet(new URL(options.jwksUrl || `${base}/.well-known/jwks.json`), {
    cooldownDuration: options.cooldownMs ?? 30_000,
    cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
    timeoutDuration: options.timeoutMs ?? 5_000,
  });
  const getKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await remote(header, token);
    } catch (err) {
      // These come from choosing a key in a set that was fetched: the token is at fault.
      if (
        err instanceof errors.JWKSNoMatchingKey ||
        err instanceof errors.JWKSMultipleMatchingKeys ||
        err instanceof errors.JOSENotSupported
      ) throw err;
      // Anything else is the fetch: refused, timed out, not 200, not JSON, not a key set.
      throw new KeysUnavailable('JWKS unavailable', { cause: err });
    }
  };
  const parties = options.authorizedParties?.length ? new Set(options.authorizedParties) : null;
  const clockTolerance = options.clockToleranceSec ?? 5;

  return async (token) => {
    if (!token) return INVALID;
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer: issuers,
        algorithms: [...ALGORITHMS],
        clockTolerance,
        requiredClaims: ['exp', 'sub'],
      });
      const sub = payload.sub;
      if (typeof sub !== 'string' || sub.trim() === '' || sub.length > MAX_USER_ID) return INVALID;
      if (parties && (typeof payload.azp !== 'string' || !parties.has(payload.azp))) return INVALID;
      return { userId: sub, expiresAt: (payload.exp as number) * 1000 };
    } catch (err) {
      return err instanceof KeysUnavailable ? UNAVAILABLE : INVALID;
    }
  };
}

/**
 * The issuer a publishable key (IDP_PUBLISHABLE_KEY) names: `pk_test_` or `pk_live_`, then base64 of the
 * provider's frontend host followed by `$`. Throws an Error with a one-line reason otherwise.
 */
export function issuerFromPublishableKey(key: string): string {
  const match = /^pk_(?:test|live)_(.*)$/s.exec(key.trim());
  if (!match) throw new Error('publishable key must start with pk_test_ or pk_live_');
  const encoded = match[1]!.replace(/-/g, '+').replace(/_/g, '/');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1) {
    throw new Error('publishable key is not valid base64 after its pk_test_/pk_live_ prefix');
  }
  let decoded: string;
  try {
    decoded = atob(encoded);
  } catch {
    throw new Error('publishable key is not valid base64 after its pk_test_/pk_live_ prefix');
  }
  if (!decoded.endsWith('$')) throw new Error('publishable key does not decode to a host followed by "$"');
  const host = decoded.slice(0, -1);
  if (host === '') throw new Error('publishable key encodes an empty host');
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::\d{1,5})?$/.test(host)) {
    throw new Error('publishable key does not encode a valid host name');
  }
  return `https://${host.toLowerCase()}`;
}
