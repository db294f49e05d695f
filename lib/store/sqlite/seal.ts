// Sealing the hot segment, as docs/architecture.md (Time segments) numbers its steps. Steps 1 and 3
// run here, on the main thread; steps 2 and 4 on the worker (worker/seal.ts: `cut` and `finish`),
// each a request answered in message order. The main thread writes the files in step 3 because the
// worker's event loop is busy applying inserts and answering reads: its file writes would wait
// behind them. One seal or snapshot runs at a time (maintenance.ts: runExclusive).
import type { StoreFs } from '../fs.ts';
import type { WorkerClient } from './client.ts';
import type { CommitQueue } from './commit-queue.ts';
import type { Dedupe } from './dedupe.ts';
import { writeSegment } from './manifest.ts';
import type { SealAnswer } from './protocol.ts';

export interface SealContext {
  path: string;
  fs: StoreFs;
  client: WorkerClient;
  queue: CommitQueue;
  dedupe: Dedupe;
  log(msg: string): void;
  now(): number;
  /** The hot segment starts empty (no day of its own until its first event). */
  hotEmptied(): void;
}

/** Seals the hot segment; resolves once the seal is durable (or there was nothing to seal). */
export async function sealHotSegment(ctx: SealContext, reason: string): Promise<void> {
  const { client, dedupe } = ctx;
  // 1. A barrier in the commit queue: rotate the journal (the hot segment holds exactly the journal
  //    segments up to `covered`) and the dedupe's exact ids, and ask the worker to seal.
  let cut!: Promise<SealAnswer | null>;
  let token = 0, covered = 0;
  await ctx.queue.enqueue('', async () => {
    covered = await ctx.queue.writer.rotate();
    token = dedupe.rotate();
    ctx.hotEmptied();
    // 2. The worker starts a new hot segment and answers with the sealed database and its manifest.
    cut = client.request<SealAnswer | null>({ op: 'seal', covered, reason, now: ctx.now() });
  });
  // On failure the sealing ids stay exact in the dedupe; a restart replays the journal.
  const sealed = await cut;
  if (!sealed) return dedupe.sealed(token, null, ctx.now());
  const { manifest, database } = sealed;
  // 3. The key filter from the exact ids the dedupe holds, then the segment's file and its
  //    manifest, each temp → fsync → rename → fsync dir: the manifest is the commit point.
  manifest.filter = await dedupe.filterOf(token);
  try {
    const diskBytes = await writeSegment(ctx.fs, ctx.path, database, manifest);
    // 4. The worker snapshots the new hot segment over `<db>` and deletes the covered journal.
    await client.request({ op: 'finishSeal', segment: manifest.id, covered, diskBytes, now: ctx.now() });
  } catch (err) {
    ctx.log(`sealing segment ${manifest.id} failed; its events stay readable and in the journal: ${err instanceof Error ? err.message : String(err)}`);
    throw err;
  }
  //    The dedupe swaps the segment's exact ids for its filter.
  dedupe.sealed(token, { segment: manifest.id, maxReceived: manifest.maxReceived, hashes: manifest.filter }, ctx.now());
}
