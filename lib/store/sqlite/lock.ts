// One process per database: a lock file beside it, `<db>.lock`, naming the process that holds it,
// as PostgreSQL's postmaster.pid and Prometheus's lock file do. Without it a second process could
// open the database while the first still writes it: measured, a server restarted while the old one
// was still writing its shutdown snapshot removed that snapshot as "unfinished", then failed to start.
//
// Node has no file locks (flock), so the lock is the file's existence, taken atomically:
// - Our record (pid, host, boot id, the process's start time, a random token) is written to a temp
//   name first and then linked as `<db>.lock`. A link fails if the name exists, so exactly one
//   process gets it, and whoever reads the lock file reads a whole record.
// - A lock whose holder is gone (kill -9, a crash, a power loss) is stale and is taken over. The
//   holder is alive if a process with its pid exists and, where /proc tells, it is the same process
//   (same boot, same start time: pids are reused) and not a zombie. A lock naming this very process
//   is stale unless this process holds it (a copy of a directory; or the pid was the old holder's
//   too, as when a container restarts its server as pid 1).
// - A stale lock is replaced by a rename (atomic: the lock never disappears) by one process at a
//   time: the one that linked `<db>.lock.takeover` first, which checks that the lock is still the
//   stale one it judged before replacing it. Processes started together on a stale lock therefore
//   agree on one holder.
//
// Limits: the database must be on a local file system (on a shared one, a holder on another machine
// cannot be checked, and one whose boot id differs is taken for stale). Without /proc (macOS,
// Windows) a holder's reused pid looks alive: the lock is then refused until its file is deleted
// by hand. A process that died in the microseconds between linking the takeover name and removing
// it leaves that name; it is removed as stale, and two processes doing that at the same moment
// could both take over.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { errorCode, writeNewFile, type StoreFs } from '../fs.ts';

/** Another process holds the database. */
export class DatabaseLockedError extends Error {
  constructor(readonly path: string, readonly pid: number, message: string) {
    super(message);
    this.name = 'DatabaseLockedError';
  }
}

export interface DatabaseLock {
  readonly path: string;
  /** Deletes the lock file if it is still ours. */
  release(): Promise<void>;
}

interface Holder {
  pid: number;
  host: string;
  /** The kernel's boot id; null without /proc. */
  boot: string | null;
  /** The process's start time (clock ticks since boot, /proc/<pid>/stat); null without /proc. */
  start: string | null;
  since: string;
  token: string;
}

/** Tries before giving up on a lock that keeps changing (a takeover takes milliseconds). */
const ATTEMPTS = 25;

/** Lock files held by this process (by absolute path): another store here must not open them. */
const heldHere = new Set<string>();

export const lockPath = (dbPath: string) => `${dbPath}.lock`;

/**
 * Takes the database's lock, or throws DatabaseLockedError naming the holder. Call before touching
 * any other file of the database.
 */
