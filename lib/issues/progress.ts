// Issue grouping's progress in the record store, written in the same put as the issues it counted
// (so all or none: lib/issues/feed.ts says what the positions mean):
// - one `issue-checkpoint` record: every owner's errors up to `through` are counted;
// - one `issue-progress` record per owner that got ahead of it: that owner's errors up to `done`.
// Both are owned by a service account no user can sign in as, like the alert owners' list.
import type { RecordStore, StoredRecord } from '../records/types.ts';

export const PROGRESS_OWNER = 'watchtower:issues';
const CHECKPOINT_KIND = 'issue-checkpoint';
const CHECKPOINT_ID = 'errors';
const PROGRESS_KIND = 'issue-progress';

export interface Progress {
  through: number;
  done: Map<string, number>;
}

/** The stored progress; null before the first slice was ever counted (a new or upgraded store). */
export async function loadProgress(records: RecordStore): Promise<Progress | null> {
  const checkpoint = await records.get<{ through: number }>(CHECKPOINT_KIND, CHECKPOINT_ID, PROGRESS_OWNER);
  if (!checkpoint) return null;
  const through = checkpoint.body.through;
  const done = new Map<string, number>();
  for (const r of await records.list<{ owner: string; done: number }>(PROGRESS_KIND, PROGRESS_OWNER)) {
    if (r.body.done > through) done.set(r.body.owner, r.body.done);
  }
  return { through, done };
}

/** The records that store a slice's progress: the checkpoint, and where each of `owners` stands. */
export function progressRecords(through: number, owners: Iterable<[owner: string, done: number]>): StoredRecord[] {
  const out: StoredRecord[] = [{ kind: CHECKPOINT_KIND, id: CHECKPOINT_ID, userId: PROGRESS_OWNER, body: { through } }];
  // Owner ids are the identity provider's: any text. The record's id only needs to be unique.
  for (const [owner, done] of owners) out.push({ kind: PROGRESS_KIND, id: owner, userId: PROGRESS_OWNER, body: { owner, done } });
  return out;
}
