// Who is asking: SPEC 5 rule 4. The bearer token path (JWKS verification) extends this module.

/** The outcome of resolving a request's user. */
export interface Identity {
  /** The provider's user id, or null when the request identifies no one. */
  userId: string | null;
  /**
   * Why no user was resolved although the request tried: `invalid` (bad token, untrusted header)
   * or `unavailable` (the provider's keys could not be fetched). Protected reads answer 401 / 503.
   */
  failure?: 'invalid' | 'unavailable';
}

export interface Authenticator {
  resolve(request: Request): Promise<Identity>;
}

export interface AuthOptions {
  /** Trust `X-IdP-User-Id` (no provider configured, or SERVICE_TRUST_USER_HEADER=true). */
  trustHeader: boolean;
}

export const USER_HEADER = 'x-idp-user-id';
const MAX_USER_ID = 256;

export function createAuthenticator(options: AuthOptions): Authenticator {
  return {
    async resolve(request) {
      const header = request.headers.get(USER_HEADER)?.trim();
      if (!header) return { userId: null };
      if (!options.trustHeader || header.length > MAX_USER_ID) return { userId: null, failure: 'invalid' };
      return { userId: header };
    },
  };
}
