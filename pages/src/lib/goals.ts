// The dashboard's Goals panel (docs/api.md#goals): each goal of the chosen project with its
// conversions, converted sessions, conversion rate and that rate's change against the period
// before, in a table that downloads as CSV; and, for members and up, a form that adds a goal and
// a button per goal that deletes it. The numbers come from the statistics the dashboard already
// loads (a goal's rows ride on GET /api/stats); the goals themselves, with what they match, from
// the project's goal list. What a role may do is the server's call: the page only leaves out the
// controls that would be refused, and shows the server's words when it refuses anyway.
import type { Goal } from '../../../lib/goals/goals.ts';
import type { GoalRow } from '../../../lib/goals/evaluate.ts';
import type { Stats } from '../../../lib/stats.ts';
import type { Cell } from './csv.ts';
import { el, fmt } from './dom.ts';
import type { Role } from './projects.ts';
import { csvButton, type TableModel } from './tables.ts';

export type { Goal };
export type NewGoal = { name: string; page: string } | { name: string; event: string };

/** How the panel reaches the API; each rejects with an Error whose message is the server's. */
export interface GoalsSource {
  list(project: string): Promise<Goal[]>;
  create(project: string, goal: NewGoal): Promise<void>;
  remove(project: string, goalId: string): Promise<void>;
  /** The goals changed: load the statistics again, so the new numbers are shown. */
  changed(): void;
}

export interface GoalsPanel {
  root: HTMLElement;
  /** The chosen project ('' none) and the user's role on it (undefined until the list is known). */
  setProject(project: string, role: Role | undefined): void;
  /** The range's answer; `ranged` false for "all", which has no goal numbers. */
  showStats(stats: Stats, ranged: boolean): void;
  /** The period before's answer: null when it held no events, undefined when there is none. */
  showComparison(previous: Stats | null | undefined): void;
}

const MANAGERS: readonly Role[] = ['member', 'admin', 'owner'];
const COLUMNS = ['Goal', 'Matches', 'Conversions', 'Sessions', 'Conversion rate %', 'Change (percentage points)'];

/** A rate (0…1) as a percentage with one decimal. */
export const percent = (rate: number): number => Math.round(rate * 1000) / 10;

/** The change of a conversion rate in percentage points, or null when there is nothing to compare. */
export function rateChange(current: GoalRow | undefined, previous: GoalRow | undefined | null): number | null {
  if (!current || !previous) return null;
  return Math.round((current.conversionRate - previous.conversionRate) * 1000) / 10;
}

const matchText = (g: Goal) => (g.page !== null ? `page ${g.page}` : `event ${g.event ?? ''}`);

/** The change as read: an arrow, signed points, and in words what it compares with. */
function changeCell(points: number | null): HTMLElement {
  if (points === null) return el('td', { class: 'num', text: '—', attrs: { 'data-change': '' } });
  const dir = points > 0 ? 'up' : points < 0 ? 'down' : 'flat';
  return el('td', { class: `num delta-${dir === 'up' ? 'good' : dir === 'down' ? 'bad' : 'flat'}`, attrs: { 'data-change': String(points) } },
    `${dir === 'up' ? '▲ +' : dir === 'down' ? '▼ −' : ''}${fmt.format(Math.abs(points))} pts`,
    el('span', { class: 'visually-hidden', text: ' (percentage points) compared with the previous period' }));
}

