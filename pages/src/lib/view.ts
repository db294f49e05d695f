// The dashboard's panels, drawn from a Stats object (GET /api/stats) and event lists. Shared by the
// signed-in dashboard and the static preview (/dashboard-demo/).
import type { StoredEvent } from '../../../lib/event.ts';
import type { Stats } from '../../../lib/stats.ts';
import { barChart, lineChart } from './charts.ts';
import { el, fmt, formatTime, summarize } from './dom.ts';

type Chart = { destroy(): void };
export type Filters = { type: string; version: string };

const LIVE_MAX = 50;

export interface DashboardView {
  root: HTMLElement;
  showStats(stats: Stats, now?: number): void;
  showEvents(events: StoredEvent[]): void;
  addLive(events: StoredEvent[]): void;
  setLiveStatus(text: string, state: 'ok' | 'wait' | 'off'): void;
  /** A problem to show above the panels; null clears it. */
  setNotice(text: string | null): void;
  filters(): Filters;
  onFilter(fn: (f: Filters) => void): void;
}

function panel(title: string, id: string, ...children: (Node | null)[]): HTMLElement {
  return el('section', { class: `panel panel-${id}`, attrs: { 'aria-labelledby': `h-${id}` } }, el('h2', { text: title, attrs: { id: `h-${id}` } }), ...children);
}

function kpi(label: string, id: string): [HTMLElement, HTMLElement] {
  const value = el('strong', { class: 'kpi-value', text: '–', attrs: { 'data-kpi': id } });
  return [el('div', { class: 'kpi' }, el('span', { class: 'kpi-label', text: label }), value), value];
}

