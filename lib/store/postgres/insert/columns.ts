// The bound values of the insert statements (./statements.ts): what each event needs, computed
// once by the same functions as computeStats, as columns of arrays; and the rollups, per event for
// the exact statement or summed over the batch for the batch statement.
import type { StoredEvent } from '../../../event.ts';
import { DIM_KINDS, eventCounters, type Counter } from '../../../rollup/counters.ts';
import { rollupRow } from '../../../rollup/hour.ts';
import { DAY_MS, HOUR_MS, pageloadDuration } from '../../../stats.ts';
import { routeKey } from '../../../event-keys.ts';
import { environmentOfEvent } from '../../../environment-scopes.ts';
import { customEventName } from '../../../funnels/steps.ts';
import { col, pgArray, scopesOf } from '../sql.ts';
import type { Admitted } from './environments.ts';

/** What an insert needs of one event, computed once by the same functions as computeStats. */
interface Prepared {
  event: StoredEvent;
  /** JSON.stringify of the event: what is stored. */
  text: string;
  ms: number;
  day: number;
  hour: number;
  /** A latency point (pageloads with a duration): its duration, route, TTFB and client timestamp. */
  duration: number | null;
  routeKey: string | null;
  ttfb: number | null;
  /**
   * What a funnel step matches (watchtower_events.step_key, migration 21): a pageload's route key,
   * a custom event's name ('' when it has none), null for other types.
   */
  stepKey: string | null;
  /** The rollup scopes it counts in, and the counters it adds 1 to (none for unowned events). */
  scopes: string[];
  counters: Omit<Counter, 'n'>[];
}

/** `admitted`: whether an owner's environment has scopes of its own (./environments.ts). */
export function prepare(batch: readonly StoredEvent[], texts: WeakMap<StoredEvent, string>, admitted: Admitted): Prepared[] {
  let iso = '', ms = NaN;
  return batch.map((e) => {
    if (e.receivedAt !== iso) ms = Date.parse((iso = e.receivedAt));
    const duration = pageloadDuration(e);
    const ttfb = e.data.ttfb;
    // The statements split the texts at newlines (eventColumns): a caller's text holding one
    // (not JSON.stringify's) is not used.
    const given = texts.get(e);
    // Unowned events appear in no statistics.
    const owned = e.user_id !== null;
    const env = owned ? environmentOfEvent(e) : null;
    const route = e.type === 'pageload' ? col(routeKey(e)) : null;
    return {
      event: e, text: given !== undefined && !given.includes('\n') ? given : JSON.stringify(e), ms, day: Math.floor(ms / DAY_MS), hour: Math.floor(ms / HOUR_MS),
      duration, routeKey: duration === null ? null : route,
      stepKey: e.type === 'pageload' ? route : e.type === 'custom' ? col(customEventName(e)) ?? '' : null,
      ttfb: duration !== null && typeof ttfb === 'number' && Number.isFinite(ttfb) ? ttfb : null,
      scopes: !owned ? [] : scopesOf(e.projectId, env !== null && admitted(col(e.user_id)!, env) ? env : undefined),
      counters: owned ? eventCounters(rollupRow(e, ms)) : [],
    };
  });
}

/**
 * The bound values of one row per event, which both insert statements read (inputStep): the
 * columns as arrays, and the events' texts joined by newlines (JSON.stringify never writes one),
 * which the database splits far more cheaply than it would parse an array literal of them.
 */
export function eventColumns(prepared: readonly Prepared[]) {
  const column = <T extends string | number | null>(f: (p: Prepared) => T) => pgArray(prepared.map(f));
  return {
    texts: prepared.map((p) => p.text).join('\n'),
    id: column((p) => col(p.event.id)), user_id: column((p) => col(p.event.user_id)),
    project_id: column((p) => (p.event.projectId === undefined ? null : col(p.event.projectId))),
    type: column((p) => col(p.event.type)), received_at: column((p) => p.event.receivedAt), day: column((p) => p.day), hour: column((p) => p.hour),
    session_id: column((p) => col(p.event.sessionId)), app_version: column((p) => col(p.event.deployVersion)),
    route_key: column((p) => p.routeKey), step_key: column((p) => p.stepKey), duration: column((p) => p.duration), ttfb: column((p) => p.ttfb),
    ts: column((p) => (p.duration === null ? null : col(p.event.timestamp))),
  };
}
export type EventColumns = ReturnType<typeof eventColumns>;

/**
 * The rollup counters of the exact insert (insertStatement): one per counter an event adds to,
 * pointing at the event by its 1-based position, so that the database adds up only those of
 * events it newly stores.
 */
export function counterColumns(prepared: readonly Prepared[]) {
  const c = { ord: [] as number[], scope: [] as string[], kind: [] as string[], key: [] as (string | null)[], ms: [] as number[], micros: [] as number[] };
  prepared.forEach((p, i) => {
    for (const scope of p.scopes) {
      for (const k of p.counters) {
        c.ord.push(i + 1);
        c.scope.push(scope);
        c.kind.push(k.kind);
        c.key.push(col(k.key));
        c.ms.push(k.ms);
        c.micros.push(k.micros);
      }
    }
  });
  return { ord: pgArray(c.ord), scope: pgArray(c.scope), kind: pgArray(c.kind), key: pgArray(c.key), ms: pgArray(c.ms), micros: pgArray(c.micros) };
}

