// /invite/#<token>: what an invitation offers (the project and the role), and accepting it signed
// in (docs/api.md#invitations). The token rides in the fragment, never sent to a server but by
// this page's own requests.
import { byId } from './lib/dom.ts';
import { api } from './lib/session.ts';
import { problemOf, showFailure, showPage, signedIn } from './lib/shell.ts';

const token = decodeURIComponent(location.hash.slice(1));

if (await signedIn('invite', location.pathname + location.hash)) {
  await show().then(showPage, (err) => showFailure('The invitation', err));
}

async function show(): Promise<void> {
  const offer = byId('offer');
  const accept = byId<HTMLButtonElement>('accept');
  const outcome = byId('outcome');
  const r = await fetch(`/api/invitations/${encodeURIComponent(token)}`);
  if (!r.ok) {
    offer.textContent = r.status === 410 || r.status === 404 ? `This invitation cannot be used: ${await problemOf(r)}.` : `The invitation could not be read: ${await problemOf(r)}.`;
    accept.hidden = true;
    return;
  }
  const { project, role, expiresAt } = (await r.json()) as { project: { id: string; name: string }; role: string; expiresAt: string };
  offer.textContent = `You are invited to the project “${project.name}” as ${role} (until ${new Date(expiresAt).toLocaleString()}).`;
  accept.addEventListener('click', async () => {
    accept.disabled = true;
    const done = await api(`/api/invitations/${encodeURIComponent(token)}/accept`, { method: 'POST' });
    if (!done.ok) {
      outcome.textContent = `Not accepted: ${await problemOf(done)}`;
      accept.disabled = false;
      return;
    }
    location.assign(`/dashboard?project=${encodeURIComponent(project.id)}`);
  });
}
