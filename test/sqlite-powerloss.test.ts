// Power loss, state by state. A small workload runs on the sqlite store with every file operation
// of both threads recorded (helpers/recording-fs.ts): concurrent inserts (group commit), a user, a
// snapshot with an insert acknowledged between the journal's rotation and the rename, retention,
// a snapshot replacing the file, the database worker dying, close, reopen (replay, then compaction
// while new inserts are acknowledged), close with a shutdown snapshot. Then, at every point of that
// trace, the states a power loss could leave (helpers/crash-states.ts: only synced data and synced
// directory entries are sure to survive) are written to a real directory one by one, the real
// store is opened on each, and recovery must start and hold every event acknowledged before that
// point exactly once (retention aside), and the user.
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { openSqliteStore, type SqliteStoreOptions } from '../lib/store/sqlite/store.ts';
import type { Store } from '../lib/store/types.ts';
import type { Worker } from 'node:worker_threads';
import { enumerateCrashStates, type CrashState } from './helpers/crash-states.ts';
import { RenameHook } from './helpers/hooked-fs.ts';
import { createLog, mark, readLog, recordingFsModule, type LogEntry } from './helpers/recording-fs.ts';

const root = mkdtempSync(join(tmpdir(), 'watchtower-powerloss-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const T0 = Date.parse('2026-05-16T12:00:00.000Z');
const HOUR = 3_600_000;
const USER = 'pl';
/** The user's email, as upserted in turn. */
const EMAILS = ['first@x.test', 'second@x.test'];
/** Random combinations per point of the trace, on top of the systematic states. */
const SAMPLES = Number(process.env.WATCHTOWER_POWERLOSS_SAMPLES ?? 1);
const SEED = Number(process.env.WATCHTOWER_POWERLOSS_SEED ?? 1);
/** Stores opened at once while checking (each has its worker thread). */
const CONCURRENCY = 3;

/** Snapshots only when the workload asks (the clock jumps a day: no quiet-period snapshot either). */
const quiet: Partial<SqliteStoreOptions> = { retentionDays: 1, quietSnapshotMs: 1e12, gapSnapshotMs: 1e12, journalMaxBytes: 1 << 30, log: () => {} };

/** Runs the workload with recording on; returns its trace. */
async function recordWorkload(path: string): Promise<LogEntry[]> {
  const log = createLog();
  let clock = T0;
  let n = 0;
  const batch = (ageMs = 0) =>
    [0, 1].map(() => normalise({ id: `e${++n}`, type: 'click', sessionId: 's' } as RawEvent, { now: clock - ageMs, owner: USER }));
  const insert = async (store: Store, events: StoredEvent[]) => {
    await store.insert(events);
    mark(log, { acked: events.map((e) => [e.id, Date.parse(e.receivedAt)]) });
  };
  // Every operation is recorded; a snapshot's rename onto the database file can be held (hooked-fs.ts).
  const hook = new RenameHook(path);
  const fsModule = hook.module(recordingFsModule(log));
  const options = { ...quiet, path, now: () => clock, testing: { fs: fsModule }, retentionIntervalMs: 20 };

  let worker: Worker | null = null;
  const a: Store = await openSqliteStore({ ...options, testing: { fs: fsModule, onWorker: (w) => (worker = w) } });
  // Concurrent inserts share fsyncs. The first are 12 h old, for retention below (which prunes the
  // oldest first, in the order received).
  await Promise.all([insert(a, batch(12 * HOUR)), insert(a, batch(12 * HOUR))]);
  await Promise.all([insert(a, batch()), insert(a, batch()), insert(a, batch())]);
  const upsert = async (store: Store, email: string) => {
    await store.upsertUser({ idpUserId: USER, email, displayName: 'P' }, clock);
    mark(log, { user: email });
  };
  await upsert(a, EMAILS[0]);
  // Snapshot 1: an insert is acknowledged after the rotation and before the rename (it is in the
  // new segment only), others run alongside.
  hook.arm();
  const flushed = a.flush();
  const inWindow = hook.held().then(() => insert(a, batch())).then(() => hook.release());
  await Promise.all([insert(a, batch()), insert(a, batch()), inWindow]);
  await flushed;
  await upsert(a, EMAILS[1]); // a newer record of the same user, in the next segment
  // 23 hours later the 12-hour-old events are past the 1-day retention.
  clock += 23 * HOUR;
  mark(log, { clock });
  while (((await a.health()).prunedEvents as number) === 0) await new Promise((r) => setTimeout(r, 10));
  await Promise.all([insert(a, batch()), insert(a, batch()), insert(a, batch())]);
  await a.flush(); // snapshot 2 replaces the file
  await Promise.all([insert(a, batch()), insert(a, batch())]);
  // The database worker dies: those last events are in the journal only. Closing now writes no
  // snapshot; it only lets go of the files and the lock.
  await worker!.terminate();
  await a.close();
  // Reopened: start-up replays the journal and compacts it into a snapshot in the background,
  // while new inserts are acknowledged; then a clean close writes its shutdown snapshot.
  const b = await openSqliteStore(options);
  await Promise.all([insert(b, batch()), insert(b, batch())]);
  // The clock crossed midnight above, so segment 1 was sealed (a stale <db> naming it as hot is
  // among the states). 14 hours on, another day: b's hot segment is sealed as segment 2, and
  // segment 1 (received on day 1) falls out of the 1-day retention and is dropped.
  clock += 14 * HOUR;
  mark(log, { clock });
  const sealedTwo = async () => ((await b.health()).segments as { lastSeal: { segment: number } | null }).lastSeal?.segment === 2;
  while (!(await sealedTwo()) || existsSync(`${path}.seg-1.manifest`)) await new Promise((r) => setTimeout(r, 10));
  await Promise.all([insert(b, batch()), insert(b, batch())]);
  await b.close();
  return readLog(log);
}

interface Expected {
  acked: Map<string, number>;
  clock: number;
  /** The user's last acknowledged email (null: none yet). */
  email: string | null;
}

/** What must hold after a crash right after trace entry `after`. */
function expectedAt(trace: LogEntry[], after: number): Expected {
  const e: Expected = { acked: new Map(), clock: T0, email: null };
  for (let i = 0; i <= after; i++) {
    const entry = trace[i];
    if (entry.op !== 'mark') continue;
    const m = entry.mark as { acked?: [string, number][]; clock?: number; user?: string };
    for (const [id, at] of m.acked ?? []) e.acked.set(id, at);
    if (m.clock) e.clock = m.clock;
    if (m.user) e.email = m.user;
  }
  return e;
}

/** Opens the real store on the state; returns what is wrong, or null. */
async function check(state: CrashState, expected: Expected, dir: string): Promise<string | null> {
  mkdirSync(dir);
  for (const [name, file] of state.files) {
    if (file.linkOf) linkSync(join(dir, file.linkOf), join(dir, name));
    else writeFileSync(join(dir, name), file.bytes);
  }
  let store: Store | null = null;
  try {
    store = await openSqliteStore({ ...quiet, path: join(dir, 'watchtower.sqlite'), now: () => expected.clock });
    const ids = (await store.list({ userId: USER, limit: 100_000 })).events.map((e) => e.id);
    const present = new Set(ids);
    const problems: string[] = [];
    if (present.size !== ids.length) problems.push(`duplicates: ${ids.filter((id, i) => ids.indexOf(id) !== i).join(' ')}`);
    const cutoff = expected.clock - 24 * HOUR;
    const lost = [...expected.acked].filter(([id, at]) => at >= cutoff && !present.has(id)).map(([id]) => id);
    const kept = [...expected.acked].filter(([id, at]) => at < cutoff && present.has(id)).map(([id]) => id);
    if (lost.length) problems.push(`acknowledged events lost: ${lost.join(' ')}`);
    if (kept.length) problems.push(`events past retention still there: ${kept.join(' ')}`);
    const count = (await store.health()).eventCount;
    if (count !== ids.length) problems.push(`health counts ${count} events, the list has ${ids.length}`);
    // The last acknowledged record of the user, or one written after it: never an older one.
    const email = (await store.getUser(USER))?.email ?? null;
    if (expected.email && EMAILS.indexOf(email!) < EMAILS.indexOf(expected.email)) {
      problems.push(`the user's email is ${email}, the last acknowledged was ${expected.email}`);
    }
    return problems.length ? problems.join('; ') : null;
  } catch (err) {
    return `recovery failed: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    await store?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

const describeEntry = (e: LogEntry) => {
  const { seq: _seq, bytes, ...rest } = e as LogEntry & { bytes?: Uint8Array };
  return JSON.stringify(bytes ? { ...rest, bytes: bytes.length } : rest);
};

test('power loss at every point of a recorded workload: recovery starts and keeps every acknowledged event exactly once', powerLossCheck);

async function powerLossCheck(): Promise<void> {
  const started = performance.now();
  const recorded = join(root, 'recorded');
  mkdirSync(recorded);
  const trace = await recordWorkload(join(recorded, 'watchtower.sqlite'));
  assert.ok(trace.some((e) => e.thread.startsWith('worker')), 'the worker recorded its operations too');
  assert.ok(trace.some((e) => e.op === 'rename'), 'the workload renamed a snapshot into place');
  for (const id of [1, 2]) assert.ok(trace.some((e) => e.op === 'rename' && e.to.endsWith(`.seg-${id}.manifest`)), `segment ${id} was sealed`);
  assert.ok(trace.some((e) => e.op === 'remove' && e.path.endsWith('.seg-1.manifest')), 'segment 1 was dropped');
  const { states, generated } = enumerateCrashStates(trace, { samples: SAMPLES, seed: SEED, newEpoch: (m) => 'clock' in m });

  const failures: string[] = [];
  let next = 0;
  const checker = async (w: number) => {
    for (let i = next++; i < states.length; i = next++) {
      const state = states[i];
      const problem = await check(state, expectedAt(trace, state.after), join(root, `state-${w}-${i}`));
      if (problem) {
        failures.push(`after trace entry ${state.after} ${describeEntry(trace[state.after])}, ${state.variant} ` +
          `(files: ${[...state.files].map(([name, f]) => (f.linkOf ? `${name} = ${f.linkOf}` : `${name} ${f.bytes.length} B`)).join(', ')}): ${problem}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => checker(w)));
  console.log(`  power loss: ${trace.length} trace entries, ${generated} crash states generated, ${states.length} distinct ones ` +
    `opened and checked in ${((performance.now() - started) / 1000).toFixed(1)} s (samples ${SAMPLES}, seed ${SEED})`);
  assert.equal(failures.slice(0, 5), [], `${failures.length} of ${states.length} states failed`);
}

test.run();
