// The store contract: the same assertions for every Store implementation. A suite file calls
// storeContract(name, factory) once per store; the factory returns a fresh, empty store.
// Only storeContract is exported: other suites (postgres) pick this module's one function.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, rangeProblem, type Stats, type StatsRange } from '../lib/stats.ts';
import { encodeCursor } from '../lib/store/cursor.ts';
import { InvalidCursorError, type ErrorScan, type ErrorScanQuery, type EventFilter, type EventQuery, type ExportQuery, type Store } from '../lib/store/types.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

interface StatsFixture {
  description: string;
  now: string;
  user: string;
  events: { owner: string | null; receivedAt: string; raw: RawEvent }[];
  expected: Partial<Omit<Stats, 'latencyByRoute' | 'recentErrors' | 'recentActivity'>> & {
    latency?: Record<string, { count: number; p50: number; p95: number; avg: number; points?: unknown[]; pointsCount?: number; firstPointDuration?: number }>;
    recentErrorIds?: string[];
    recentActivityIds?: string[];
  };
}

/** The hand-checked data sets under fixtures/stats-*.json. */
function statsFixtures(): [string, StatsFixture][] {
  return readdirSync(FIXTURES)
    .filter((f) => /^stats-.*\.json$/.test(f))
    .sort()
    .map((f) => [f, JSON.parse(readFileSync(FIXTURES + f, 'utf8')) as StatsFixture]);
}

function fixtureEvents(f: StatsFixture): StoredEvent[] {
  let n = 0;
  return f.events.map(({ owner, receivedAt, raw }) =>
    normalise(raw, { now: Date.parse(receivedAt), owner, newId: () => `fx-${++n}` }));
}

/** Asserts the hand-checked expectations of a fixture against a Stats object. */
function checkFixture(name: string, f: StatsFixture, s: Stats) {
  const { latency, recentErrorIds, recentActivityIds, ...plain } = f.expected;
  for (const [key, value] of Object.entries(plain)) {
    assert.equal((s as unknown as Record<string, unknown>)[key], value, `${name}: ${key}`);
  }
  if (latency) {
    assert.equal(Object.keys(s.latencyByRoute).sort(), Object.keys(latency).sort(), `${name}: routes`);
    for (const [route, want] of Object.entries(latency)) {
      const got = s.latencyByRoute[route];
      assert.equal({ count: got.count, p50: got.p50, p95: got.p95, avg: got.avg }, { count: want.count, p50: want.p50, p95: want.p95, avg: want.avg }, `${name}: ${route}`);
      if (want.points) assert.equal(got.points, want.points, `${name}: ${route} points`);
      if (want.pointsCount !== undefined) assert.is(got.points.length, want.pointsCount, `${name}: ${route} points count`);
      if (want.firstPointDuration !== undefined) assert.is(got.points[0].duration, want.firstPointDuration, `${name}: ${route} first point`);
    }
  }
  if (recentErrorIds) assert.equal(s.recentErrors.map((e) => e.id), recentErrorIds, `${name}: recentErrors`);
  if (recentActivityIds) assert.equal(s.recentActivity.map((e) => e.id), recentActivityIds, `${name}: recentActivity`);
}

/**
 * A store's answer without a range as a store without rollups gives it: those compute exact
 * percentiles of fractional durations, which the reference gives at 1 ms (rounded, which is
 * monotonic, so rounding their answer yields the reference's). Stores with rollups, and every
 * store's answers within a range, are compared as they are.
 */
const atMs = (s: Stats): Stats => ({
  ...s,
  latencyByRoute: Object.fromEntries(Object.entries(s.latencyByRoute).map(([k, v]) => [k, { ...v, p50: Math.round(v.p50), p95: Math.round(v.p95) }])),
});

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Every page of a query, following nextCursor; checks the shape of each page on the way. */
async function allPages(store: Store, q: EventQuery, what: string): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  let before = q.before;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 10_000, `${what}: paging ends`);
    const page = await store.list({ ...q, before });
    assert.ok(page.events.length <= q.limit, `${what}: at most limit events per page`);
    out.push(...page.events);
    if (page.nextCursor === null) return out;
    assert.is(page.events.length, q.limit, `${what}: a page followed by another is full`);
    assert.type(page.nextCursor, 'string');
    before = page.nextCursor;
  }
}

/** Every batch of an export, checking that none is empty or larger than asked. */
async function exported(store: Store, q: ExportQuery, what: string): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for await (const batch of store.export(q)) {
    assert.ok(batch.length > 0 && batch.length <= (q.batchSize ?? 1000), `${what}: batch of ${batch.length}`);
    out.push(...batch);
  }
  return out;
}

/** A scan's answer without `head` (checked on its own: the store's newest position, at least `through`). */
async function scanned(store: Store, q: ErrorScanQuery): Promise<Omit<ErrorScan, 'head'>> {
  const { head, ...rest } = await store.scanErrors(q);
  assert.ok(Number.isSafeInteger(head) && head >= 0, `head ${head}`);
  if (rest.events.length) assert.ok(head >= rest.seqs[rest.seqs.length - 1], `head ${head} is at least the last position answered`);
  return rest;
}

/**
 * Every error scanErrors answers from `after` on, each scan starting after the last one's
 * `through`, until `through` stops moving; checks each answer against the contract on the way.
 */
