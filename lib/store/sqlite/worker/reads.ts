// Reads across segments: pages and export batches by seq, issue processing's error feed, and
// statistics. Every segment, hot or sealed, is read through one SegmentReader (segment.ts): its
// database together with its rows still in the tail (SegmentView). Each read holds the worker's
// message queue until it has read every segment it needs, so a seal cannot move rows under it.
import type { StoredEvent } from '../../../event.ts';
import { activeSpan, NO_RECENTS, RecentsBuilder, type RangeCounts, type Recents } from '../../../live-window.ts';
import { assembleStats, planStats, rangeCounts } from '../../../rollup/assemble.ts';
import { HourRollup, type RollupPart, type RollupRow } from '../../../rollup/hour.ts';
import { UserRollups, WithParts } from '../../../rollup/user.ts';
import { HOUR_MS, resolveRange, type ResolvedRange, type Stats, type StatsRange } from '../../../stats.ts';
import { environmentKey } from '../../../environment-scopes.ts';
import type { ErrorScan, ErrorScanQuery } from '../../types.ts';
import { SegmentView } from '../hot-tail.ts';
import type { RowsQuery, RowsResult } from '../protocol.ts';
import type { TrackedRow } from '../row.ts';
import type { SealedSegment } from '../segment-cache.ts';
import type { SegmentReader, SeqRows } from '../segment.ts';
import type { WorkerState } from './state.ts';

/** A segment a read visits; open() gives its reader, to be used at once (the tail moves on). */
export interface Source {
  open(): Promise<SegmentReader>;
}

/** Whose statistics a read assembles: the scope's key (lib/store/scopes.ts) and the rows' filter. */
interface Selection { key: string | undefined; projectId?: string; environment?: string }

/** The seq and receive-time bounds that select the segments a read visits. */
interface SourceBounds { afterSeq?: number; beforeSeq?: number; maxSeq?: number; since?: number; until?: number }

export class Reads {
  /** Counts segments whose projects the backfill rolled up: a stats read that saw one change reads again. */
  projectsBackfilled = 0;

  constructor(private readonly s: WorkerState) {}

  /** A segment as reads see it: its database, then its rows still in the tail. */
  private source(segment: SealedSegment | null): Source {
    const s = this.s;
    return {
      open: async () => {
        const db = segment ? await s.sealed.open(segment.id) : s.hot;
        const id = segment ? segment.id : s.hotId;
        return new SegmentView(db, s.tail.size && (id === s.hotId || id === s.sealing?.id) ? s.tail.of(id) : []);
      },
    };
  }

  /**
   * The segments that may hold rows of `userId` within the given bounds, in the order a read visits
   * them: newest first (hot, then sealed by descending id) or the reverse.
   */
  sources(userId: string, order: 'newest' | 'oldest', b: SourceBounds): Source[] {
    const sealed = this.s.sealed.newestFirst().filter((seg) =>
      seg.owners.has(userId) &&
      (b.afterSeq === undefined || seg.maxSeq > b.afterSeq) &&
      (b.beforeSeq === undefined || seg.minSeq < b.beforeSeq) &&
      (b.maxSeq === undefined || seg.minSeq <= b.maxSeq) &&
      (b.since === undefined || seg.maxReceived >= b.since) &&
      (b.until === undefined || seg.minReceived < b.until));
    const all = [this.source(null), ...sealed.map((seg) => this.source(seg))];
    return order === 'newest' ? all : all.reverse();
  }

  /**
   * A page of list or a batch of export: the user's rows of the filter, by seq in either direction
   * across segments, one more than `limit` read to tell whether more follow.
   */
  async rows(q: RowsQuery): Promise<RowsResult> {
    const { events, seqs, more } = await this.seqRows(q);
    return { events, lastSeq: events.length ? seqs[events.length - 1] : null, more, maxSeq: this.s.maxSeq };
  }

