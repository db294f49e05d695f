// Which events of an insert are new, decided on the main thread before journaling: the journal
// holds new events only, so a replay never stores again an event that is in a sealed segment. The
// first of two equal (owner, id) wins; the keys are claimed until the write is done (released if
// it fails).
import type { StoredEvent } from '../../event.ts';
import type { Dedupe } from './dedupe.ts';
import { ownerKey } from './row.ts';
import { asciiJson, wideCampaign } from '../../event-fields.ts';
import { flatCopy } from '../../flat-string.ts';

export interface ClaimedBatch {
  /** The new events, and their journal lines. */
  stored: StoredEvent[];
  lines: string;
  /** The write is durable: the claimed keys are stored keys. */
  keep(): void;
  /** The write failed: the keys are free again. */
  release(): void;
}

/** Claims the keys of the new events of `events` (`texts`: their JSON, when the caller has it). */
export function claimNew(dedupe: Dedupe, events: readonly StoredEvent[], texts?: readonly string[]): ClaimedBatch {
  const stored: StoredEvent[] = [];
  const claimed: [string, string][] = [];
  let lines = '';
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    const owner = ownerKey(e.user_id);
    if (dedupe.has(owner, e.id)) continue;
    // Ids generated here (uuidv7) are concatenations: held by the dedupe set, flat copies take a
    // fraction of the heap (BENCHMARKS.md, History).
    const id = flatCopy(e.id);
    dedupe.claim(owner, id);
    claimed.push([owner, id]);
    stored.push(e);
    const text = texts ? texts[i] : JSON.stringify(e);
    lines += '{"e":' + (wideCampaign(e.utm) ? asciiJson(text) : text) + '}\n';
  }
  return {
    stored,
    lines,
    keep() {
      for (const [owner, id] of claimed) {
        dedupe.unclaim(owner, id);
        dedupe.add(owner, id);
      }
    },
    release() {
      for (const [owner, id] of claimed) dedupe.unclaim(owner, id);
    },
  };
}
