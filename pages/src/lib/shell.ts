// The signed-in pages' frame (Issues, Alerts): the session guard, the user in the top bar, sign-out,
// and a failure shown in place of the page. The dashboard has its own, older copy of this.
import { byId } from './dom.ts';
import { currentSession, signOut, type Session } from './session.ts';

/** Resolves with the session once the page may show; a visitor without one goes to /login/. */
export async function signedIn(): Promise<Session | null> {
  const session = await currentSession();
  if (!session) {
    location.replace('/login/');
    return null;
  }
  byId('user-name').textContent = session.displayName || session.userId;
  byId('user-id').textContent = session.userId;
  byId('sign-out').addEventListener('click', () => void signOut());
  return session;
}

export function showPage(): void {
  byId('guard').hidden = true;
  byId('app').hidden = false;
}

export function showFailure(what: string, err: unknown): void {
  const guard = byId('guard');
  guard.hidden = false;
  guard.textContent = `${what} could not load: ${err instanceof Error ? err.message : String(err)}`;
}

/** A JSON API answer's error message (`{ error }`), or the status. */
export async function problemOf(r: Response): Promise<string> {
  const body = (await r.json().catch(() => null)) as { error?: unknown } | null;
  return typeof body?.error === 'string' ? body.error : `the service answered ${r.status}`;
}
