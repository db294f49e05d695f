// /funnels/: the funnel builder over one of the user's projects (lib/funnel.ts), with the project's
// saved funnels: load one into the form, save the form under a name, delete one (members and up;
// a viewer's attempt is answered with the service's refusal).
import type { SavedFunnel } from '../../lib/funnels/saved.ts';
import { byId, el } from './lib/dom.ts';
import { funnelForm, funnelResult, stateFromQuery, stateToQuery, type FunnelState, type StepResult } from './lib/funnel.ts';
import type { Project } from './lib/projects.ts';
import { api } from './lib/session.ts';
import { problemOf, showFailure, showPage, signedIn } from './lib/shell.ts';

const root = byId('funnels');
const notice = el('p', { class: 'problem', attrs: { role: 'alert' } });
const result = el('div', { class: 'funnel-output', attrs: { 'aria-live': 'polite' } });
const savedList = el('ul', { class: 'saved-funnels' });
let projects: Project[] = [];
let state: FunnelState = stateFromQuery(new URLSearchParams(location.search));

const DAY_MS = 86_400_000;
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

function problem(text: string | null) {
  notice.textContent = text ?? '';
  notice.hidden = text === null;
}

if (await signedIn('funnels')) {
  await start().then(showPage, (err) => showFailure('Funnels', err));
}

async function start(): Promise<void> {
  const r = await api('/api/projects');
  if (!r.ok) throw new Error(await problemOf(r));
  projects = ((await r.json()) as { projects: Project[] }).projects;
  if (!projects.some((p) => p.id === state.project)) state = { ...state, project: projects[0]?.id ?? '' };
  render();
  if (!projects.length) return problem('You have no project yet: create one on the Projects page, then build funnels over its events.');
  problem(null);
  await loadSaved();
  if (new URLSearchParams(location.search).has('step')) await run(state);
}

function render(): void {
  const name = el('input', { attrs: { name: 'name', autocomplete: 'off', maxlength: '100', required: '' } });
  const save = el('form', { class: 'panel dev-form funnel-save', attrs: { 'aria-label': 'Save funnel' } },
    el('h2', { text: 'Saved funnels' }), savedList,
    el('label', {}, el('span', { text: 'Save these steps as' }), name),
    el('button', { text: 'Save funnel', attrs: { type: 'submit' } }));
  save.addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await api(`/api/projects/${encodeURIComponent(state.project)}/funnels`, json({ name: name.value, windowMinutes: state.windowMinutes, steps: state.steps }));
    if (!r.ok) return problem(`The funnel could not be saved: ${await problemOf(r)}`);
    problem(null);
    name.value = '';
    await loadSaved();
  });
  root.replaceChildren(el('h1', { text: 'Funnels' }), notice, funnelForm(state, projects, (s) => void run(s)), save, result);
}

async function loadSaved(): Promise<void> {
  if (!state.project) return void savedList.replaceChildren();
  const r = await api(`/api/projects/${encodeURIComponent(state.project)}/funnels`);
  if (!r.ok) return problem(`Saved funnels could not load: ${await problemOf(r)}`);
  const { funnels } = (await r.json()) as { funnels: SavedFunnel[] };
  savedList.replaceChildren(...(funnels.length ? funnels.map(savedItem) : [el('li', { class: 'empty', text: 'None yet.' })]));
}

function savedItem(f: SavedFunnel): HTMLElement {
  const load = el('button', { text: 'Load', class: 'small', attrs: { type: 'button', 'aria-label': `Load ${f.name}` } });
  load.addEventListener('click', () => {
    state = { ...state, windowMinutes: f.windowMinutes, steps: f.steps };
    render();
    void run(state);
  });
  const remove = el('button', { text: 'Delete', class: 'small', attrs: { type: 'button', 'aria-label': `Delete ${f.name}` } });
  remove.addEventListener('click', async () => {
    const r = await api(`/api/projects/${encodeURIComponent(state.project)}/funnels/${encodeURIComponent(f.id)}`, { method: 'DELETE' });
    if (!r.ok) return problem(`The funnel could not be deleted: ${await problemOf(r)}`);
    await loadSaved();
  });
  return el('li', { attrs: { 'data-funnel': f.id } }, el('span', { text: f.name }), ' ', load, ' ', remove);
}

async function run(next: FunnelState): Promise<void> {
  const projectChanged = next.project !== state.project;
  state = next;
  history.replaceState(null, '', `?${stateToQuery(state)}`);
  if (projectChanged) await loadSaved();
  const r = await api('/api/funnels/query', json({
    project: state.project, from: new Date(Date.now() - state.days * DAY_MS).toISOString(), windowMinutes: state.windowMinutes, steps: state.steps,
  }));
  if (!r.ok) {
    result.replaceChildren();
    return problem(`The funnel could not be computed: ${await problemOf(r)}`);
  }
  problem(null);
  const { steps } = (await r.json()) as { steps: StepResult[] };
  result.replaceChildren(funnelResult(steps, `funnel-${state.project}-${state.days}d`));
}