export function createDashboardView(options: { live: boolean }): DashboardView {
  const charts = new Map<string, Chart>();
  const chart = (key: string, make: () => Chart) => {
    charts.get(key)?.destroy();
    charts.set(key, make());
  };

  const [kActive, vActive] = kpi('Active users (5 min)', 'activeUsers');
  const [kTotal, vTotal] = kpi('Events', 'totalEvents');
  const [kErrors, vErrors] = kpi('Errors', 'totalErrors');
  const [kLatency, vLatency] = kpi('Avg page load', 'averageLatency');
  const [kFeedback, vFeedback] = kpi('Feedback', 'feedbackAverage');
  const kpis = el('section', { class: 'kpis', attrs: { 'aria-label': 'Totals' } }, kActive, kTotal, kErrors, kLatency, kFeedback);

  const versionsChart = el('div', { class: 'chart', attrs: { role: 'img', 'aria-label': 'Errors by deploy version' } });
  const versionsList = el('ul', { class: 'legend-list' });
  const routeSelect = el('select', { attrs: { 'aria-label': 'Route' } });
  const routeTable = el('tbody');
  const routeChart = el('div', { class: 'chart', attrs: { role: 'img', 'aria-label': 'Recent page load durations' } });
  const weekChart = el('div', { class: 'chart', attrs: { role: 'img', 'aria-label': 'Events and users over the last 7 days' } });
  const feedbackChart = el('div', { class: 'chart', attrs: { role: 'img', 'aria-label': 'Feedback ratings' } });
  const feedbackNote = el('p', { class: 'note' });
  const typesList = el('ul', { class: 'bars' });
  const errorsList = el('ol', { class: 'errors' });
  const liveList = el('ol', { class: 'feed', attrs: { 'aria-live': 'polite', 'data-feed': 'live' } });
  const liveEmpty = el('p', { class: 'empty', text: 'Waiting for new events… open the demo app in another tab and click around.' });
  const liveStatus = el('span', { class: 'status status-wait', text: 'connecting…' });
  const eventsBody = el('tbody');
  const typeFilter = el('select', { attrs: { 'aria-label': 'Event type', name: 'type' } }, el('option', { text: 'All types', attrs: { value: '' } }));
  const versionFilter = el('select', { attrs: { 'aria-label': 'Deploy version', name: 'version' } }, el('option', { text: 'All versions', attrs: { value: '' } }));

  const emptyNote = (text: string) => el('p', { class: 'empty', text });
  const notice = el('p', { class: 'problem', attrs: { role: 'alert' } });
  notice.hidden = true;
  let latest: Stats | null = null;

  const root = el(
    'div',
    { class: 'dash' },
    notice,
    kpis,
    el('section', { class: 'filters', attrs: { 'aria-label': 'Filters' } },
      el('label', {}, el('span', { text: 'Type' }), typeFilter),
      el('label', {}, el('span', { text: 'Version' }), versionFilter)),
    el('div', { class: 'grid' },
      options.live
        ? panel('Live feed', 'live', el('p', { class: 'note' }, 'Stream: ', liveStatus), liveEmpty, liveList)
        : null,
      panel('Errors by version', 'versions', versionsChart, versionsList),
      panel('Latency per route', 'latency',
        el('div', { class: 'table-wrap' }, el('table', {},
          el('thead', {}, el('tr', {}, ...['Route', 'Loads', 'p50 ms', 'p95 ms', 'Avg ms'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
          routeTable)),
        el('label', { class: 'inline' }, el('span', { text: 'Recent loads of ' }), routeSelect),
        routeChart),
      panel('Last 7 days', 'week', weekChart),
      panel('Feedback', 'feedback', feedbackChart, feedbackNote),
      panel('Events by type', 'types', typesList),
      panel('Recent errors', 'errors', errorsList),
      panel('Events', 'events',
        el('div', { class: 'table-wrap' }, el('table', { class: 'events' },
          el('thead', {}, el('tr', {}, ...['Time', 'Type', 'Version', 'Details'].map((h) => el('th', { text: h, attrs: { scope: 'col' } })))),
          eventsBody))),
    ),
  );

  const filterFns: ((f: Filters) => void)[] = [];
  const filters = (): Filters => ({ type: typeFilter.value, version: versionFilter.value });
  for (const s of [typeFilter, versionFilter]) s.addEventListener('change', () => filterFns.forEach((fn) => fn(filters())));

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
    if (!r || r.points.length === 0) {
      charts.get('route')?.destroy();
      charts.delete('route');
      routeChart.replaceChildren(emptyNote('No page loads yet.'));
      return;
    }
    const points = [...r.points].map((p) => ({ ...p, t: Date.parse(p.timestamp) / 1000 })).filter((p) => Number.isFinite(p.t)).sort((a, b) => a.t - b.t);
    chart('route', () =>
      lineChart(routeChart, points.map((p) => p.t), [
        { label: 'duration', values: points.map((p) => p.duration), color: 'accent' },
        { label: 'ttfb', values: points.map((p) => p.ttfb), color: 'accent2' },
      ], { time: true, unit: ' ms' }),
    );
  }
  routeSelect.addEventListener('change', () => showRoute(routeSelect.value));

  function rowFor(e: StoredEvent, live: boolean): HTMLElement {
    const type = el('span', { class: `tag tag-${/^[a-z_]+$/.test(e.type) ? e.type : 'other'}`, text: e.type });
    if (live) {
      return el('li', { class: 'feed-item', attrs: { 'data-type': e.type } },
        el('time', { text: formatTime(e.receivedAt), attrs: { datetime: String(e.receivedAt) } }), type,
        el('span', { class: 'feed-text', text: summarize(e) }));
    }
    return el('tr', {},
      el('td', { text: formatTime(e.timestamp) }), el('td', {}, type),
      el('td', { text: e.deployVersion ?? '—' }), el('td', { class: 'details', text: summarize(e) }));
  }

  return {
    root,
    filters,
    onFilter: (fn) => filterFns.push(fn),
    setNotice(text) {
      notice.textContent = text ?? '';
      notice.hidden = text === null;
    },
    setLiveStatus(text, state) {
      liveStatus.textContent = text;
      liveStatus.className = `status status-${state}`;
    },
    showStats(stats, now = Date.now()) {
      latest = stats;
      vActive.textContent = fmt.format(stats.activeUsers);
      vTotal.textContent = fmt.format(stats.totalEvents);
      vErrors.textContent = fmt.format(stats.totalErrors);
      vLatency.textContent = stats.averageLatency ? `${fmt.format(stats.averageLatency)} ms` : '–';
      const a = stats.analytics;
      vFeedback.textContent = a.feedbackTotal ? `${fmt.format(a.feedbackAverage)} / 5` : '–';

      syncOptions(typeFilter, Object.keys(stats.eventsByType));
      syncOptions(versionFilter, Object.keys(stats.errorsByVersion).filter((v) => v !== 'unknown'));

      const versions = Object.entries(stats.errorsByVersion).sort((x, y) => x[0].localeCompare(y[0], undefined, { numeric: true }));
      if (versions.length) {
        chart('versions', () => barChart(versionsChart, versions.map(([v]) => v), versions.map(([, n]) => n), { label: 'Errors', color: 'danger' }));
      } else {
        charts.get('versions')?.destroy();
        versionsChart.replaceChildren(emptyNote('No errors. Nice.'));
      }
      versionsList.replaceChildren(...versions.map(([v, n]) => el('li', {}, el('span', { text: v }), el('strong', { text: fmt.format(n) }))));

      const routes = Object.entries(stats.latencyByRoute).sort((x, y) => y[1].p95 - x[1].p95);
      routeTable.replaceChildren(
        ...(routes.length
          ? routes.map(([name, r]) => el('tr', {},
            el('th', { text: name, attrs: { scope: 'row' } }), el('td', { text: fmt.format(r.count) }),
            el('td', { text: fmt.format(r.p50) }), el('td', { text: fmt.format(r.p95) }), el('td', { text: fmt.format(r.avg) })))
          : [el('tr', {}, el('td', { text: 'No page loads yet.', attrs: { colspan: '5' } }))]),
      );
      const selected = routeSelect.value;
      routeSelect.replaceChildren(...routes.map(([name]) => el('option', { text: name, attrs: { value: name } })));
      routeSelect.value = routes.some(([n]) => n === selected) ? selected : routes[0]?.[0] ?? '';
      showRoute(routeSelect.value);

      // Series labels are "1".."7", oldest UTC day first (docs/api.md#stats); show them as dates.
      const days = a.activitySeries.labels.map((_, i, all) => {
        const d = new Date(now - (all.length - 1 - i) * 86_400_000);
        return i === all.length - 1 ? 'Today' : d.toLocaleDateString(undefined, { weekday: 'short', timeZone: 'UTC' });
      });
      chart('week', () => lineChart(weekChart, days.map((_, i) => i), [
        { label: 'events', values: a.activitySeries.values, color: 'accent', bars: true },
        { label: 'users', values: a.userSeries.values, color: 'accent2', scale: 'users' },
      ], { time: false, categories: days }));

      const ratings = ['1', '2', '3', '4', '5'] as const;
      chart('feedback', () => barChart(feedbackChart, ratings.map((r) => `${r}★`), ratings.map((r) => a.feedbackBreakdown[r]), { label: 'Ratings', color: 'accent2', height: 160 }));
      feedbackNote.textContent = a.feedbackTotal
        ? `${fmt.format(a.feedbackTotal)} ratings, average ${fmt.format(a.feedbackAverage)}`
        : 'No feedback yet.';

      const types = Object.entries(stats.eventsByType).sort((x, y) => y[1] - x[1]);
      const top = Math.max(1, ...types.map(([, n]) => n));
      typesList.replaceChildren(
        ...(types.length
          ? types.map(([t, n]) => {
            const bar = el('span', { class: 'bar' });
            bar.style.width = `${(n / top) * 100}%`;
            return el('li', { attrs: { 'data-type': t } }, el('span', { class: 'bar-label', text: t }), el('span', { class: 'bar-track' }, bar), el('strong', { text: fmt.format(n) }));
          })
          : [el('li', { class: 'empty', text: 'No events yet.' })]),
      );

      errorsList.replaceChildren(
        ...(stats.recentErrors.length
          ? stats.recentErrors.map((e) => {
            const stack = typeof e.data.stack === 'string' ? e.data.stack : '';
            const where = [e.source ?? (typeof e.data.source === 'string' ? e.data.source : ''), e.data.line ? `:${e.data.line}` : ''].join('');
            return el('li', {}, el('details', {},
              el('summary', {},
                el('span', { class: 'err-msg', text: e.message ?? (typeof e.data.message === 'string' ? e.data.message : 'Error') }),
                el('span', { class: 'err-meta', text: `${e.deployVersion ?? 'unknown'} · ${formatTime(e.timestamp)}` })),
              el('dl', {},
                el('dt', { text: 'Page' }), el('dd', { text: e.url ?? e.route ?? '—' }),
                el('dt', { text: 'Source' }), el('dd', { text: where || '—' }),
                el('dt', { text: 'Severity' }), el('dd', { text: e.severity ?? '—' })),
              el('pre', { class: 'stack', text: stack || 'No stack trace.' })));
          })
          : [el('li', { class: 'empty', text: 'No errors recorded.' })]),
      );
    },
    showEvents(events) {
      learn(events);
      eventsBody.replaceChildren(
        ...(events.length ? events.map((e) => rowFor(e, false)) : [el('tr', {}, el('td', { text: 'No matching events.', attrs: { colspan: '4' } }))]),
      );
    },
    addLive(events) {
      learn(events);
      const f = filters();
      const shown = events.filter((e) => (!f.type || e.type === f.type) && (!f.version || e.deployVersion === f.version));
      for (const e of shown) liveList.prepend(rowFor(e, true));
      if (shown.length) liveEmpty.hidden = true;
      while (liveList.childElementCount > LIVE_MAX) liveList.lastElementChild!.remove();
    },
  };
}