export function createGoalsPanel(source: GoalsSource): GoalsPanel {
  let project = '';
  let role: Role | undefined;
  let ranged = false;
  let rows: GoalRow[] | undefined;
  let previous: GoalRow[] | null | undefined;
  let goals: Goal[] | null = null;
  let asked = '';
  let model: TableModel | null = null;

  const note = el('p', { class: 'note', attrs: { 'data-goals-note': '' } });
  const body = el('tbody');
  const headRow = el('tr');
  const table = el('div', { class: 'table-wrap', attrs: { tabindex: '0', role: 'region', 'aria-label': 'Goals' } },
    el('table', { class: 'goals-table' }, el('caption', { class: 'visually-hidden', text: 'Goals over the range' }), el('thead', {}, headRow), body));
  const error = el('p', { class: 'problem', attrs: { role: 'alert', 'data-goals-error': '' } });
  error.hidden = true;

  const name = el('input', { attrs: { name: 'goal-name', required: '', maxlength: '100', autocomplete: 'off' } });
  const kind = el('select', { attrs: { name: 'goal-kind' } },
    el('option', { text: 'Page pattern', attrs: { value: 'page' } }), el('option', { text: 'Custom event', attrs: { value: 'event' } }));
  const match = el('input', { attrs: { name: 'goal-match', required: '', maxlength: '200', autocomplete: 'off', placeholder: '/signup/done' } });
  kind.addEventListener('change', () => match.setAttribute('placeholder', kind.value === 'page' ? '/signup/done' : 'signup'));
  const form = el('form', { class: 'goal-form', attrs: { 'aria-label': 'Add a goal' } },
    el('label', {}, el('span', { text: 'Goal name' }), name),
    el('label', {}, el('span', { text: 'Counts' }), kind),
    el('label', {}, el('span', { text: 'Page pattern or event name' }), match),
    el('button', { text: 'Add goal', attrs: { type: 'submit' } }));
  const help = el('p', { class: 'note', text: 'A page pattern matches page loads: * within one path segment, ** across segments (/docs/**). An event name matches custom events of that name.' });
  const manage = el('div', { class: 'goal-manage' }, form, help);

  const mayManage = () => role !== undefined && MANAGERS.includes(role);
  /** Runs a change, then reads the goals and the numbers again; a refusal is shown in the server's words. */
  const act = async (fn: () => Promise<void>, what: string) => {
    error.hidden = true;
    try {
      await fn();
    } catch (err) {
      error.hidden = false;
      error.textContent = `${what}: ${err instanceof Error ? err.message : String(err)}`;
      return false;
    }
    asked = '';
    await load();
    source.changed();
    return true;
  };

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const goal: NewGoal = kind.value === 'page' ? { name: name.value, page: match.value } : { name: name.value, event: match.value };
    void act(() => source.create(project, goal), 'The goal could not be added').then((ok) => ok && form.reset());
  });

  /** The project's goals, asked for once per project (and again after a change). */
  async function load() {
    if (!project || asked === project) return;
    const wanted = (asked = project);
    try {
      const list = await source.list(wanted);
      if (project === wanted) goals = list;
    } catch (err) {
      if (project !== wanted) return;
      goals = null;
      error.hidden = false;
      error.textContent = `The goals could not be loaded: ${err instanceof Error ? err.message : String(err)}`;
    }
    render();
  }

  function render() {
    manage.hidden = !project || !mayManage();
    const show = (text: string) => {
      note.textContent = text;
      note.hidden = false;
      table.hidden = true;
      model = null;
    };
    if (!project) return show('Choose a project to see its goals.');
    if (goals === null && rows === undefined) return show('Loading the goals…');
    // The list says which goals exist and what they match; before it arrives the statistics' rows stand for them.
    const defined = goals ? goals.map((g) => ({ id: g.id, name: g.name, match: matchText(g) })) : (rows ?? []).map((r) => ({ id: r.id, name: r.name, match: '' }));
    if (!defined.length) {
      return show(mayManage()
        ? 'No goals yet. Add one below: give it a name and a page pattern (such as /signup/done) or the name of a custom event your app sends.'
        : 'No goals yet. A member of this project can add them here: a page pattern or a custom event name to count.');
    }
    if (!ranged) return show('Choose a time range (not "all") to see how often each goal was reached.');
    note.hidden = true;
    table.hidden = false;
    const current = new Map((rows ?? []).map((r) => [r.id, r]));
    const before = previous ? new Map(previous.map((r) => [r.id, r])) : null;
    const lines = defined.map((g) => {
      const r = current.get(g.id);
      return { g, r, change: before ? rateChange(r, before.get(g.id)) : null };
    });
    model = {
      name: 'goals', columns: COLUMNS,
      rows: lines.map(({ g, r, change }): Cell[] => [g.name, g.match, r?.conversions, r?.sessions, r ? percent(r.conversionRate) : null, change]),
    };
    const manager = mayManage();
    headRow.replaceChildren(...[...COLUMNS.slice(0, 4), 'Conversion rate', 'Change', ...(manager ? ['Actions'] : [])].map((h) => el('th', { text: h, attrs: { scope: 'col' } })));
    body.replaceChildren(...lines.map(({ g, r, change }) => {
      const tr = el('tr', { attrs: { 'data-goal': g.id } },
        el('th', { text: g.name, attrs: { scope: 'row' } }),
        el('td', { text: g.match || '—' }),
        el('td', { class: 'num', text: r ? fmt.format(r.conversions) : '—' }),
        el('td', { class: 'num', text: r ? fmt.format(r.sessions) : '—' }),
        el('td', { class: 'num', text: r ? `${fmt.format(percent(r.conversionRate))}%` : '—' }),
        changeCell(change));
      if (manager) {
        const remove = el('button', { class: 'small', text: 'Delete', attrs: { type: 'button', 'aria-label': `Delete goal ${g.name}` } });
        remove.addEventListener('click', () => void act(() => source.remove(project, g.id), 'The goal could not be deleted'));
        tr.append(el('td', {}, remove));
      }
      return tr;
    }));
  }

  const root = el('section', { class: 'panel panel-goals', attrs: { 'aria-labelledby': 'h-goals' } },
    el('div', { class: 'panel-head' }, el('h2', { text: 'Goals', attrs: { id: 'h-goals' } }), csvButton('goals', () => model)),
    note, table, error, manage);
  render();

  return {
    root,
    setProject(id, r) {
      if (id !== project) {
        goals = null;
        rows = undefined;
        previous = undefined;
        asked = '';
        error.hidden = true;
      }
      project = id;
      role = r;
      render();
      void load();
    },
    showStats(stats, isRanged) {
      ranged = isRanged;
      rows = stats.goals;
      previous = undefined;
      render();
    },
    showComparison(prev) {
      previous = prev === undefined ? undefined : prev === null ? null : prev.goals ?? [];
      render();
    },
  };
}