async function scanAll(store: Store, q: Omit<ErrorScanQuery, 'after'> & { after?: number }, what: string): Promise<Pick<ErrorScan, 'events' | 'seqs'> & { through: number }> {
  const out = { events: [] as StoredEvent[], seqs: [] as number[], through: q.after ?? 0 };
  for (let scans = 0; ; scans++) {
    assert.ok(scans < 10_000, `${what}: scanning ends`);
    const after = out.through;
    const r = await store.scanErrors({ ...q, after });
    assert.is(r.seqs.length, r.events.length, `${what}: a position per event`);
    assert.ok(r.events.length <= q.limit, `${what}: at most limit events`);
    assert.ok(r.through >= after, `${what}: through ${r.through} is not before after ${after}`);
    if (q.upTo !== undefined) assert.ok(r.through <= Math.max(after, q.upTo), `${what}: through ${r.through} is not past upTo ${q.upTo}`);
    r.seqs.forEach((seq, i) => {
      assert.ok(seq > (i ? r.seqs[i - 1] : after), `${what}: positions ascend from after (${after}): ${r.seqs}`);
      assert.ok(seq <= r.through, `${what}: position ${seq} within through ${r.through}`);
    });
    out.events.push(...r.events);
    out.seqs.push(...r.seqs);
    if (r.through === after) return out;
    out.through = r.through;
  }
}

/** The events of `inserted` (insertion order) that a filter selects, as the stores must. */
const selected = (inserted: readonly StoredEvent[], f: EventFilter) =>
  inserted.filter((e) => {
    const t = Date.parse(e.receivedAt);
    return e.user_id === f.userId && (f.type === undefined || e.type === f.type) &&
      (f.version === undefined || e.deployVersion === f.version) &&
      (f.since === undefined || t >= f.since) && (f.until === undefined || t < f.until) &&
      (f.projectId === undefined || e.projectId === f.projectId);
  });

/**
 * Registers and runs the contract suite for one store. `rollupStats`: the store answers stats
 * without a range from rollups, so exactly as computeStats, percentiles at 1 ms included; other
 * stores' answers without a range are compared at 1 ms (atMs). Answers within a range are
 * compared as they are, for every store. `projects`: the store keeps StoredEvent.projectId and
 * filters by it (every store must; the flag goes once a store does).
 */
