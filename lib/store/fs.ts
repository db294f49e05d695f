// The sqlite store's file operations, behind one small interface, and the durability protocols
// built on it.
//
// Every file the store touches — journal segments, the database file and its temp files, the lock
// file — is reached through a StoreFs, on the main thread and on the database worker alike. So one
// file says how each kind of file is made durable, and a test can substitute an implementation
// that records every operation in order and rebuilds each state a power loss could leave
// (test/sqlite-powerloss.test.ts).
//
// What a power loss keeps (POSIX promises no more, and the test assumes no more):
// - a file's bytes only once the file was synced after they were written;
// - a directory entry — a file created, renamed, linked or removed — only once its directory was
//   synced. Syncing the file does not make its name durable.
// Hence the protocols below, the only ways the store creates or replaces a file:
// - `createFile`: a new file whose name must survive (a journal segment, before anything written
//   to it is acknowledged);
// - `writeNewFile` then `renameDurably`: a file written once under a temp name, synced, then given
//   its final name atomically (the database snapshot today; sealed segments and a catalog rewritten
//   in place the same way);
// - `writeNewFile` then a link: a file that must appear whole or not at all under a name that
//   may not be taken (the lock file, sqlite/lock.ts);
// - `removeGradually`: deletions, which need not be durable (see there).
import { link, mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A file open for writing. */
export interface StoreFile {
  /** Bytes in the file: its size when opened, plus what was appended or cut since. */
  readonly size: number;
  /** Writes all of `bytes` at the end of the file. Lost on a power loss until `sync`. */
  append(bytes: Uint8Array): Promise<void>;
  /** Cuts the file to `size` bytes. Not durable until `sync`. */
  truncate(size: number): Promise<void>;
  /**
   * Makes the file's bytes and size durable (fdatasync: the metadata needed to read them back, not
   * timestamps). Not its name: see `syncDir`.
   */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The store's file operations. Errors carry Node's `code` (ENOENT, EEXIST, …). */
export interface StoreFs {
  /** Creates one directory (its parent must exist); false if it was already there. */
  mkdir(dir: string): Promise<boolean>;
  /** The names in a directory. */
  list(dir: string): Promise<string[]>;
  /**
   * A whole file's bytes, or null when there is no such file. `alloc(size)` supplies the storage
   * (the database is read into a resizable buffer, see sqlite/sqljs.ts).
   */
  read(path: string, alloc?: (size: number) => Uint8Array): Promise<Uint8Array | null>;
  /** The first `length` bytes of a file (all of them when it is shorter), or null when there is no such file. */
  readStart(path: string, length: number): Promise<Uint8Array | null>;
  /** `new`: creates the file, failing with EEXIST if it exists. `existing`: opens it (ENOENT if absent). */
  open(path: string, how: 'new' | 'existing'): Promise<StoreFile>;
  /** Renames, replacing `to` atomically if it exists. */
  rename(from: string, to: string): Promise<void>;
  /** Gives a file a second name; fails with EEXIST if `to` exists (the lock relies on that). */
  link(from: string, to: string): Promise<void>;
  /** Deletes a name; nothing happens if there is none. */
  remove(path: string): Promise<void>;
  /** Makes the directory's entries durable: the files created, renamed, linked or removed in it. */
  syncDir(dir: string): Promise<void>;
}

export const errorCode = (err: unknown) => (err as { code?: string } | null)?.code;

class NodeFile implements StoreFile {
  constructor(private handle: FileHandle, public size: number) {}

  async append(bytes: Uint8Array) {
    for (let off = 0; off < bytes.length; ) {
      const { bytesWritten } = await this.handle.write(bytes, off, bytes.length - off, this.size);
      off += bytesWritten;
      this.size += bytesWritten;
    }
  }

  async truncate(size: number) {
    await this.handle.truncate(size);
    this.size = size;
  }

  sync() {
    return this.handle.datasync();
  }

  close() {
    return this.handle.close();
  }
}

/** The StoreFs of node:fs (Node, and Deno and Bun through their Node compatibility). */
/** Up to `length` bytes from the start of a file, or null when there is no such file. */
async function readFile(path: string, length: number, alloc: (size: number) => Uint8Array): Promise<Uint8Array | null> {
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    const size = Math.min(length, (await file.stat()).size);
    const bytes = alloc(size);
    for (let at = 0; at < size; ) {
      const { bytesRead } = await file.read(bytes, at, Math.min(size - at, 16 << 20), at);
      if (bytesRead === 0) return bytes.subarray(0, at); // shrank while read: the caller sees what is there
      at += bytesRead;
    }
    return bytes;
  } finally {
    await file.close();
  }
}

export const nodeFs: StoreFs = {
  async mkdir(dir) {
    try {
      await mkdir(dir);
      return true;
    } catch (err) {
      if (errorCode(err) === 'EEXIST') return false;
      throw err;
    }
  },
  list: (dir) => readdir(dir),
  read: (path, alloc = (size) => new Uint8Array(size)) => readFile(path, Infinity, alloc),
  readStart: (path, length) => readFile(path, length, (size) => new Uint8Array(size)),
  async open(path, how) {
    const handle = await open(path, how === 'new' ? 'wx' : 'r+');
    try {
      return new NodeFile(handle, how === 'new' ? 0 : (await handle.stat()).size);
    } catch (err) {
      await handle.close();
      throw err;
    }
  },
  rename: (from, to) => rename(from, to),
  link: (from, to) => link(from, to),
  remove: (path) => rm(path, { force: true }),
  async syncDir(dir) {
    try {
      const handle = await open(dir, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch (err) {
      // Some platforms (Windows) cannot open or sync a directory; their file systems order metadata
      // themselves, and there is nothing more to do.
      const code = errorCode(err);
      if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') throw err;
    }
  },
};

/**
 * Creates a directory and any missing parents. Each directory created is a new entry of its
 * parent, so the parent is synced: otherwise a power loss could take the new directory, and every
 * durable file in it, away.
 */
export async function ensureDir(fs: StoreFs, dir: string): Promise<void> {
  let created: boolean;
  try {
    created = await fs.mkdir(dir);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT' || dirname(dir) === dir) throw err;
    await ensureDir(fs, dirname(dir));
    created = await fs.mkdir(dir);
  }
  if (created) await fs.syncDir(dirname(dir));
}

/**
 * Creates a new, empty file whose name survives a power loss, for a file whose contents will be
 * made durable by appends and syncs (a journal segment): what is synced into a file the directory
 * has forgotten is lost all the same. Fails with EEXIST if the file exists.
 */
export async function createFile(fs: StoreFs, path: string): Promise<StoreFile> {
  const file = await fs.open(path, 'new');
  try {
    // The file itself (its inode) first, then the entry naming it.
    await file.sync();
    await fs.syncDir(dirname(path));
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
  return file;
}

/**
 * Writes `bytes` to a new file (a temp name, about to be renamed into place) and syncs it, every
 * `syncEvery` bytes: the journal's fsyncs, on which acknowledgements wait, queue behind whatever
 * dirty data the file system must flush first. Measured at 1M events, 500 MB of it stalled them
 * ~1 s, and one sync at the end of the snapshot put their p99 at 330–360 ms. The file's name is not
 * durable yet (see renameDurably).
 */
export async function writeNewFile(fs: StoreFs, path: string, bytes: Uint8Array, syncEvery = Infinity): Promise<void> {
  const file = await fs.open(path, 'new');
  try {
    for (let off = 0; off < bytes.length; ) {
      const end = Math.min(bytes.length, off + syncEvery);
      await file.append(bytes.subarray(off, end));
      off = end;
      await file.sync();
    }
    if (bytes.length === 0) await file.sync();
  } finally {
    await file.close();
  }
}

/**
 * Gives a synced file its final name, replacing whatever had it, atomically, then syncs the
 * directory: until then a power loss may undo the rename, and anything deleted on the strength of
 * the new file (journal segments it covers) would be gone while the old file came back.
 */
export async function renameDurably(fs: StoreFs, from: string, to: string): Promise<void> {
  await fs.rename(from, to);
  await fs.syncDir(dirname(to));
}

/**
 * Deletes a file after truncating it a slice at a time. Freeing the blocks of a large file in one
 * unlink holds the file system's journal long enough (~100 ms per 150 MB measured on ext4) to stall
 * every fsync meanwhile — the journal's, on which acknowledgements wait. Slices keep each stall short.
 *
 * Neither the truncation nor the deletion is synced: the store deletes only what a durable file
 * already covers, so a deletion a power loss undoes brings back a file (or a prefix of it, torn
 * mid-line) that is replayed idempotently or removed again.
 */
export async function removeGradually(fs: StoreFs, path: string, slice = 16 << 20): Promise<void> {
  try {
    const file = await fs.open(path, 'existing');
    try {
      for (let size = file.size; size > 0; ) {
        size = Math.max(0, size - slice);
        await file.truncate(size);
      }
    } finally {
      await file.close();
    }
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return;
    // Cannot open or truncate it (permissions, platform): a plain delete still does the job.
  }
  await fs.remove(path);
}

/**
 * Test seam: where a store's StoreFs comes from when it is not node:fs. A module, by URL, exporting
 * `createStoreFs(data)` (which may be async): the database worker cannot be handed an object, so
 * each thread loads it (`data` is copied to the worker as its start data is; a SharedArrayBuffer in
 * it is shared). This is how tests watch or hold the worker's file operations; the sqlite store
 * takes it as `testing.fs`, and the messages between the threads carry no test hooks.
 */
export interface StoreFsModule {
  url: string;
  data?: unknown;
}

export async function loadStoreFs(module: StoreFsModule | undefined): Promise<StoreFs> {
  if (!module) return nodeFs;
  const loaded = (await import(module.url)) as { createStoreFs(data: unknown): StoreFs | Promise<StoreFs> };
  return await loaded.createStoreFs(module.data);
}
