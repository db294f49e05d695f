// The states a power loss can leave a directory in, at every point of a trace recorded by
// recording-fs.ts, as SQLite's crash tests and the ALICE study enumerate them.
//
// The model (what POSIX promises, no more):
// - a file's bytes are durable once the file was synced after they were written; bytes written or
//   cut since its last sync may be lost, kept, or kept in part: a prefix of those operations, the
//   last one possibly torn (a prefix of its bytes);
// - a directory entry (create, rename, link, remove) is durable once its directory was synced;
//   each operation since the last sync may or may not have happened, in any combination (applied in
//   order; one whose source is gone by then does nothing).
// The store keeps everything in one directory, so the model has one.
import { createHash } from 'node:crypto';
import { basename, dirname } from 'node:path';
import type { LogEntry } from './recording-fs.ts';

type ContentOp = { kind: 'append'; bytes: Uint8Array } | { kind: 'truncate'; size: number };
type DirOp =
  | { kind: 'create'; name: string; inode: number }
  | { kind: 'rename'; from: string; to: string }
  | { kind: 'link'; from: string; to: string }
  | { kind: 'remove'; name: string };

interface Inode {
  durable: Uint8Array;
  /** Written or cut since the last sync, in order. */
  pending: ContentOp[];
}

/** A file of a state: its bytes, or the earlier name (in sorted order) of the same file, for a hard link. */
export type StateFile = { bytes: Uint8Array; linkOf?: undefined } | { bytes: Uint8Array; linkOf: string };

/** A state to check: the files a power loss would leave, by name (sorted), and how it was chosen. */
export interface CrashState {
  /** The crash came right after this entry of the trace (its index). */
  after: number;
  variant: string;
  files: Map<string, StateFile>;
  key: string;
}

/** A content choice per inode: how many pending operations survive, and how much of the last if it is torn. */
type ContentChoice = (inode: number, ops: ContentOp[]) => { keep: number; tear?: number };

class Model {
  inodes: Inode[] = [];
  durableDir = new Map<string, number>();
  pendingDir: DirOp[] = [];
  private files = new Map<string, number>();
  dir: string | null = null;

  private name(path: string): string {
    this.dir ??= dirname(path);
    if (dirname(path) !== this.dir) throw new Error(`${path}: the model has one directory, ${this.dir}`);
    return basename(path);
  }

  volatileDir(): Map<string, number> {
    return applyDirOps(this.durableDir, this.pendingDir);
  }

  apply(e: LogEntry): void {
    switch (e.op) {
      case 'mark':
        return;
      case 'mkdir':
        throw new Error('the trace must start in an existing directory');
      case 'open': {
        const name = this.name(e.path);
        if (e.how === 'new') {
          this.inodes.push({ durable: new Uint8Array(0), pending: [] });
          this.pendingDir.push({ kind: 'create', name, inode: this.inodes.length - 1 });
          this.files.set(e.file, this.inodes.length - 1);
        } else {
          const inode = this.volatileDir().get(name);
          if (inode === undefined) throw new Error(`opened ${name}, which the model does not have`);
          this.files.set(e.file, inode);
        }
        return;
      }
      case 'append':
        this.inode(e.file).pending.push({ kind: 'append', bytes: e.bytes });
        return;
      case 'truncate':
        this.inode(e.file).pending.push({ kind: 'truncate', size: e.size });
        return;
      case 'sync': {
        const inode = this.inode(e.file);
        inode.durable = contentOf(inode, inode.pending.length);
        inode.pending = [];
        return;
      }
      case 'rename':
        this.pendingDir.push({ kind: 'rename', from: this.name(e.from), to: this.name(e.to) });
        return;
      case 'link':
        this.pendingDir.push({ kind: 'link', from: this.name(e.from), to: this.name(e.to) });
        return;
      case 'remove':
        this.pendingDir.push({ kind: 'remove', name: this.name(e.path) });
        return;
      case 'syncDir':
        this.name(e.dir + '/x');
        this.durableDir = this.volatileDir();
        this.pendingDir = [];
        return;
    }
  }

  private inode(file: string): Inode {
    const i = this.files.get(file);
    if (i === undefined) throw new Error(`unknown file ${file}`);
    return this.inodes[i];
  }

  /** The files a power loss leaves when the directory operations `keepDir` and the contents `content` survive. */
  state(keepDir: (i: number) => boolean, content: ContentChoice): Map<string, StateFile> {
    const dir = applyDirOps(this.durableDir, this.pendingDir.filter((_, i) => keepDir(i)));
    const files = new Map<string, StateFile>();
    // Two names of one file (the snapshot's second name) stay one file: what happens to one
    // happens to the other.
    const named = new Map<number, string>();
    for (const name of [...dir.keys()].sort()) {
      const i = dir.get(name)!;
      const first = named.get(i);
      if (first !== undefined) {
        files.set(name, { bytes: files.get(first)!.bytes, linkOf: first });
        continue;
      }
      named.set(i, name);
      const { keep, tear } = content(i, this.inodes[i].pending);
      files.set(name, { bytes: contentOf(this.inodes[i], keep, tear) });
    }
    return files;
  }
}

