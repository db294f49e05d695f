// /dashboard-demo/: the dashboard drawn from sample data (fixtures/dashboard-demo.json), no sign-in.
// The sample is one snapshot of GET /api/stats, so the preview has no range picker.
import type { StoredEvent } from '../../lib/event.ts';
import type { Stats } from '../../lib/stats.ts';
import { byId } from './lib/dom.ts';
import { createDashboardView } from './lib/view.ts';

interface Sample { generatedAt: string; stats: Stats; events: StoredEvent[] }

try {
  const response = await fetch('/assets/dashboard-demo.json');
  if (!response.ok) throw new Error(`sample data answered ${response.status}`);
  const sample = (await response.json()) as Sample;
  const view = createDashboardView({ live: false, ranges: false });
  byId('dashboard').replaceChildren(view.root);
  // The sample's 7-day series end on the day it was generated.
  view.showStats(sample.stats, { span: null, now: Date.parse(sample.generatedAt) });
  const show = () => {
    const f = view.filters();
    view.showEvents(sample.events.filter((e) => (!f.type || e.type === f.type) && (!f.version || e.deployVersion === f.version)));
  };
  view.onChange(show);
  show();
} catch (err) {
  byId('dashboard').textContent = `The preview could not load: ${err instanceof Error ? err.message : String(err)}`;
}
