// Records in one directory beside the sqlite database: the embedded deployment's record store.
//
// Records are few and small, so all of them are held in memory and every change is appended to a
// log, one JSON line per put or delete, synced before the call resolves. A batch is one line, so a
// power loss keeps all of it or none: a line cut short at the end of the log is dropped (and cut
// off) at open. When the log has grown well past what it describes, it is rewritten: the live
// records go to a temp file, synced, which is renamed over the log (lib/store/fs.ts says why each
// step is needed). Blobs are one file each, written the same way, named by the SHA-256 of their key
// so any key makes a safe file name. Everything goes through a StoreFs, so the power-loss tests can
// record the file operations and replay every state a crash could leave.
//
// One process at a time: the sqlite store's lock on its database guards this directory too.
import { ensureDir, nodeFs, renameDurably, writeNewFile, type StoreFs } from '../store/fs.ts';
import { RecordLog } from './file-log.ts';
export { CorruptRecordsError } from './file-log.ts';
import { HeldRecords } from './held.ts';
import type { RecordStore } from './types.ts';

export interface FileRecordsOptions {
  /** The directory the log and blobs live in; created if missing. */
  dir: string;
  fs: StoreFs;
  /** The log is rewritten once it is this big and twice what its live records take. Default 1 MiB. */
  compactAtBytes?: number;
}

const LOG = 'records.log';
const encoder = new TextEncoder();

/**
 * The record store of the sqlite database at `path` (SERVICE_P1_DB): the directory `<path>.records`
 * beside it, on node:fs unless a test passes its own StoreFs.
 */
export function openSqliteRecords(options: { path: string; fs?: StoreFs }): Promise<RecordStore> {
  return openFileRecords({ dir: options.path + '.records', fs: options.fs ?? nodeFs });
}

export async function openFileRecords(options: FileRecordsOptions): Promise<RecordStore> {
  const { dir, fs } = options;
  const compactAtBytes = options.compactAtBytes ?? 1 << 20;
  const logPath = `${dir}/${LOG}`;
  await ensureDir(fs, dir);

  // Temp files are only ever renamed into place once whole: one left over is a write a crash cut off.
  for (const name of await fs.list(dir)) if (name.endsWith('.tmp')) await fs.remove(`${dir}/${name}`);

  const held = new HeldRecords();
  const log = await RecordLog.open(fs, logPath, held, compactAtBytes);

  // Changes run one at a time, in order: each validates against, then updates, what the one
  // before it left; after a write the log could not undo, every later change is refused.
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  const serial = <T>(op: () => Promise<T>): Promise<T> => {
    const run = queue.then(() => {
      if (closed) throw new Error('the record store is closed');
      log.check();
      return op();
    });
    queue = run.catch(() => {});
    return run;
  };

  const blobPath = async (key: string) => {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(key)));
    return `${dir}/blob-${Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')}`;
  };

  return {
    ...held.reads(),
    put(records) {
      // Serialised now, once: a caller's later change to a body must not reach the log, and the
      // same text is both the log line and what is held.
      const texts = records.map((r) => JSON.stringify(r.body ?? null));
      return serial(async () => {
        held.checkOwners(records);
        if (!records.length) return;
        const line = records.map((r, i) => `[${JSON.stringify(r.kind)},${JSON.stringify(r.id)},${JSON.stringify(r.userId)},${texts[i]}]`).join(',');
        await log.append(`{"put":[${line}]}\n`, () => {
          for (let i = 0; i < records.length; i++) held.set(records[i].kind, records[i].id, records[i].userId, texts[i]);
        });
      });
    },
    delete(kind, id, userId) {
      return serial(async () => {
        if (!held.owns(kind, id, userId)) return false;
        await log.append(JSON.stringify({ del: [kind, id] }) + '\n', () => held.delete(kind, id));
        return true;
      });
    },
    putBlob(key, bytes) {
      const copy = bytes.slice();
      return serial(async () => {
        const path = await blobPath(key);
        await writeNewFile(fs, path + '.tmp', copy);
        await renameDurably(fs, path + '.tmp', path);
      });
    },
    async getBlob(key) {
      return fs.read(await blobPath(key));
    },
    deleteBlob(key) {
      return serial(async () => {
        const path = await blobPath(key);
        await fs.remove(path);
        await fs.syncDir(dir);
      });
    },
    async close() {
      if (closed) return;
      await queue;
      closed = true;
      await log.close();
    },
  };
}