  private async seqRows(q: RowsQuery): Promise<SeqRows & { more: boolean }> {
    const limit = Math.max(0, Math.floor(q.limit));
    const events: StoredEvent[] = [], seqs: number[] = [];
    // '' is the anonymous owner key: unowned events appear for no user.
    if (limit === 0 || q.userId === '') return { events, seqs, more: false };
    for (const source of this.sources(q.userId, q.order, q)) {
      const r = (await source.open()).rows(q, limit + 1 - events.length);
      events.push(...r.events);
      seqs.push(...r.seqs);
      if (events.length > limit) break;
    }
    const more = events.length > limit;
    if (more) events.length = seqs.length = limit;
    return { events, seqs, more };
  }

  /**
   * Issue processing's feed (Store.scanErrors): error rows after a seq, oldest first, across owners
   * (segments by seq) or of one owner (its index, as an export reads it).
   */
  async errors(q: ErrorScanQuery): Promise<ErrorScan> {
    const head = this.s.maxSeq;
    const upTo = Math.min(q.upTo ?? Infinity, head);
    const limit = Math.max(0, Math.floor(q.limit));
    // No room for an answer: nothing is covered (any error after `after` would be passed over).
    if (limit === 0) return { events: [], seqs: [], through: q.after, head };
    if (q.userId !== undefined) {
      const r = await this.seqRows({ userId: q.userId, type: 'error', afterSeq: q.after, maxSeq: upTo, order: 'oldest', limit });
      return { events: r.events, seqs: r.seqs, through: r.more ? r.seqs[r.seqs.length - 1] : Math.max(q.after, upTo), head: this.s.maxSeq };
    }
    const events: StoredEvent[] = [], seqs: number[] = [];
    const sealed = this.s.sealed.oldestFirst().filter((seg) => seg.maxSeq > q.after && seg.minSeq <= upTo);
    for (const source of [...sealed.map((seg) => this.source(seg)), this.source(null)]) {
      if (events.length >= limit) break;
      const r = (await source.open()).errors(q.after, upTo, limit - events.length);
      events.push(...r.events);
      seqs.push(...r.seqs);
    }
    return { events, seqs, through: events.length >= limit ? seqs[seqs.length - 1] : Math.max(q.after, upTo), head: this.s.maxSeq };
  }

  /**
   * Statistics, assembled like every store's (lib/rollup/assemble.ts): whole hours from the owner's
   * rollups, the partial hours at a range's edges from its rows, recents from the live window (or,
   * when it cannot answer exactly, from the range's rows).
   */
  async stats(userId: string, now: number, range?: StatsRange, projectId?: string): Promise<Stats> {
    return this.statsRetried(userId, now, range, { key: projectId, projectId });
  }

  /**
   * Statistics of one environment from its scope (lib/environment-scopes.ts), as `stats` over its
   * events; null when its scope cannot tell (Store.statsOfEnvironment): the owner refused it a
   * scope, or the range reaches back into segments sealed before environments had scopes.
   */
  async environmentStats(userId: string, now: number, range: StatsRange | undefined, projectId: string | undefined, environment: string): Promise<Stats | null> {
    if (userId === '') return null;
    const s = this.s;
    const before = s.sealed.newestFirst().filter((seg) => !seg.environmentsKnown && seg.owners.has(userId));
    if (before.length) {
      const r = resolveRange(range, now);
      if (r === null || r.from <= Math.max(...before.map((seg) => seg.maxReceived))) return null;
    }
    if (!s.scopes.get(userId, environmentKey(environment)) && s.scopes.environmentsFull(userId)) return null;
    return this.statsRetried(userId, now, range, { key: environmentKey(environment, projectId), projectId, environment });
  }

  private async statsRetried(userId: string, now: number, range: StatsRange | undefined, sel: Selection): Promise<Stats> {
    // A segment backfilled while the reads below wait would count twice (its rows, then its parts).
    for (;;) {
      const backfilled = this.projectsBackfilled;
      const stats = await this.statsOnce(userId, now, range, sel);
      if (backfilled === this.projectsBackfilled) return stats;
    }
  }

