// The worker thread that owns the sqlite store's databases (sql.js); client.ts starts it. This file
// is its message loop; what it does lives by role in worker/: writes.ts (the hot segment's writes),
// reads.ts, retention.ts, snapshot.ts, seal.ts, backfill.ts, recovery.ts (start-up), over the
// state they share (state.ts, engine.ts). docs/architecture.md#sqlite-store describes the design.
//
// Messages are handled in arrival order, each once the previous one's database work is done (a
// snapshot's: once its file is written or copied; a read's: once it has read every segment it
// needs), which is what makes snapshots, seals and read-your-writes correct. An insert's work is
// only counting it, so a read never waits behind the inserts before it. A seal's slow part (gzip,
// writing) holds nothing: the sealed database stays open for reads meanwhile.
import { parentPort, workerData } from 'node:worker_threads';
import { loadStoreFs, type StoreFs, type StoreFsModule } from '../fs.ts';
import { postAnswer, postError, type InitArgs, type SealAnswer, type ToWorker, type WorkerRequest } from './protocol.ts';
import type { Engine } from './worker/engine.ts';
import { funnelJob } from './worker/funnel.ts';
import { start } from './worker/recovery.ts';
import { PRUNE_BATCH } from './worker/retention.ts';
import { CorruptFile, log } from './worker/state.ts';

const port = parentPort!;
/** The file operations: node:fs, or a test's module handed over in the worker's start data (options.ts: SqliteTesting). */
const fs: Promise<StoreFs> = loadStoreFs((workerData as { fs?: StoreFsModule } | undefined)?.fs);
fs.catch(() => {});

let engine: Engine | null = null;

/** A message's answer, and until when the next message must wait (the database work it holds). */
interface Handled {
  answer: unknown;
  holds?: Promise<unknown>;
}

function handle(req: WorkerRequest): Handled {
  if (req.op === 'open') {
    const started = fs.then((files) => start(req.args, files)).then((s) => {
      engine = s.engine;
      return s.result;
    });
    return { answer: started, holds: started };
  }
  if (!engine) throw new Error('the database is not open');
  switch (req.op) {
    case 'apply': {
      // Counted now; written a slice at a time after (writes.ts): later messages, reads above all,
      // need not wait for the writes, unless retention by count must run after them, so that no
      // read sees more than the limit.
      const e = engine;
      const drained = e.writes.apply(req.lines);
      if (e.state.eventCount <= e.state.args.maxEvents) return { answer: drained };
      const prune = drained.then(() => e.retention.prune(req.now, PRUNE_BATCH * 5));
      return { answer: Promise.all([drained, prune]), holds: prune };
    }
    case 'readRows':
      return holding(engine.reads.rows(req.query));
    case 'scanErrors':
      return holding(engine.reads.errors(req.query));
    case 'readStats':
      return holding(engine.reads.stats(req.userId, req.now, req.range, req.projectId));
    case 'readEnvironmentStats':
      return holding(engine.reads.environmentStats(req.userId, req.now, req.range, req.projectId, req.environment));
    case 'readFunnel':
      return sliced(funnelJob(engine.state, engine.funnelIndexes, req.query));
    case 'readUser':
      return { answer: engine.state.getUser(req.idpUserId) };
    case 'drainTail':
      // Holds nothing: reads and inserts go on while the rows are written.
      return { answer: engine.state.tail.drained() };
    case 'readHealth':
      return { answer: engine.health() };
    case 'prune': {
      const pruned = engine.retention.prune(req.now, PRUNE_BATCH * 10);
      return { answer: pruned.then(() => undefined), holds: pruned };
    }
    case 'snapshot': {
      const { released, done } = engine.snapshots.take(req.covered, req.reason, req.now, true);
      return { answer: done, holds: released };
    }
    case 'seal': {
      // Holds until the new hot segment took over.
      const { swapped, done } = engine.sealer.cut(req.covered, req.reason, req.now);
      return { answer: done, holds: swapped };
    }
    case 'finishSeal': {
      // Its file and manifest are written: its funnel index can be built (when idle).
      engine.funnelIndexes.sealed(req.segment);
      const { released, done } = engine.sealer.finish(req.segment, req.covered, req.diskBytes, req.now);
      return { answer: done, holds: released };
    }
    case 'close': {
      const closed = engine.close();
      engine = null;
      return holding(closed);
    }
  }
}

