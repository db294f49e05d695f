// The funnel builder (docs/api.md#funnels): a form of steps (a page pattern or a custom event
// name each), a window and a range; the drop-off chart as a table whose bars only repeat its
// numbers (hidden from assistive technology); a CSV download; and the whole state in the URL
// (?project=&days=&window=&step=page:/&step=event:signup), so a funnel can be linked and reloaded.
// Everything from the API reaches the page as text (lib/dom.ts el).
import { download, toCsv } from './csv.ts';
import { el, fmt } from './dom.ts';

export type Step = { page: string } | { event: string };
export interface StepResult { page?: string; event?: string; sessions: number; conversionRate: number; dropOff: number }

export interface FunnelState { project: string; days: number; windowMinutes: number; steps: Step[] }

export const RANGE_DAYS = [1, 7, 30, 90] as const;
const MAX_STEPS = 8;

/** The state a URL's query holds, with defaults for what it lacks or holds wrongly. */
export function stateFromQuery(q: URLSearchParams): FunnelState {
  const days = Number(q.get('days'));
  const windowMinutes = Number(q.get('window'));
  const steps = q.getAll('step').slice(0, MAX_STEPS).flatMap((s): Step[] => {
    const at = s.indexOf(':');
    const kind = s.slice(0, at), value = s.slice(at + 1);
    if (at < 0 || value === '') return [];
    return kind === 'page' ? [{ page: value }] : kind === 'event' ? [{ event: value }] : [];
  });
  return {
    project: q.get('project') ?? '',
    days: (RANGE_DAYS as readonly number[]).includes(days) ? days : 30,
    windowMinutes: Number.isInteger(windowMinutes) && windowMinutes >= 1 ? windowMinutes : 30,
    steps: steps.length >= 2 ? steps : [{ page: '/' }, { page: '/**' }],
  };
}

export function stateToQuery(s: FunnelState): URLSearchParams {
  const q = new URLSearchParams();
  if (s.project) q.set('project', s.project);
  q.set('days', String(s.days));
  q.set('window', String(s.windowMinutes));
  for (const step of s.steps) q.append('step', 'page' in step ? `page:${step.page}` : `event:${step.event}`);
  return q;
}

const stepLabel = (r: { page?: string; event?: string }) => (r.page !== undefined ? `Page ${r.page}` : `Event ${r.event}`);
const percent = (rate: number) => `${fmt.format(Math.round(rate * 1000) / 10)}%`;

/** The CSV of a funnel's answer: one row per step. */
export const funnelCsv = (rows: readonly StepResult[]): string =>
  toCsv(['step', 'kind', 'match', 'sessions', 'conversionRate', 'dropOff'],
    rows.map((r, i) => [i + 1, r.page !== undefined ? 'page' : 'event', r.page ?? r.event, r.sessions, r.conversionRate, r.dropOff]));

/** The drop-off chart: a table of steps with sessions, conversion and drop-off, and a bar per step. */
export function funnelTable(rows: readonly StepResult[]): HTMLElement {
  const head = ['Step', 'Sessions', 'Conversion', 'Drop-off'].map((h) => el('th', { text: h, attrs: { scope: 'col' } }));
  const body = rows.map((r, i) => el('tr', { attrs: { 'data-step': String(i + 1) } },
    el('th', { attrs: { scope: 'row' } },
      el('span', { text: `${i + 1}. ${stepLabel(r)}` }),
      el('span', { class: 'bar-track', attrs: { 'aria-hidden': 'true' } },
        el('span', { class: 'bar', attrs: { style: `width: ${Math.round(r.conversionRate * 100)}%` } }))),
    el('td', { class: 'num', text: fmt.format(r.sessions) }),
    el('td', { class: 'num', text: percent(r.conversionRate) }),
    el('td', { class: 'num', text: i === 0 ? '—' : fmt.format(r.dropOff) })));
  return el('div', { class: 'table-wrap' }, el('table', { class: 'funnel-table' },
    el('caption', { text: 'Sessions reaching each step, in order, within the window' }),
    el('thead', {}, el('tr', {}, ...head)), el('tbody', {}, ...body)));
}

