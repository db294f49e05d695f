// Which environments of a batch are counted in scopes of their own (lib/environment-scopes.ts), on
// the PostgreSQL store: watchtower_admit_environments (migration 19) decides for the names this
// instance has not seen decided, before the batch's statement counts them. A decision never
// changes here (a scope is never dropped, a full owner stays full), so each instance keeps those
// it saw. Admitted in a statement of its own, before the insert's: a name admitted for a batch
// that then fails has a scope with no events, which is exact; a name refused so leaves the owner
// full, which only sends its reads to the events.
import type postgres from 'postgres';
import { environmentOfEvent, MAX_ENVIRONMENT_SCOPES } from '../../../environment-scopes.ts';
import type { StoredEvent } from '../../../event.ts';
import { col, pgArray, type Guard } from '../sql.ts';

/** Decisions kept per instance (owner and name): cleared whole past this, then asked again. */
const MAX_DECIDED = 50_000;

/** Whether an owner's events of an environment are counted in its scopes. */
export type Admitted = (userId: string, environment: string) => boolean;

export function environmentAdmission(sql: postgres.Sql, guard: Guard) {
  const decided = new Map<string, boolean>();
  const keyOf = (user: string, name: string) => `${user}\u0000${name}`;
  return async (batch: readonly StoredEvent[]): Promise<Admitted> => {
    // This batch's decisions, apart from the instance's (which may be cleared meanwhile).
    const mine = new Map<string, boolean>();
    // In the order first sent: the function admits an owner's names in that order.
    const asked = new Map<string, { user: string; name: string; sent: string }>();
    for (const e of batch) {
      if (e.user_id === null) continue;
      const name = environmentOfEvent(e);
      if (name === null) continue;
      const user = col(e.user_id)!, k = keyOf(user, name);
      const known = decided.get(k);
      if (known !== undefined) {
        mine.set(k, known);
        continue;
      }
      const a = asked.get(k);
      if (!a) asked.set(k, { user, name, sent: e.receivedAt });
      else if (Date.parse(e.receivedAt) < Date.parse(a.sent)) a.sent = e.receivedAt;
    }
    if (asked.size) {
      const list = [...asked.values()];
      const rows = await guard('insert', () => sql<{ owner: string; name: string }[]>`
        select owner, name from watchtower_admit_environments(${pgArray(list.map((a) => a.user))}::text[],
          ${pgArray(list.map((a) => a.name))}::text[], ${pgArray(list.map((a) => a.sent))}::timestamptz[], ${MAX_ENVIRONMENT_SCOPES}::integer)`);
      if (decided.size + asked.size > MAX_DECIDED) decided.clear();
      for (const k of asked.keys()) mine.set(k, false);
      for (const r of rows) mine.set(keyOf(r.owner, r.name), true);
      for (const k of asked.keys()) decided.set(k, mine.get(k)!);
    }
    return (user, name) => mine.get(keyOf(user, name)) === true;
  };
}