export async function lockDatabase(fs: StoreFs, dbPath: string, log: (msg: string) => void = () => {}): Promise<DatabaseLock> {
  const lock = lockPath(dbPath);
  const key = resolve(lock);
  if (heldHere.has(key)) {
    throw new DatabaseLockedError(dbPath, process.pid, `${dbPath} is already open in this process (pid ${process.pid}): one store per database`);
  }
  heldHere.add(key);
  const me: Holder = { pid: process.pid, host: hostname(), boot: bootId(), start: procStat(process.pid)?.start ?? null, since: new Date().toISOString(), token: Math.random().toString(36).slice(2, 12) };
  const text = JSON.stringify(me) + '\n';
  const temp = `${lock}.${me.pid}.${me.token}`;
  const takeover = `${lock}.takeover`;
  try {
    // Synced before it is linked, like every file the store names: after a power loss the lock
    // file holds a whole record or is absent, never a torn one.
    await writeNewFile(fs, temp, new TextEncoder().encode(text));
    try {
      for (let attempt = 0; ; attempt++) {
        if (attempt === ATTEMPTS) throw new Error(`${lock}: could not take the lock (it keeps changing)`);
        if (await linked(fs, temp, lock)) break;
        const held = await readRecord(fs, lock);
        if (held === null) continue; // released meanwhile
        if (held.record && alive(held.record)) throw lockedBy(dbPath, held.record, 'in use by');
        // Stale. One process at a time replaces it: whoever holds the takeover name.
        if (!(await linked(fs, temp, takeover))) {
          const taker = await readRecord(fs, takeover);
          if (taker?.record && alive(taker.record)) {
            // It is done in a moment, and may yet find another process was quicker: ask again then,
            // to name the one that holds the database.
            if (attempt < ATTEMPTS - 1) {
              await new Promise((r) => setTimeout(r, 20));
              continue;
            }
            throw lockedBy(dbPath, taker.record, 'being opened by');
          }
          // Left by a process that died while taking over.
          if (taker) await fs.remove(takeover);
          continue;
        }
        try {
          // Still the lock we judged stale? Another process may have replaced it before we got here.
          if ((await readRecord(fs, lock))?.text !== held.text) continue;
          await fs.rename(temp, lock);
          log(`lock: took over ${lock} from ${held.record ? `process ${held.record.pid}, which is not running` : 'an unreadable lock file'}`);
          break;
        } finally {
          await fs.remove(takeover);
        }
      }
    } finally {
      await fs.remove(temp);
    }
    await removeLeftovers(fs, lock, me);
  } catch (err) {
    heldHere.delete(key);
    throw err;
  }
  return {
    path: lock,
    async release() {
      try {
        if ((await readRecord(fs, lock))?.record?.token === me.token) await fs.remove(lock);
      } finally {
        heldHere.delete(key);
      }
    },
  };
}

/** link(from, to); false if `to` exists. */
async function linked(fs: StoreFs, from: string, to: string): Promise<boolean> {
  try {
    await fs.link(from, to);
    return true;
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw err;
  }
}

/** A lock file's text and record (null record: unreadable, as a power loss can leave it); null if absent. */
async function readRecord(fs: StoreFs, path: string): Promise<{ text: string; record: Holder | null } | null> {
  const bytes = await fs.read(path);
  if (bytes === null) return null;
  const text = new TextDecoder().decode(bytes);
  try {
    const r = JSON.parse(text) as Holder;
    return { text, record: Number.isInteger(r.pid) && r.pid > 0 && typeof r.token === 'string' ? r : null };
  } catch {
    return { text, record: null };
  }
}

function lockedBy(dbPath: string, r: Holder, what: string): DatabaseLockedError {
  const where = r.host === hostname() ? '' : ` on ${r.host}`;
  return new DatabaseLockedError(dbPath, r.pid,
    `${dbPath} is ${what} process ${r.pid}${where} (since ${r.since}): one process per database; stop it first ` +
    `(if no such process runs, delete ${lockPath(dbPath)})`);
}

/** Whether the process a lock record names is still running. */
function alive(r: Holder): boolean {
  // Not held by this process (checked first): a copy of a directory, or our pid was the holder's.
  if (r.pid === process.pid) return false;
  const boot = bootId();
  if (r.boot && boot && r.boot !== boot) return false; // the machine restarted since
  try {
    process.kill(r.pid, 0);
  } catch (err) {
    if (errorCode(err) === 'ESRCH') return false;
    // EPERM: it exists, as another user's process.
  }
  const stat = procStat(r.pid);
  if (stat && (stat.state === 'Z' || stat.state === 'X')) return false; // exited, not yet reaped
  if (stat && r.start && stat.start !== r.start) return false; // the pid now names another process
  return true;
}

function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** A process's state letter and start time from /proc/<pid>/stat; null where there is no /proc. */
function procStat(pid: number): { state: string; start: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may hold spaces and parentheses; the start time is field 22.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], start: fields[19] };
  } catch {
    return null;
  }
}

/** Temp names of the lock (`<db>.lock.<pid>.<token>`) that processes which are gone left behind. */
async function removeLeftovers(fs: StoreFs, lock: string, me: Holder): Promise<void> {
  const prefix = basename(lock) + '.';
  for (const name of await fs.list(dirname(lock))) {
    const m = /^(\d+)\.(\w+)$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : '');
    if (!m || m[2] === me.token) continue;
    const pid = Number(m[1]);
    if (pid === me.pid || !alive({ ...me, pid, start: null })) await fs.remove(join(dirname(lock), name));
  }
}
