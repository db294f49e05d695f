// /dashboard: hidden until the session is confirmed (a visitor without one goes to /login/), then
// statistics, events and the live feed of the user's own events, for the time range, filters and
// route that the query string names (so a view can be bookmarked, and back/forward restore it).
import type { StoredEvent } from '../../lib/event.ts';
import type { Stats } from '../../lib/stats.ts';
import { download, ndjsonToCsv } from './lib/csv.ts';
import { byId } from './lib/dom.ts';
import { endsNow, eventsQuery, previousSpan, readState, spanOf, statsQuery, writeState, type ViewState } from './lib/range.ts';
import { api, authHeaders, currentSession, signOut, syncUser } from './lib/session.ts';
import { createDashboardView } from './lib/view.ts';

const session = await currentSession();
if (!session) {
  location.replace('/login/');
} else {
  await start(session.displayName || session.userId, session).catch((err) => showFailure(err));
}

async function start(name: string, s: NonNullable<typeof session>) {
  const synced = await syncUser(s);
  const view = createDashboardView({ live: true, ranges: true });
  byId('user-name').textContent = name;
  byId('user-id').textContent = s.userId;
  byId('sign-out').addEventListener('click', () => void signOut());
  byId('dashboard').replaceChildren(view.root);

  let state: ViewState = readState(location.search);
  // Answers to an older request (the visitor clicked on) are dropped, never drawn over newer ones.
  let generation = 0;

  const failed = (what: string, r: Response) =>
    view.setNotice(`${what} could not be loaded (${r.status}${r.status === 503 ? ', the identity provider or the database is unavailable' : ''}); new events will retry.`);

  const loadStats = async (gen: number) => {
    const now = Date.now();
    const current = spanOf(state, now);
    const [r, p] = await Promise.all([
      api(`/api/stats${statsQuery(current)}`),
      current ? api(`/api/stats${statsQuery(previousSpan(current))}`) : null,
    ]);
    if (gen !== generation) return;
    if (!r.ok) return failed('Statistics', r);
    const stats = (await r.json()) as Stats;
    const previous = p && p.ok ? ((await p.json()) as Stats) : null;
    if (gen !== generation) return;
    view.setNotice(null);
    // A previous period without events has nothing to compare with; "all" has no previous period.
    view.showStats(stats, { span: current, now, previous: current ? (previous && previous.totalEvents > 0 ? previous : null) : undefined });
  };
  const loadEvents = async (gen: number) => {
    const r = await api(`/api/events?${eventsQuery(spanOf(state, Date.now()), state, { limit: '50' })}`);
    if (gen !== generation) return;
    if (!r.ok) return failed('Events', r);
    const { events } = (await r.json()) as { events: StoredEvent[] };
    if (gen === generation) view.showEvents(events);
  };
  const load = async (what: 'all' | 'events' = 'all') => {
    const gen = ++generation;
    view.setBusy(true);
    await Promise.all([what === 'all' ? loadStats(gen) : null, loadEvents(gen)]);
    if (gen === generation) view.setBusy(false);
  };

  view.setState(state);
  view.onChange((change) => {
    const next = { ...state, ...change };
    const url = writeState(next);
    const changed = url !== writeState(state);
    const what = change.range !== undefined ? 'all' : change.type !== undefined || change.version !== undefined ? 'events' : null;
    state = next;
    if (changed) history.pushState(null, '', location.pathname + url);
    view.setState(state);
    if (what) void load(what);
  });
  addEventListener('popstate', () => {
    state = readState(location.search);
    view.setState(state);
    void load();
  });
  view.onExport((format) => void exportEvents(format));

  // The shell appears with its numbers, never with placeholders that then jump.
  await load();
  // A failed sync only loses the profile record (email, name); the events are still the user's.
  if (synced !== 200) view.setNotice(`Your profile could not be recorded (${synced}); it will be on your next visit.`);
  byId('guard').hidden = true;
  byId('app').hidden = false;

  // New events refresh a range that reaches the present at most every 2 s: a burst of clicks costs
  // one round of requests. A range that ended in the past keeps its numbers; the feed still streams.
  let refresh: ReturnType<typeof setTimeout> | null = null;
  const scheduleRefresh = () => {
    if (!endsNow(state, Date.now())) return;
    refresh ??= setTimeout(() => {
      refresh = null;
      void load();
    }, 2000);
  };
  void follow((events) => {
    view.addLive(events);
    scheduleRefresh();
  }, view.setLiveStatus);

  /** Every event of the range and filters, from the export endpoint, as a file. */
  async function exportEvents(format: 'ndjson' | 'csv') {
    const current = spanOf(state, Date.now());
    const r = await api(`/api/events/export?${eventsQuery(current, state)}`);
    if (!r.ok || !r.body) return failed('The export', r);
    const stamp = current ? `${new Date(current.from).toISOString().slice(0, 10)}-to-${new Date(current.to).toISOString().slice(0, 10)}` : 'all';
    try {
      if (format === 'ndjson') {
        download(`watchtower-events-${stamp}.ndjson`, 'application/x-ndjson', [await r.blob()]);
      } else {
        const parts: string[] = [];
        for await (const chunk of ndjsonToCsv(r.body)) parts.push(chunk);
        download(`watchtower-events-${stamp}.csv`, 'text/csv;charset=utf-8', parts);
      }
    } catch (err) {
      // The server breaks an export it cannot finish; a partial file is never offered as complete.
      view.setNotice(`The export was cut short (${err instanceof Error ? err.message : String(err)}); try again.`);
    }
  }
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
