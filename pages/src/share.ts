// /share/<token>: a project's dashboard, read-only and signed out, from its share link
// (docs/api.md#share-links). The link reads statistics only: no events, errors or exports.
import type { Stats } from '../../lib/stats.ts';
import { byId } from './lib/dom.ts';
import { runDashboard } from './lib/controller.ts';
import { statsQuery } from './lib/range.ts';
import { createDashboardView } from './lib/view.ts';

const token = location.pathname.split('/').filter(Boolean).pop() ?? '';

try {
  const view = createDashboardView({ live: false, ranges: true });
  let shown = false;
  const dashboard = runDashboard(view, {
    async stats(span) {
      const r = await fetch(`/api/shared/${encodeURIComponent(token)}/stats${statsQuery(span)}`);
      if (!r.ok) {
        view.setNotice(r.status === 404 ? 'This share link does not exist, was revoked or has expired.' : `The numbers could not be loaded (${r.status}); reload to try again.`);
        return null;
      }
      const body = (await r.json()) as { project: { name: string }; stats: Omit<Stats, 'recentErrors' | 'recentActivity'> };
      document.title = `${body.project.name} · shared dashboard · Watchtower`;
      byId('share-banner').textContent = `${body.project.name}: a read-only dashboard shared by its project's team.`;
      // A link carries no raw events: the lists that would show them stay empty.
      return { ...body.stats, recentErrors: [], recentActivity: [] };
    },
    events: async () => [],
    async exportEvents() {
      view.setNotice('Events cannot be downloaded from a shared dashboard.');
    },
  });
  byId('dashboard').replaceChildren(view.root);
  for (const button of view.root.querySelectorAll<HTMLElement>('[data-export]')) button.hidden = true;
  await dashboard.load();
  shown = true;
  document.body.dataset.shared = shown ? 'ready' : '';
} catch (err) {
  byId('dashboard').textContent = `The shared dashboard could not load: ${err instanceof Error ? err.message : String(err)}`;
}
