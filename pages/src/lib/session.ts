// Client-side authentication of the same-origin pages, in one place. Two modes:
// - dev (no provider configured): the server trusts X-IdP-User-Id, so signing in only records an id.
// - provider: OpenID Connect Authorization Code + PKCE (./oidc.ts, loaded only in that mode);
//   API calls carry the access token as a Bearer token.
import { clientConfig } from './config.ts';
import type { Session } from './user.ts';

export type { Session };

/** The signed-in id, read by the same-origin demo to tag its events (docs/api.md#ownership). */
export const USER_KEY = 'service_idp_user_id';
const DEV_PROFILE_KEY = 'watchtower_dev_profile';

export const mode = () => clientConfig().mode;

let current: Session | null = null;

/** The confirmed session, or null when nobody is signed in. */
export async function currentSession(): Promise<Session | null> {
  if (current) return current;
  if (mode() === 'provider') {
    const oidc = await import('./oidc.ts');
    current = await oidc.session();
  } else {
    const userId = localStorage.getItem(USER_KEY);
    if (!userId) return null;
    const profile = readJson(localStorage.getItem(DEV_PROFILE_KEY));
    current = {
      userId,
      email: typeof profile?.email === 'string' ? profile.email : '',
      displayName: typeof profile?.displayName === 'string' ? profile.displayName : userId,
    };
  }
  if (current) localStorage.setItem(USER_KEY, current.userId);
  return current;
}

/** Development sign-in: the server trusts whatever id the header names, so this only records it. */
export function devSignIn(profile: Session): void {
  localStorage.setItem(USER_KEY, profile.userId);
  localStorage.setItem(DEV_PROFILE_KEY, JSON.stringify({ email: profile.email, displayName: profile.displayName }));
  current = null;
}

/** Provider sign-in (or sign-up): leaves the page for the provider's login. */
export async function providerSignIn(signUp = false): Promise<void> {
  const oidc = await import('./oidc.ts');
  await oidc.startSignIn(signUp);
}

/** Provider redirect back to /login/ with ?code=…: true once the tokens are held. */
export async function completeProviderSignIn(): Promise<boolean> {
  if (mode() !== 'provider') return false;
  const oidc = await import('./oidc.ts');
  return oidc.completeSignIn();
}

/** Headers that identify the user to the API. */
export async function authHeaders(): Promise<Record<string, string>> {
  if (mode() === 'provider') {
    const oidc = await import('./oidc.ts');
    const token = await oidc.accessToken();
    return token ? { authorization: `Bearer ${token}` } : {};
  }
  const id = localStorage.getItem(USER_KEY);
  return id ? { 'x-idp-user-id': id } : {};
}

/** Set once sign-out has begun: its own navigation (to the provider's end-session page) must win. */
let signingOut = false;

/** fetch with the user's credentials; a 401 means the session is gone, so back to the sign-in page. */
export async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  for (const [k, v] of Object.entries(await authHeaders())) headers.set(k, v);
  const response = await fetch(path, { ...init, headers });
  // A request that was under way when sign-out forgot the tokens must not redirect to /login/ first.
  if (response.status === 401 && !signingOut) {
    await forget();
    location.replace('/login/');
    throw new Error('Signed out');
  }
  return response;
}

/** After sign-in the service keeps its own record of the user (docs/api.md#users-sync). The answer's status. */
export async function syncUser(session: Session): Promise<number> {
  const response = await api('/api/users/sync', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ idpUserId: session.userId, email: session.email, displayName: session.displayName }),
  });
  await response.body?.cancel();
  return response.status;
}

async function forget(): Promise<void> {
  current = null;
  localStorage.removeItem(USER_KEY);
  localStorage.removeItem(DEV_PROFILE_KEY);
  if (mode() === 'provider') (await import('./oidc.ts')).forgetTokens();
}

/** Signs out and returns to /login/ (through the provider's end-session endpoint when there is one). */
export async function signOut(): Promise<void> {
  signingOut = true;
  if (mode() === 'provider') {
    const oidc = await import('./oidc.ts');
    const endSession = await oidc.endSessionUrl(location.origin + '/login/').catch(() => null);
    await forget();
    location.assign(endSession ?? '/login/');
    return;
  }
  await forget();
  location.assign('/login/');
}

function readJson(text: string | null): Record<string, unknown> | null {
  if (!text) return null;
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
