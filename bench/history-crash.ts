// A child of bench/history.ts: opens the store, appends HISTORY_EVENTS events to its journal and
// exits without closing it, as a crash would leave the files: the next start replays them.
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { historyEvent } from './history-data.ts';

const path = process.env.HISTORY_DB!;
const count = Number(process.env.HISTORY_EVENTS);
const now = Number(process.env.HISTORY_NOW);
const users = Number(process.env.HISTORY_USERS);
const days = Number(process.env.HISTORY_DAYS);
// No seal while it appends: a seal would take the events out of the journal, and the start-up
// measured is the one with the whole journal to replay.
const store = await openSqliteStore({ path, retentionDays: days, now: () => now, log: () => {}, sealEvents: Number.MAX_SAFE_INTEGER });
const first = 1e9 + Math.floor(Math.random() * 1e9);
for (let i = 0; i < count; i += 500) {
  const batch = [];
  for (let j = i; j < Math.min(count, i + 500); j++) batch.push(historyEvent(first + j, now - 1000 + Math.floor((j / count) * 1000), users));
  await store.insert(batch);
}
process.exit(0);