/** A read may open sealed segments (async): nothing else runs until it is done. */
const holding = (work: Promise<unknown>): Handled => ({ answer: work, holds: work });

/** Settles once the previous message's database work is done: each message waits for it. */
let ready: Promise<unknown> = Promise.resolve();

/** Most ms a long read's slice runs before the messages that arrived meanwhile go first. */
const SLICE_MS = 20;

/**
 * A long read as a job of units (a generator whose value is the answer), run a slice of units at a
 * time: the first slice holds the queue like any read, then each next slice waits its turn behind
 * the messages that arrived meanwhile, so they are answered within a slice, not after the whole read.
 */
function sliced(job: AsyncGenerator<void, unknown>): Handled {
  let settle!: { resolve(v: unknown): void; reject(e: unknown): void };
  const answer = new Promise((resolve, reject) => (settle = { resolve, reject }));
  const slice = async () => {
    try {
      const t0 = performance.now();
      for (;;) {
        const r = await job.next();
        if (r.done) return settle.resolve(r.value);
        if (performance.now() - t0 >= SLICE_MS) break;
      }
    } catch (err) {
      return settle.reject(err);
    }
    // A turn of the event loop first: messages are events, which a chain of promises never lets in.
    await new Promise((r) => setTimeout(r, 0));
    enqueue(slice);
  };
  return { answer, holds: slice() };
}

/** Work queued behind the messages received so far, as a message's work is. */
function enqueue(work: () => Promise<unknown>): void {
  busy++;
  ready = ready.then(work).catch(() => {}).then(() => {
    busy--;
    whenIdle();
  });
}
/** Messages received whose database work is not done; idle work runs only when there are none. */
let busy = 0;
let idleScheduled = false;
/** An idle step is under way (it may wait for a segment to open): the next starts after it. */
let idleRunning = false;

/** Runs Engine.idleStep a step at a time while no message is waiting. */
function whenIdle() {
  if (busy || idleScheduled || idleRunning || !engine) return;
  idleScheduled = true;
  setTimeout(() => {
    idleScheduled = false;
    if (busy || !engine) return;
    idleRunning = true;
    engine.idleStep().then(
      (more) => {
        idleRunning = false;
        if (more) whenIdle();
      },
      (err: unknown) => {
        idleRunning = false;
        log(`idle work failed: ${err instanceof Error ? err.message : String(err)}`);
      },
    );
  }, 0);
}

port.on('message', (msg: ToWorker) => {
  const { id, req } = msg;
  busy++;
  const handled = ready.then(() => handle(req));
  ready = handled.then((h) => h.holds?.catch(() => {}), () => {}).then(() => {
    busy--;
    whenIdle();
  });
  handled.then((h) => h.answer).then(
    (value) => {
      const sealed = value as SealAnswer | null;
      // A seal's bytes travel without a copy.
      const transfer = req.op === 'seal' && sealed ? [sealed.database.buffer as ArrayBuffer] : [];
      // An answer that cannot be posted is answered with an error (postAnswer): the request settles.
      const refused = postAnswer(port, id, req.op, value, transfer);
      if (refused) log(`the answer to a ${req.op} request could not be sent and was answered with an error: ${refused.name}: ${refused.message}`);
    },
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      postError(port, id, { name: e.name, message: e.message, path: e instanceof CorruptFile ? (req as { args: InitArgs }).args.path : undefined });
    },
  );
});
