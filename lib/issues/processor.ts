// From stored errors to issues and alerts, off the ingest path. The processor reads errors from the
// store by position (lib/issues/feed.ts: one bounded queue per owner, served in turn), groups a
// slice at a time, and writes the slice's issues together with its progress (lib/issues/progress.ts)
// in one record-store put. So after a crash it resumes where the last put left off, and every
// acknowledged error is counted in exactly one issue, once. Ingestion only pushes the events it
// stored: page loads and errors for the recent metrics of alert rules, and a nudge to read soon.
import type { StoredEvent } from '../event.ts';
import type { RecordStore, StoredRecord } from '../records/types.ts';
import { changedDayRecords, closedCandidates, loadClosedDays } from './day-records.ts';
import { eventFrames, groupEvent, type Grouping } from './fingerprint.ts';
import { FEED_LIMITS, IssueFeed, type ErrorSource, type FeedLimits, type Taken } from './feed.ts';
import { addPositions } from './positions.ts';
import { loadProgress, progressRecords } from './progress.ts';
import { OVERFLOW_FINGERPRINT, type RecordIssueStore } from './records.ts';
import { SourceMapCache, type SourceMapLookup, symbolicate, type SymbolicatedFrame } from './sourcemap.ts';
import { applyEvent, applyEvents, type Issue, issueEventOf, issueId, type Transition, type Transitioned } from './state.ts';
import { unref } from './timer.ts';

/** Where issues are read and written: RecordIssueStore, or a test's. */
export type IssueStore = Pick<RecordIssueStore, 'getIssue' | 'commit' | 'hasRoom' | 'perOwner'>;

export interface IssueProcessorOptions {
  issues: IssueStore;
  /** Where grouping's progress is kept: the record store the issues are in. */
  records: RecordStore;
  /** The event store: errors by position, and (shared stores) whether this instance groups. */
  source: ErrorSource & { issueLease?(): Promise<boolean> };
  /** Uploaded source maps of an owner; absent: frames are grouped as reported. */
  sourceMaps?: (owner: string | null, project: string | null) => SourceMapLookup;
  /**
   * Hears every issue change with a transition (AlertEngine.push), with the environment of the event
   * that caused it; `firstInEnvironment` marks an issue's first event in an environment (a `new`).
   */
  onTransition?: (change: { issue: Issue; transition: Transition; at: number; environment: string | null; firstInEnvironment?: boolean }) => void;
  /** Hears every stored error and page load (RecentMetrics.record). */
  onEvent?: (event: StoredEvent) => void;
  cache?: SourceMapCache;
  limits?: FeedLimits;
  onError?: (error: unknown, event: StoredEvent | null) => void;
}

/** Page loads and errors waiting for the recent metrics; past it they are not counted there. */
export const METRICS_QUEUE_LIMIT = 50_000;
/** Errors grouped per slice: each issue among them is read and written once. */
export const PROCESS_SLICE = 500;
/**
 * Longest the processor works before it lets requests run (ms). A slice of 500 errors whose issues
 * are held in memory never waits for I/O, and took 40–140 ms of the event loop in one piece.
 */
export const WORK_SLICE_MS = 10;

