// Parts of the issue page: tag distributions as bars, sessions and users per day, and the stack
// with library frames folded away behind one toggle. Text from events goes in as text only (dom.ts).
import type { SymbolicatedFrame } from '../../../lib/issues/sourcemap.ts';
import type { publicIssue } from '../../../lib/issues/state.ts';
import { el, fmt } from './dom.ts';

export type ShownIssue = ReturnType<typeof publicIssue>;

const TAG_LABELS: [keyof ShownIssue['tags'], string][] = [
  ['environment', 'Environments'], ['release', 'Releases'], ['browser', 'Browsers'], ['os', 'Operating systems'],
  ['device', 'Devices'], ['page', 'Pages'], ['country', 'Countries'],
];

/** Each tag the issue's events carried: its values by count as bars, and what was counted as other. */
export function tagsPanel(issue: ShownIssue): HTMLElement {
  const tags = issue.tags ?? {};
  const shown = TAG_LABELS.filter(([name]) => (tags[name]?.total ?? 0) > 0);
  const block = ([name, label]: (typeof TAG_LABELS)[number]) => {
    const t = tags[name];
    const rows: [string, number, boolean][] = t.values.map((v) => [v.value, v.count, false]);
    if (t.other > 0) rows.push(['Other values', t.other, true]);
    const max = Math.max(1, ...rows.map(([, n]) => n));
    const bar = (n: number) => {
      const b = el('span', { class: 'bar' });
      b.style.width = `${Math.max(2, (n / max) * 100).toFixed(1)}%`;
      return b;
    };
    return el('div', { class: 'tag-block', attrs: { 'data-tag': name } },
      el('h3', { text: label, attrs: { id: `h-tag-${name}` } }),
      el('ul', { class: 'bars', attrs: { 'aria-labelledby': `h-tag-${name}` } }, ...rows.map(([value, n, other]) =>
        el('li', { attrs: { 'data-value': other ? '' : value } },
          el('span', { class: other ? 'bar-label muted' : 'bar-label', text: value, title: value }),
          el('span', { class: 'bar-track', attrs: { 'aria-hidden': 'true' } }, bar(n)),
          el('span', { class: 'num', text: `${fmt.format(n)} (${Math.round((n / t.total) * 100)}%)` })))));
  };
  return el('section', { class: 'panel', attrs: { 'aria-labelledby': 'h-tags' } },
    el('h2', { text: 'Tags', attrs: { id: 'h-tags' } }),
    shown.length
      ? el('div', { class: 'tag-grid' }, ...shown.map(block))
      : el('p', { class: 'empty', text: 'The events of this issue carried no tags yet (they are counted from the events grouped since this version).' }));
}

/** Events, sessions and users per day, newest first, the last `days` days that had events. */
export function activityPanel(issue: ShownIssue, days = 14): HTMLElement {
  const sessions = new Map(issue.dailySessions ?? []);
  const users = new Map(issue.dailyUsers ?? []);
  const rows = [...issue.daily].reverse().slice(0, days);
  const cell = (m: Map<string, number>, d: string) => {
    const n = m.get(d);
    return n === undefined ? '—' : `${fmt.format(n)}${n > 100 ? '≈' : ''}`;
  };
  return el('section', { class: 'panel', attrs: { 'aria-labelledby': 'h-activity' } },
    el('h2', { text: 'Affected per day', attrs: { id: 'h-activity' } }),
    el('div', { class: 'table-wrap' }, el('table', { class: 'activity' },
      el('thead', {}, el('tr', {}, ...['Day (UTC)', 'Events', 'Sessions', 'Users'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
      el('tbody', {}, ...rows.map(([d, n]) => el('tr', { attrs: { 'data-day': d } },
        el('th', { text: d, attrs: { scope: 'row' } }),
        el('td', { class: 'num', text: fmt.format(n) }),
        el('td', { class: 'num', text: cell(sessions, d) }),
        el('td', { class: 'num', text: cell(users, d) })))))),
    el('p', { class: 'err-meta', text: 'Distinct counts above 100 a day are estimates (≈).' }));
}

/**
 * The stack: in-app frames shown, library frames hidden until the toggle shows them. When no frame
 * is the app's own, every frame is shown (hiding all would leave nothing to read).
 */
export function stackList(frames: SymbolicatedFrame[], item: (f: SymbolicatedFrame) => HTMLElement): HTMLElement {
  const library = frames.filter((f) => !f.inApp).length;
  const fold = library > 0 && library < frames.length;
  const list = el('ol', { class: 'frames', attrs: { id: 'frames' } }, ...frames.map((f) => {
    const li = item(f);
    if (fold && !f.inApp) li.hidden = true;
    return li;
  }));
  if (!fold) return list;
  const label = (open: boolean) => (open ? 'Hide library frames' : `Show ${library} library frame${library === 1 ? '' : 's'}`);
  const toggle = el('button', { text: label(false), attrs: { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'frames', 'data-action': 'library-frames' } });
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    for (const li of list.querySelectorAll<HTMLElement>('li.frame:not(.in-app)')) li.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
    toggle.textContent = label(open);
  });
  return el('div', {}, el('p', {}, toggle), list);
}
