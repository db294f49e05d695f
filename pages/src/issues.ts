// /issues/: the signed-in user's issues (error groups) with a search box, status, environment,
// browser and release filters and a sort, all kept in the URL, counts, sparklines and versions;
// /issues/?id=<id>[&event=<id>]: one issue with its tags, the sessions and users it affected per day,
// one of its recent events (older/newer) with the symbolicated stack (library frames folded),
// original source lines and breadcrumbs, and the buttons that resolve (optionally in a version),
// ignore and reopen it.
// Every text that came from an event reaches the page through textContent (lib/dom.ts el).
import type { StoredEvent } from '../../lib/event.ts';
import type { SymbolicatedFrame } from '../../lib/issues/sourcemap.ts';
import { byId, el, fmt, formatTime } from './lib/dom.ts';
import { activityPanel, type ShownIssue, stackList, tagsPanel } from './lib/issue-parts.ts';
import type { Project } from './lib/projects.ts';
import { api } from './lib/session.ts';
import { problemOf, showFailure, showPage, signedIn } from './lib/shell.ts';

type Counts = Record<'unresolved' | 'resolved' | 'ignored' | 'new' | 'ongoing' | 'regressed', number>;

const root = byId('issues');
const params = new URLSearchParams(location.search);

/** The status shown for an issue: its substatus while unresolved. */
const statusOf = (i: ShownIssue) => (i.status === 'unresolved' ? i.substatus ?? 'unresolved' : i.status);

function statusTag(i: ShownIssue): HTMLElement {
  const s = statusOf(i);
  const text = i.status === 'resolved' && i.resolvedInVersion ? `resolved in ${i.resolvedInVersion}` : s;
  return el('span', { class: `tag tag-status-${s}`, text, attrs: { 'data-status': s } });
}

/** Events per day over the last `days` days as a small bar chart (SVG, built node by node). */
function sparkline(daily: [string, number][], days = 14): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const counts = new Map(daily);
  const values: number[] = [];
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  for (let d = days - 1; d >= 0; d--) values.push(counts.get(new Date(today - d * 86_400_000).toISOString().slice(0, 10)) ?? 0);
  const max = Math.max(1, ...values);
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'sparkline');
  svg.setAttribute('viewBox', `0 0 ${days * 4} 20`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `Events per day, last ${days} days: ${values.join(', ')}`);
  values.forEach((v, i) => {
    const h = v === 0 ? 0.5 : Math.max(2, (v / max) * 20);
    const bar = document.createElementNS(ns, 'rect');
    bar.setAttribute('x', String(i * 4));
    bar.setAttribute('y', String(20 - h));
    bar.setAttribute('width', '3');
    bar.setAttribute('height', String(h));
    svg.append(bar);
  });
  return svg;
}

const versionsText = (i: ShownIssue) =>
  i.versions.first === null ? '—' : i.versions.first === i.versions.last ? i.versions.first : `${i.versions.first} → ${i.versions.last}`;

