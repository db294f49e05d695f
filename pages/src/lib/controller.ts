// What the dashboard does with its view state, whichever source its numbers come from (the API for
// the signed-in dashboard, sample events for the preview): read the state from the query string,
// load the range and then the period before it for the comparison, push a history entry for each
// change, restore on back/forward, and drop answers to requests that a newer one has replaced.
import type { StoredEvent } from '../../../lib/event.ts';
import type { Stats } from '../../../lib/stats.ts';
import { endsNow, previousSpan, readState, spanOf, writeState, type PropertyAsk, type Span, type ViewState } from './range.ts';
import type { DashboardView, Filters } from './view.ts';

export interface DashboardSource {
  /**
   * Statistics over a span (null: everything) of a project ('' all); null when they could not be
   * had (the source says why). `ask`: the custom event properties to answer too, if the source can.
   */
  stats(span: Span | null, project: string, ask?: PropertyAsk): Promise<Stats | null>;
  /** The most recent events of a span that pass the filters (project included); null when they could not be had. */
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

  /**
   * Draws the range's statistics, and returns what then draws the comparison with the period
   * before. That second request is sent only once the first numbers are here: a server answers in
   * the order it was asked, so asking both at once would make the first render wait for both.
   */
  const loadStats = async (gen: number): Promise<(() => Promise<void>) | null> => {
    const now = clock();
    const span = spanOf(state, now);
    const project = state.project;
    const stats = await source.stats(span, project, { property: state.property, event: state.event });
    if (gen !== generation || !stats) return null;
    view.showStats(stats, { span, now });
    return async () => {
      // "All" has no previous period; one without events has nothing to compare with.
      const previous = span ? await source.stats(previousSpan(span), project) : undefined;
      if (gen === generation) view.showComparison(stats, previous === undefined ? undefined : previous && previous.totalEvents > 0 ? previous : null);
    };
  };
  const loadEvents = async (gen: number) => {
    const events = await source.events(spanOf(state, clock()), state);
    if (gen === generation && events) view.showEvents(events);
  };
  /** Resolves once the numbers and events are drawn; the panels stay marked busy until the comparison is too. */
  const load = async (what: 'all' | 'events' = 'all', fresh = false) => {
    const gen = ++generation;
    view.setBusy(true);
    // A new range's old comparison would be wrong next to its numbers: gone until the new one is here.
    if (fresh) view.showComparison(null);
    const [compare] = await Promise.all([what === 'all' ? loadStats(gen) : null, loadEvents(gen)]);
    void (compare ? compare() : Promise.resolve()).then(() => {
      if (gen === generation) view.setBusy(false);
    });
  };

  view.setState(state);
  view.onChange((change) => {
    const next = { ...state, ...change };
    const query = writeState(next);
    if (query !== writeState(state)) history.pushState(null, '', location.pathname + query);
    state = next;
    view.setState(state);
    if (change.range !== undefined || change.project !== undefined) void load('all', true);
    else if (change.property !== undefined || change.event !== undefined) void load();
    else if (change.type !== undefined || change.version !== undefined) void load('events');
  });
  addEventListener('popstate', () => {
    state = readState(location.search);
    view.setState(state);
    void load('all', true);
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
