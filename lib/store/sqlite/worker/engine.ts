// The database worker's roles over one shared state (state.ts): the hot segment's writes, reads,
// retention, snapshots, seals and the backfill, plus what belongs to none of them alone (health,
// idle work, closing). The message loop (../worker.ts) calls into these.
import type { Database, SqlJsStatic } from 'sql.js';
import type { StoreFs } from '../../fs.ts';
import type { Manifest } from '../manifest.ts';
import { threadMemory, type HealthFigures, type InitArgs } from '../protocol.ts';
import { Backfill } from './backfill.ts';
import { FunnelIndexes } from './funnel-indexes.ts';
import { Reads } from './reads.ts';
import { Retention } from './retention.ts';
import { Sealer } from './seal.ts';
import { Snapshots } from './snapshot.ts';
import { WorkerState } from './state.ts';
import { HotWrites } from './writes.ts';

export class Engine {
  readonly state: WorkerState;
  readonly writes: HotWrites;
  readonly reads: Reads;
  readonly retention: Retention;
  readonly snapshots: Snapshots;
  readonly sealer: Sealer;
  readonly backfill: Backfill;
  readonly funnelIndexes: FunnelIndexes;
  startup: HealthFigures['startup'] = { replayedEntries: 0, replayMs: 0, tornLinesSkipped: 0, ms: 0 };

  constructor(SQL: SqlJsStatic, db: Database, args: InitArgs, fs: StoreFs, manifests: Manifest[]) {
    const s = (this.state = new WorkerState(SQL, db, args, fs, manifests));
    this.writes = new HotWrites(s);
    this.reads = new Reads(s);
    this.retention = new Retention(s, this.writes);
    this.snapshots = new Snapshots(s, this.writes);
    this.sealer = new Sealer(s, this.retention, this.snapshots);
    this.backfill = new Backfill(s, this.reads);
    this.funnelIndexes = new FunnelIndexes(s);
  }

  health(): HealthFigures {
    const s = this.state;
    const pages = s.hot.db.exec('PRAGMA page_count; PRAGMA page_size');
    return {
      eventCount: s.eventCount,
      usersWithEvents: s.scopes.size,
      databaseBytes: (pages[0].values[0][0] as number) * (pages[1].values[0][0] as number),
      snapshotBytes: this.snapshots.bytes,
      lastSnapshot: this.snapshots.last,
      prunedEvents: s.prunedTotal,
      startup: this.startup,
      segments: {
        sealed: s.sealed.size, hotEvents: s.hotCount, cacheBytes: s.sealed.openBytes, cacheOpen: s.sealed.openCount, lastSeal: this.sealer.last,
        projectsPending: this.backfill.remaining,
      },
      workerMemory: threadMemory(),
    };
  }

  /**
   * Work for when no message is waiting, a slice at a time; true while some is left: merging days
   * of rollups that reads took hour by hour (UserRollups.mergePending, one owner's budget at a
   * time), the funnel indexes of segments just sealed, then the backfill of old manifests.
   */
  async idleStep(): Promise<boolean> {
    if (this.state.closed) return false;
    if (this.state.scopes.mergeIdle()) return true;
    if (await this.funnelIndexes.step()) return true;
    return this.backfill.step();
  }

  /** Resolves once the files of dropped segments are gone. */
  async close(): Promise<void> {
    const s = this.state;
    await s.tail.drained();
    s.closed = true;
    s.hot.close();
    s.sealed.close();
    await this.retention.settled();
  }
}
