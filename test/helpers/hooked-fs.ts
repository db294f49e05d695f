// A StoreFs (lib/store/fs.ts) that lets a test act just before the store renames a file onto a given
// path — the moment a snapshot's temp file, written and synced, is about to replace the database
// file. The test arms the hook, waits until a rename onto that path is held, does what it wants
// with the rename still to come (copy the directory as a crash would leave it, acknowledge an
// insert, stop the database worker), then lets the rename go on or fail.
//
// The rename may run on the database worker, which cannot call back into the test: the hook and the
// test share a SharedArrayBuffer (it reaches the worker in the store's init message, see
// StoreFsModule) and hand over with Atomics. The held rename waits asynchronously, so the worker
// goes on handling messages meanwhile, as it does while a slow rename runs.
//
// Every other operation goes to the wrapped StoreFs: node:fs, or another test module (the recording
// one of the power-loss test).
import { loadStoreFs, type StoreFs, type StoreFsModule } from '../../lib/store/fs.ts';

// Int32 slots of the shared buffer.
const ARMED = 0; // 1: the next rename onto the path is held (the first thread to claim it sets 0)
const STATE = 1; // one of the states below
const IDLE = 0;
const HELD = 1;
const GO = 2;
const FAIL = 3;

/** The message of the error a rename fails with when the test says so. */
export const SIMULATED_CRASH = 'simulated crash before the rename';

export class RenameHook {
  readonly shared = new SharedArrayBuffer(8);
  private slots = new Int32Array(this.shared);

  constructor(readonly path: string) {}

  /** The StoreFs module to give the store (`testing.fs`); `inner` supplies the operations (default node:fs). */
  module(inner?: StoreFsModule): StoreFsModule {
    return { url: import.meta.url, data: { path: this.path, shared: this.shared, inner } };
  }

  /** The next rename onto the path, on either thread, is held until `release`. */
  arm(): void {
    Atomics.store(this.slots, STATE, IDLE);
    Atomics.store(this.slots, ARMED, 1);
  }

  /** Settles once a rename is held; fails if none is within `timeoutMs` (the store never renamed). */
  async held(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Atomics.load(this.slots, STATE) !== HELD) {
      if (Date.now() > deadline) throw new Error(`no rename onto ${this.path} was held within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Lets the held rename go on, or fail with SIMULATED_CRASH (as a failed rename would). */
  release(outcome: 'rename' | 'fail' = 'rename'): void {
    if (Atomics.load(this.slots, STATE) !== HELD) throw new Error('no rename is held');
    Atomics.store(this.slots, STATE, outcome === 'rename' ? GO : FAIL);
    Atomics.notify(this.slots, STATE);
  }
}

/**
 * Waits, without blocking the thread, until the slot no longer holds `value`. It polls with a timer
 * rather than Atomics.waitAsync: Node does not count a pending waitAsync as work, so a process
 * whose only pending work is a held rename could end mid-await (exit code 13).
 */
async function waitWhile(slots: Int32Array, index: number, value: number): Promise<void> {
  while (Atomics.load(slots, index) === value) await new Promise((r) => setTimeout(r, 2));
}

/** Called by the store, on each thread (see StoreFsModule). */
export async function createStoreFs(data: { path: string; shared: SharedArrayBuffer; inner?: StoreFsModule }): Promise<StoreFs> {
  const inner = await loadStoreFs(data.inner);
  const slots = new Int32Array(data.shared);
  return {
    ...inner,
    async rename(from, to) {
      if (to === data.path && Atomics.compareExchange(slots, ARMED, 1, 0) === 1) {
        Atomics.store(slots, STATE, HELD);
        await waitWhile(slots, STATE, HELD);
        if (Atomics.load(slots, STATE) === FAIL) throw new Error(`${SIMULATED_CRASH} of ${from}`);
      }
      return inner.rename(from, to);
    },
  };
}