/** Waits for the next turn of the event loop once `budget` ms passed since the last wait. */
function pacer(budget: number): () => Promise<void> | void {
  let since = performance.now();
  return () => {
    if (performance.now() - since < budget) return;
    return new Promise<void>((resolve) => setTimeout(() => {
      since = performance.now();
      resolve();
    }, 0));
  };
}

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
export async function processError(event: StoredEvent, options: Pick<IssueProcessorOptions, 'sourceMaps' | 'cache'> & { issues: Pick<IssueStore, 'getIssue' | 'commit'> }): Promise<Processed> {
  const { grouping, frames, id } = await groupError(event, options);
  const current = await options.issues.getIssue(event.user_id, id);
  const { issue, transition } = applyEvent(current, issueEventOf(event, grouping), Date.parse(event.receivedAt));
  await options.issues.commit([issue], []);
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

/** The grouping of errors counted in a project's overflow issue. */
const overflowGrouping = (limit: number): Grouping => ({
  fingerprint: OVERFLOW_FINGERPRINT,
  title: `Other errors: this account reached its limit of ${limit.toLocaleString('en-US')} issues`,
  culprit: null,
} as Grouping);

interface IssueGroup { owner: string; events: { event: StoredEvent; grouping: Grouping; seq: number }[] }

export class IssueProcessor {
  /** Errors whose grouping failed (counted nowhere), and errors counted in an overflow issue. */
  failed = 0;
  overflowed = 0;
  /** Page loads and errors the recent metrics did not get (their queue was full). */
  metricsDropped = 0;
  readonly cache: SourceMapCache;
  private metricsQueue: StoredEvent[] = [];
  private feed: IssueFeed | null = null;
  private draining: Promise<void> | null = null;
  private again: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private kicked = false;
  private deadline = Infinity;
  private lock: Promise<void> = Promise.resolve();

  constructor(private readonly options: IssueProcessorOptions) {
    this.cache = options.cache ?? new SourceMapCache();
  }

  /**
   * From the ingest path, after the store acknowledged: keeps page loads and errors of identified
   * owners for the recent metrics, and asks for a read soon when an error came. Never waits.
   */
  push(events: readonly StoredEvent[]): void {
    let errors = false;
    for (const e of events) {
      if ((e.type !== 'error' && e.type !== 'pageload') || e.user_id === null) continue;
      errors ||= e.type === 'error';
      if (this.metricsQueue.length >= METRICS_QUEUE_LIMIT) this.metricsDropped++;
      else this.metricsQueue.push(e);
    }
    if (errors && this.timer !== null && this.draining === null && !this.kicked) {
      this.kicked = true;
      setTimeout(() => {
        this.kicked = false;
        void this.drain();
      }, 0);
    }
  }

  /** Errors read from the store and waiting for a slice, and owners partly still in the store only. */
  get waiting(): { errors: number; ownersBehind: number; checkpoint: number | null } {
    return { errors: this.feed?.held ?? 0, ownersBehind: this.feed?.behind ?? 0, checkpoint: this.feed?.through() ?? null };
  }

  /**
   * Groups everything the store holds now. A call during a run is answered by one more run after
   * it (shared by every such call), since the run under way may have read the store before the
   * caller's errors were stored.
   */
  drain(): Promise<void> {
    if (this.draining === null) return (this.draining = this.run().finally(() => (this.draining = null)));
    return (this.again ??= this.draining.then(() => {
      this.again = null;
      return this.drain();
    }));
  }

  start(intervalMs = 1000): void {
    if (this.timer) return;
    this.deadline = Infinity;
    this.timer = unref(setInterval(() => void this.drain(), intervalMs));
    // At once: where grouping starts, on a store without progress, is the store's newest event now.
    void this.drain();
  }

  /** Stops the timer; with `withinMs`, a run under way stops after its slice once that time passed. */
  stop(withinMs?: number): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (withinMs !== undefined) this.deadline = Date.now() + withinMs;
  }

  /**
   * Runs `fn` between two slices, never during one, so that a change made elsewhere (a status set
   * through the API) never races a slice's read-modify-write of the same issue in this process.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.then(() => {}, () => {});
    return run;
  }

  private async run(): Promise<void> {
    this.recordMetrics();
    const { source } = this.options;
    try {
      while (Date.now() < this.deadline) {
        // Asked before every slice: a lease lost meanwhile (a pause, a lost connection) stops this
        // instance before it writes; when it takes over again it starts from the stored progress.
        if (source.issueLease && !(await source.issueLease())) {
          this.feed = null;
          return;
        }
        this.feed ??= await this.openFeed();
        await this.feed.fill();
        const slice = this.feed.take(PROCESS_SLICE);
        if (!slice.length) break;
        await this.applySlice(this.feed, slice);
        // Requests (and their I/O) are served between slices even when the stores answer at once.
        await new Promise((resolve) => setTimeout(resolve, 0));
        this.recordMetrics();
      }
    } catch (e) {
      // The slice was not written (or the store could not be read): start again from what is stored.
      this.feed = null;
      this.options.onError?.(e, null);
    }
  }

  private recordMetrics(): void {
    const queue = this.metricsQueue;
    this.metricsQueue = [];
    if (this.options.onEvent) for (const e of queue) this.options.onEvent(e);
  }

  /** Where grouping stands: the stored progress, or (first start) the store's newest position. */
  private async openFeed(): Promise<IssueFeed> {
    const { records, source } = this.options;
    const { head } = await source.scanErrors({ after: 0, limit: 0 });
    let progress = await loadProgress(records);
    if (progress === null || progress.through > head) {
      // A new store starts at 0. One that held events before this version (its errors were grouped
      // as they came), or whose events were replaced under kept records, starts at its newest.
      if (progress !== null) this.options.onError?.(new Error(`issue progress (${progress.through}) is past the store's newest event (${head}): starting from there`), null);
      progress = { through: head, done: new Map() };
      await records.put(progressRecords(head, []));
    }
    return new IssueFeed(source, progress, this.options.limits ?? FEED_LIMITS);
  }

  /**
   * Groups a slice, applies each issue's errors in order to one read of it, and writes every issue
   * with the progress in one put. Errors whose grouping fails are counted as failed and passed over,
   * so that one malformed event cannot hold its owner back.
   */
  private async applySlice(feed: IssueFeed, slice: readonly Taken[]): Promise<void> {
    const grouped = new Map<string, { grouping: Grouping; id: string }>();
    const byIssue = new Map<string, IssueGroup>();
    const pace = pacer(WORK_SLICE_MS);
    for (const { owner, events, seqs } of slice) {
      for (const [at, event] of events.entries()) {
        await pace();
        try {
          const key = sameErrorKey(event);
          let known = key === null ? undefined : grouped.get(key);
          if (!known) {
            known = await groupError(event, { ...this.options, cache: this.cache });
            if (key !== null) grouped.set(key, known);
          }
          let group = byIssue.get(known.id);
          if (!group) byIssue.set(known.id, (group = { owner, events: [] }));
          group.events.push({ event, grouping: known.grouping, seq: seqs[at] });
        } catch (e) {
          this.failed++;
          this.options.onError?.(e, event);
        }
      }
    }
    const changes = await this.exclusive(async () => {
      const { issues } = this.options;
      const out: { issue: Issue; transitions: Transitioned[]; firstIn: Transitioned[] }[] = [];
      const created: Issue[] = [];
      // Written with the issues: the positions of their errors and the counters of closed days.
      const also: StoredRecord[] = [];
      for (const [id, { owner, current, events }] of await this.withinLimit(byIssue)) {
        await pace();
        const days = closedCandidates(current?.activity, events.map(({ event }) => event.receivedAt.slice(0, 10)));
        const closed = await loadClosedDays(this.options.records, owner, id, days);
        const applied = applyEvents(current, events.map(({ event, grouping }) => ({ event: issueEventOf(event, grouping), now: Date.parse(event.receivedAt) })), closed);
        const { positions, records } = addPositions(id, owner, applied.issue.positions, events.map((e) => e.seq).sort((a, b) => a - b));
        applied.issue.positions = positions;
        also.push(...records, ...changedDayRecords(owner, id, closed));
        if (!current) created.push(applied.issue);
        out.push(applied);
      }
      feed.applied(slice);
      const { through } = feed.checkpoint();
      const owners = slice.map((t): [string, number] => [t.owner, feed.doneOf(t.owner) || t.seqs[t.seqs.length - 1]]);
      await issues.commit(out.map((c) => c.issue), [...also, ...progressRecords(through, owners)], created);
      return out;
    });
    // Alerts describe the issue as it stands after the slice (its count includes the burst).
    for (const { issue, transitions, firstIn } of changes) {
      for (const { transition, at, environment } of transitions) this.options.onTransition?.({ issue, transition, at, environment: environment ?? null });
      for (const { transition, at, environment } of firstIn) this.options.onTransition?.({ issue, transition, at, environment: environment ?? null, firstInEnvironment: true });
    }
  }

  /**
   * The slice's groups with their issues as stored, those that would make an issue past the
   * owner's bound moved into the project's overflow issue (which is made even then: one per project).
   */
  private async withinLimit(byIssue: Map<string, IssueGroup>): Promise<Map<string, IssueGroup & { current: Issue | null }>> {
    const { issues } = this.options;
    const out = new Map<string, IssueGroup & { current: Issue | null }>();
    const made = new Map<string, number>();
    for (const [id, group] of byIssue) {
      let target = id;
      let events = group.events;
      let current = await issues.getIssue(group.owner, id);
      if (!current) {
        const extra = made.get(group.owner) ?? 0;
        if (await issues.hasRoom(group.owner, extra)) made.set(group.owner, extra + 1);
        else {
          target = issueId(group.owner, events[0].event.projectId ?? null, OVERFLOW_FINGERPRINT);
          const grouping = overflowGrouping(issues.perOwner);
          events = events.map(({ event, seq }) => ({ event, grouping, seq }));
          this.overflowed += events.length;
          current = out.get(target)?.current ?? (await issues.getIssue(group.owner, target));
        }
      }
      const into = out.get(target);
      if (into) into.events.push(...events);
      else out.set(target, { owner: group.owner, events, current });
    }
    return out;
  }
}
