// From stored events to issues and alerts, off the ingest path. After the store has acknowledged
// a batch, ingestion calls push(events): a filter and an append to a bounded queue, nothing else.
// A timer drains the queue a slice at a time, one slice after another (so two updates of one issue
// never race on its read-modify-write in this process): symbolicate, group, read each issue once,
// applyEvents, write it, and hand the transitions to the alert engine. Recent errors and page
// loads go to the metrics that the error_spike and slow_route rules read.
import type { StoredEvent } from '../event.ts';
import { eventFrames, groupEvent, type Grouping } from './fingerprint.ts';
import { SourceMapCache, type SourceMapLookup, symbolicate, type SymbolicatedFrame } from './sourcemap.ts';
import { applyEvent, applyEvents, type Issue, issueEventOf, issueId, type Transition } from './state.ts';
import { unref } from './timer.ts';

/** Where issues live: the coordinator's stores implement this. */
export interface IssueStore {
  getIssue(owner: string | null, id: string): Promise<Issue | null>;
  putIssue(issue: Issue): Promise<void>;
}

export interface IssueProcessorOptions {
  issues: IssueStore;
  /** Uploaded source maps of an owner; absent: frames are grouped as reported. */
  sourceMaps?: (owner: string | null, project: string | null) => SourceMapLookup;
  /** Hears every issue change with a transition (AlertEngine.push). */
  onTransition?: (change: { issue: Issue; transition: Transition; at: number }) => void;
  /** Hears every event pushed, errors and page loads alike (RecentMetrics.record). */
  onEvent?: (event: StoredEvent) => void;
  cache?: SourceMapCache;
  queueLimit?: number;
  onError?: (error: unknown, event: StoredEvent) => void;
}

export const PROCESS_QUEUE_LIMIT = 50_000;

export interface Processed {
  issue: Issue;
  transition: Transition | null;
  grouping: Grouping;
  frames: SymbolicatedFrame[];
}

/** An error event's grouping, with its frames symbolicated by the owner's maps for its release. */
async function groupError(event: StoredEvent, options: Pick<IssueProcessorOptions, 'sourceMaps' | 'cache'>): Promise<{ grouping: Grouping; frames: SymbolicatedFrame[]; id: string }> {
  const reported = eventFrames(event);
  const frames = options.sourceMaps && event.deployVersion
    ? await symbolicate(reported, event.deployVersion, options.sourceMaps(event.user_id, event.projectId ?? null), { cache: options.cache })
    : reported.map((f) => ({ ...f, context: null, minified: null }));
  const grouping = groupEvent(event, frames);
  return { grouping, frames, id: issueId(event.user_id, event.projectId ?? null, grouping.fingerprint) };
}

/** One error event → its issue, updated and stored. Also usable directly (tests, a backfill). */
export async function processError(event: StoredEvent, options: Pick<IssueProcessorOptions, 'issues' | 'sourceMaps' | 'cache'>): Promise<Processed> {
  const { grouping, frames, id } = await groupError(event, options);
  const current = await options.issues.getIssue(event.user_id, id);
  const { issue, transition } = applyEvent(current, issueEventOf(event, grouping), Date.parse(event.receivedAt));
  await options.issues.putIssue(issue);
  return { issue, transition, grouping, frames };
}

/**
 * What decides an error's grouping, as one string, for errors described by their message and stack
 * text alone; null for those with structured frames, an exception or a fingerprint of their own.
 */
function sameErrorKey(event: StoredEvent): string | null {
  const data = event.data ?? {};
  if (data.exception !== undefined || data.frames !== undefined || data.fingerprint !== undefined || data.exceptionType !== undefined || data.exception_type !== undefined) return null;
  if ((event as { fingerprint?: unknown }).fingerprint !== undefined) return null;
  const top = (event as { stack?: unknown }).stack;
  const stack = typeof data.stack === 'string' ? data.stack : typeof top === 'string' ? top : '';
  return `${event.user_id}\u0000${event.projectId ?? ''}\u0000${event.deployVersion ?? ''}\u0000${event.message ?? ''}\u0000${typeof data.message === 'string' ? data.message : ''}\u0000${typeof data.value === 'string' ? data.value : ''}\u0000${stack}`;
}

