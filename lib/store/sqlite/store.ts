// The persisted variant's store: SQLite (sql.js, in memory, on a worker thread) + an fsynced journal
// + snapshots + sealed segments. docs/architecture.md#sqlite-store describes it; the invariants it
// keeps are numbered there. This file only wires the parts together:
// - client.ts: the database worker (worker.ts), its requests and answers, what happens if it dies;
// - commit-queue.ts: the journal's group commit and the backpressure on the worker's backlog;
// - maintenance.ts: when snapshots and seals run, one at a time (seal.ts: the seal's steps);
// - dedupe.ts: which (owner, id) are new, decided here so that acknowledging never waits for the
//   worker; lock.ts: one process per database; journal.ts: the journal's files.
// sql.js keeps the whole database in memory and writes nothing by itself: an event is acknowledged
// only after its journal line is fsynced, and the worker applies what this thread acknowledged, in order.
import { memoryUsage } from 'node:process';
import { dirname } from 'node:path';
import type { FunnelCounts } from '../../funnels/count.ts';
import { resolveRange, type Stats } from '../../stats.ts';
import { decodeCursor, encodeCursor, EXPORT_BATCH } from '../cursor.ts';
import { ensureDir, loadStoreFs, type StoreFs } from '../fs.ts';
import { StoreUnavailableError, appUser, type AppUser, type ErrorScan, type EventPage, type Store, type StoreHealth, type UserSync } from '../types.ts';
import { WorkerClient } from './client.ts';
import { CommitQueue } from './commit-queue.ts';
import { Dedupe } from './dedupe.ts';
import { claimNew } from './insert.ts';
import { JournalWriter, segmentPath } from './journal.ts';
import { lockDatabase, type DatabaseLock } from './lock.ts';
import { Maintenance } from './maintenance.ts';
import { settingsOf, type Settings, type SqliteStoreOptions } from './options.ts';
import { threadMemory, type HealthFigures, type InitResult, type RowsResult } from './protocol.ts';

export { CorruptDatabaseError } from './client.ts';
export { DEFAULT_SEAL_EVENTS, DEFAULT_SNAPSHOT_COPY_BYTES, type SqliteStoreOptions, type SqliteTesting } from './options.ts';

export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const settings = settingsOf(options);
  const { path, log, now: clock } = settings;
  const fs = await loadStoreFs(settings.testing.fs);
  await ensureDir(fs, dirname(path));

  // Exact ids of the hot segment, key filters of recent sealed ones; filled from the worker at
  // start, it learns of new events on insert and of removed ones from retention on the worker.
  const dedupe = new Dedupe(settings.dedupeDays * 86_400_000);
  const life = { closed: false };
  let queue: CommitQueue | null = null;
  const client = new WorkerClient(path, {
    log,
    forgetKeys: (keys) => {
      for (let i = 0; i < keys.length; i += 2) dedupe.forget(keys[i], keys[i + 1]);
    },
    dropFilters: (segments) => dedupe.expire(clock(), segments),
    failed: () => queue?.wake(),
  }, settings.testing);

  // Before any file of the database is touched: start-up removes temp files, which must never be
  // another live process's snapshot in the making.
  const lock = await lockDatabase(fs, path, log).catch(async (err: unknown) => {
    await client.terminate();
    throw err;
  });
  let init: InitResult;
  let writer: JournalWriter;
  try {
    init = await client.request<InitResult>({
      op: 'open',
      args: {
        path, retentionDays: settings.retentionDays, maxEvents: settings.maxEvents, now: clock(),
        dedupeWindowMs: settings.dedupeDays * 86_400_000, cacheBytes: settings.cacheMb * 1048576, snapshotCopyBytes: settings.snapshotCopyBytes,
      },
    });
    writer = await JournalWriter.open(fs, path, init.lastSegment + 1);
  } catch (err) {
    await client.terminate();
    await lock.release();
    throw err;
  }
  for (const [owner, ids] of Object.entries(init.keys)) for (const id of ids.split('\n')) dedupe.add(owner, id);
  for (const f of init.filters) dedupe.addFilter(f, clock());

  const commits: CommitQueue = (queue = new CommitQueue(writer, client, {
    log, now: clock, closed: () => life.closed,
    maintaining: (): boolean => maintenance.busy,
    afterGroup: () => maintenance.afterGroup(),
  }));
  const maintenance: Maintenance = new Maintenance(settings, fs, client, commits, dedupe, init.hotOldest);
  maintenance.start(init.compact);
  return storeOver({ settings, fs, client, dedupe, commits, maintenance, lock, life });
}

/** What an open store is made of. */
interface Parts {
  settings: Settings;
  fs: StoreFs;
  client: WorkerClient;
  dedupe: Dedupe;
  commits: CommitQueue;
  maintenance: Maintenance;
  lock: DatabaseLock;
  life: { closed: boolean };
}

