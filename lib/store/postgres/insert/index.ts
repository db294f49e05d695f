// The write path of the PostgreSQL store (Store.insert): group commit in front (./group-commit.ts),
// then per batch the partitions it needs, the batch statement or the exact one (./statements.ts),
// and the retries of deadlocks and of partitions dropped meanwhile.
import type postgres from 'postgres';
import type { StoredEvent } from '../../../event.ts';
import type { Store } from '../../types.ts';
import { DAYS_AHEAD, type Partitions } from '../maintenance/partitions.ts';
import { col, type Guard } from '../sql.ts';
import { batchColumns, counterColumns, eventColumns, prepare } from './columns.ts';
import { environmentAdmission } from './environments.ts';
import { groupCommit } from './group-commit.ts';
import { insertStatements } from './statements.ts';

/** SQLSTATE of watchtower_all_new: a batch insert met ids stored before (migration 8). */
const BATCH_HAD_STORED_IDS = 'WT001';
/** Insert statements running at once per instance (of different users), and the most events one carries. */
const MAX_INFLIGHT = 4;
const MAX_GROUP_EVENTS = 2000;

export interface InsertOptions {
  channel: string;
  instance: string;
  log: (msg: string) => void;
  /** Called with how many events each batch newly stored (the upkeep counts them). */
  stored: (n: number) => void;
}

export function insertPath(sql: postgres.Sql, guard: Guard, { knownDays, ensurePartitions }: Partitions,
  { channel, instance, log, stored }: InsertOptions): Store['insert'] {
  const { batchStatement, insertStatement } = insertStatements(sql, guard, channel, instance);
  const admit = environmentAdmission(sql, guard);
  /**
   * Inserts distinct events; resolves to the keys that were newly stored. The batch statement
   * first: it stores the whole batch, or, when an id of it is stored already (a retry), fails
   * whole (BATCH_HAD_STORED_IDS) and the exact statement, which checks event by event, runs instead.
   */
  const writeBatch = async (batch: StoredEvent[]): Promise<Set<string>> => {
    // Environments are given scopes before the statement counts them (./environments.ts).
    const prepared = prepare(batch, texts, await admit(batch));
    const days = prepared.map((p) => p.day);
    const missing = [...new Set(days)].filter((d) => !knownDays.has(d));
    if (missing.length) await ensurePartitions(Math.min(...missing), Math.max(...missing) + DAYS_AHEAD);
    const rows = eventColumns(prepared);
    let exact = false;
    // Two statements inserting the same (owner, id)s or counters in different orders (a client
    // retrying a batch on another instance) can deadlock; PostgreSQL aborts one whole statement,
    // which is then simply run again.
    for (let attempt = 1; ; attempt++) {
      try {
        if (exact) return await insertStatement(rows, counterColumns(prepared));
        await batchStatement(rows, batchColumns(prepared), prepared.length);
        return new Set(batch.map((e) => `${col(e.user_id) ?? ''}\u0000${col(e.id)}`));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === BATCH_HAD_STORED_IDS && !exact) {
          exact = true;
          continue;
        }
        if (attempt >= 5 || (code !== '40P01' && code !== '23514')) throw err;
        if (code === '23514') {
          // "no partition of relation found for row": a partition this instance knew was dropped.
          knownDays.clear();
          await ensurePartitions(Math.min(...days), Math.max(...days) + DAYS_AHEAD);
        } else log(`insert deadlocked with another instance's; retrying (${attempt})`);
      }
    }
  };

  // Group commit (./group-commit.ts): one statement per user in flight, the
  // user's requests arriving meanwhile merged into the next one.
  // The texts the route serialised its events to (Store.insert), for the statements to reuse.
  const texts = new WeakMap<StoredEvent, string>();
  const insert = groupCommit(async (events) => {
    const fresh = await writeBatch(events);
    stored(fresh.size);
    return new Set(events.filter((e) => fresh.has(`${col(e.user_id) ?? ''}\u0000${col(e.id)}`)));
  }, { maxInflight: MAX_INFLIGHT, maxEvents: MAX_GROUP_EVENTS });

  return (events, serialised) => {
    serialised?.forEach((text, i) => texts.set(events[i], text));
    return insert(events);
  };
}
