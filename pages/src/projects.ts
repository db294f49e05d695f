// /projects/: the signed-in user's projects and those shared with them (docs/api.md#projects,
// #teams): create, rename, set origins, rotate the key, delete, copy the script tag and Sentry DSN,
// and the team of each (members, invitations, share links), as far as the user's role allows.
import { byId, el } from './lib/dom.ts';
import { dsn, scriptTag, type Project } from './lib/projects.ts';
import { api } from './lib/session.ts';
import { signedIn } from './lib/shell.ts';
import { teamSection } from './lib/team.ts';

const session = await signedIn('projects');
if (session) await start(session.userId).catch((err) => fail(err));

function fail(err: unknown) {
  const guard = byId('guard');
  guard.hidden = false;
  guard.textContent = `Projects could not load: ${err instanceof Error ? err.message : String(err)}`;
}

const origins = (text: string) => text.split(/[\s,]+/).filter(Boolean);

/** The answer's JSON, or an Error with the server's message. */
async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => ({}))) as T & { error?: string };
  if (!response.ok) throw new Error(body.error ?? `HTTP ${response.status}`);
  return body;
}

const send = (path: string, method: string, body?: unknown) =>
  api(path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });


async function start(me: string) {
  const list = byId('projects');
  const form = byId<HTMLFormElement>('create');
  const createError = byId('create-error');

  const render = async () => {
    const { projects } = await answer<{ projects: Project[] }>(await api('/api/projects'));
    list.replaceChildren(...(projects.length ? await Promise.all(projects.map(card)) : [el('p', { class: 'empty', text: 'No projects yet.' })]));
  };

  async function card(p: Project): Promise<HTMLElement> {
    const role = p.role ?? 'owner';
    const admin = role === 'admin' || role === 'owner';
    const error = el('p', { class: 'error', attrs: { role: 'alert' } });
    error.hidden = true;
    const act = (fn: () => Promise<unknown>) => async () => {
      error.hidden = true;
      try {
        await fn();
        await render();
      } catch (err) {
        error.hidden = false;
        error.textContent = err instanceof Error ? err.message : String(err);
      }
    };
    const nameInput = el('input', { attrs: { name: 'name', value: p.name, maxlength: '100', 'aria-label': 'Name' } });
    const originsInput = el('input', { attrs: { name: 'origins', value: p.allowedOrigins.join(', '), 'aria-label': 'Allowed origins', placeholder: 'any origin' } });
    const save = el('button', { text: 'Save', attrs: { type: 'button', 'data-action': 'save' } });
    save.addEventListener('click', act(() => send(`/api/projects/${p.id}`, 'PATCH', { name: nameInput.value, allowedOrigins: origins(originsInput.value) }).then(answer)));
    const rotate = el('button', { text: 'Rotate key', attrs: { type: 'button', 'data-action': 'rotate' } });
    rotate.addEventListener('click', act(() => send(`/api/projects/${p.id}/rotate-key`, 'POST').then(answer)));
    // Two clicks, no dialog: the first asks, the second deletes.
    const remove = el('button', { text: 'Delete', attrs: { type: 'button', 'data-action': 'delete' } });
    remove.addEventListener('click', () => {
      if (remove.dataset.armed) return void act(() => send(`/api/projects/${p.id}`, 'DELETE').then(answer))();
      remove.dataset.armed = '1';
      remove.textContent = 'Delete: click again (events are kept)';
    });
    return el('section', { class: 'card project', attrs: { 'data-project': p.id, 'data-role': role } },
      el('h2', { text: p.name }),
      el('p', { class: 'note' }, `Project ${p.id} · ${role === 'owner' ? 'yours' : `shared with you as ${role}`} · created ${new Date(p.createdAt).toLocaleString()} · up to ${p.rateLimitPerMinute.toLocaleString('en-US')} events a minute`),
      admin ? el('div', { class: 'project-form' }, el('label', {}, 'Name ', nameInput), el('label', {}, 'Allowed origins ', originsInput), save) : null,
      el('h3', { text: 'Script tag' }),
      el('pre', {}, el('code', { class: 'snippet', text: scriptTag(p, location.origin) })),
      el('h3', { text: 'Sentry DSN' }),
      el('pre', {}, el('code', { class: 'dsn', text: dsn(p, location) })),
      el('p', { class: 'note' }, 'Key ', el('code', { class: 'key', text: p.key }), '. Rotating it stops the old one at once: update your pages first.'),
      admin ? el('div', { class: 'actions' }, rotate, role === 'owner' ? remove : null) : null,
      await teamSection(p, me, act),
      error,
    );
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    createError.hidden = true;
    void send('/api/projects', 'POST', { name: String(data.get('name') ?? ''), allowedOrigins: origins(String(data.get('origins') ?? '')) })
      .then(answer)
      .then(() => {
        form.reset();
        return render();
      })
      .catch((err: unknown) => {
        createError.hidden = false;
        createError.textContent = err instanceof Error ? err.message : String(err);
      });
  });

  await render();
  byId('guard').hidden = true;
  byId('app').hidden = false;
}