/**
 * The rollups of the batch insert (batchStatement), which stores every event of the batch or
 * nothing, already added up over the batch: each counter once with its count, each session of an
 * hour, of a day and of a breakdown name once.
 */
export function batchColumns(prepared: readonly Prepared[]) {
  // Nested maps keyed by the strings the events already hold (their hashes are computed once),
  // rather than one composite key string built per counter.
  interface Sum { n: number; micros: number }
  interface Hour { user: string; scope: string; hour: number; day: number; sessions: Set<string>; kinds: Map<string, Map<string, Map<number, Sum>>>;
    names: Map<string, Map<string, Set<string>>> }
  const hours = new Map<string, Hour>();
  for (const p of prepared) {
    if (!p.scopes.length) continue;
    const user = col(p.event.user_id)!, session = col(p.event.sessionId);
    for (const scope of p.scopes) {
      const at = `${user}\u0001${scope}\u0001${p.hour}`;
      let h = hours.get(at);
      if (!h) hours.set(at, (h = { user, scope, hour: p.hour, day: p.day, sessions: new Set(), kinds: new Map(), names: new Map() }));
      if (session !== null) h.sessions.add(session);
      for (const c of p.counters) {
        let keys = h.kinds.get(c.kind);
        if (!keys) h.kinds.set(c.kind, (keys = new Map()));
        let values = keys.get(c.key);
        if (!values) keys.set(c.key, (values = new Map()));
        const sum = values.get(c.ms);
        if (sum) {
          sum.n++;
          sum.micros += c.micros;
        } else values.set(c.ms, { n: 1, micros: c.micros });
        if (session === null || !DIM_KIND_SET.has(c.kind)) continue;
        let names = h.names.get(c.kind);
        if (!names) h.names.set(c.kind, (names = new Map()));
        let sessions = names.get(c.key);
        if (!sessions) names.set(c.key, (sessions = new Set()));
        sessions.add(session);
      }
    }
  }
  const c = { user: [] as string[], scope: [] as string[], hour: [] as number[], kind: [] as string[], key: [] as string[], ms: [] as number[], n: [] as number[], micros: [] as number[] };
  const hs = { user: [] as string[], scope: [] as string[], hour: [] as number[], session: [] as string[] };
  const ds = { user: [] as string[], scope: [] as string[], day: [] as number[], session: [] as string[] };
  const bs = { user: [] as string[], scope: [] as string[], hour: [] as number[], kind: [] as string[], key: [] as string[], session: [] as string[] };
  const daySeen = new Map<string, Set<string>>();
  for (const h of hours.values()) {
    for (const [kind, keys] of h.kinds) {
      for (const [key, values] of keys) {
        for (const [ms, sum] of values) {
          c.user.push(h.user); c.scope.push(h.scope); c.hour.push(h.hour); c.kind.push(kind); c.key.push(col(key)!); c.ms.push(ms);
          c.n.push(sum.n); c.micros.push(sum.micros);
        }
      }
    }
    for (const [kind, names] of h.names) {
      for (const [key, sessions] of names) {
        for (const session of sessions) {
          bs.user.push(h.user); bs.scope.push(h.scope); bs.hour.push(h.hour); bs.kind.push(kind); bs.key.push(col(key)!); bs.session.push(session);
        }
      }
    }
    const dayKey = `${h.user}\u0001${h.scope}\u0001${h.day}`;
    let seen = daySeen.get(dayKey);
    if (!seen) daySeen.set(dayKey, (seen = new Set()));
    for (const session of h.sessions) {
      hs.user.push(h.user); hs.scope.push(h.scope); hs.hour.push(h.hour); hs.session.push(session);
      if (seen.has(session)) continue;
      seen.add(session);
      ds.user.push(h.user); ds.scope.push(h.scope); ds.day.push(h.day); ds.session.push(session);
    }
  }
  return {
    c_user: pgArray(c.user), c_scope: pgArray(c.scope), c_hour: pgArray(c.hour), c_kind: pgArray(c.kind),
    c_key: pgArray(c.key), c_ms: pgArray(c.ms), c_n: pgArray(c.n), c_micros: pgArray(c.micros),
    hs: [pgArray(hs.user), pgArray(hs.scope), pgArray(hs.hour), pgArray(hs.session)],
    ds: [pgArray(ds.user), pgArray(ds.scope), pgArray(ds.day), pgArray(ds.session)],
    bs: [pgArray(bs.user), pgArray(bs.scope), pgArray(bs.hour), pgArray(bs.kind), pgArray(bs.key), pgArray(bs.session)],
  };
}

const DIM_KIND_SET = new Set<string>(DIM_KINDS);
