// Provider mode: a generic OpenID Connect client (Authorization Code + PKCE, public client) with
// oauth4webapi. Tokens live in sessionStorage, never localStorage: they die with the tab and are not
// shared with every other page of the origin for longer than the visit.
import * as oauth from 'oauth4webapi';
import { clientConfig } from './config.ts';
import type { Session } from './user.ts';

const TOKENS_KEY = 'watchtower_oidc_tokens';
const PENDING_KEY = 'watchtower_oidc_pending';
const REDIRECT_PATH = '/login/';

interface Tokens { accessToken: string; idToken: string; expiresAt: number; session: Session }

// A loopback issuer (local provider, tests) is plain http; anything else must be https.
const insecureOk = (url: URL) => url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

let server: Promise<oauth.AuthorizationServer> | null = null;
function authorizationServer(): Promise<oauth.AuthorizationServer> {
  server ??= (async () => {
    const issuer = new URL(clientConfig().issuer);
    const response = await oauth.discoveryRequest(issuer, { [oauth.allowInsecureRequests]: insecureOk(issuer) });
    return oauth.processDiscoveryResponse(issuer, response);
  })();
  server.catch(() => (server = null));
  return server;
}

const supportsCreate = (as: oauth.AuthorizationServer) =>
  Array.isArray(as.prompt_values_supported) && as.prompt_values_supported.includes('create');

const client = (): oauth.Client => ({ client_id: clientConfig().clientId });
const redirectUri = () => location.origin + REDIRECT_PATH;

export async function startSignIn(signUp: boolean): Promise<void> {
  const as = await authorizationServer();
  if (!as.authorization_endpoint) throw new Error('The identity provider has no authorization endpoint');
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, nonce }));
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: clientConfig().clientId,
    redirect_uri: redirectUri(),
    response_type: 'code',
    scope: clientConfig().scope,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    // OpenID Connect "Initiating User Registration", where the provider announces it; elsewhere
    // the provider's own login page offers sign-up.
    ...(signUp && supportsCreate(as) ? { prompt: 'create' } : {}),
  }).toString();
  location.assign(url.href);
}

/** Handles the redirect back with ?code=…; true once tokens are held. */
export async function completeSignIn(): Promise<boolean> {
  const here = new URL(location.href);
  if (!here.searchParams.has('code') && !here.searchParams.has('error')) return false;
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as { verifier: string; state: string; nonce: string } | null;
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, '', REDIRECT_PATH);
  if (!pending) throw new Error('Sign-in was not started from this tab; please sign in again');
  const as = await authorizationServer();
  const params = oauth.validateAuthResponse(as, client(), here, pending.state);
  const issuer = new URL(clientConfig().issuer);
  const response = await oauth.authorizationCodeGrantRequest(as, client(), oauth.None(), params, redirectUri(), pending.verifier, {
    [oauth.allowInsecureRequests]: insecureOk(issuer),
  });
  const result = await oauth.processAuthorizationCodeResponse(as, client(), response, { expectedNonce: pending.nonce, requireIdToken: true });
  const claims = oauth.getValidatedIdTokenClaims(result)!;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const tokens: Tokens = {
    accessToken: result.access_token,
    idToken: result.id_token ?? '',
    expiresAt: Date.now() + (result.expires_in ?? 300) * 1000,
    session: { userId: claims.sub, email: str(claims.email), displayName: str(claims.name) || str(claims.email) || claims.sub },
  };
  sessionStorage.setItem(TOKENS_KEY, JSON.stringify(tokens));
  return true;
}

function tokens(): Tokens | null {
  try {
    const t = JSON.parse(sessionStorage.getItem(TOKENS_KEY) ?? 'null') as Tokens | null;
    // A few seconds of margin so a request never leaves with a token that expires on the way.
    if (!t || typeof t.accessToken !== 'string' || t.expiresAt - 5000 < Date.now()) return null;
    return t;
  } catch {
    return null;
  }
}

export async function session(): Promise<Session | null> {
  return tokens()?.session ?? null;
}

export async function accessToken(): Promise<string | null> {
  return tokens()?.accessToken ?? null;
}

export function forgetTokens(): void {
  sessionStorage.removeItem(TOKENS_KEY);
  sessionStorage.removeItem(PENDING_KEY);
}

/** The provider's end-session URL (RP-initiated logout), or null when it has none. */
export async function endSessionUrl(postLogoutRedirect: string): Promise<string | null> {
  const idToken = JSON.parse(sessionStorage.getItem(TOKENS_KEY) ?? 'null')?.idToken as string | undefined;
  const as = await authorizationServer();
  if (!as.end_session_endpoint) return null;
  const url = new URL(as.end_session_endpoint);
  url.searchParams.set('client_id', clientConfig().clientId);
  url.searchParams.set('post_logout_redirect_uri', postLogoutRedirect);
  if (idToken) url.searchParams.set('id_token_hint', idToken);
  return url.href;
}
