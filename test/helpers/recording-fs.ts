// A StoreFs (lib/store/fs.ts) that does what node:fs does and records every operation that changes
// files, with the bytes written, so a test can replay them: a store opened with
// `testing: { fs: recordingFsModule(log) }` records on its main thread and on its database worker alike.
//
// One log for both threads, in one order: the log is a SharedArrayBuffer (shared with the worker
// through the store's init message). Each entry takes the next sequence number with Atomics once
// its operation has completed, so an operation is in the log only once its effect is certain (a
// sync, once it returned), and the test's own marks (an insert acknowledged) fall in the same order.
import { isMainThread, threadId } from 'node:worker_threads';
import { nodeFs, type StoreFile, type StoreFs, type StoreFsModule } from '../../lib/store/fs.ts';

export type LoggedOp =
  | { op: 'mkdir'; dir: string }
  | { op: 'open'; path: string; how: 'new' | 'existing'; file: string }
  | { op: 'append'; file: string; bytes: Uint8Array }
  | { op: 'truncate'; file: string; size: number }
  | { op: 'sync'; file: string }
  | { op: 'rename'; from: string; to: string }
  | { op: 'link'; from: string; to: string }
  | { op: 'remove'; path: string }
  | { op: 'syncDir'; dir: string };

/** What the test notes in the same order: anything JSON, under `op: 'mark'`. */
export type LoggedMark = { op: 'mark'; mark: Record<string, unknown> };

export type LogEntry = (LoggedOp | LoggedMark) & { seq: number; thread: string };

const HEADER = 12; // Int32 [0]: last sequence number given; [1]: bytes used after the header; [2]: last file id

/** A log of `bytes` capacity. */
export const createLog = (bytes = 32 << 20) => new SharedArrayBuffer(bytes);

export const recordingFsModule = (log: SharedArrayBuffer): StoreFsModule => ({ url: import.meta.url, data: { log } });

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Appends an entry: [u32 length of the rest][u32 JSON length][JSON][payload bytes]. */
function write(log: SharedArrayBuffer, entry: Record<string, unknown>, payload?: Uint8Array): void {
  const counters = new Int32Array(log, 0, 3);
  const seq = Atomics.add(counters, 0, 1) + 1;
  const json = encoder.encode(JSON.stringify({ ...entry, seq }));
  const length = 4 + json.length + (payload?.length ?? 0);
  const at = HEADER + Atomics.add(counters, 1, 4 + length);
  if (at + 4 + length > log.byteLength) throw new Error('the recording log is full');
  const view = new DataView(log);
  const bytes = new Uint8Array(log);
  view.setUint32(at, length);
  view.setUint32(at + 4, json.length);
  bytes.set(json, at + 8);
  if (payload) bytes.set(payload, at + 8 + json.length);
}

/** The test's own note, in the log's order (e.g. which events were just acknowledged). */
export function mark(log: SharedArrayBuffer, mark: Record<string, unknown>): void {
  write(log, { op: 'mark', mark, thread: 'test' });
}

/** Every entry, in sequence order. Read it once nothing records any more. */
export function readLog(log: SharedArrayBuffer): LogEntry[] {
  const used = new Int32Array(log, 0, 3)[1];
  const view = new DataView(log);
  const bytes = new Uint8Array(log);
  const out: LogEntry[] = [];
  for (let at = HEADER; at < HEADER + used; ) {
    const length = view.getUint32(at);
    const jsonLength = view.getUint32(at + 4);
    const entry = JSON.parse(decoder.decode(bytes.slice(at + 8, at + 8 + jsonLength))) as LogEntry;
    if (entry.op === 'append') entry.bytes = bytes.slice(at + 8 + jsonLength, at + 4 + length);
    out.push(entry);
    at += 4 + length;
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** Called by the store, on each thread (see StoreFsModule). */
export function createStoreFs(data: { log: SharedArrayBuffer }): StoreFs {
  const { log } = data;
  const thread = isMainThread ? 'main' : `worker ${threadId}`;
  const record = (entry: LoggedOp) => {
    const { bytes, ...rest } = entry as LoggedOp & { bytes?: Uint8Array };
    write(log, { ...rest, thread }, bytes);
  };

  function recordingFile(inner: StoreFile, file: string): StoreFile {
    return {
      get size() {
        return inner.size;
      },
      async append(bytes) {
        await inner.append(bytes);
        record({ op: 'append', file, bytes: bytes.slice() });
      },
      async truncate(size) {
        await inner.truncate(size);
        record({ op: 'truncate', file, size });
      },
      async sync() {
        await inner.sync();
        record({ op: 'sync', file });
      },
      close: () => inner.close(),
    };
  }

  return {
    async mkdir(dir) {
      const created = await nodeFs.mkdir(dir);
      if (created) record({ op: 'mkdir', dir });
      return created;
    },
    list: (dir) => nodeFs.list(dir),
    read: (path, alloc) => nodeFs.read(path, alloc),
    readStart: (path, length) => nodeFs.readStart(path, length),
    async open(path, how) {
      const inner = await nodeFs.open(path, how);
      const file = `${thread}/${Atomics.add(new Int32Array(log, 0, 3), 2, 1) + 1}`;
      record({ op: 'open', path, how, file });
      return recordingFile(inner, file);
    },
    async rename(from, to) {
      await nodeFs.rename(from, to);
      record({ op: 'rename', from, to });
    },
    async link(from, to) {
      await nodeFs.link(from, to);
      record({ op: 'link', from, to });
    },
    async remove(path) {
      await nodeFs.remove(path);
      record({ op: 'remove', path });
    },
    async syncDir(dir) {
      await nodeFs.syncDir(dir);
      record({ op: 'syncDir', dir });
    },
  };
}
