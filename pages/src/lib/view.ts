// The dashboard's panels, drawn from a Stats object (GET /api/stats) and event lists. Shared by the
// signed-in dashboard and the static preview (/dashboard-demo/). Every chart has its numbers in a
// table next to it (its text alternative), and every table downloads as CSV from the same rows.
import type { StoredEvent } from '../../../lib/event.ts';
import type { Stats } from '../../../lib/stats.ts';
import { barChart, lineChart } from './charts.ts';
import { eventCells, EVENT_COLUMNS } from './csv.ts';
import { el, fmt, formatTime, summarize } from './dom.ts';
import { scriptTag, type Project } from './projects.ts';
import { delta, describeRange, parseDay, PRESETS, type RangeKey, type Span, type ViewState } from './range.ts';
import type { GoalsPanel } from './goals.ts';
import { createPropertiesPanel } from './properties.ts';
import { csvButton, fillBarTable, fillTable, tableFor, type TableModel } from './tables.ts';
import { BREAKDOWN_PANELS, vitalCells, vitalText, VITAL_ROWS, type BreakdownKey } from './breakdowns.ts';
import { VITAL_NAMES } from '../../../lib/breakdowns.ts';

type Chart = { destroy(): void };
export type Filters = { type: string; version: string; project?: string };

const LIVE_MAX = 50;

/** What the view shows along with a Stats answer. */
export interface StatsContext {
  span: Span | null;
  /** The clock the "all" answer's 7-day series end at. */
  now?: number;
}

export interface DashboardView {
  root: HTMLElement;
  showStats(stats: Stats, ctx: StatsContext): void;
  /**
   * The headline numbers' change: `previous` is the period before's answer, null when it held no
   * events, undefined when there is nothing to compare with ("all"); a null `stats` clears them.
   */
  showComparison(stats: Stats | null, previous?: Stats | null): void;
  showEvents(events: StoredEvent[]): void;
  addLive(events: StoredEvent[]): void;
  setLiveStatus(text: string, state: 'ok' | 'wait' | 'off'): void;
  /** A problem to show above the panels; null clears it. */
  setNotice(text: string | null): void;
  /** The user's projects, for the switcher (a view made with `projects: true`). */
  setProjects(projects: Project[]): void;
  /** Shows the state in the controls (range, project, filters, route), e.g. after back/forward. */
  setState(state: ViewState): void;
  /** Marks the panels as loading (aria-busy) while a new range is fetched. */
  setBusy(busy: boolean): void;
  filters(): Filters;
  /** Called when the visitor changes the range, the project, a filter or the route. */
  onChange(fn: (change: Partial<ViewState>) => void): void;
  /** Called with the format when the visitor asks for the range's events as a file. */
  onExport(fn: (format: 'ndjson' | 'csv') => void): void;
}

function panel(title: string, id: string, actions: Node[], ...children: (Node | null)[]): HTMLElement {
  return el('section', { class: `panel panel-${id}`, attrs: { 'aria-labelledby': `h-${id}` } },
    el('div', { class: 'panel-head' }, el('h2', { text: title, attrs: { id: `h-${id}` } }), ...actions),
    ...children);
}

/** How a headline number's change reads: for errors and page-load time, up is bad. */
type Better = 'up' | 'down';

interface Kpi { box: HTMLElement; value: HTMLElement; delta: HTMLElement }

function kpi(label: string, id: string): Kpi {
  const value = el('strong', { class: 'kpi-value', text: '–', attrs: { 'data-kpi': id } });
  const change = el('span', { class: 'kpi-delta', text: '', attrs: { 'data-delta': id } });
  return { box: el('div', { class: 'kpi' }, el('span', { class: 'kpi-label', text: label }), value, change), value, delta: change };
}

/** A chart's host with its height reserved, so nothing below it moves when it is drawn. */
function chartHost(label: string, height: number): HTMLElement {
  const host = el('div', { class: 'chart', attrs: { role: 'img', 'aria-label': `${label} (the numbers are in the table below)` } });
  host.style.minHeight = `${height}px`;
  return host;
}

/** The table under a chart: its text alternative, folded away for sighted readers. */
function dataDetails(table: HTMLTableElement): HTMLElement {
  return el('details', { class: 'data' }, el('summary', { text: 'Show the numbers' }), scroller(table, 'Numbers of the chart'));
}

