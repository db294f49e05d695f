// /dashboard-demo/: the dashboard on sample events (lib/sample.ts), no sign-in. The statistics are
// computed in the page by the same function the server's stores must agree with, so every range,
// comparison and download works as it does on the real dashboard.
import { computeStats } from '../../lib/stats.ts';
import { download, eventCells, EVENT_COLUMNS, toCsv } from './lib/csv.ts';
import { byId } from './lib/dom.ts';
import { runDashboard } from './lib/controller.ts';
import { exportName, type Span } from './lib/range.ts';
import { sampleEvents } from './lib/sample.ts';
import { createDashboardView, type Filters } from './lib/view.ts';

try {
  // One clock for the whole visit: the sample ends now, and "the last 7 days" mean the same events
  // however long the page stays open.
  const now = Date.now();
  const events = sampleEvents(now);
  const view = createDashboardView({ live: false, ranges: true, properties: true });
  byId('dashboard').replaceChildren(view.root);
  const within = (span: Span | null, f: Filters) => {
    const from = span?.from ?? -Infinity, to = span?.to ?? Infinity;
    return events.filter((e) => {
      const t = Date.parse(e.receivedAt);
      return t >= from && t < to && (!f.type || e.type === f.type) && (!f.version || e.deployVersion === f.version);
    });
  };
  const dashboard = runDashboard(view, {
    // With a range, the custom event properties too, asked as the dashboard asks the server.
    stats: async (span, _project, ask) => computeStats(events, now, span && ask
      ? { ...span, property: { keys: true, ...(ask.property ? { key: ask.property } : {}), ...(ask.event ? { event: ask.event } : {}) } }
      : span ?? undefined),
    events: async (span, f) => within(span, f).slice(-50).reverse(),
    async exportEvents(format, span, f) {
      const chosen = within(span, f);
      if (format === 'ndjson') download(exportName(span, 'ndjson'), 'application/x-ndjson', chosen.map((e) => JSON.stringify(e) + '\n'));
      else download(exportName(span, 'csv'), 'text/csv;charset=utf-8', [toCsv([...EVENT_COLUMNS], chosen.map((e) => eventCells(e)))]);
    },
  }, () => now);
  await dashboard.load();
} catch (err) {
  byId('dashboard').textContent = `The preview could not load: ${err instanceof Error ? err.message : String(err)}`;
}
