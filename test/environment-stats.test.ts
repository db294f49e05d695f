// GET /api/stats?environment=: statistics over one environment's events, from the store's rollups
// per environment (lib/environment-scopes.ts) or, where a store keeps none, built at request time
// from its export (lib/environment-stats.ts), equal computeStats over those events, with and
// without a range and a project, on the memory, sqlite and PostgreSQL stores.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { computeStats, type StatsRange } from '../lib/stats.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';
import { app } from './helpers/app.ts';
import { openFreshPostgresStore, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';
import { tempSqliteStore } from './helpers/stores.ts';
import { environmentStats } from '../lib/environment-stats.ts';

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const HOUR = 3600_000;

const stores: [string, () => Promise<Store>][] = [['memory', async () => createMemoryStore({ capacity: 100_000 })], ['sqlite', tempSqliteStore]];
const pgReason = await unavailableReason();
if (pgReason === null) stores.push(['postgres', openFreshPostgresStore]);
else if (REQUIRE_POSTGRES) stores.push(['postgres', () => Promise.reject(new Error(`PostgreSQL is required: ${pgReason}`))]);

/** Seeded events of two owners over three days, most with an environment, some in a project. */
function events(projectId: string): StoredEvent[] {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const out: StoredEvent[] = [];
  for (let i = 0; i < 1500; i++) {
    const type = pick(['pageload', 'pageload', 'error', 'click', 'custom', 'feedback', 'performance']);
    const raw: RawEvent = {
      type,
      sessionId: rand() < 0.1 ? undefined : `s${Math.floor(rand() * 60)}`,
      environment: pick(['production', 'production', 'staging', undefined]),
      route: pick(['/', '/a', '/b/c']),
      deployVersion: pick(['1.0', '2.0', undefined]),
      name: type === 'custom' ? pick(['signup', 'buy']) : undefined,
      data: type === 'pageload' ? { duration: Math.floor(rand() * 900) } : type === 'feedback' ? { rating: 1 + Math.floor(rand() * 5) } : type === 'performance' ? { name: 'LCP', value: rand() * 5000 } : {},
    };
    // Received over the last 3 days, the last 80 within the active window (more than the recent
    // activity holds, so active sessions must come from more than the latest events).
    const at = i >= 1420 ? NOW - (1500 - i) * 3000 : NOW - 3 * 24 * HOUR + Math.floor((i / 1420) * 3 * 24 * HOUR);
    const e = normalise(raw, { now: at, owner: rand() < 0.85 ? 'alice' : 'bob', newId: () => `ev-${i}` });
    if (rand() < 0.6) e.projectId = projectId;
    out.push(e);
  }
  return out;
}

for (const [name, open] of stores) {
  test(`stats of one environment equal computeStats over its events, on ${name}`, async () => {
    const store = await open();
    try {
      const { send, as } = app({ store, now: () => NOW });
      const project = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'shop' } })).json();
      const all = events(project.id);
      for (let i = 0; i < all.length; i += 250) await store.insert(all.slice(i, i + 250));
      const ranges: (StatsRange | undefined)[] = [
        undefined,
        { from: NOW - 24 * HOUR },
        { from: NOW - 50 * HOUR + 1234, to: NOW - 3 * HOUR - 99, interval: 'hour' },
        { from: NOW - 3 * 24 * HOUR, interval: 'day' },
      ];
      // Random ranges, edges within hours, across the three days and the active minutes.
      let seed = 3;
      const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296);
      for (let i = 0; i < 6; i++) {
        const a = NOW - Math.floor(rand() * 74 * HOUR), b = NOW - Math.floor(rand() * 74 * HOUR);
        ranges.push({ from: Math.min(a, b), to: Math.max(a, b) + 1, interval: rand() < 0.5 ? 'hour' : 'day' });
      }
      const iso = (t: number) => new Date(t).toISOString();
      for (const range of ranges) {
        for (const projectId of [undefined, project.id]) {
          for (const environment of ['production', 'staging', 'nowhere']) {
            const q = new URLSearchParams({ environment });
            if (range?.from !== undefined) q.set('from', iso(range.from));
            if (range?.to !== undefined) q.set('to', iso(range.to));
            if (range?.interval) q.set('interval', range.interval);
            if (projectId) q.set('project', projectId);
            const res = await send('GET', `/api/stats?${q}`, { headers: as('alice') });
            assert.is(res.status, 200);
            const mine = all.filter((e) => e.user_id === 'alice' && e.environment === environment && (projectId === undefined || e.projectId === projectId));
            assert.equal(await res.json(), JSON.parse(JSON.stringify(computeStats(mine, NOW, range))), `${name} ${q}`);
          }
        }
      }
      // The filter is checked like ingest keeps names; an empty one is none.
      assert.is((await send('GET', `/api/stats?environment=${'x'.repeat(65)}`, { headers: as('alice') })).status, 400);
      assert.is((await send('GET', '/api/stats?environment=a%0Ab', { headers: as('alice') })).status, 400);
      const unfiltered = await (await send('GET', '/api/stats?environment=', { headers: as('alice') })).json();
      assert.is(unfiltered.totalEvents, all.filter((e) => e.user_id === 'alice').length);
      // Past its budget the read gives up rather than hold the store.
      let refused: unknown = null;
      await environmentStats(store, { owner: 'alice', environment: 'production', now: NOW, budgetMs: -1 }).catch((err) => (refused = err));
      assert.is((refused as Error | null)?.name, 'EnvironmentStatsTooLargeError');
    } finally {
      await store.close();
    }
  });
}

test.run();