/** One step's inputs: its kind and its pattern or name, and a button that removes it. */
function stepRow(step: Step, i: number, remove: () => void): HTMLElement {
  const kind = el('select', { attrs: { name: 'kind', 'aria-label': `Step ${i + 1} kind` } },
    el('option', { text: 'Page', attrs: { value: 'page' } }), el('option', { text: 'Event', attrs: { value: 'event' } }));
  kind.value = 'page' in step ? 'page' : 'event';
  const value = el('input', {
    attrs: { name: 'match', autocomplete: 'off', required: '', maxlength: '200', 'aria-label': `Step ${i + 1} page pattern or event name`, placeholder: '/checkout/**' },
  });
  value.value = 'page' in step ? step.page : step.event;
  const drop = el('button', { text: 'Remove', class: 'small', attrs: { type: 'button', 'aria-label': `Remove step ${i + 1}` } });
  drop.addEventListener('click', remove);
  return el('li', { class: 'funnel-step' }, kind, value, drop);
}

/** The steps the form's rows hold now. */
export function readSteps(list: HTMLElement): Step[] {
  return [...list.querySelectorAll('li')].map((li) => {
    const kind = li.querySelector('select')!.value;
    const value = li.querySelector('input')!.value.trim();
    return kind === 'event' ? { event: value } : { page: value };
  });
}

/**
 * The builder's form. `onRun` gets the state to query; the form keeps no state of its own beyond
 * its inputs, so the page can rebuild it from the URL.
 */
export function funnelForm(state: FunnelState, projects: readonly { id: string; name: string }[], onRun: (s: FunnelState) => void): HTMLFormElement {
  const project = el('select', { attrs: { name: 'project' } }, ...projects.map((p) => el('option', { text: p.name, attrs: { value: p.id } })));
  if (state.project) project.value = state.project;
  const days = el('select', { attrs: { name: 'days' } }, ...RANGE_DAYS.map((d) => el('option', { text: d === 1 ? 'Last 24 hours' : `Last ${d} days`, attrs: { value: String(d) } })));
  days.value = String(state.days);
  const windowInput = el('input', { attrs: { name: 'window', type: 'number', min: '1', max: '43200', required: '' } });
  windowInput.value = String(state.windowMinutes);
  const list = el('ol', { class: 'funnel-steps' });
  const render = (steps: Step[]) => list.replaceChildren(...steps.map((s, i) => stepRow(s, i, () => {
    const now = readSteps(list);
    if (now.length > 2) render(now.filter((_, j) => j !== i));
  })));
  render(state.steps);
  const add = el('button', { text: 'Add step', attrs: { type: 'button', 'data-action': 'add-step' } });
  add.addEventListener('click', () => {
    const now = readSteps(list);
    if (now.length < MAX_STEPS) render([...now, { page: '/' }]);
  });
  const f = el('form', { class: 'panel dev-form funnel-form', attrs: { 'aria-label': 'Funnel' } },
    el('h2', { text: 'Steps' }),
    el('label', {}, el('span', { text: 'Project' }), project),
    el('label', {}, el('span', { text: 'Range' }), days),
    el('label', {}, el('span', { text: 'Window between steps (minutes)' }), windowInput),
    el('p', { class: 'note', text: 'A page step matches page loads by route: * matches within one path segment, ** across segments. An event step matches custom events by name.' }),
    list,
    el('div', { class: 'actions' }, add, el('button', { text: 'Show funnel', class: 'primary', attrs: { type: 'submit' } })));
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    onRun({ project: project.value, days: Number(days.value), windowMinutes: Number(windowInput.value), steps: readSteps(list) });
  });
  return f;
}

/** The answer's panel: the chart-table and its CSV download. */
export function funnelResult(rows: readonly StepResult[], name: string): HTMLElement {
  const csv = el('button', { text: 'Download CSV', attrs: { type: 'button', 'data-action': 'csv' } });
  csv.addEventListener('click', () => download(`${name}.csv`, 'text/csv', [funnelCsv(rows)]));
  return el('section', { class: 'panel funnel-result', attrs: { 'aria-label': 'Funnel result' } },
    el('div', { class: 'panel-head' }, el('h2', { text: 'Drop-off' }), el('div', { class: 'exports' }, csv)),
    funnelTable(rows));
}