/** Events taken from the queue at a time: each issue among them is read and written once. */
export const PROCESS_SLICE = 500;

export class IssueProcessor {
  /** Events dropped because the queue was full, and events whose processing failed. */
  dropped = 0;
  failed = 0;
  private queue: StoredEvent[] = [];
  private draining: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private kicked = false;
  readonly cache: SourceMapCache;
  private lock: Promise<void> = Promise.resolve();

  constructor(private readonly options: IssueProcessorOptions) {
    this.cache = options.cache ?? new SourceMapCache();
  }

  /**
   * From the ingest path, after the store acknowledged: keeps the errors and page loads of
   * identified owners (nobody could read the issues of unowned events), never waits.
   */
  push(events: readonly StoredEvent[]): void {
    const limit = this.options.queueLimit ?? PROCESS_QUEUE_LIMIT;
    for (const e of events) {
      if ((e.type !== 'error' && e.type !== 'pageload') || e.user_id === null) continue;
      if (this.queue.length >= limit) this.dropped++;
      else this.queue.push(e);
    }
    // A full slice is drained at once rather than at the next tick: under load the queue stays a
    // slice or two long instead of holding thousands of events, whose retention measured as a
    // doubling of Node's garbage-collection time at 40,000 events/s.
    if (this.timer !== null && this.queue.length >= PROCESS_SLICE && this.draining === null && !this.kicked) {
      this.kicked = true;
      setTimeout(() => {
        this.kicked = false;
        void this.drain();
      }, 0);
    }
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Processes everything queued so far; concurrent calls share one run. */
  drain(): Promise<void> {
    return (this.draining ??= this.run().finally(() => (this.draining = null)));
  }

  start(intervalMs = 1000): void {
    if (this.timer) return;
    this.timer = unref(setInterval(() => void this.drain(), intervalMs));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Runs `fn` between two events, never during one, so that a change made elsewhere (a status set
   * through the API) never races an event's read-modify-write of the same issue in this process.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.then(() => {}, () => {});
    return run;
  }

  /**
   * Drains the queue a slice at a time. Within a slice, the errors of one issue are applied in
   * order to one read of it and written back once: a burst of one bug costs one write, not one
   * per event. Between slices the loop waits for a timer, so that requests (and their I/O) are
   * served in between even when the record store answers without any (memory).
   */
  private async run(): Promise<void> {
    while (this.queue.length > 0) {
      const slice = this.queue.splice(0, PROCESS_SLICE);
      // Within a slice, errors with the same text and stack (a burst of one bug) are grouped once.
      const grouped = new Map<string, { grouping: Grouping; id: string }>();
      const byIssue = new Map<string, { owner: string | null; events: { event: StoredEvent; grouping: Grouping }[] }>();
      for (const event of slice) {
        try {
          this.options.onEvent?.(event);
          if (event.type !== 'error') continue;
          const key = sameErrorKey(event);
          let known = key === null ? undefined : grouped.get(key);
          if (!known) {
            known = await groupError(event, { ...this.options, cache: this.cache });
            if (key !== null) grouped.set(key, known);
          }
          const { grouping, id } = known;
          let group = byIssue.get(id);
          if (!group) byIssue.set(id, (group = { owner: event.user_id, events: [] }));
          group.events.push({ event, grouping });
        } catch (e) {
          this.failed++;
          this.options.onError?.(e, event);
        }
      }
      for (const [id, group] of byIssue) {
        try {
          const { issue, transitions } = await this.exclusive(async () => {
            const current = await this.options.issues.getIssue(group.owner, id);
            const applied = applyEvents(current, group.events.map(({ event, grouping }) => ({ event: issueEventOf(event, grouping), now: Date.parse(event.receivedAt) })));
            await this.options.issues.putIssue(applied.issue);
            return applied;
          });
          // Alerts describe the issue as it stands after the slice (its count includes the burst).
          for (const { transition, at } of transitions) this.options.onTransition?.({ issue, transition, at });
        } catch (e) {
          this.failed += group.events.length;
          this.options.onError?.(e, group.events[0].event);
        }
      }
      if (this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }
}
