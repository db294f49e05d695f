// A user's rollups as a segmented store keeps them, beside the events they hold, for stateful
// property tests: the newest segment (tag) takes events, a seal freezes it and opens the next, an
// idle moment merges closed days, and retention drops the oldest segment with its events.
import type { StoredEvent } from '../../lib/event.ts';
import { rollupRow } from '../../lib/rollup/hour.ts';
import { UserRollups } from '../../lib/rollup/user.ts';

export class SegmentsModel {
  readonly rollups = new UserRollups(Infinity);
  private readonly held = new Map<number, StoredEvent[]>();
  private tag = 0;
  private oldest = 0;

  /** Into the newest segment. */
  add(e: StoredEvent): void {
    this.rollups.add(rollupRow(e), this.tag);
    this.held.set(this.tag, [...(this.held.get(this.tag) ?? []), e]);
  }

  seal(): void {
    this.rollups.freeze(this.tag++);
  }

  /** Merges every closed day not merged yet, as reads and idle moments do. */
  idle(): void {
    while (this.rollups.mergePending(Infinity));
  }

  /** Drops the oldest sealed segment, if there is one. */
  drop(): void {
    if (this.oldest >= this.tag) return;
    this.rollups.drop(this.oldest);
    this.held.delete(this.oldest++);
  }

  /** Runs a seal, idle or drop op; false for any other kind (the test's own). */
  apply(op: { kind: string }): boolean {
    if (op.kind === 'seal') this.seal();
    else if (op.kind === 'idle') this.idle();
    else if (op.kind === 'drop') this.drop();
    else return false;
    return true;
  }

  /** Every event the segments hold. */
  events(): StoredEvent[] {
    return [...this.held.values()].flat();
  }
}