export function storeContract(
  name: string,
  factory: () => Promise<Store>,
  options: { rollupStats?: boolean; projects?: boolean; breakdowns?: boolean; reopen?: (store: Store) => Promise<Store> } = {},
) {
  const asStored = options.rollupStats === true ? (s: Stats) => s : atMs;
  // A store without breakdowns (PostgreSQL, for now) must leave them out, and match on the rest.
  const reference = (events: readonly StoredEvent[], now: number, range?: StatsRange): Stats => {
    const s = computeStats(events, now, range);
    if (options.breakdowns !== false) return s;
    const { breakdowns: _b, vitals: _v, ...rest } = s;
    return rest;
  };
  const t = suite(`store contract: ${name}`);
  const opened: Store[] = [];
  const open = async () => {
    const s = await factory();
    opened.push(s);
    return s;
  };
  t.after.each(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})));
  });

  let n = 0;
  const ev = (raw: Partial<RawEvent>, owner: string | null, at = Date.now()): StoredEvent =>
    normalise({ type: 'custom', ...raw } as RawEvent, { now: at, owner, newId: () => `c-${++n}` });

  t('insert resolves the newly stored events; list reads them back deep-equal, most recent first', async () => {
    const store = await open();
    const events = [
      ev({ id: 'rt-1', type: 'pageload', route: '/a', sessionId: 's', deployVersion: 'v1', data: { duration: 12.5, nested: { a: [1, 'x', null] } }, extra: 'kept' }, 'u'),
      ev({ id: 'rt-2', type: 'error', message: 'nul\u0000inside', data: { stack: 'lone \ud800 surrogate' } }, 'u'),
      ev({ id: 'rt-3', type: 'click', url: 'https://x/p?q', appName: 'demo', big: 1e21, neg: -0.000001, unicode: 'é😀' }, 'u'),
    ];
    assert.equal(await store.insert(events), events);
    const read = (await store.list({ userId: 'u', limit: 10 })).events;
    assert.equal(read, [...events].reverse());
    assert.is(read[0].user_id, 'u');
    assert.is(read[2].session_id, 's');
    assert.is(read[2].app_version, 'v1');
    assert.is(read[2].receivedAt, events[0].receivedAt);
    assert.equal(await store.insert([]), []);
  });

  t('idempotent by (owner, id): retries and in-batch duplicates stored once; other owners may reuse an id', async () => {
    const store = await open();
    const a = ev({ id: 'dup', type: 'click', text: 'first' }, 'ia');
    assert.equal(await store.insert([a, { ...a, text: 'second' }]), [a]);
    assert.equal(await store.insert([a]), []);
    const mixed = await store.insert([a, ev({ id: 'dup', type: 'click' }, 'ib'), ev({ id: 'dup', type: 'click' }, null), ev({ id: 'new', type: 'click' }, 'ia')]);
    assert.equal(mixed.map((e) => `${e.user_id}:${e.id}`), ['ib:dup', 'null:dup', 'ia:new']);
    assert.equal(await store.insert([ev({ id: 'dup', type: 'click' }, null)]), [], 'unowned events are idempotent too');
    const read = (await store.list({ userId: 'ia', limit: 10 })).events;
    assert.equal(read.map((e) => e.id), ['new', 'dup']);
    assert.is(read[1].text, 'first');
    assert.is((await store.health()).eventCount, 4);
  });

  t('list: scoped by user, filtered by type and deployVersion, limited, most recent first', async () => {
    const store = await open();
    const mine = Array.from({ length: 30 }, (_, i) =>
      ev({ id: `l-${i}`, type: i % 3 ? 'click' : 'error', deployVersion: i % 2 ? 'v2' : 'v1' }, 'me'));
    await store.insert(mine.slice(0, 10));
    await store.insert(mine.slice(10));
    await store.insert([ev({ id: 'l-x', type: 'error', deployVersion: 'v1' }, 'other'), ev({ id: 'l-y', type: 'error' }, null)]);
    const ids = (page: { events: StoredEvent[] } | StoredEvent[]) => (Array.isArray(page) ? page : page.events).map((e) => e.id);
    assert.equal(ids(await store.list({ userId: 'me', limit: 1000 })), ids(mine).reverse());
    assert.equal(ids(await store.list({ userId: 'me', limit: 3 })), ['l-29', 'l-28', 'l-27']);
    assert.equal(ids(await store.list({ userId: 'me', limit: 100, type: 'error' })), ids(mine.filter((e) => e.type === 'error')).reverse());
    assert.equal(ids(await store.list({ userId: 'me', limit: 100, version: 'v2' })), ids(mine.filter((e) => e.deployVersion === 'v2')).reverse());
    assert.equal(
      ids(await store.list({ userId: 'me', limit: 2, type: 'error', version: 'v1' })),
      ids(mine.filter((e) => e.type === 'error' && e.deployVersion === 'v1')).reverse().slice(0, 2),
    );
    assert.equal(await store.list({ userId: 'me', limit: 0 }), { events: [], nextCursor: null });
    assert.equal(await store.list({ userId: 'me', limit: 10, type: 'nope' }), { events: [], nextCursor: null });
    assert.equal(await store.list({ userId: 'nobody', limit: 10 }), { events: [], nextCursor: null });
    assert.equal(await store.list({ userId: '', limit: 10 }), { events: [], nextCursor: null }, 'unowned events appear for no user');
    assert.is((await store.list({ userId: 'me', limit: 30 })).nextCursor, null, 'a page that holds the last event has no next');
    assert.type((await store.list({ userId: 'me', limit: 29 })).nextCursor, 'string');
  });

  t('concurrent inserts: every call resolves with its own events, all stored', async () => {
    const store = await open();
    const batches = Array.from({ length: 20 }, (_, b) => Array.from({ length: 5 }, (_, i) => ev({ id: `cc-${b}-${i}` }, 'cc')));
    const results = await Promise.all(batches.map((batch) => store.insert(batch)));
    results.forEach((r, b) => assert.equal(r, batches[b]));
    const read = (await store.list({ userId: 'cc', limit: 1000 })).events;
    assert.is(read.length, 100);
    assert.equal(new Set(read.map((e) => e.id)).size, 100);
  });

  /**
   * History for paging and export: user "hi"'s events in batches that share one receive time (as
   * an ingest request's do), some a step back in time, with other owners' events in between.
   */
  const history = async (store: Store, seed: number) => {
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const t0 = Date.parse('2026-05-10T00:00:00.000Z');
    const inserted: StoredEvent[] = [];
    let t = t0;
    for (let b = 0; b < 40; b++) {
      // Mostly forward by up to an hour, sometimes back a little (a clock stepped back).
      t += rand() < 0.15 ? -Math.floor(rand() * 60_000) : Math.floor(rand() * 3_600_000);
      const batch = Array.from({ length: 1 + Math.floor(rand() * 12) }, (_, i) =>
        ev({
          id: `h-${b}-${i}`,
          type: ['click', 'error', 'pageload'][Math.floor(rand() * 3)],
          deployVersion: rand() < 0.8 ? ['v1', 'v2'][Math.floor(rand() * 2)] : undefined,
        }, rand() < 0.85 ? 'hi' : 'other', t));
      inserted.push(...batch);
      await store.insert(batch);
    }
    return { inserted, t0, t1: t };
  };

  t('list: since inclusive and until exclusive, on the receive time', async () => {
    const store = await open();
    const at = Date.parse('2026-05-16T12:00:00.000Z');
    const events = [-1, 0, 0, 1, 999, 1000, 1001].map((d, i) => ev({ id: `w-${i}` }, 'w', at + d));
    await store.insert(events);
    const ids = async (since?: number, until?: number) =>
      (await store.list({ userId: 'w', limit: 100, since, until })).events.map((e) => e.id).reverse();
    assert.equal(await ids(at, at + 1000), ['w-1', 'w-2', 'w-3', 'w-4']);
    assert.equal(await ids(at), ['w-1', 'w-2', 'w-3', 'w-4', 'w-5', 'w-6']);
    assert.equal(await ids(undefined, at + 1), ['w-0', 'w-1', 'w-2']);
    assert.equal(await ids(at + 1, at + 2), ['w-3']);
    assert.equal(await ids(at + 2, at + 999), []);
    assert.equal(await ids(at + 5000), []);
  });

  t('list: paging with before returns every event of the query once, newest first, page boundaries inside same-millisecond batches', async () => {
    const store = await open();
    const { inserted, t0, t1 } = await history(store, 3);
    const mid = Date.parse(inserted[Math.floor(inserted.length / 2)].receivedAt);
    const filters: EventFilter[] = [
      { userId: 'hi' },
      { userId: 'hi', type: 'error' },
      { userId: 'hi', version: 'v2' },
      { userId: 'hi', type: 'click', version: 'v1' },
      // A window whose edges fall on a batch's receive time (inclusive start, exclusive end).
      { userId: 'hi', since: mid, until: t1 },
      { userId: 'hi', type: 'pageload', since: t0 + 3_600_000 },
      { userId: 'hi', until: mid + 1 },
      { userId: 'other', version: 'v1' },
      { userId: 'nobody' },
    ];
    for (const f of filters) {
      const want = selected(inserted, f).reverse().map((e) => e.id);
      for (const limit of [1, 4, 7, 1000]) {
        const got = (await allPages(store, { ...f, limit }, `${JSON.stringify(f)} limit ${limit}`)).map((e) => e.id);
        assert.equal(got, want, `${JSON.stringify(f)} limit ${limit}`);
      }
    }
  });

  t('list: a cursor stays valid while newer events arrive, and under another filter', async () => {
    const store = await open();
    const { inserted } = await history(store, 5);
    const mine = inserted.filter((e) => e.user_id === 'hi').reverse();
    const first = await store.list({ userId: 'hi', limit: 10 });
    assert.equal(first.events.map((e) => e.id), mine.slice(0, 10).map((e) => e.id));
    await store.insert(Array.from({ length: 15 }, (_, i) => ev({ id: `late-${i}` }, 'hi')));
    const rest = await allPages(store, { userId: 'hi', limit: 9, before: first.nextCursor! }, 'after inserts');
    assert.equal(rest.map((e) => e.id), mine.slice(10).map((e) => e.id));
    // A cursor is a position: under another filter it continues that filter from the same place.
    const errors = await allPages(store, { userId: 'hi', type: 'error', limit: 3, before: first.nextCursor! }, 'other filter');
    assert.equal(errors.map((e) => e.id), mine.slice(10).filter((e) => e.type === 'error').map((e) => e.id));
  });

  t('list: a before that is not a cursor is an InvalidCursorError', async () => {
    const store = await open();
    await store.insert([ev({ id: 'c-1' }, 'cur'), ev({ id: 'c-2' }, 'cur')]);
    const good = (await store.list({ userId: 'cur', limit: 1 })).nextCursor!;
    assert.type(good, 'string');
    // The second character holds the version byte's low bits: 'A' makes it 0, 'g' makes it 2.
    const [version0, version2] = ['A', 'g'].map((c) => good[0] + c + good.slice(2));
    const tooBig = encodeCursor(Number.MAX_SAFE_INTEGER).slice(0, 2) + '__________';
    for (const before of ['', 'x', good + 'A', good.slice(1), good.replace(/.$/, '='), good.replace(/^./, '+'), version0, version2, tooBig, 'a'.repeat(5000)]) {
      try {
        await store.list({ userId: 'cur', limit: 10, before });
        assert.unreachable(`accepted ${JSON.stringify(before.slice(0, 20))}`);
      } catch (e) {
        assert.instance(e, InvalidCursorError, JSON.stringify(before.slice(0, 20)));
      }
    }
    // The store still answers after refusing.
    assert.equal((await store.list({ userId: 'cur', limit: 10, before: good })).events.map((e) => e.id), ['c-1']);
  });

  t('export: every event of the filter once, oldest first, in bounded batches', async () => {
    const store = await open();
    const { inserted } = await history(store, 9);
    const mid = Date.parse(inserted[Math.floor(inserted.length / 3)].receivedAt);
    const filters: EventFilter[] = [
      { userId: 'hi' },
      { userId: 'hi', type: 'error' },
      { userId: 'hi', version: 'v1', since: mid },
      { userId: 'hi', until: mid },
      { userId: 'other' },
      { userId: 'nobody' },
      { userId: '' },
    ];
    for (const f of filters) {
      const want = selected(inserted, f).map((e) => e.id);
      for (const batchSize of [1, 7, undefined]) {
        const got = await exported(store, { ...f, batchSize }, `${JSON.stringify(f)} batches of ${batchSize}`);
        assert.equal(got.map((e) => e.id), want, `${JSON.stringify(f)} batches of ${batchSize}`);
      }
    }
    // Exported events are the stored shape, as list returns them.
    const listed = (await store.list({ userId: 'hi', limit: 1000 })).events;
    assert.equal(await exported(store, { userId: 'hi' }, 'all'), [...listed].reverse());
  });

  t('export: covers what was stored when it began, and stops when the consumer stops', async () => {
    const store = await open();
    const { inserted } = await history(store, 13);
    const mine = inserted.filter((e) => e.user_id === 'hi').map((e) => e.id);
    const iterator = store.export({ userId: 'hi', batchSize: 5 })[Symbol.asyncIterator]();
    const got: string[] = [];
    const first = await iterator.next();
    assert.not.ok(first.done);
    got.push(...first.value.map((e: StoredEvent) => e.id));
    await store.insert([ev({ id: 'during-1' }, 'hi'), ev({ id: 'during-2' }, 'hi')]);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) got.push(...next.value.map((e: StoredEvent) => e.id));
    assert.equal(got, mine, 'events stored after the export began are not in it');
    // Leaving early: the iteration ends (return), and the store goes on serving.
    let batches = 0;
    for await (const batch of store.export({ userId: 'hi', batchSize: 3 })) {
      assert.ok(batch.length > 0);
      if (++batches === 2) break;
    }
    const stopped = store.export({ userId: 'hi', batchSize: 3 })[Symbol.asyncIterator]();
    await stopped.next();
    assert.equal(await stopped.return!(), { done: true, value: undefined });
    assert.equal((await stopped.next()).done, true, 'a stopped export yields nothing more');
    assert.is((await store.list({ userId: 'hi', limit: 2 })).events.map((e) => e.id)[0], 'during-2');
  });

  /**
   * Batches of errors and other events of two owners and unowned ones, some sharing a receive time,
   * some received before earlier ones, and retries that store nothing; `errors`: the errors of
   * identified owners stored, in insertion order.
   */
  const errorHistory = async (store: Store, seed: number, prefix = 'se') => {
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const t0 = Date.parse('2026-05-10T00:00:00.000Z');
    const errors: StoredEvent[] = [];
    let t = t0, sent: StoredEvent[] = [];
    for (let b = 0; b < 30; b++) {
      t += rand() < 0.2 ? -Math.floor(rand() * 60_000) : Math.floor(rand() * 3_600_000);
      const batch = Array.from({ length: 1 + Math.floor(rand() * 9) }, (_, i) =>
        ev({ id: `${prefix}-${b}-${i}`, type: rand() < 0.5 ? 'error' : ['click', 'pageload'][Math.floor(rand() * 2)], message: `m${b}` },
          [`${prefix}-a`, `${prefix}-a`, `${prefix}-b`, null][Math.floor(rand() * 4)], t));
      // Now and then a retry of an earlier batch's event rides along: it is stored once.
      const retry = sent.length && rand() < 0.3 ? [sent[Math.floor(rand() * sent.length)]] : [];
      const stored = await store.insert([...batch, ...retry]);
      assert.equal(stored, batch);
      sent = batch;
      errors.push(...batch.filter((e) => e.type === 'error' && e.user_id !== null));
    }
    return errors;
  };
  const ids = (events: readonly StoredEvent[]) => events.map((e) => e.id);

  t('scanErrors: errors of identified owners only, oldest first, each once; paged by through at any limit, at the same positions', async () => {
    const store = await open();
    const errors = await errorHistory(store, 3);
    assert.ok(errors.length > 20, 'the history has errors to page through');
    const all = await scanAll(store, { limit: 1000 }, 'limit 1000');
    assert.equal(all.events, errors, 'the stored errors of identified owners, in insertion order, read back deep-equal');
    for (const limit of [1, 2, 7]) {
      const paged = await scanAll(store, { limit }, `limit ${limit}`);
      assert.equal(ids(paged.events), ids(errors), `limit ${limit}`);
      assert.equal(paged.seqs, all.seqs, `limit ${limit}: the same positions`);
      assert.is(paged.through, all.through, `limit ${limit}: ends at the same through`);
    }
    // One scan that holds them all vouches for at least its last position.
    const one = await store.scanErrors({ after: 0, limit: 1000 });
    assert.equal(one.seqs, all.seqs);
    assert.ok(one.through >= all.seqs[all.seqs.length - 1]);
    // A scan that stops at limit says it covered up to its last answer only: the next one goes on from there.
    const first = await store.scanErrors({ after: 0, limit: 3 });
    assert.equal(first.seqs, all.seqs.slice(0, 3));
    assert.is(first.through, all.seqs[2], 'a full answer covers up to its last event');
    const next = await store.scanErrors({ after: first.through, limit: 2 });
    assert.equal(next.seqs, all.seqs.slice(3, 5));
    assert.equal(await scanned(store, { after: all.through, limit: 10 }), { events: [], seqs: [], through: all.through }, 'nothing after the end');
    assert.ok(one.head >= all.seqs[all.seqs.length - 1], 'head: the newest position, at least the last error\'s');
  });

  t('scanErrors: limit 0 answers nothing and covers nothing (through stays at after)', async () => {
    const store = await open();
    const errors = await errorHistory(store, 5);
    const all = await scanAll(store, { limit: 1000 }, 'all');
    for (const after of [0, all.seqs[3]]) {
      assert.equal(await scanned(store, { after, limit: 0 }), { events: [], seqs: [], through: after }, `after ${after}`);
      assert.equal(await scanned(store, { after, limit: 0, userId: errors[0].user_id! }), { events: [], seqs: [], through: after }, `one owner, after ${after}`);
    }
  });

  t('scanErrors: userId reads one owner\'s errors, at the positions the scan across owners gives them; no one reads unowned ones', async () => {
    const store = await open();
    const errors = await errorHistory(store, 7);
    const all = await scanAll(store, { limit: 1000 }, 'all');
    const position = new Map(all.events.map((e, i) => [e.id, all.seqs[i]]));
    for (const owner of ['se-a', 'se-b']) {
      const mine = errors.filter((e) => e.user_id === owner);
      assert.ok(mine.length > 3, `${owner} has errors`);
      for (const limit of [1, 3, 1000]) {
        const got = await scanAll(store, { limit, userId: owner }, `${owner} limit ${limit}`);
        assert.equal(got.events, mine, `${owner} limit ${limit}`);
        assert.equal(got.seqs, mine.map((e) => position.get(e.id)), `${owner} limit ${limit}: positions`);
      }
    }
    for (const owner of ['', 'nobody']) {
      assert.equal((await scanAll(store, { limit: 10, userId: owner }, `owner '${owner}'`)).events, [], `owner '${owner}'`);
    }
  });

  t('scanErrors: upTo bounds the answer and through; a scan after it answers nothing', async () => {
    const store = await open();
    await errorHistory(store, 9);
    const all = await scanAll(store, { limit: 1000 }, 'all');
    for (const k of [0, 4, 11]) {
      const upTo = all.seqs[k];
      for (const [limit, userId] of [[1000, undefined], [2, undefined], [1000, all.events[k].user_id!]] as const) {
        const what = `upTo the ${k}th error, limit ${limit}${userId ? `, ${userId}` : ''}`;
        const got = await scanAll(store, { limit, upTo, userId }, what);
        const want = all.events.slice(0, k + 1).filter((e) => userId === undefined || e.user_id === userId);
        assert.equal(ids(got.events), ids(want), what);
        assert.is(got.through, upTo, `${what}: covers up to upTo`);
      }
      // Just before the next error: through may reach it, the answer holds nothing more.
      const before = all.seqs[k + 1] - 1;
      assert.equal(ids((await scanAll(store, { limit: 1000, upTo: before }, `upTo ${before}`)).events), ids(all.events.slice(0, k + 1)));
      assert.equal(await scanned(store, { after: upTo, upTo, limit: 10 }), { events: [], seqs: [], through: upTo }, 'after at upTo');
      assert.equal(await scanned(store, { after: upTo + 1, upTo, limit: 10 }), { events: [], seqs: [], through: upTo + 1 }, 'after past upTo');
    }
  });

  t('scanErrors: errors stored after a scan are found after its through, with later positions', async () => {
    const store = await open();
    const first = await errorHistory(store, 11, 'f1');
    const before = await scanAll(store, { limit: 1000 }, 'first');
    assert.equal(before.events, first);
    const second = await errorHistory(store, 12, 'f2');
    const after = await scanAll(store, { after: before.through, limit: 4 }, 'second');
    assert.equal(after.events, second);
    assert.ok(after.seqs[0] > before.seqs[before.seqs.length - 1], 'later positions');
    assert.equal((await scanAll(store, { limit: 1000 }, 'both')).events, [...first, ...second]);
  });

  if (options.reopen) {
    const reopen = options.reopen;
    t('scanErrors: positions are the same after the store is reopened; a scan resumes from a through taken before', async () => {
      let store = await open();
      const first = await errorHistory(store, 13, 'r1');
      const all = await scanAll(store, { limit: 1000 }, 'before');
      const part = await store.scanErrors({ after: 0, limit: 5 });
      store = await reopen(store);
      opened.push(store);
      const again = await scanAll(store, { limit: 1000 }, 'after reopening');
      assert.equal(again.events, first);
      assert.equal(again.seqs, all.seqs, 'the same positions');
      const rest = await scanAll(store, { after: part.through, limit: 3 }, 'resumed');
      assert.equal([...part.events, ...rest.events], first, 'resumed from a through taken before the reopen: every error once');
      const second = await errorHistory(store, 14, 'r2');
      const later = await scanAll(store, { after: all.through, limit: 1000 }, 'inserted after reopening');
      assert.equal(later.events, second);
      assert.ok(later.seqs[0] > all.seqs[all.seqs.length - 1], 'positions go on after the ones before');
    });
  }

  /** 400 random events of mixed owners around `now`, `mine` being user "st"'s (insertion order). */
  const randomEvents = (now: number, seed: number, offsets: number[]) => {
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
    const types = ['pageload', 'pageload', 'error', 'click', 'interaction', 'feedback', 'custom', 'performance', 'page_view', 'weird'];
    const mine: StoredEvent[] = [];
    const all: StoredEvent[] = [];
    for (let i = 0; i < 400; i++) {
      const type = pick(types);
      const owner = pick(['st', 'st', 'st', 'other', null]);
      const data: Record<string, unknown> = {};
      if (type === 'pageload' && rand() < 0.9) data.duration = Math.round(rand() * 2000) / (rand() < 0.5 ? 1 : 4);
      if (type === 'pageload' && rand() < 0.5) data.ttfb = Math.round(rand() * 300);
      if (type === 'feedback') data.rating = pick([1, 2, 3, 4, 5, 5, 0, 6, 2.5, '4']);
      // Custom event properties, from the event's place (not rand(), whose sequence the other
      // fields keep): scalars, a nested value and a long one, more keys than are counted.
      if (type === 'custom') {
        Object.assign(data, { plan: ['free', 'pro', 'team'][i % 3], n: i % 4, ok: i % 2 === 0, nested: { x: 1 } });
        if (i % 5 === 0) Object.assign(data, { long: 'v'.repeat(150), a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7 });
      }
      if (type === 'performance' && rand() < 0.9) {
        data.name = pick(['LCP', 'INP', 'CLS', 'FCP', 'TTFB', 'FID']);
        data.value = data.name === 'CLS' ? Math.round(rand() * 4000) / 10_000 : Math.round(rand() * 5000) / (rand() < 0.5 ? 1 : 4);
      }
      const e = ev({
        type,
        sessionId: rand() < 0.85 ? pick(['a', 'b', 'c', 'd', 'e', 'f']) : undefined,
        deployVersion: rand() < 0.8 ? pick(['1.0', '1.1', '2.0']) : undefined,
        route: rand() < 0.6 ? pick(['/', '/a', '/b/c']) : undefined,
        url: rand() < 0.5 ? pick(['https://x/p?q=1', '/rel/path', 'not a url at all', 'https://x/?utm_source=News&utm_medium=cpc&utm_campaign=spring',
          '/l?utm_source=ads&utm_campaign=Launch', 'https://x/?utm_medium=email&utm_source=mail']) : undefined,
        referrer: rand() < 0.4 ? pick(['https://search.example', 'https://news.example/a?b=c', 'ftp://x']) : undefined,
        // Unmapped fields are kept as sent: set only when there is a value, as JSON would carry them.
        ...(rand() < 0.7 ? { environment: pick(['production', 'staging', 'Production']) } : {}),
        ...(type === 'custom' && rand() < 0.8 ? { name: pick(['signup', 'checkout', 'share']) } : {}),
        data,
      }, owner, now - pick(offsets) - Math.floor(rand() * 1000));
      // As POST /api/events sets it from the User-Agent (some events, as stored before, have none).
      if (rand() < 0.8) {
        e.client = { browser: pick(['Chrome', 'Firefox', null]), os: pick(['Windows', 'Android', null]), device: pick(['desktop', 'mobile', null]), country: pick(['DE', 'US', 'JP', null]) };
      }
      all.push(e);
      if (owner === 'st') mine.push(e);
    }
    return { all, mine };
  };
  const insertAll = async (store: Store, all: StoredEvent[]) => {
    for (let i = 0; i < all.length; i += 37) await store.insert(all.slice(i, i + 37));
  };

  t('stats: equal to computeStats over the user\'s events (random data across window and day boundaries)', async () => {
    const store = await open();
    const now = Date.parse('2026-05-16T12:00:00.000Z');
    const offsets = [0, 1000, 299_999, 300_000, 300_001, 3_600_000, 86_400_000, 6 * 86_400_000, 7 * 86_400_000, 12 * 3_600_000, -5000];
    const { all, mine } = randomEvents(now, 7, offsets);
    await insertAll(store, all);
    const s = await store.stats('st', now);
    assert.equal(asStored(s), reference(mine, now));
    assert.equal(asStored(await store.stats('st', now + 3 * 86_400_000)), reference(mine, now + 3 * 86_400_000), 'another now');
    assert.equal(await store.stats('nobody', now), reference([], now));
  });

  {
    // Ranges that cut through hours and days, start or end on them, reach into the future, end
    // inside the active window or before the newest event, with both intervals; each asked at a
    // `now` after every event, at one before the newest, and much later.
    const now = Date.parse('2026-05-16T12:00:00.000Z');
    const ranges: StatsRange[] = [
      { from: now - 30 * 60_000 },
      { from: now - 3 * DAY - 1234, to: now - DAY + 777 },
      { from: now - 3 * DAY - 1234, to: now - DAY + 777, interval: 'hour' },
      { from: now - 8 * DAY, interval: 'hour' },
      { from: now - 2 * DAY, to: now + DAY, interval: 'day' },
      { from: now - 12 * HOUR, to: now - 2 * HOUR },
      { from: now - 7 * DAY, to: now - 6 * DAY },
      { from: now - 299_999, to: now + 1 },
      { from: now - 6 * HOUR - 1, to: now - 4 * 60_000, interval: 'hour' },
      { from: now - 20 * 60_000, to: now - 10 * 60_000 },
      { from: now - 30 * DAY, to: now + 2 * HOUR, interval: 'day' },
      { from: now - HOUR + 1, to: now },
      { from: now - 30 * DAY, to: now + 2 * HOUR, interval: 'day', property: { key: 'plan', keys: true } },
      { from: now - 3 * DAY - 1234, to: now - DAY + 777, interval: 'hour', property: { key: 'n', event: 'signup' } },
      { from: now - 12 * HOUR, property: { key: 'long', keys: true, event: 'checkout' } },
    ];
    const offsets = [0, 1000, 60_000, 299_999, 300_000, 300_001, 1_800_000, 3_600_000, 5 * 3_600_000, 86_400_000,
      2 * 86_400_000 + 3_599_999, 3 * 86_400_000, 6 * 86_400_000, 7 * 86_400_000, 12 * 3_600_000, -5000];
    const nows = [now, now + 10_000, now - 2 * 60_000, now - HOUR, now + 3 * DAY];

    t('stats with a range: equal to computeStats over the same events and range (inserted out of receive order)', async () => {
      const store = await open();
      const { all, mine } = randomEvents(now, 11, offsets);
      await insertAll(store, all);
      for (const range of ranges) {
        for (const at of nows.filter((at) => rangeProblem(range, at) === null)) {
          assert.equal(await store.stats('st', at, range), reference(mine, at, range), `${JSON.stringify(range)} at ${at - now}`);
        }
      }
      assert.equal(await store.stats('nobody', now, ranges[0]), reference([], now, ranges[0]));
      // The data has every breakdown and vital, so they are compared with something in them.
      const wide = computeStats(mine, now, ranges[10]);
      const b = wide.breakdowns!;
      assert.ok([b.pages, b.referrers, b.browsers, b.os, b.devices, b.versions, b.environments, b.countries, b.customEvents].every((rows) => rows!.length >= 3), 'every breakdown has names');
      assert.ok([b.utmSources, b.utmMediums, b.utmCampaigns].every((rows) => rows!.length >= 2), 'campaigns too');
      assert.ok(Object.values(wide.vitals!.metrics).every((m) => m.count > 0) && wide.vitals!.pages.length >= 3, 'every vital has values');
      const props = computeStats(mine, now, ranges[12]);
      assert.ok(props.properties!.plan.length === 3 && props.propertyKeys!.length >= 10, 'properties have values');
    });

    t('stats with a range: equal to computeStats when events arrive in receive order (the live path)', async () => {
      const store = await open();
      const { mine } = randomEvents(now, 23, offsets);
      const sorted = [...mine].sort((a, b) => Date.parse(a.receivedAt) - Date.parse(b.receivedAt));
      await insertAll(store, sorted);
      for (const range of [undefined, ...ranges]) {
        for (const at of nows.filter((at) => rangeProblem(range, at) === null)) {
          const got = await store.stats('st', at, range);
          assert.equal(range ? got : asStored(got), reference(sorted, at, range), `${JSON.stringify(range)} at ${at - now}`);
        }
      }
    });

    t('stats with random ranges: equal to computeStats over the events in range (hour and day intervals, edges anywhere)', async () => {
      const store = await open();
      const { all, mine } = randomEvents(now, 31, offsets);
      await insertAll(store, all);
      let seed = 77;
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
      for (let i = 0; i < 40; i++) {
        // Edges at any millisecond within 9 days before now and 1 after, so they cut hours and days.
        const from = now - Math.floor(rand() * 9 * DAY);
        const to = rand() < 0.2 ? undefined : from + 1 + Math.floor(rand() * (rand() < 0.5 ? DAY : 10 * DAY));
        const interval = rand() < 0.3 ? undefined : rand() < 0.5 ? 'hour' as const : 'day' as const;
        const property = [undefined, { key: 'plan' }, { keys: true }, { key: 'n', event: 'share' }][i % 4];
        const range: StatsRange = { from, to, interval, ...(property ? { property } : {}) };
        const at = rand() < 0.5 ? now : now - Math.floor(rand() * 2 * DAY) + Math.floor(rand() * 3 * DAY);
        if (rangeProblem(range, at) !== null) continue;
        const end = to ?? at;
        const inRange = mine.filter((e) => Date.parse(e.receivedAt) >= from && Date.parse(e.receivedAt) < end);
        const want = reference(inRange, at, range);
        assert.equal(want, reference(mine, at, range), 'the reference itself reads only the range');
        assert.equal(await store.stats('st', at, range), want, `${JSON.stringify(range)} at ${at - now}`);
      }
    });

    t('stats with a range: a range resolveRange refuses is a RangeError', async () => {
      const store = await open();
      for (const range of [{ to: now }, { from: now, to: now }, { from: now + 1 }, { from: 0, interval: 'hour' as const }, { from: Number.NaN }]) {
        try {
          await store.stats('st', now, range);
          assert.unreachable(JSON.stringify(range));
        } catch (e) {
          assert.instance(e, RangeError, JSON.stringify(range));
        }
      }
    });
  }

  if (options.projects === true) {
    t('projects: projectId is kept; list, export and stats filter by it, within the owner only', async () => {
      const store = await open();
      const now = Date.parse('2026-05-16T12:00:00.000Z');
      let seed = 5;
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
      const all: StoredEvent[] = [];
      for (let i = 0; i < 300; i++) {
        const e = ev({
          id: `pj-${i}`,
          type: pick(['pageload', 'error', 'click', 'feedback']),
          sessionId: pick(['a', 'b', 'c']),
          route: pick(['/', '/x']),
          data: { duration: Math.floor(rand() * 900), rating: 1 + Math.floor(rand() * 5) },
        }, pick(['pj', 'pj', 'other']), now - Math.floor(rand() * 3 * DAY));
        const project = pick(['1', '2', undefined]);
        all.push(project === undefined ? e : { ...e, projectId: project });
      }
      for (let i = 0; i < all.length; i += 29) await store.insert(all.slice(i, i + 29));
      const of = (project: string) => all.filter((e) => e.user_id === 'pj' && e.projectId === project);
      const listed = (await store.list({ userId: 'pj', projectId: '1', limit: 1000 })).events;
      assert.equal(listed, [...of('1')].reverse());
      assert.equal(listed.map((e) => e.projectId), of('1').map(() => '1'), 'projectId is read back');
      assert.equal(await exported(store, { userId: 'pj', projectId: '2', batchSize: 7 }, 'project 2'), of('2'));
      assert.equal(
        (await store.list({ userId: 'pj', projectId: '1', type: 'error', since: now - DAY, limit: 1000 })).events,
        selected(all, { userId: 'pj', projectId: '1', type: 'error', since: now - DAY }).reverse(),
      );
      assert.equal(await store.list({ userId: 'pj', projectId: '9', limit: 10 }), { events: [], nextCursor: null });
      assert.equal(await store.list({ userId: 'other', projectId: '1', limit: 1 }).then((p) => p.events.length), 1);
      for (const project of ['1', '2']) {
        assert.equal(asStored(await store.stats('pj', now, undefined, project)), reference(of(project), now), `project ${project}`);
        const range: StatsRange = { from: now - 2 * DAY + 1234, to: now - HOUR + 5, interval: 'hour' };
        assert.equal(await store.stats('pj', now, range, project), reference(of(project), now, range), `project ${project} in a range`);
      }
      assert.equal(asStored(await store.stats('pj', now)), reference(all.filter((e) => e.user_id === 'pj'), now), 'all projects');
      assert.equal(await store.stats('pj', now, undefined, '9'), reference([], now));
    });
  }

  t('environment: list keeps the events whose environment field is the string asked for, with the other filters and pages', async () => {
    const store = await open();
    const now = Date.now();
    const envs: unknown[] = ['production', 'staging', undefined, 5, '5', { name: 'production' }, 'Production'];
    const all: StoredEvent[] = [];
    for (let i = 0; i < 140; i++) {
      const env = envs[i % envs.length];
      const e = ev({ id: `env-${i}`, type: i % 3 === 0 ? 'error' : 'click', ...(env === undefined ? {} : { environment: env }) }, i % 11 === 0 ? 'someone-else' : 'en', now - (140 - i) * 60_000);
      all.push(e);
    }
    for (let i = 0; i < all.length; i += 23) await store.insert(all.slice(i, i + 23));
    const of = (env: string, type?: string) =>
      all.filter((e) => e.user_id === 'en' && e.environment === env && (type === undefined || e.type === type)).reverse().map((e) => e.id);
    const listed = async (q: Omit<EventQuery, 'userId'>) => {
      const out: string[] = [];
      let before: string | undefined;
      do {
        const page = await store.list({ userId: 'en', ...q, ...(before ? { before } : {}) });
        out.push(...page.events.map((e) => e.id));
        before = page.nextCursor ?? undefined;
      } while (before);
      return out;
    };
    const production = await listed({ environment: 'production', limit: 7 });
    assert.ok(production.length > 10);
    assert.equal(production, of('production'));
    assert.equal(await listed({ environment: 'production', type: 'error', limit: 1000 }), of('production', 'error'));
    assert.equal(await listed({ environment: '5', limit: 1000 }), of('5'), 'the number 5 is not the environment "5"');
    assert.equal(await listed({ environment: 'staging', since: now - 60 * 60_000, limit: 1000 }),
      all.filter((e) => e.user_id === 'en' && e.environment === 'staging' && Date.parse(e.receivedAt) >= now - 60 * 60_000).reverse().map((e) => e.id));
    assert.equal(await listed({ environment: 'nowhere', limit: 10 }), []);
  });

  for (const [file, fixture] of statsFixtures()) {
    t(`stats fixture ${file}: ${fixture.description}`, async () => {
      const store = await open();
      const events = fixtureEvents(fixture);
      await store.insert(events);
      const now = Date.parse(fixture.now);
      const s = await store.stats(fixture.user, now);
      checkFixture(file, fixture, s);
      assert.equal(asStored(s), reference(events.filter((e) => e.user_id === fixture.user), now));
    });
  }

  t('users: upsert keyed by idp_user_id sets email, display_name and last_seen_at', async () => {
    const store = await open();
    const t0 = Date.parse('2026-05-16T12:00:00.000Z');
    assert.is(await store.getUser('idp_1'), null);
    const first = await store.upsertUser({ idpUserId: 'idp_1', email: 'a@x.test', displayName: 'A' }, t0);
    assert.equal(first, { idp_user_id: 'idp_1', email: 'a@x.test', display_name: 'A', last_seen_at: '2026-05-16T12:00:00.000Z' });
    const second = await store.upsertUser({ idpUserId: 'idp_1', email: 'b@x.test', displayName: 'B' }, t0 + 1000);
    assert.equal(await store.getUser('idp_1'), second);
    assert.is(second.last_seen_at, '2026-05-16T12:00:01.000Z');
    await store.upsertUser({ idpUserId: 'idp_2', email: 'c@x.test', displayName: 'C' }, t0);
    assert.is((await store.getUser('idp_1'))!.email, 'b@x.test');
  });

  t('health: storage kind and event count', async () => {
    const store = await open();
    const h0 = await store.health();
    assert.type(h0.storage, 'string');
    assert.is(h0.eventCount, 0);
    await store.insert([ev({}, 'h'), ev({}, null)]);
    assert.is((await store.health()).eventCount, 2);
  });

  t.run();
}