async function showList(): Promise<void> {
  const status = params.get('status') ?? 'unresolved';
  const query = new URLSearchParams();
  if (status !== 'all') query.set('status', status);
  for (const name of ['sort', 'version', 'project', 'query', 'environment', 'browser', 'release']) {
    const v = params.get(name);
    if (v) query.set(name, v);
  }
  const r = await api(`/api/issues?${query}`);
  if (!r.ok) throw new Error(await problemOf(r));
  const { issues, counts } = (await r.json()) as { issues: ShownIssue[]; counts: Counts };

  const link = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) (v === null ? next.delete(k) : next.set(k, v));
    return `?${next}`;
  };
  const tabs = el('nav', { class: 'tabs', attrs: { 'aria-label': 'Status' } },
    ...([['unresolved', 'Unresolved'], ['regressed', 'Regressed'], ['resolved', 'Resolved'], ['ignored', 'Ignored'], ['all', 'All']] as const).map(([value, label]) => {
      const n = value === 'all' ? counts.unresolved + counts.resolved + counts.ignored : counts[value];
      return el('a', { class: 'tab', text: `${label} (${fmt.format(n)})`, attrs: { href: link({ status: value }), ...(value === status ? { 'aria-current': 'true' } : {}), 'data-status-filter': value } });
    }));
  const search = searchForm(status);

  const rows = issues.map((i) =>
    el('tr', { attrs: { 'data-issue': i.id } },
      el('th', { attrs: { scope: 'row' } },
        el('a', { class: 'issue-title', text: i.title, attrs: { href: `?id=${encodeURIComponent(i.id)}${projectParam('&')}` } }),
        el('div', { class: 'err-meta', text: i.culprit ?? '' })),
      el('td', {}, statusTag(i)),
      el('td', {}, sparkline(i.daily)),
      el('td', { class: 'num', text: fmt.format(i.count), attrs: { 'data-count': '' } }),
      el('td', { class: 'num', text: `${fmt.format(i.sessions.count)}${i.sessions.exact ? '' : '≈'}` }),
      el('td', { class: 'num', text: `${fmt.format(i.users.count)}${i.users.exact ? '' : '≈'}` }),
      el('td', { text: versionsText(i) }),
      el('td', { text: formatTime(i.lastSeen) })));
  root.replaceChildren(
    el('h1', { text: 'Issues' }),
    search,
    el('section', { class: 'filters', attrs: { 'aria-label': 'Status' } }, tabs),
    el('section', { class: 'panel' },
      issues.length === 0
        ? el('p', { class: 'empty', text: status === 'unresolved' ? 'No unresolved issues.' : 'No issues here.' })
        : el('div', { class: 'table-wrap' }, el('table', { class: 'issues-table' },
            el('thead', {}, el('tr', {}, ...['Issue', 'Status', 'Last 14 days', 'Events', 'Sessions', 'Users', 'Versions', 'Last seen'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
            el('tbody', {}, ...rows)))));
}

/**
 * The search box, filters and sort: a GET form, so what is asked is the page's URL (and can be
 * shared or reloaded); the status tab and project ride along.
 */
function searchForm(status: string): HTMLFormElement {
  const input = (name: string, label: string, placeholder: string, type = 'text') =>
    el('label', {}, el('span', { text: label }), el('input', { attrs: { type, name, placeholder, value: params.get(name) ?? '', maxlength: name === 'query' ? '200' : '64' } }));
  const current = params.get('sort') === 'count' ? 'events' : params.get('sort') ?? 'last';
  const sort = el('select', { attrs: { name: 'sort' } },
    ...([['last', 'Last seen'], ['first', 'First seen'], ['events', 'Events'], ['sessions', 'Sessions'], ['users', 'Users']] as const).map(([v, t]) =>
      el('option', { text: t, attrs: { value: v, ...(current === v ? { selected: '' } : {}) } })));
  sort.addEventListener('change', () => sort.form?.requestSubmit());
  const hidden = (name: string, value: string | null) => (value ? el('input', { attrs: { type: 'hidden', name, value } }) : null);
  return el('form', { class: 'filters', attrs: { role: 'search', method: 'get', action: '', 'aria-label': 'Search issues' } },
    input('query', 'Search', 'Title, culprit or message', 'search'),
    input('environment', 'Environment', 'Any'),
    input('browser', 'Browser', 'Any'),
    input('release', 'Release', 'Any'),
    el('label', {}, el('span', { text: 'Sort' }), sort),
    hidden('status', status),
    hidden('project', params.get('project')),
    hidden('version', params.get('version')),
    el('button', { text: 'Search', attrs: { type: 'submit' } }));
}

/**
 * The list's or issue's project, carried on to the API: a project shared with the user is read
 * (and triaged) only with `project=<id>` (docs/api.md#issues).
 */
function projectParam(join: '?' | '&'): string {
  const project = params.get('project');
  return project ? `${join}project=${encodeURIComponent(project)}` : '';
}

function eventChoice(): EventChoice {
  const event = params.get('event'), before = params.get('before');
  return before ? { before } : event ? { event } : null;
}

interface StatusChange { at: string; actor: string; from?: string | null; to?: string | null }

/** Which event the issue page shows: one of the recent ones by id, or the newest before a cursor. */
type EventChoice = { event: string } | { before: string } | null;

async function showIssue(id: string, choice: EventChoice): Promise<void> {
  const query = choice === null ? '' : 'event' in choice ? `event=${encodeURIComponent(choice.event)}` : `before=${encodeURIComponent(choice.before)}`;
  const r = await api(`/api/issues/${encodeURIComponent(id)}${projectParam('?')}${query ? `${params.get('project') ? '&' : '?'}${query}` : ''}`);
  if (r.status === 404) {
    root.replaceChildren(el('p', { class: 'problem', text: 'No such issue.' }), el('a', { text: 'All issues', attrs: { href: '/issues/' } }));
    return;
  }
  if (!r.ok) throw new Error(await problemOf(r));
  const { issue, latestEvent, olderCursor = null, newerCursor = null, frames, events, history = [] } = (await r.json()) as {
    issue: ShownIssue; latestEvent: StoredEvent | null; olderCursor?: string | null; newerCursor?: string | null;
    frames: SymbolicatedFrame[]; events: StoredEvent[]; history?: StatusChange[];
  };
  // The project's name, from the projects this user may see (own and shared); its id otherwise.
  const projects = issue.project ? await api('/api/projects').then(async (p) => (p.ok ? ((await p.json()) as { projects: Project[] }).projects : [])) : [];
  const projectName = projects.find((p) => p.id === issue.project)?.name ?? issue.project;

  const notice = el('p', { class: 'problem', attrs: { role: 'alert' } });
  notice.hidden = true;
  const change = async (body: Record<string, unknown>) => {
    const res = await api(`/api/issues/${encodeURIComponent(id)}${projectParam('?')}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) {
      notice.textContent = `The issue could not be changed: ${await problemOf(res)}`;
      notice.hidden = false;
      return;
    }
    await showIssue(id, choice);
  };
  const button = (text: string, action: string, body: Record<string, unknown>, primary = false) => {
    const b = el('button', { text, class: primary ? 'primary' : undefined, attrs: { type: 'button', 'data-action': action } });
    b.addEventListener('click', () => void change(body));
    return b;
  };
  const inVersion = el('input', { attrs: { name: 'resolvedInVersion', placeholder: issue.versions.last ?? '1.4.1', 'aria-label': 'Resolved in version', size: '10' } });
  const resolveInVersion = el('button', { text: 'Resolve in version', attrs: { type: 'button', 'data-action': 'resolve-in-version' } });
  resolveInVersion.addEventListener('click', () => void change({ status: 'resolved', resolvedInVersion: inVersion.value.trim() || issue.versions.last }));
  const actions = issue.status === 'unresolved'
    ? [button('Resolve', 'resolve', { status: 'resolved' }, true), el('span', { class: 'inline' }, inVersion, resolveInVersion), button('Ignore', 'ignore', { status: 'ignored' })]
    : [button('Reopen', 'reopen', { status: 'unresolved' }, true)];

  const facts: [string, string][] = [
    ['Events', fmt.format(issue.count)],
    ['Sessions', `${fmt.format(issue.sessions.count)}${issue.sessions.exact ? '' : ' (estimate)'}`],
    ['Users', `${fmt.format(issue.users.count)}${issue.users.exact ? '' : ' (estimate)'}`],
    ['First release', issue.firstRelease ?? '—'],
    ['Last release', issue.lastRelease ?? '—'],
    ['First seen', formatTime(issue.firstSeen)],
    ['Last seen', formatTime(issue.lastSeen)],
    ['Versions', issue.versions.seen.length ? issue.versions.seen.join(', ') + (issue.versions.truncated ? ', …' : '') : '—'],
    ['Project', projectName ?? '—'],
  ];
  if (issue.regressions > 0) facts.push(['Regressions', `${issue.regressions} (last ${formatTime(issue.regressedAt)})`]);

  root.replaceChildren(
    el('p', {}, el('a', { text: '← All issues', attrs: { href: `/issues/${projectParam('?')}` } })),
    el('h1', { class: 'issue-title', text: issue.title }),
    el('p', { class: 'err-meta', text: issue.culprit ?? '' }),
    notice,
    el('section', { class: 'issue-actions', attrs: { 'aria-label': 'Status' } }, statusTag(issue), ...actions),
    el('section', { class: 'panel' }, el('dl', { class: 'facts' }, ...facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })])), sparkline(issue.daily, 30)),
    ...(history.length ? [el('section', { class: 'panel', attrs: { 'aria-labelledby': 'h-history' } },
      el('h2', { text: 'Status history', attrs: { id: 'h-history' } }),
      el('ol', { class: 'status-history' }, ...history.map((h) => el('li', { text: `${formatTime(h.at)} · ${h.actor}: ${h.from ?? '—'} → ${h.to ?? '—'}` }))))] : []),
    activityPanel(issue),
    tagsPanel(issue),
    eventNav(id, issue.count, latestEvent, events, olderCursor, newerCursor),
    el('section', { class: 'panel', attrs: { 'aria-labelledby': 'h-stack' } },
      el('h2', { text: 'Stack trace (this event)', attrs: { id: 'h-stack' } }),
      frames.length ? stackList(frames, frameItem) : el('p', { class: 'empty', text: 'This event has no stack trace, or it is no longer stored.' })),
    breadcrumbsPanel(latestEvent),
    el('section', { class: 'panel', attrs: { 'aria-labelledby': 'h-events' } },
      el('h2', { text: 'Latest events', attrs: { id: 'h-events' } }),
      events.length
        ? el('div', { class: 'table-wrap' }, el('table', {},
            el('thead', {}, el('tr', {}, ...['Received', 'Message', 'Version', 'Session', 'Page'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
            el('tbody', {}, ...events.map((e) => el('tr', { attrs: { 'data-event': e.id, ...(e.id === latestEvent?.id ? { 'aria-current': 'true' } : {}) } },
              el('td', {}, el('a', { text: formatTime(e.receivedAt), attrs: { href: eventHref(id, e.id) } })),
              el('td', { class: 'details', text: e.message ?? '' }),
              el('td', { text: e.deployVersion ?? '—' }),
              el('td', { text: e.sessionId ?? '—' }),
              el('td', { class: 'details', text: e.route ?? e.url ?? '' }))))))
        : el('p', { class: 'empty', text: 'No events of this issue are stored any more.' })));
}

const eventHref = (id: string, eventId: string) => `?id=${encodeURIComponent(id)}&event=${encodeURIComponent(eventId)}${projectParam('&')}`;

const cursorHref = (id: string, before: string) => `?id=${encodeURIComponent(id)}&before=${encodeURIComponent(before)}${projectParam('&')}`;

/**
 * Which event is shown, and links to the older and the newer one: they walk every stored event of
 * the issue (by the cursors the API gives), not only the recent ones listed below.
 */
function eventNav(id: string, count: number, shown: StoredEvent | null, events: StoredEvent[], older: string | null, newer: string | null): HTMLElement {
  const step = (text: string, to: string | null, rel: string) => to
    ? el('a', { class: 'button-link', text, attrs: { href: cursorHref(id, to), 'data-nav': rel } })
    : el('button', { text, attrs: { type: 'button', disabled: '', 'data-nav': rel } });
  const at = shown ? events.findIndex((e) => e.id === shown.id) : -1;
  const which = at >= 0 ? `Event ${count - at} of ${fmt.format(count)}` : `An older event of ${fmt.format(count)}`;
  return el('nav', { class: 'event-nav', attrs: { 'aria-label': 'Events of this issue' } },
    step('← Older', older, 'older'),
    el('span', { class: 'err-meta', text: shown ? `${which} · ${formatTime(shown.receivedAt)}${shown.environment && typeof shown.environment === 'string' ? ` · ${shown.environment}` : ''}` : 'No event of this issue is stored any more.' }),
    step('Newer →', newer, 'newer'));
}

/** A breadcrumb as the SDKs attach them to errors (README, "Captured automatically"). */
interface Crumb { at: string; category: string; message: string; level?: string }

/** What happened before the latest event, oldest first, ending with the error itself. */
function breadcrumbsPanel(latest: StoredEvent | null): HTMLElement {
  const raw = latest?.data.breadcrumbs;
  const crumbs = Array.isArray(raw) ? (raw as Crumb[]).filter((c) => c && typeof c.message === 'string' && typeof c.at === 'string') : [];
  return el('section', { class: 'panel', attrs: { 'aria-labelledby': 'h-crumbs' } },
    el('h2', { text: 'Breadcrumbs (this event)', attrs: { id: 'h-crumbs' } }),
    crumbs.length
      ? el('ol', { class: 'crumbs' },
          ...crumbs.map((c) => el('li', { class: `crumb crumb-${c.level === 'error' ? 'error' : c.level === 'warning' ? 'warning' : 'info'}`, attrs: { 'data-category': String(c.category) } },
            el('time', { text: formatTime(c.at), attrs: { datetime: c.at } }), ' ',
            el('span', { class: 'crumb-category', text: String(c.category) }), ' ',
            el('span', { class: 'details', text: c.message }))),
          el('li', { class: 'crumb crumb-error', attrs: { 'data-category': 'error' } },
            el('time', { text: formatTime(latest!.receivedAt), attrs: { datetime: latest!.receivedAt } }), ' ',
            el('span', { class: 'crumb-category', text: 'error' }), ' ',
            el('span', { class: 'details', text: latest!.message ?? '' })))
      : el('p', { class: 'empty', text: 'This event came without breadcrumbs.' }));
}

function frameItem(f: SymbolicatedFrame): HTMLElement {
  const where = `${f.file ?? '?'}${f.line !== null ? `:${f.line}` : ''}${f.column !== null ? `:${f.column}` : ''}`;
  const head = el('div', { class: 'frame-head' },
    el('code', { class: 'frame-fn', text: f.function ?? '(anonymous)' }), ' ',
    el('span', { class: 'frame-file', text: where }),
    f.inApp ? null : el('span', { class: 'tag', text: 'library' }));
  const parts: (Node | null)[] = [head];
  if (f.context) {
    const first = (f.line ?? 1) - f.context.pre.length;
    const lines = [...f.context.pre, f.context.line, ...f.context.post];
    parts.push(el('pre', { class: 'source' }, ...lines.map((text, i) =>
      el('span', { class: first + i === f.line ? 'src-line current' : 'src-line', attrs: { 'data-line': String(first + i) } },
        el('span', { class: 'src-no', text: String(first + i).padStart(4) }), ` ${text}\n`))));
  }
  if (f.minified) {
    const m = f.minified;
    parts.push(el('p', { class: 'err-meta frame-minified', text: `minified: ${m.function ?? '(anonymous)'} at ${m.file ?? '?'}:${m.line ?? '?'}:${m.column ?? '?'}` }));
  }
  return el('li', { class: f.inApp ? 'frame in-app' : 'frame' }, ...parts);
}

// Last, once every declaration above is initialised (the module awaits at its top level).
if (await signedIn('issues')) {
  const id = params.get('id');
  await (id ? showIssue(id, eventChoice()) : showList()).then(showPage, (err) => showFailure('Issues', err));
}
