// Live delivery across instances: every insert statement NOTIFYs the seqs it stored on the
// deployment's channel; each instance LISTENs on a connection of its own, loads the events other
// instances announced and hands them to its listener (Store.watch), in commit order.
import postgres from 'postgres';
import type { StoredEvent } from '../../event.ts';
import { DAY_MS } from '../../stats.ts';
import { pgArray, toEvent, type Guard, type Row } from './sql.ts';

export const DEFAULT_CHANNEL = 'watchtower_events';
/** How often an instance checks its LISTEN connection, and how long silence means it is lost. */
const LISTEN_PING_MS = 3000;
const LISTEN_TIMEOUT_MS = 8000;

export interface NotifyOptions {
  url: string;
  connectTimeout?: number;
  channel: string;
  /** This instance: its own NOTIFYs (its inserts, its pings) carry it, and are not loaded again. */
  instance: string;
  log: (msg: string) => void;
  isClosed: () => boolean;
}

/** Store.watch over the pool `sql`, and how to stop listening. */
export function notifications(sql: postgres.Sql, guard: Guard, { url, connectTimeout, channel, instance, log, isClosed }: NotifyOptions) {
  let listener: ((events: StoredEvent[]) => void) | null = null;
  let delivery: Promise<void> = Promise.resolve();

  // Announced rows were just committed, so they were received today or yesterday (by this
  // instance's clock; the partitions of days after it are kept too): the bound spares the
  // planner every older partition. A row an instance stamped with a clock off by more than a day
  // is stored and readable but not pushed live, as delivery across instances is best effort.
  const loadBySeq = async (seqs: number[]) => {
    const since = new Date((Math.floor(Date.now() / DAY_MS) - 1) * DAY_MS).toISOString();
    const rows = await sql<Row[]>`
      select event from watchtower_events
      where seq = any(${pgArray(seqs)}::bigint[]) and received_at >= ${since}::timestamptz order by seq`;
    return rows.map(toEvent);
  };

  const onNotify = (payload: string) => {
    lastHeard = Date.now();
    const space = payload.indexOf(' ');
    if (space < 0 || payload.slice(0, space) === instance || !listener) return;
    const seqs = payload.slice(space + 1).split(',').map(Number).filter(Number.isSafeInteger);
    if (!seqs.length) return;
    const deliver = listener;
    // Loads run in parallel on the pool; deliveries keep the order of the notifications (commit
    // order). Live delivery is best effort, as for a subscriber that reconnects: the events are stored.
    const loading = guard('load announced events', () => loadBySeq(seqs)).catch((err: unknown) => {
      log(`could not load events announced by another instance: ${err instanceof Error ? err.message : err}`);
      return [];
    });
    delivery = delivery
      .then(() => loading)
      .then((events) => void (events.length && deliver(events)))
      .catch((err: unknown) => log(`live delivery failed: ${err instanceof Error ? err.message : err}`));
  };

  // postgres.js re-issues LISTEN after its connection drops, but gives up silently if that attempt
  // fails too (the database still down), and a later listen() on the same client can wait on the
  // failed attempt. So each instance NOTIFYs itself every few seconds; when its own pings stop
  // arriving, it throws the LISTEN client away and listens again on a new one.
  let listenSql: postgres.Sql | null = null;
  let starting = false;
  let lastHeard = Date.now();
  const startListening = async () => {
    if (starting || isClosed()) return;
    starting = true;
    const old = listenSql;
    listenSql = null;
    if (old) void old.end({ timeout: 1 }).catch(() => {});
    const fresh = postgres(url, { max: 1, connect_timeout: connectTimeout ?? 5, onnotice: () => {}, fetch_types: false });
    listenSql = fresh;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        fresh.listen(channel, onNotify, () => {
          lastHeard = Date.now();
          log(`listening for other instances' events on "${channel}"`);
        }),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), LISTEN_TIMEOUT_MS))),
      ]);
    } catch (err) {
      log(`LISTEN failed (${err instanceof Error ? err.message : err}); retrying`);
    } finally {
      clearTimeout(timer);
      starting = false;
    }
    if (isClosed()) await fresh.end({ timeout: 1 }).catch(() => {});
  };
  let pinger: ReturnType<typeof setInterval> | null = null;
  const ping = () => {
    if (isClosed()) return;
    if (Date.now() - lastHeard > LISTEN_TIMEOUT_MS) {
      lastHeard = Date.now();
      void startListening();
    }
    sql`select pg_notify(${channel}, ${instance + ' ping'})`.catch(() => {});
  };

  return {
    watch(fn: (events: StoredEvent[]) => void) {
      listener = fn;
      if (pinger) return;
      void startListening();
      pinger = setInterval(ping, LISTEN_PING_MS);
      // Never keeps a process alive on its own (Node; Deno's timers have no unref here).
      (pinger as { unref?: () => void }).unref?.();
    },
    async close() {
      listener = null;
      if (pinger) clearInterval(pinger);
      await listenSql?.end({ timeout: 1 }).catch(() => {});
    },
  };
}
