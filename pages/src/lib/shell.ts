// The signed-in pages' frame, in one place: the navigation (Dashboard, Issues, Funnels, Alerts, Projects),
// the user and Sign out, the session guard, and a failure shown in place of the page. Each page's
// HTML holds an empty <header id="topbar">; this fills it.
import { byId, el } from './dom.ts';
import { currentSession, signOut, type Session } from './session.ts';

export type Section = 'dashboard' | 'issues' | 'funnels' | 'alerts' | 'projects' | 'invite';

const SECTIONS: [Exclude<Section, 'invite'>, string, string][] = [
  ['dashboard', 'Dashboard', '/dashboard'],
  ['issues', 'Issues', '/issues/'],
  ['funnels', 'Funnels', '/funnels/'],
  ['alerts', 'Alerts', '/alerts/'],
  ['projects', 'Projects', '/projects/'],
];

/** Fills the top bar: the brand, the sections (the current one marked), the user and Sign out. */
export function renderTopbar(current: Section, session: Session): void {
  const nav = el('nav', { attrs: { 'aria-label': 'Main' } }, ...SECTIONS.map(([id, label, href]) =>
    el('a', { text: label, attrs: { href, ...(id === current ? { 'aria-current': 'page' } : {}) } })));
  const signOutButton = el('button', { text: 'Sign out', attrs: { id: 'sign-out', type: 'button' } });
  signOutButton.addEventListener('click', () => void signOut());
  byId('topbar').replaceChildren(
    el('a', { class: 'brand', text: 'Watchtower', attrs: { href: '/landing/' } }),
    nav,
    el('span', { class: 'spacer' }),
    el('span', { class: 'user' }, 'Signed in as ', el('strong', { text: session.displayName || session.userId, attrs: { id: 'user-name' } }),
      ' (', el('span', { text: session.userId, attrs: { id: 'user-id' } }), ')'),
    signOutButton,
  );
}

/** Resolves with the session once the page may show; a visitor without one goes to /login/ (and comes back to `returnTo`). */
export async function signedIn(current: Section, returnTo?: string): Promise<Session | null> {
  const session = await currentSession();
  if (!session) {
    if (returnTo) sessionStorage.setItem(RETURN_KEY, returnTo);
    location.replace('/login/');
    return null;
  }
  renderTopbar(current, session);
  return session;
}

/** Where the sign-in page goes once signed in, when a page sent the visitor there (an invitation). */
export const RETURN_KEY = 'watchtower_return_to';

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
