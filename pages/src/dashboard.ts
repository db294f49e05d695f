// /dashboard: hidden until the session is confirmed (a visitor without one goes to /login/), then
// statistics, events and the live feed of the user's own events, for the time range, project,
// filters and route that the query string names (so a view can be bookmarked, and back/forward
// restore it). Every request for numbers or events carries the chosen project.
import type { StoredEvent } from '../../lib/event.ts';
import type { Stats } from '../../lib/stats.ts';
import { download, ndjsonToCsv } from './lib/csv.ts';
import { byId } from './lib/dom.ts';
import { createGoalsPanel, type Goal } from './lib/goals.ts';
import type { Project } from './lib/projects.ts';
import { runDashboard } from './lib/controller.ts';
import { eventsQuery, exportName, statsQuery } from './lib/range.ts';
import { api, authHeaders, currentSession, signOut, syncUser } from './lib/session.ts';
import { renderTopbar } from './lib/shell.ts';
import { createDashboardView } from './lib/view.ts';

const session = await currentSession();
if (!session) {
  location.replace('/login/');
} else {
  await start(session.displayName || session.userId, session).catch((err) => showFailure(err));
}

async function start(name: string, s: NonNullable<typeof session>) {
  // The profile record and the numbers are independent: ask for both at once.
  const syncing = syncUser(s);
  // (Its failure is reported below, once awaited; until then it must not count as unhandled.)
  syncing.catch(() => {});
  // The switcher's list, asked for beside the numbers (the chosen project comes from the URL).
  const projectList = api('/api/projects').then(async (r) => (r.ok ? ((await r.json()) as { projects: Project[] }).projects : null));
  projectList.catch(() => {});
  // The goals' changes reload the numbers through the dashboard made below.
  let reload = () => {};
  const goals = createGoalsPanel({
    list: async (project) => (await answer<{ goals: Goal[] }>(await api(`/api/projects/${encodeURIComponent(project)}/goals`))).goals,
    create: async (project, goal) => void await answer(await api(`/api/projects/${encodeURIComponent(project)}/goals`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(goal),
    })),
    remove: async (project, id) => void await answer(await api(`/api/projects/${encodeURIComponent(project)}/goals/${encodeURIComponent(id)}`, { method: 'DELETE' })),
    changed: () => reload(),
  });
  const view = createDashboardView({ live: true, ranges: true, projects: true, goals, properties: true });
  renderTopbar('dashboard', { ...s, displayName: name });
  byId('dashboard').replaceChildren(view.root);

  const failed = (what: string, r: Response) =>
    view.setNotice(`${what} could not be loaded (${r.status}${r.status === 503 ? ', the identity provider or the database is unavailable' : ''}); new events will retry.`);

  const dashboard = runDashboard(view, {
    async stats(span, project, ask) {
      const r = await api(`/api/stats${statsQuery(span, project, ask)}`);
      if (!r.ok) {
        failed('Statistics', r);
        return null;
      }
      view.setNotice(null);
      return (await r.json()) as Stats;
    },
    async events(span, filters) {
      const r = await api(`/api/events?${eventsQuery(span, filters, { limit: '50' })}`);
      if (!r.ok) {
        failed('Events', r);
        return null;
      }
      return ((await r.json()) as { events: StoredEvent[] }).events;
    },
    async exportEvents(format, span, filters) {
      const r = await api(`/api/events/export?${eventsQuery(span, filters)}`);
      if (!r.ok || !r.body) return failed('The export', r);
      try {
        if (format === 'ndjson') download(exportName(span, 'ndjson'), 'application/x-ndjson', [await r.blob()]);
        else {
          const parts: string[] = [];
          for await (const chunk of ndjsonToCsv(r.body)) parts.push(chunk);
          download(exportName(span, 'csv'), 'text/csv;charset=utf-8', parts);
        }
      } catch (err) {
        // The server breaks an export it cannot finish; a partial file is never offered as complete.
        view.setNotice(`The export was cut short (${err instanceof Error ? err.message : String(err)}); try again.`);
      }
    },
  });

  reload = () => void dashboard.load();

  // The shell appears with its numbers, never with placeholders that then jump.
  await dashboard.load();
  const projects = await projectList.catch(() => null);
  if (projects) view.setProjects(projects);
  else view.setNotice('Your projects could not be loaded; reload to choose one.');
  // A failed sync only loses the profile record (email, name); the events are still the user's.
  const synced = await syncing;
  if (synced !== 200) view.setNotice(`Your profile could not be recorded (${synced}); it will be on your next visit.`);
  byId('guard').hidden = true;
  byId('app').hidden = false;
  // The moment the first numbers are on screen, for anyone measuring (bench/dashboard.ts does).
  performance.mark('dashboard-rendered');

  void follow((events) => {
    view.addLive(events);
    dashboard.eventsArrived();
  }, view.setLiveStatus);
}

/** The answer's JSON, or an Error with the server's message. */
async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => ({}))) as T & { error?: string };
  if (!response.ok) throw new Error(body.error ?? `HTTP ${response.status}`);
  return body;
}

/** The project the page shows ('' for all of the user's own events), from the query string. */
function chosenProject(): string {
  return new URLSearchParams(location.search).get('project') ?? '';
}

/**
 * Reads the scoped stream with fetch, not EventSource: EventSource cannot send the header or token
 * that tells the server whose events these are. A chosen project is streamed on its own (a shared
 * project's events are its owner's, not the viewer's); choosing another reconnects. Reconnects
 * with exponential backoff (1 s … 30 s).
 */
async function follow(onEvents: (events: StoredEvent[]) => void, status: (text: string, state: 'ok' | 'wait' | 'off') => void) {
  let delay = 1000;
  for (;;) {
    const project = chosenProject();
    const switched = new AbortController();
    const watch = setInterval(() => chosenProject() !== project && switched.abort(), 500);
    try {
      const path = project ? `/api/events/stream?project=${encodeURIComponent(project)}` : '/api/events/stream';
      const response = await fetch(path, { headers: { ...(await authHeaders()), accept: 'text/event-stream' }, signal: switched.signal });
      if (response.status === 401) return void signOut();
      if (!response.ok || !response.body) throw new Error(`stream answered ${response.status}`);
      status('live', 'ok');
      delay = 1000;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = message.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
          if (!data) continue;
          try {
            const parsed: unknown = JSON.parse(data);
            if (Array.isArray(parsed)) onEvents(parsed as StoredEvent[]);
          } catch {
            // A malformed frame is skipped; the next one is independent.
          }
        }
      }
      throw new Error('stream closed');
    } catch {
      clearInterval(watch);
      if (switched.signal.aborted) continue;
      status(`reconnecting in ${Math.round(delay / 1000)} s`, 'wait');
      await new Promise((r) => setTimeout(r, delay + Math.random() * 250));
      delay = Math.min(delay * 2, 30_000);
    }
  }
}

function showFailure(err: unknown) {
  const guard = byId('guard');
  guard.hidden = false;
  guard.textContent = `The dashboard could not load: ${err instanceof Error ? err.message : String(err)}`;
}