/** The Store interface over the parts. */
function storeOver({ settings, fs, client, dedupe, commits, maintenance, lock, life }: Parts): Store {
  const { path } = settings;
  const writer = commits.writer;
  const alive = () => {
    if (life.closed) throw new StoreUnavailableError('The store is closed');
    if (client.failure) throw client.failure;
  };

  return {
    persisted: true,
    insert(events, texts) {
      if (!events.length) return Promise.resolve([]);
      if (life.closed) return Promise.reject(new StoreUnavailableError('The store is closed'));
      if (client.failure) return Promise.reject(client.failure);
      // Decided now, before journaling: the journal holds new events only (insert.ts).
      const batch = claimNew(dedupe, events, texts);
      if (batch.stored.length) maintenance.storing();
      // Only duplicates: a barrier-sized no-op, still answered in order after the writes before it.
      return commits.enqueue(batch.lines, () => {
        // Runs after the fsync, in journal order.
        if (client.failure) {
          batch.release();
          throw client.failure;
        }
        batch.keep();
        if (batch.stored.length) maintenance.stored();
        commits.send(batch.lines);
        return batch.stored;
      }, batch.release);
    },
    async scanErrors(query) {
      alive();
      return client.request<ErrorScan>({ op: 'scanErrors', query });
    },
    async list(q): Promise<EventPage> {
      alive();
      const { before, ...filter } = q;
      // Decoded here, so that a bad cursor is an InvalidCursorError (the worker's errors arrive as plain Errors).
      const beforeSeq = before === undefined ? undefined : decodeCursor(before);
      const page = await client.request<RowsResult>({ op: 'readRows', query: { ...filter, beforeSeq, order: 'newest' } });
      return { events: page.events, nextCursor: page.more ? encodeCursor(page.lastSeq!) : null };
    },
    async *export(q) {
      alive();
      const { batchSize = EXPORT_BATCH, ...filter } = q;
      const limit = Math.max(1, batchSize);
      // One request per batch, each queued behind whatever the worker has to do: the export never
      // holds the database between batches, and stopping the iteration stops the requests.
      let afterSeq = 0;
      let maxSeq: number | undefined;
      for (;;) {
        const batch = await client.request<RowsResult>({ op: 'readRows', query: { ...filter, afterSeq, maxSeq, limit, order: 'oldest' } });
        maxSeq ??= batch.maxSeq;
        if (batch.events.length) yield batch.events;
        if (!batch.more) return;
        afterSeq = batch.lastSeq!;
      }
    },
    async stats(userId, now, range, projectId): Promise<Stats> {
      alive();
      // Checked here: a RangeError thrown in the worker would arrive as a plain Error.
      const resolved = resolveRange(range, now);
      return client.request<Stats>({ op: 'readStats', userId, now, range: resolved ? range : undefined, projectId });
    },
    async statsOfEnvironment(userId, now, range, projectId, environment): Promise<Stats | null> {
      alive();
      const resolved = resolveRange(range, now);
      return client.request<Stats | null>({ op: 'readEnvironmentStats', userId, now, range: resolved ? range : undefined, projectId, environment });
    },
    async funnel(query) {
      alive();
      return client.request<FunnelCounts>({ op: 'readFunnel', query });
    },
    upsertUser(u: UserSync, now) {
      const user = appUser(u, now);
      const line = JSON.stringify({ u: user }) + '\n';
      return commits.enqueue(line, () => {
        if (client.failure) throw client.failure;
        commits.send(line);
        return user;
      });
    },
    async getUser(id) {
      alive();
      return client.request<AppUser | null>({ op: 'readUser', idpUserId: id });
    },
    async health(): Promise<StoreHealth> {
      alive();
      const f = await client.request<HealthFigures>({ op: 'readHealth' });
      return {
        storage: 'sqlite', databasePath: path, eventCount: f.eventCount, usersWithEvents: f.usersWithEvents,
        databaseBytes: f.databaseBytes, snapshotBytes: f.snapshotBytes, journalBytes: writer.bytes,
        journalMaxBytes: settings.journalMaxBytes, lastSnapshot: f.lastSnapshot, retentionDays: settings.retentionDays,
        maxEvents: settings.maxEvents, prunedEvents: f.prunedEvents, startup: f.startup,
        segments: { ...f.segments, dedupeFilterBytes: dedupe.filterBytes }, cacheMb: settings.cacheMb,
        memory: { rssBytes: memoryUsage().rss, main: threadMemory(), worker: f.workerMemory },
      };
    },
    async flush() {
      alive();
      await maintenance.snapshot('flush');
    },
    async close() {
      if (life.closed) return;
      try {
        await maintenance.close();
        if (!client.failure) await client.request({ op: 'close' });
      } finally {
        life.closed = true;
        try {
          await writer.close();
          if (writer.bytes === 0) await fs.remove(segmentPath(path, writer.seq));
          await client.terminate();
        } finally {
          await lock.release();
        }
      }
    },
  };
}
