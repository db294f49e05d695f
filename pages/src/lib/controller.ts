// What the dashboard does with its view state, whichever source its numbers come from (the API for
// the signed-in dashboard, sample events for the preview): read the state from the query string,
// load the current and the previous period, push a history entry for each change, restore on
// back/forward, and drop answers to requests that a newer one has replaced.
import type { StoredEvent } from '../../../lib/event.ts';
import type { Stats } from '../../../lib/stats.ts';
import { endsNow, previousSpan, readState, spanOf, writeState, type Span, type ViewState } from './range.ts';
import type { DashboardView, Filters } from './view.ts';

export interface DashboardSource {
  /** Statistics over a span (null: everything); null when they could not be had (the source says why). */
  stats(span: Span | null): Promise<Stats | null>;
  /** The most recent events of a span that pass the filters; null when they could not be had. */
  events(span: Span | null, filters: Filters): Promise<StoredEvent[] | null>;
  /** Offers every event of the span and filters as a file. */
  exportEvents(format: 'ndjson' | 'csv', span: Span | null, filters: Filters): Promise<void>;
}

export interface Dashboard {
  /** Loads what the current state shows; resolves once it is drawn. */
  load(): Promise<void>;
  /** New events arrived: reloads (at most every 2 s) when the range reaches the present. */
  eventsArrived(): void;
}

export function runDashboard(view: DashboardView, source: DashboardSource, clock: () => number = Date.now): Dashboard {
  let state: ViewState = readState(location.search);
  let generation = 0;

  const loadStats = async (gen: number) => {
    const now = clock();
    const span = spanOf(state, now);
    const [stats, previous] = await Promise.all([source.stats(span), span ? source.stats(previousSpan(span)) : null]);
    if (gen !== generation || !stats) return;
    // A previous period without events has nothing to compare with; "all" has no previous period.
    view.showStats(stats, { span, now, previous: span ? (previous && previous.totalEvents > 0 ? previous : null) : undefined });
  };
  const loadEvents = async (gen: number) => {
    const events = await source.events(spanOf(state, clock()), state);
    if (gen === generation && events) view.showEvents(events);
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
    const query = writeState(next);
    if (query !== writeState(state)) history.pushState(null, '', location.pathname + query);
    state = next;
    view.setState(state);
    if (change.range !== undefined) void load('all');
    else if (change.type !== undefined || change.version !== undefined) void load('events');
  });
  addEventListener('popstate', () => {
    state = readState(location.search);
    view.setState(state);
    void load();
  });
  view.onExport((format) => void source.exportEvents(format, spanOf(state, clock()), state));

  let refresh: ReturnType<typeof setTimeout> | null = null;
  return {
    load: () => load(),
    eventsArrived() {
      // A burst of clicks costs one round of requests; a range that ended in the past keeps its numbers.
      if (!endsNow(state, clock())) return;
      refresh ??= setTimeout(() => {
        refresh = null;
        void load();
      }, 2000);
    },
  };
}