/** A table in a box that scrolls: focusable, so the keyboard can scroll it too. */
function scroller(table: HTMLTableElement, label: string): HTMLElement {
  return el('div', { class: 'table-wrap', attrs: { tabindex: '0', role: 'region', 'aria-label': label } }, table);
}

/**
 * `goals`: the Goals panel, shown for the chosen project (the signed-in dashboard's); `properties`:
 * the custom event properties panel, for a source that answers them.
 */
export function createDashboardView(options: { live: boolean; ranges: boolean; projects?: boolean; goals?: GoalsPanel; properties?: boolean }): DashboardView {
  const charts = new Map<string, Chart>();
  const chart = (key: string, make: () => Chart) => {
    charts.get(key)?.destroy();
    charts.set(key, make());
  };
  const models = new Map<string, TableModel>();
  const model = (key: string) => () => models.get(key) ?? null;

  // Headline numbers.
  const kActive = kpi('Active users (5 min)', 'activeUsers');
  const kTotal = kpi('Events', 'totalEvents');
  const kErrors = kpi('Errors', 'totalErrors');
  const kLatency = kpi('Avg page load', 'averageLatency');
  const kFeedback = kpi('Feedback', 'feedbackAverage');
  // On the signed-in dashboard the errors card leads to the issues they were grouped into, for the
  // project shown (followProject keeps the link in step with the switcher).
  const issuesLink = el('a', { class: 'kpi-link', text: 'See issues', attrs: { href: '/issues/', 'data-issues-link': '' } });
  if (options.projects) kErrors.box.append(issuesLink);
  const kpis = el('section', { class: 'kpis', attrs: { 'aria-label': 'Totals' } }, ...[kActive, kTotal, kErrors, kLatency, kFeedback].map((k) => k.box));

  // Range picker: native radios (arrow keys move between them), then the custom days.
  const rangeName = 'range';
  const radios = new Map<RangeKey, HTMLInputElement>();
  const picker = el('fieldset', { class: 'range-picker' }, el('legend', { class: 'visually-hidden', text: 'Time range' }),
    ...PRESETS.map((p) => {
      const input = el('input', { attrs: { type: 'radio', name: rangeName, value: p.key } });
      radios.set(p.key, input);
      return el('label', { class: 'seg' }, input, el('span', { text: p.label }));
    }));
  const customFrom = el('input', { attrs: { type: 'date', name: 'from', required: '' } });
  const customTo = el('input', { attrs: { type: 'date', name: 'to', required: '' } });
  const customProblem = el('span', { class: 'problem', attrs: { role: 'alert' } });
  const customForm = el('form', { class: 'custom-range', attrs: { 'aria-label': 'Custom range' } },
    el('label', {}, el('span', { text: 'From (UTC)' }), customFrom),
    el('label', {}, el('span', { text: 'To (UTC, inclusive)' }), customTo),
    el('button', { text: 'Apply', attrs: { type: 'submit' } }),
    customProblem);
  customForm.hidden = true;
  const rangeNote = el('p', { class: 'note range-note', attrs: { 'aria-live': 'polite' } });

  const exportNd = el('button', { text: 'Events as NDJSON', attrs: { type: 'button', 'data-export': 'ndjson' } });
  const exportCsv = el('button', { text: 'Events as CSV', attrs: { type: 'button', 'data-export': 'csv' } });
  const exportFns: ((f: 'ndjson' | 'csv') => void)[] = [];
  exportNd.addEventListener('click', () => exportFns.forEach((fn) => fn('ndjson')));
  exportCsv.addEventListener('click', () => exportFns.forEach((fn) => fn('csv')));

  // Project switcher: every event of the user, or one project's (its key's) events.
  const projectSelect = el('select', { attrs: { name: 'project' } }, el('option', { text: 'All projects', attrs: { value: '' } }));
  let projects: Project[] = [];
  const snippet = el('code', { class: 'snippet' });
  const snippetNote = el('p', { class: 'note' });
  const snippetBox = el('pre', { class: 'wrap' }, snippet);
  const projectPanel = el('section', { class: 'panel panel-project', attrs: { 'aria-labelledby': 'h-project' } },
    el('div', { class: 'panel-head' }, el('h2', { text: 'Connect your app', attrs: { id: 'h-project' } })),
    snippetNote, snippetBox,
    el('p', { class: 'note' }, el('a', { text: 'Manage projects and keys', attrs: { href: '/projects/' } })));
  /** The script tag and the issues link follow the chosen project. */
  const followProject = () => {
    issuesLink.setAttribute('href', projectSelect.value ? `/issues/?project=${encodeURIComponent(projectSelect.value)}` : '/issues/');
    const p = projects.find((x) => x.id === projectSelect.value);
    snippetBox.hidden = !p;
    snippet.textContent = p ? scriptTag(p, location.origin) : '';
    // Without the list yet, the role is unknown: the goal controls wait for it.
    options.goals?.setProject(projectSelect.value, p ? p.role ?? 'owner' : undefined);
    snippetNote.textContent = p
      ? `Paste this into the pages of ${p.name}: their events arrive here, tagged with project ${p.id}.`
      : projects.length ? 'Choose a project above to see the script tag for its pages.' : 'Create a project to get a script tag for your app.';
  };

  const typeFilter = el('select', { attrs: { name: 'type' } }, el('option', { text: 'All types', attrs: { value: '' } }));
  const versionFilter = el('select', { attrs: { name: 'version' } }, el('option', { text: 'All versions', attrs: { value: '' } }));

  // Panels.
  const versionsChart = chartHost('Errors by deploy version', 200);
  const versionsBody = el('tbody');
  const routeSelect = el('select', { attrs: { name: 'route' } });
  const routeBody = el('tbody');
  const routeChart = chartHost('Recent page load durations of the chosen route', 230);
  const routePointsBody = el('tbody');
  const activityChart = chartHost('Events and sessions over the range', 230);
  const activityBody = el('tbody');
  const activityTitle = el('h2', { text: 'Activity', attrs: { id: 'h-activity' } });
  const feedbackChart = chartHost('Feedback ratings', 160);
  const feedbackBody = el('tbody');
  const feedbackNote = el('p', { class: 'note' });
  const typesList = el('ul', { class: 'bars' });
  const errorsList = el('ol', { class: 'errors' });
  const liveList = el('ol', { class: 'feed', attrs: { 'aria-live': 'polite', 'data-feed': 'live' } });
  const liveEmpty = el('p', { class: 'empty', text: 'Waiting for new events… open the demo app in another tab and click around.' });
  const liveStatus = el('span', { class: 'status status-wait', text: 'connecting…' });
  const eventsBody = el('tbody');
  const emptyNote = (text: string) => el('p', { class: 'empty', text });
  const notice = el('p', { class: 'problem', attrs: { role: 'alert' } });
  notice.hidden = true;
  let latest: Stats | null = null;

  const activityPanel = el('section', { class: 'panel panel-activity', attrs: { 'aria-labelledby': 'h-activity' } },
    el('div', { class: 'panel-head' }, activityTitle, csvButton('activity', model('activity'))),
    activityChart, dataDetails(tableFor(['Period', 'Events', 'Sessions'], activityBody)));

  // Breakdowns and web vitals: answered with a range only ("all" explains where they went).
  const breakdownBodies = new Map<BreakdownKey, HTMLTableSectionElement>();
  const breakdownPanels = BREAKDOWN_PANELS.map((b) => {
    const body = el('tbody');
    breakdownBodies.set(b.key, body);
    return panel(b.title, `bd-${b.key}`, [csvButton(b.title.toLowerCase(), model(`bd-${b.key}`))],
      scroller(tableFor(b.columns, body), b.title));
  });
  for (const p of breakdownPanels) p.classList.add('panel-breakdown');
  // Beside the custom events; its choice is view state like the range (emit is bound below).
  const propertiesPanel = options.properties ? createPropertiesPanel((c) => emit(c)) : null;
  const vitalsList = el('ul', { class: 'vitals', attrs: { 'aria-label': 'p75 of each web vital' } });
  const vitalsNote = el('p', { class: 'note' });
  const vitalPagesBody = el('tbody');
  const vitalsPanel = panel('Web vitals', 'vitals', [csvButton('web vitals', model('vitals'))],
    vitalsNote, vitalsList,
    el('div', { class: 'panel-head' }, el('h3', { text: 'Per page', attrs: { id: 'h-vitals-pages' } }),
      csvButton('web vitals per page', model('vitals-pages'))),
    scroller(tableFor(['Page', 'Samples', ...VITAL_NAMES.map((n) => `${n} p75`)], vitalPagesBody), 'Web vitals per page'));

  const grid = el('div', { class: 'grid' },
    options.live
      ? panel('Live feed', 'live', [], el('p', { class: 'note' }, 'Stream: ', liveStatus),
        el('div', { class: 'feed-box', attrs: { tabindex: '0', role: 'region', 'aria-label': 'Live events' } }, liveEmpty, liveList))
      : null,
    activityPanel,
    options.goals?.root,
    panel('Errors by version', 'versions', [csvButton('errors by version', model('versions'))],
      versionsChart, dataDetails(tableFor(['Version', 'Errors'], versionsBody))),
    panel('Latency per route', 'latency', [csvButton('latency per route', model('latency'))],
      scroller(tableFor(['Route', 'Loads', 'p50 ms', 'p95 ms', 'Avg ms'], routeBody), 'Latency per route'),
      el('label', { class: 'inline' }, el('span', { text: 'Recent loads of ' }), routeSelect),
      routeChart, dataDetails(tableFor(['Time', 'Duration ms', 'TTFB ms'], routePointsBody))),
    vitalsPanel,
    ...breakdownPanels,
    propertiesPanel?.root ?? null,
    panel('Feedback', 'feedback', [csvButton('feedback', model('feedback'))],
      feedbackChart, feedbackNote, dataDetails(tableFor(['Rating', 'Count'], feedbackBody))),
    panel('Events by type', 'types', [csvButton('events by type', model('types'))], typesList),
    panel('Recent errors', 'errors', [csvButton('recent errors', model('errors'))], errorsList),
    panel('Events', 'events', [csvButton('events', model('events'))],
      el('p', { class: 'note', text: 'The 50 most recent events of the range; download all of them with the buttons at the top.' }),
      scroller(el('table', { class: 'events' },
        el('thead', {}, el('tr', {}, ...['Time', 'Type', 'Version', 'Details'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
        eventsBody), 'Events')),
    options.projects ? projectPanel : null,
  );

  const root = el('div', { class: 'dash' },
    notice,
    options.ranges
      ? el('section', { class: 'toolbar', attrs: { 'aria-label': 'Time range and export' } },
        options.projects ? el('label', { class: 'project-switch' }, el('span', { text: 'Project' }), projectSelect) : null,
        picker, customForm, el('div', { class: 'exports' }, el('span', { class: 'note', text: 'Download' }), exportNd, exportCsv), rangeNote)
      : null,
    kpis,
    el('section', { class: 'filters', attrs: { 'aria-label': 'Filters' } },
      el('label', {}, el('span', { text: 'Type' }), typeFilter),
      el('label', {}, el('span', { text: 'Version' }), versionFilter)),
    grid);

  const changeFns: ((c: Partial<ViewState>) => void)[] = [];
  const emit = (c: Partial<ViewState>) => changeFns.forEach((fn) => fn(c));
  const filters = (): Filters => ({ type: typeFilter.value, version: versionFilter.value, project: projectSelect.value });
  projectSelect.addEventListener('change', () => {
    followProject();
    emit({ project: projectSelect.value });
  });
  typeFilter.addEventListener('change', () => emit({ type: typeFilter.value }));
  versionFilter.addEventListener('change', () => emit({ version: versionFilter.value }));
  routeSelect.addEventListener('change', () => {
    showRoute(routeSelect.value);
    emit({ route: routeSelect.value });
  });
  for (const [key, input] of radios) {
    input.addEventListener('change', () => {
      if (!input.checked) return;
      customForm.hidden = key !== 'custom';
      if (key === 'custom') {
        // Start from the last 7 days, the common case, ready to adjust.
        if (!customFrom.value) customFrom.value = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
        if (!customTo.value) customTo.value = new Date().toISOString().slice(0, 10);
        customFrom.focus();
      } else emit({ range: key, from: '', to: '' });
    });
  }
  customForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = parseDay(customFrom.value), t = parseDay(customTo.value);
    customProblem.textContent = Number.isFinite(f) && Number.isFinite(t) && f <= t ? '' : 'Choose a start day on or before the end day.';
    if (!customProblem.textContent) emit({ range: 'custom', from: customFrom.value, to: customTo.value });
  });

  const syncOptions = (select: HTMLSelectElement, values: string[]) => {
    const have = new Set([...select.options].map((o) => o.value));
    for (const v of values.sort()) if (!have.has(v)) select.append(el('option', { text: v, attrs: { value: v } }));
  };
  const learn = (events: StoredEvent[]) => {
    syncOptions(typeFilter, [...new Set(events.map((e) => e.type))]);
    syncOptions(versionFilter, [...new Set(events.map((e) => e.deployVersion).filter((v): v is string => !!v))]);
  };

  function showRoute(name: string) {
    const r = latest?.latencyByRoute[name];
    const points = (r?.points ?? []).map((p) => ({ ...p, t: Date.parse(p.timestamp) / 1000 })).filter((p) => Number.isFinite(p.t)).sort((a, b) => a.t - b.t);
    fillTable(routePointsBody, { name: 'route', columns: [], rows: points.map((p) => [p.timestamp, p.duration, p.ttfb]) }, 'No page loads in this range.');
    if (points.length === 0) {
      charts.get('route')?.destroy();
      charts.delete('route');
      routeChart.replaceChildren(emptyNote('No page loads in this range.'));
      return;
    }
    chart('route', () =>
      lineChart(routeChart, points.map((p) => p.t), [
        { label: 'duration', values: points.map((p) => p.duration), color: 'accent' },
        { label: 'ttfb', values: points.map((p) => p.ttfb), color: 'accent2' },
      ], { time: true, unit: ' ms' }),
    );
  }

  function rowFor(e: StoredEvent, live: boolean): HTMLElement {
    const type = el('span', { class: `tag tag-${/^[a-z_]+$/.test(e.type) ? e.type : 'other'}`, text: e.type });
    if (live) {
      return el('li', { class: 'feed-item', attrs: { 'data-type': e.type } },
        el('time', { text: formatTime(e.receivedAt), attrs: { datetime: String(e.receivedAt) } }), type,
        el('span', { class: 'feed-text', text: summarize(e) }));
    }
    return el('tr', {},
      el('td', { text: formatTime(e.receivedAt) }), el('td', {}, type),
      el('td', { text: e.deployVersion ?? '—' }), el('td', { class: 'details', text: summarize(e) }));
  }

  function showDelta(k: Kpi, current: number, previous: number | null | undefined, better: Better) {
    if (previous === undefined) {
      k.delta.replaceChildren();
      k.delta.className = 'kpi-delta';
      return;
    }
    const d = delta(current, previous);
    const judged = d.direction === 'up' || d.direction === 'down' ? (d.direction === better ? 'good' : 'bad') : 'flat';
    k.delta.className = `kpi-delta delta-${judged}`;
    k.delta.replaceChildren(
      d.direction === 'up' ? '▲ ' : d.direction === 'down' ? '▼ ' : '',
      d.text,
      el('span', { class: 'visually-hidden', text: ' compared with the previous period' }),
    );
  }

  /** The breakdown tables and the vitals panel; without a range they say how to get them. */
  function showBreakdowns(stats: Stats) {
    const none = 'Choose a time range (not "all") to see this.';
    // A store upgraded with events in it leaves out the lists it did not count then (docs/api.md#breakdowns).
    const older = 'Not counted for this range: it reaches back before the upgrade that added it. Choose a later start.';
    for (const b of BREAKDOWN_PANELS) {
      const rows = stats.breakdowns?.[b.key] ?? [];
      models.set(`bd-${b.key}`, { name: b.file, columns: b.columns, rows: rows.map(b.cells) });
      fillBarTable(breakdownBodies.get(b.key)!, models.get(`bd-${b.key}`)!, !stats.breakdowns ? none : b.key in stats.breakdowns ? b.empty : older);
    }
    const v = stats.vitals;
    const metrics = v ? VITAL_NAMES.map((n) => [n, v.metrics[n]] as const) : [];
    models.set('vitals', {
      name: 'web-vitals', columns: ['Metric', 'Samples', 'p75', 'Rating', 'Good', 'Needs improvement', 'Poor'],
      rows: metrics.map(([n, m]) => [n, m.count, m.p75, VITAL_ROWS.rating(n, m.p75) ?? '', m.good, m.needsImprovement, m.poor]),
    });
    vitalsNote.textContent = !v ? none
      : metrics.some(([, m]) => m.count) ? 'The 75th percentile of each metric over the range, rated by the Core Web Vitals thresholds.'
      : 'No web vitals in this range: add the vitals bundle to your pages to collect them.';
    vitalsList.replaceChildren(...VITAL_NAMES.map((n) => {
      const m = v?.metrics[n];
      const rating = m ? VITAL_ROWS.rating(n, m.p75) : null;
      return el('li', { class: `vital vital-${rating ?? 'none'}`, attrs: { 'data-vital': n } },
        el('span', { class: 'vital-name', text: n }),
        el('strong', { class: 'vital-value', text: m && m.p75 !== null ? vitalText(n, m.p75) : '–' }),
        el('span', { class: 'vital-rating', text: rating ? VITAL_ROWS.label[rating] : 'No data' }),
        el('span', { class: 'note', text: m ? `${fmt.format(m.count)} samples` : '' }));
    }));
    const pages = v?.pages ?? [];
    models.set('vitals-pages', {
      name: 'web-vitals-per-page', columns: ['Page', 'Samples', ...VITAL_NAMES.map((n) => `${n} p75`)],
      rows: pages.map((p) => [p.name, p.events, ...VITAL_NAMES.map((n) => p.metrics[n]?.p75 ?? null)]),
    });
    vitalPagesBody.replaceChildren(...(pages.length
      ? pages.map((p) => el('tr', {}, el('th', { text: p.name, attrs: { scope: 'row' } }), el('td', { text: fmt.format(p.events) }),
        ...VITAL_NAMES.map((n) => vitalCells(n, p.metrics[n]?.p75 ?? null))))
      : [el('tr', {}, el('td', { class: 'empty', text: v ? 'No web vitals in this range.' : none, attrs: { colspan: String(2 + VITAL_NAMES.length) } }))]));
  }

  /** Labels of the activity series: days of the last week without a range, bucket starts with one. */
  function periodLabels(stats: Stats, span: Span | null, now: number): { xs: number[]; names: string[]; time: boolean } {
    const labels = stats.analytics.activitySeries.labels;
    if (!span) {
      const names = labels.map((_, i) => {
        const d = new Date(now - (labels.length - 1 - i) * 86_400_000);
        return i === labels.length - 1 ? 'Today' : d.toLocaleDateString(undefined, { weekday: 'short', timeZone: 'UTC' });
      });
      return { xs: names.map((_, i) => i), names, time: false };
    }
    const starts = labels.map((l) => Date.parse(l));
    return { xs: starts.map((t) => t / 1000), names: labels, time: true };
  }

  return {
    root,
    filters,
    onChange: (fn) => changeFns.push(fn),
    onExport: (fn) => exportFns.push(fn),
    setNotice(text) {
      notice.textContent = text ?? '';
      notice.hidden = text === null;
    },
    setLiveStatus(text, state) {
      liveStatus.textContent = text;
      liveStatus.className = `status status-${state}`;
    },
    setBusy(busy) {
      grid.setAttribute('aria-busy', String(busy));
      kpis.setAttribute('aria-busy', String(busy));
    },
    setProjects(list) {
      projects = list;
      const wanted = projectSelect.value;
      projectSelect.replaceChildren(el('option', { text: 'All projects', attrs: { value: '' } }),
        ...list.map((p) => el('option', { text: p.role && p.role !== 'owner' ? `${p.name} (shared, ${p.role})` : p.name, attrs: { value: p.id } })));
      // A bookmarked project that is gone (deleted, or another user's) stays named, so the notice of its 404 makes sense.
      if (wanted && !list.some((p) => p.id === wanted)) projectSelect.append(el('option', { text: `Project ${wanted} (not found)`, attrs: { value: wanted } }));
      projectSelect.value = wanted;
      followProject();
    },
    setState(s) {
      propertiesPanel?.setState(s);
      if (s.project && ![...projectSelect.options].some((o) => o.value === s.project)) {
        projectSelect.append(el('option', { text: `Project ${s.project}`, attrs: { value: s.project } }));
      }
      projectSelect.value = s.project;
      followProject();
      const radio = radios.get(s.range);
      if (radio) radio.checked = true;
      customForm.hidden = s.range !== 'custom';
      if (s.range === 'custom') {
        customFrom.value = s.from;
        customTo.value = s.to;
      }
      customProblem.textContent = '';
      // A bookmarked filter may name a value this range has not shown yet: offer it anyway.
      syncOptions(typeFilter, s.type ? [s.type] : []);
      syncOptions(versionFilter, s.version ? [s.version] : []);
      typeFilter.value = s.type;
      versionFilter.value = s.version;
      if (s.route && latest?.latencyByRoute[s.route]) {
        routeSelect.value = s.route;
        showRoute(s.route);
      }
      rangeNote.textContent = s.range === 'all'
        ? 'Showing all stored events; the activity chart covers the last 7 days.'
        : `Showing ${describeRange(s)}; changes compare with the period of the same length just before.`;
      routeSelect.dataset.wanted = s.route;
    },
    showComparison(stats, previous) {
      options.goals?.showComparison(stats ? previous : undefined);
      const kpis: [Kpi, Better, (s: Stats) => number, ((s: Stats) => number) | null][] = [
        [kTotal, 'up', (s) => s.totalEvents, null],
        [kErrors, 'down', (s) => s.totalErrors, null],
        // An average over nothing is no number to compare with, either way.
        [kLatency, 'down', (s) => s.averageLatency, (s) => Object.values(s.latencyByRoute).reduce((n, r) => n + r.count, 0)],
        [kFeedback, 'up', (s) => s.analytics.feedbackAverage, (s) => s.analytics.feedbackTotal],
      ];
      for (const [k, better, pick, samples] of kpis) {
        if (!stats || previous === undefined || (samples && samples(stats) === 0)) showDelta(k, 0, undefined, better);
        else showDelta(k, pick(stats), previous === null || (samples && samples(previous) === 0) ? null : pick(previous), better);
      }
    },
    showStats(stats, ctx) {
      latest = stats;
      options.goals?.showStats(stats, ctx.span !== null);
      propertiesPanel?.showStats(stats, ctx.span !== null);
      const now = ctx.now ?? Date.now();
      kActive.value.textContent = fmt.format(stats.activeUsers);
      kTotal.value.textContent = fmt.format(stats.totalEvents);
      kErrors.value.textContent = fmt.format(stats.totalErrors);
      kLatency.value.textContent = stats.averageLatency ? `${fmt.format(stats.averageLatency)} ms` : '–';
      const a = stats.analytics;
      kFeedback.value.textContent = a.feedbackTotal ? `${fmt.format(a.feedbackAverage)} / 5` : '–';

      syncOptions(typeFilter, Object.keys(stats.eventsByType));
      syncOptions(versionFilter, Object.keys(stats.errorsByVersion).filter((v) => v !== 'unknown'));

      const versions = Object.entries(stats.errorsByVersion).sort((x, y) => x[0].localeCompare(y[0], undefined, { numeric: true }));
      models.set('versions', { name: 'errors-by-version', columns: ['Version', 'Errors'], rows: versions });
      fillTable(versionsBody, models.get('versions')!, 'No errors.');
      if (versions.length) {
        chart('versions', () => barChart(versionsChart, versions.map(([v]) => v), versions.map(([, n]) => n), { label: 'Errors', color: 'danger' }));
      } else {
        charts.get('versions')?.destroy();
        charts.delete('versions');
        versionsChart.replaceChildren(emptyNote('No errors. Nice.'));
      }

      const routes = Object.entries(stats.latencyByRoute).sort((x, y) => y[1].p95 - x[1].p95);
      models.set('latency', { name: 'latency-per-route', columns: ['Route', 'Loads', 'p50 ms', 'p95 ms', 'Avg ms'], rows: routes.map(([name, r]) => [name, r.count, r.p50, r.p95, r.avg]) });
      fillTable(routeBody, models.get('latency')!, 'No page loads in this range.');
      const wanted = routeSelect.dataset.wanted || routeSelect.value;
      routeSelect.replaceChildren(...routes.map(([name]) => el('option', { text: name, attrs: { value: name } })));
      routeSelect.value = routes.some(([n]) => n === wanted) ? wanted : routes[0]?.[0] ?? '';
      showRoute(routeSelect.value);

      const periods = periodLabels(stats, ctx.span, now);
      activityTitle.textContent = ctx.span ? `Activity per ${ctx.span.interval}` : 'Last 7 days';
      models.set('activity', {
        name: 'activity', columns: ['Period', 'Events', 'Sessions'],
        rows: periods.names.map((n, i) => [n, a.activitySeries.values[i] ?? 0, a.userSeries.values[i] ?? 0]),
      });
      fillTable(activityBody, models.get('activity')!, 'No periods.');
      chart('activity', () => lineChart(activityChart, periods.xs, [
        { label: 'events', values: a.activitySeries.values, color: 'accent', bars: true },
        { label: 'sessions', values: a.userSeries.values, color: 'accent2', scale: 'sessions' },
      ], periods.time ? { time: true } : { time: false, categories: periods.names }));

      showBreakdowns(stats);

      const ratings = ['1', '2', '3', '4', '5'] as const;
      models.set('feedback', { name: 'feedback', columns: ['Rating', 'Count'], rows: ratings.map((r) => [Number(r), a.feedbackBreakdown[r]]) });
      fillTable(feedbackBody, models.get('feedback')!, '');
      chart('feedback', () => barChart(feedbackChart, ratings.map((r) => `${r}★`), ratings.map((r) => a.feedbackBreakdown[r]), { label: 'Ratings', color: 'accent2', height: 160 }));
      feedbackNote.textContent = a.feedbackTotal
        ? `${fmt.format(a.feedbackTotal)} ratings, average ${fmt.format(a.feedbackAverage)}`
        : 'No feedback in this range.';

      const types = Object.entries(stats.eventsByType).sort((x, y) => y[1] - x[1]);
      models.set('types', { name: 'events-by-type', columns: ['Type', 'Events'], rows: types });
      const top = Math.max(1, ...types.map(([, n]) => n));
      typesList.replaceChildren(
        ...(types.length
          ? types.map(([t, n]) => {
            const bar = el('span', { class: 'bar' });
            bar.style.width = `${(n / top) * 100}%`;
            return el('li', { attrs: { 'data-type': t } }, el('span', { class: 'bar-label', text: t }), el('span', { class: 'bar-track', attrs: { 'aria-hidden': 'true' } }, bar), el('strong', { text: fmt.format(n) }));
          })
          : [el('li', { class: 'empty', text: 'No events in this range.' })]),
      );

      const message = (e: StoredEvent) => e.message ?? (typeof e.data.message === 'string' ? e.data.message : 'Error');
      models.set('errors', {
        name: 'recent-errors', columns: ['Time', 'Version', 'Message', 'Page', 'Severity'],
        rows: stats.recentErrors.map((e) => [e.receivedAt, e.deployVersion ?? 'unknown', message(e), e.url ?? e.route ?? '', e.severity ?? '']),
      });
      errorsList.replaceChildren(
        ...(stats.recentErrors.length
          ? stats.recentErrors.map((e) => {
            const stack = typeof e.data.stack === 'string' ? e.data.stack : '';
            const where = [e.source ?? (typeof e.data.source === 'string' ? e.data.source : ''), e.data.line ? `:${e.data.line}` : ''].join('');
            return el('li', {}, el('details', {},
              el('summary', {},
                el('span', { class: 'err-msg', text: message(e) }),
                el('span', { class: 'err-meta', text: `${e.deployVersion ?? 'unknown'} · ${formatTime(e.timestamp)}` })),
              el('dl', {},
                el('dt', { text: 'Page' }), el('dd', { text: e.url ?? e.route ?? '—' }),
                el('dt', { text: 'Source' }), el('dd', { text: where || '—' }),
                el('dt', { text: 'Severity' }), el('dd', { text: e.severity ?? '—' })),
              el('pre', { class: 'stack', text: stack || 'No stack trace.' })));
          })
          : [el('li', { class: 'empty', text: 'No errors in this range.' })]),
      );
    },
    showEvents(events) {
      learn(events);
      models.set('events', { name: 'events', columns: [...EVENT_COLUMNS], rows: events.map((e) => eventCells(e as unknown as Record<string, unknown>)) });
      eventsBody.replaceChildren(
        ...(events.length ? events.map((e) => rowFor(e, false)) : [el('tr', {}, el('td', { text: 'No matching events.', attrs: { colspan: '4' } }))]),
      );
    },
    addLive(events) {
      learn(events);
      const f = filters();
      const shown = events.filter((e) => (!f.type || e.type === f.type) && (!f.version || e.deployVersion === f.version) && (!f.project || e.projectId === f.project));
      for (const e of shown) liveList.prepend(rowFor(e, true));
      if (shown.length) liveEmpty.hidden = true;
      while (liveList.childElementCount > LIVE_MAX) liveList.lastElementChild!.remove();
    },
  };
}