  private async statsOnce(userId: string, now: number, range: StatsRange | undefined, sel: Selection): Promise<Stats> {
    const { projectId, environment } = sel;
    const stat = userId === '' ? undefined : this.s.scopes.get(userId, sel.key);
    const plan = planStats(now, range, stat?.window.newest);
    // Segments sealed before project statistics were kept have no parts of the project (until the
    // backfill gives them some): its rows there count as raw rows, over the whole hours too.
    const [h0, h1] = plan.fullHours;
    const unknown = projectId === undefined || userId === '' ? [] : this.s.sealed.newestFirst().filter((seg) =>
      !seg.projectsKnown && seg.owners.has(userId) && seg.maxReceived >= h0 * HOUR_MS && seg.minReceived < h1 * HOUR_MS);
    if (!stat && !unknown.length) return assembleStats({ plan, rollups: new UserRollups(), edges: [], recents: NO_RECENTS });
    const rowsOf = async (start: number, end: number, from: Source[]) => {
      const rows: RollupRow[] = [];
      for (const source of from) (await source.open()).track({ userId, start, end, order: 'ASC', projectId, environment }, (r) => void rows.push(r.row));
      return HourRollup.fromRows(rows);
    };
    const edges: RollupPart[] = [];
    for (const [start, end] of plan.rawSpans) edges.push(...(await rowsOf(start, end, this.sources(userId, 'oldest', { since: start, until: end }))));
    const own = stat?.rollups ?? new UserRollups();
    const rollups = unknown.length ? new WithParts(own, await rowsOf(h0 * HOUR_MS, h1 * HOUR_MS, unknown.map((seg) => this.source(seg)))) : own;
    const recents = stat?.window.recents(now, plan.range) ??
      (await this.recentsFromRows(userId, sel, now, plan.range, rangeCounts(plan, rollups, edges)));
    return assembleStats({ plan, rollups, edges, recents });
  }

  /**
   * Recents as recentsOf computes them, from rows: the active sessions from the rows of the last 5
   * minutes (received-time index), and each list from its own walk of the range's rows newest first
   * (the latest rows, the latest errors, the latest pageloads), which stops once the list holds what
   * the range has (its counts, from the rollups). Reading every row of the range instead was far
   * slower for a past range, and one walk for all three lists read more rows than the separate
   * walks do (docs/architecture.md, Statistics).
   */
  private async recentsFromRows(userId: string, { projectId, environment }: Selection, now: number, range: ResolvedRange | null, counts: RangeCounts): Promise<Recents> {
    const active = new Set<string>();
    const span = activeSpan(now, range);
    if (span) {
      for (const source of this.sources(userId, 'newest', { since: span[0], until: span[1] })) {
        (await source.open()).track({ userId, projectId, environment, start: span[0], end: span[1], order: 'DESC' }, ({ e }) => void (e.sessionId && active.add(e.sessionId)));
      }
    }
    const latest = new RecentsBuilder(counts);
    const from = range ? range.from : -Infinity, to = range ? range.to : Infinity;
    const walks: [type: string | undefined, done: () => boolean, take: (r: TrackedRow) => boolean][] = [
      [undefined, () => latest.activityDone, ({ e }) => latest.takeActivity(e)],
      ['error', () => latest.errorsDone, ({ e }) => latest.takeError(e)],
      ['pageload', () => latest.pointsDone, ({ e, row }) => row.route === null || latest.takePoint(e, row.route, row.duration!)],
    ];
    for (const [type, done, take] of walks) {
      for (const source of this.sources(userId, 'newest', range ? { since: from, until: to } : {})) {
        if (done()) break;
        (await source.open()).track({ userId, projectId, environment, start: from, end: to, order: 'DESC', via: 'seq', type }, take);
      }
    }
    return latest.recents(active.size);
  }
}