function applyDirOps(start: Map<string, number>, ops: DirOp[]): Map<string, number> {
  const dir = new Map(start);
  for (const op of ops) {
    if (op.kind === 'create') dir.set(op.name, op.inode);
    else if (op.kind === 'remove') dir.delete(op.name);
    else if (dir.has(op.from) && (op.kind === 'rename' || !dir.has(op.to))) {
      dir.set(op.to, dir.get(op.from)!);
      if (op.kind === 'rename') dir.delete(op.from);
    }
  }
  return dir;
}

/** An inode's bytes with its first `keep` pending operations applied, the last of them torn to `tear` bytes if given. */
function contentOf(inode: Inode, keep: number, tear?: number): Uint8Array {
  let bytes = inode.durable;
  for (let i = 0; i < keep; i++) {
    const op = inode.pending[i];
    if (op.kind === 'truncate') {
      bytes = bytes.slice(0, Math.min(op.size, bytes.length));
    } else {
      const add = i === keep - 1 && tear !== undefined ? op.bytes.subarray(0, tear) : op.bytes;
      const next = new Uint8Array(bytes.length + add.length);
      next.set(bytes);
      next.set(add, bytes.length);
      bytes = next;
    }
  }
  return bytes;
}

function keyOf(files: Map<string, StateFile>): string {
  const hash = createHash('sha1');
  for (const [name, file] of files) {
    hash.update(`${name}\0${file.linkOf ?? ''}\0${file.bytes.length}\0`);
    if (!file.linkOf) hash.update(file.bytes);
  }
  return hash.digest('hex');
}

/** A seeded generator (mulberry32), so a failing state can be found again. */
export function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Enumeration {
  /** Distinct states, each at the last point of the trace it occurs at, in trace order. */
  states: CrashState[];
  /** States generated before duplicates were dropped. */
  generated: number;
  /** The directory the trace ran in. */
  dir: string;
}

/**
 * At each point of the trace: all volatile operations lost; all kept; names kept and data lost, and
 * the reverse; each volatile file operation torn (appends at a few offsets) with the rest kept;
 * each volatile directory operation alone lost, and each prefix of them kept; and `samples` seeded
 * random combinations.
 *
 * A state that occurs at several points is kept once, at the last of them: what must survive only
 * grows along the trace (more acknowledgements), so the last point is the strictest. Marks for
 * which `newEpoch` is true end that (a change of clock changes what retention must have removed):
 * states are told apart by epoch.
 */
export function enumerateCrashStates(
  trace: LogEntry[],
  options: { samples: number; seed: number; newEpoch?: (mark: Record<string, unknown>) => boolean },
): Enumeration {
  const model = new Model();
  const rand = random(options.seed);
  const byKey = new Map<string, CrashState>();
  let generated = 0;
  let epoch = 0;
  const add = (after: number, variant: string, files: Map<string, StateFile>) => {
    generated++;
    const key = `${epoch}:${keyOf(files)}`;
    byKey.delete(key); // re-inserted: the map's order stays the order of last occurrence
    byKey.set(key, { after, variant, files, key });
  };
  const all = () => true, none = () => false;
  const keepAll: ContentChoice = (_, ops) => ({ keep: ops.length });
  const keepNone: ContentChoice = () => ({ keep: 0 });

  for (let at = 0; at < trace.length; at++) {
    const entry = trace[at];
    model.apply(entry);
    if (entry.op === 'mark') {
      if (options.newEpoch?.(entry.mark)) epoch++;
      else continue; // the same files as after the entry before
    }
    add(at, 'all volatile operations lost', model.state(none, keepNone));
    add(at, 'all volatile operations kept', model.state(all, keepAll));
    add(at, 'directory operations kept, unsynced data lost', model.state(all, keepNone));
    add(at, 'directory operations lost, unsynced data kept', model.state(none, keepAll));
    // Each volatile file operation torn, every other one kept.
    model.inodes.forEach((inode, target) => {
      inode.pending.forEach((op, k) => {
        const tears = op.kind === 'append' ? [...new Set([0, 1, op.bytes.length >> 1, op.bytes.length - 1])].filter((t) => t >= 0 && t < op.bytes.length) : [undefined];
        for (const tear of tears) {
          const choice: ContentChoice = (i, ops) => (i === target ? { keep: tear === undefined ? k : k + 1, tear } : { keep: ops.length });
          add(at, `inode ${target}: ${k} of ${inode.pending.length} volatile writes kept${tear === undefined ? '' : `, the next torn at ${tear} bytes`}`, model.state(all, choice));
        }
      });
    });
    // Each volatile directory operation lost alone; each prefix of them kept.
    const n = model.pendingDir.length;
    for (let j = 0; j < n; j++) {
      add(at, `directory operation ${j + 1} of ${n} lost`, model.state((i) => i !== j, keepAll));
      add(at, `first ${j} of ${n} directory operations kept`, model.state((i) => i < j, keepAll));
    }
    for (let s = 0; s < options.samples; s++) {
      const keepDir = model.pendingDir.map(() => rand() < 0.5);
      const content: ContentChoice = (_, ops) => {
        const keep = Math.floor(rand() * (ops.length + 1));
        const last = ops[keep - 1];
        return last?.kind === 'append' && rand() < 0.5 ? { keep, tear: Math.floor(rand() * last.bytes.length) } : { keep };
      };
      add(at, `random sample ${s + 1}`, model.state((i) => keepDir[i], content));
    }
  }
  return { states: [...byKey.values()], generated, dir: model.dir ?? '' };
}
