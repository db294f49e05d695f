// Snapshots of the hot segment's database as `<db>`: temp file → fsync every 2 MiB → rename →
// fsync dir, then the journal segments it covers are deleted. A small database (right after a
// seal, or in light traffic) is copied, which takes a few milliseconds, and other messages go on
// while the copy is written. A large one is written as sql.js holds it, and no other message is
// handled and no row written until it is (`released`: reads wait meanwhile; acknowledgements never
// do), rather than doubling the memory it takes. Only a stock sql.js, whose file is out of reach,
// exports.
import { basename, dirname, join } from 'node:path';
import { removeGradually, renameDurably, writeNewFile } from '../../fs.ts';
import { removeSegmentsUpTo } from '../journal.ts';
import type { HealthFigures } from '../protocol.ts';
import { databaseFile } from '../sqljs.ts';
import { log, type WorkerState } from './state.ts';
import type { HotWrites } from './writes.ts';

/** Snapshot bytes written between two syncs of the temp file (see writeNewFile). */
const SYNC_EVERY = 2 << 20;

/** A snapshot under way: `released` once the database may change again, `done` once the file is in place. */
export interface SnapshotRun { released: Promise<void>; done: Promise<void> }

export class Snapshots {
  /** The size of the last snapshot written, or of the one the database was loaded from (0: none). */
  bytes = 0;
  last: HealthFigures['lastSnapshot'] = null;

  constructor(private readonly s: WorkerState, private readonly writes: HotWrites) {}

  /**
   * Writes the hot database as `<db>`, which holds exactly the journal segments up to `covered`.
   * `rowsFirst`: the rows counted before the request are written to the database first (the
   * journal segments it covers hold them).
   */
  take(covered: number, reason: string, now: number, rowsFirst: boolean): SnapshotRun {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const done = (async () => {
      if (rowsFirst) await this.s.tail.drained();
      const live = databaseFile(this.s.hot.db);
      const copy = live && live.length <= this.s.args.snapshotCopyBytes ? live.slice() : null;
      if (copy) {
        release();
        return this.write(covered, reason, now, () => {}, copy);
      }
      this.writes.pause();
      const resume = () => {
        this.writes.resume();
        release();
      };
      await this.write(covered, reason, now, resume, null).finally(resume);
    })();
    return { released, done: done.finally(release) };
  }

  private async write(covered: number, reason: string, now: number, release: () => void, copy: Uint8Array | null): Promise<void> {
    const { fs, args: { path } } = this.s;
    const dir = dirname(path);
    const t0 = performance.now();
    const events = this.s.hotCount;
    const hotId = this.s.hotId;
    const tmp = join(dir, `${basename(path)}.tmp-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const live = copy ? null : databaseFile(this.s.hot.db);
    try {
      const bytes = copy ?? live ?? this.s.hot.export();
      const size = bytes.length;
      await writeNewFile(fs, tmp, bytes, SYNC_EVERY);
      release(); // the database may change again
      const heldMs = copy ? 0 : performance.now() - t0;
      // The replaced snapshot keeps a second name through the rename, so the rename does not free
      // its blocks all at once (see removeGradually); a crash leaves that name for start-up to remove.
      const old = join(dir, `${basename(path)}.old-${Date.now()}`);
      const kept = await fs.link(path, old).then(() => true, () => false);
      // Durable before any segment it covers is deleted.
      await renameDurably(fs, tmp, path);
      this.s.durableHot = hotId;
      if (kept) await removeGradually(fs, old);
      await removeSegmentsUpTo(fs, path, covered);
      const totalMs = performance.now() - t0;
      this.bytes = size;
      this.last = { at: new Date(now).toISOString(), events, bytes: size, heldMs: Math.round(heldMs), totalMs: Math.round(totalMs) };
      log(`snapshot (${reason}): ${events} events, ${(size / 1048576).toFixed(1)} MiB, ` +
        `${copy ? 'a copy written' : `database held ${Math.round(heldMs)} ms${live ? '' : ' (exported: a copy)'}`}, ${Math.round(totalMs)} ms in all`);
    } catch (err) {
      await fs.remove(tmp).catch(() => {});
      log(`snapshot (${reason}) failed; the journal is kept: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
  }
}
