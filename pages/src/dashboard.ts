// /dashboard: hidden until the session is confirmed (a visitor without one goes to /login/), then
// statistics, events and the live feed of the user's own events.
import type { StoredEvent } from '../../lib/event.ts';
import type { Stats } from '../../lib/stats.ts';
import { byId } from './lib/dom.ts';
import { api, authHeaders, currentSession, signOut, syncUser } from './lib/session.ts';
import { createDashboardView, type Filters } from './lib/view.ts';

const session = await currentSession();
if (!session) {
  location.replace('/login/');
} else {
  await start(session.displayName || session.userId, session).catch((err) => showFailure(err));
}

async function start(name: string, s: NonNullable<typeof session>) {
  const synced = await syncUser(s);
  const view = createDashboardView({ live: true });
  byId('user-name').textContent = name;
  byId('user-id').textContent = s.userId;
  byId('sign-out').addEventListener('click', () => void signOut());
  byId('dashboard').replaceChildren(view.root);

  const failed = (what: string, r: Response) =>
    view.setNotice(`${what} could not be loaded (${r.status}${r.status === 503 ? ', the identity provider or the database is unavailable' : ''}); new events will retry.`);
  const loadStats = async () => {
    const r = await api('/api/stats');
    if (!r.ok) return failed('Statistics', r);
    view.setNotice(null);
    view.showStats((await r.json()) as Stats);
  };
  const loadEvents = async (f: Filters) => {
    const q = new URLSearchParams({ limit: '50' });
    if (f.type) q.set('type', f.type);
    if (f.version) q.set('version', f.version);
    const r = await api(`/api/events?${q}`);
    if (!r.ok) return failed('Events', r);
    view.showEvents(((await r.json()) as { events: StoredEvent[] }).events);
  };
  view.onFilter((f) => void loadEvents(f));
  // The shell appears with its numbers, never with placeholders that then jump.
  await Promise.all([loadStats(), loadEvents(view.filters())]);
  // A failed sync only loses the profile record (email, name); the events are still the user's.
  if (synced !== 200) view.setNotice(`Your profile could not be recorded (${synced}); it will be on your next visit.`);
  byId('guard').hidden = true;
  byId('app').hidden = false;

  // New events refresh the statistics at most every 2 s: a burst of clicks costs one stats request.
  let refresh: ReturnType<typeof setTimeout> | null = null;
  const scheduleRefresh = () => {
    refresh ??= setTimeout(() => {
      refresh = null;
      void loadStats();
      void loadEvents(view.filters());
    }, 2000);
  };
  void follow((events) => {
    view.addLive(events);
    scheduleRefresh();
  }, view.setLiveStatus);
}

/**
 * Reads the scoped stream with fetch, not EventSource: EventSource cannot send the header or token
 * that tells the server whose events these are. Reconnects with exponential backoff (1 s … 30 s).
 */
async function follow(onEvents: (events: StoredEvent[]) => void, status: (text: string, state: 'ok' | 'wait' | 'off') => void) {
  let delay = 1000;
  for (;;) {
    try {
      const response = await fetch('/api/events/stream', { headers: { ...(await authHeaders()), accept: 'text/event-stream' } });
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
