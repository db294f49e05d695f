// A project's team on the projects page (docs/api.md#teams): its members and their roles, and for
// admins the invitations, share links and audit trail. What a role may do is the server's call;
// the page only leaves out the controls that would be refused.
import { el } from './dom.ts';
import type { Project, Role } from './projects.ts';
import { api } from './session.ts';

interface Member { userId: string; email?: string; displayName?: string; role: Role; addedAt: string }
interface Invitation { id: string; role: Role; email: string | null; expiresAt: string; status: string }
interface Share { id: string; createdAt: string; expiresAt: string | null; revokedAt: string | null }
interface AuditEntry { at: string; actor: string; action: string; target?: string; from?: string | null; to?: string | null }

const ROLE_CHOICES: Role[] = ['admin', 'member', 'viewer'];

/**
 * The link made last on each project, shown until the next: every change re-renders the page, and
 * the server keeps only a hash, so this is the one place the link can be copied from.
 */
const madeLinks = new Map<string, { what: string; url: string }>();

async function call<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const r = await api(path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const out = (await r.json().catch(() => ({}))) as T & { error?: string };
  if (!r.ok) throw new Error(out.error ?? `HTTP ${r.status}`);
  return out;
}

const roleSelect = (label: string, value: Role, choices: Role[]) =>
  el('select', { attrs: { 'aria-label': label } }, ...choices.map((r) => {
    const o = el('option', { text: r, attrs: { value: r } });
    o.selected = r === value;
    return o;
  }));

/**
 * The team section of a project card. `act` runs a change and re-renders the page (or shows its
 * error); `me` is the signed-in user.
 */
export async function teamSection(p: Project, me: string, act: (fn: () => Promise<unknown>) => () => Promise<void>): Promise<HTMLElement> {
  const role = p.role ?? 'owner';
  const admin = role === 'admin' || role === 'owner';
  const base = `/api/projects/${p.id}`;
  const { members } = await call<{ members: Member[] }>(`${base}/members`);

  const rows = members.map((m) => {
    const who = el('td', {}, m.displayName || m.userId, m.email ? el('span', { class: 'note', text: ` ${m.email}` }) : null);
    const canChange = admin && m.role !== 'owner' && m.userId !== me;
    let roleCell: HTMLElement = el('td', { text: m.role });
    const actions = el('td');
    if (canChange) {
      const choices = role === 'owner' ? ['owner', ...ROLE_CHOICES] as Role[] : ROLE_CHOICES;
      const select = roleSelect(`Role of ${m.displayName || m.userId}`, m.role, choices);
      select.addEventListener('change', act(() => call(`${base}/members/${encodeURIComponent(m.userId)}`, 'PATCH', { role: select.value })));
      roleCell = el('td', {}, select);
      const remove = el('button', { text: 'Remove', attrs: { type: 'button' } });
      remove.addEventListener('click', act(() => call(`${base}/members/${encodeURIComponent(m.userId)}`, 'DELETE')));
      actions.append(remove);
    } else if (m.userId === me && m.role !== 'owner') {
      const leave = el('button', { text: 'Leave project', attrs: { type: 'button' } });
      leave.addEventListener('click', act(() => call(`${base}/members/${encodeURIComponent(me)}`, 'DELETE')));
      actions.append(leave);
    }
    return el('tr', { attrs: { 'data-member': m.userId } }, who, roleCell, actions);
  });
  const section = el('div', { class: 'team' },
    el('h3', { text: 'Members' }),
    el('p', { class: 'note', text: `Your role: ${role}.` }),
    el('table', { class: 'members' },
      el('thead', {}, el('tr', {}, el('th', { text: 'Member', attrs: { scope: 'col' } }), el('th', { text: 'Role', attrs: { scope: 'col' } }), el('th', { text: 'Actions', attrs: { scope: 'col' } }))),
      el('tbody', {}, ...rows)));
  if (!admin) return section;

  const [{ invitations }, { shares }, { entries }] = await Promise.all([
    call<{ invitations: Invitation[] }>(`${base}/invitations`),
    call<{ shares: Share[] }>(`${base}/shares`),
    call<{ entries: AuditEntry[] }>(`${base}/audit`),
  ]);
  // A new link is shown here, once: the server keeps only its hash.
  const fresh = el('p', { class: 'fresh-link', attrs: { role: 'status' } });
  const made = madeLinks.get(p.id);
  if (made) fresh.append(`${made.what} (shown once, copy it now): `, el('code', { class: 'link', text: made.url }));
  const showLink = (what: string) => (answer: unknown) => void madeLinks.set(p.id, { what, url: (answer as { url: string }).url });

  const inviteRole = roleSelect('Role of the invited member', 'member', ROLE_CHOICES);
  const inviteEmail = el('input', { attrs: { type: 'email', 'aria-label': 'E-mail (optional)', placeholder: 'e-mail (optional)' } });
  const invite = el('button', { text: 'Invite', attrs: { type: 'button', 'data-action': 'invite' } });
  invite.addEventListener('click', async () => {
    await act(async () => showLink('Invitation link')(await call(`${base}/invitations`, 'POST', { role: inviteRole.value, ...(inviteEmail.value ? { email: inviteEmail.value } : {}) })))();
  });
  const openInvitations = invitations.filter((i) => i.status === 'open').map((i) => {
    const revoke = el('button', { text: 'Revoke', attrs: { type: 'button' } });
    revoke.addEventListener('click', act(() => call(`${base}/invitations/${i.id}`, 'DELETE')));
    return el('li', {}, `${i.role}${i.email ? ` for ${i.email}` : ''}, until ${new Date(i.expiresAt).toLocaleString()} `, revoke);
  });

  const share = el('button', { text: 'Create share link', attrs: { type: 'button', 'data-action': 'share' } });
  share.addEventListener('click', async () => {
    await act(async () => showLink('Share link')(await call(`${base}/shares`, 'POST', {})))();
  });
  const liveShares = shares.filter((s) => !s.revokedAt).map((s) => {
    const revoke = el('button', { text: 'Revoke', attrs: { type: 'button' } });
    revoke.addEventListener('click', act(() => call(`${base}/shares/${s.id}`, 'DELETE')));
    return el('li', {}, `made ${new Date(s.createdAt).toLocaleString()}${s.expiresAt ? `, until ${new Date(s.expiresAt).toLocaleString()}` : ''} `, revoke);
  });

  section.append(
    el('h3', { text: 'Invitations' }),
    el('div', { class: 'project-form' }, el('label', {}, 'Role ', inviteRole), el('label', {}, 'E-mail ', inviteEmail), invite),
    openInvitations.length ? el('ul', { class: 'invitations' }, ...openInvitations) : el('p', { class: 'note', text: 'No open invitations.' }),
    el('h3', { text: 'Share links' }),
    el('p', { class: 'note', text: 'A share link shows this project\'s statistics to anyone holding it, signed out: no events, errors or exports.' }),
    el('div', { class: 'actions' }, share),
    liveShares.length ? el('ul', { class: 'shares' }, ...liveShares) : el('p', { class: 'note', text: 'No share links.' }),
    fresh,
    el('details', {}, el('summary', { text: 'Audit trail' }),
      el('ul', { class: 'audit' }, ...entries.slice(0, 50).map((e) =>
        el('li', { text: `${new Date(e.at).toLocaleString()} · ${e.actor} · ${e.action}${e.target ? ` · ${e.target}` : ''}${e.from || e.to ? ` (${e.from ?? '—'} → ${e.to ?? '—'})` : ''}` })))),
  );
  return section;
}
