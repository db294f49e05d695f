// The data set of bench:analytics (issue 37), shared with its profiling mode (analytics-profile.ts):
// one project's events over 90 days before NOW, loaded day by day with busy days (every 7th day five
// times the others) and bursts (half of a day's events within ten minutes), UTM fields on a quarter
// of the page loads and a country on every client, custom events by name; 5 goals and a 4-step
// funnel over the last 30 days. BENCH_NOW (ms) fixes NOW, so a store loaded once can be read again.
import type { FunnelQuery } from '../lib/funnels/count.ts';
import type { GoalDefinition } from '../lib/goals/evaluate.ts';
import type { StoredEvent } from '../lib/event.ts';
import type { Store } from '../lib/store/types.ts';
import { historyEvent, USERS_PREFIX } from './history-data.ts';

export const DAY = 86_400_000;
export const MIN = 60_000;
const DAYS = 90;
export const USER = USERS_PREFIX + '0';
export const PROJECT = '1';
export const NOW = process.env.BENCH_NOW ? Number(process.env.BENCH_NOW) : Math.floor(Date.now() / DAY) * DAY + 12 * 60 * MIN;

const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'IN', 'BR', 'JP', 'CA', 'NL', 'SE', null];
const UTM = [{ source: 'google', medium: 'cpc', campaign: 'spring' }, { source: 'newsletter', medium: 'email', campaign: 'weekly' }, { source: 'twitter', medium: 'social' }];

/** Receive times of `total` events over the 90 days before NOW, oldest first: busy days and bursts. */
function* times(total: number): Generator<number> {
  const weight = (d: number) => (d % 7 === 3 ? 5 : 1);
  let weights = 0;
  for (let d = 0; d < DAYS; d++) weights += weight(d);
  let made = 0;
  for (let d = 0; d < DAYS && made < total; d++) {
    const n = d === DAYS - 1 ? total - made : Math.round((total * weight(d)) / weights);
    const start = NOW - (DAYS - d) * DAY;
    for (let i = 0; i < n && made < total; i++, made++) {
      // The first half spread over the day's 24 hours, the second within 10 minutes from 14:00.
      const half = Math.floor(n / 2);
      yield i < half ? start + Math.floor((i / half) * (DAY - 20 * MIN)) : start + 14 * 60 * MIN + Math.floor(((i - half) / (n - half)) * 10 * MIN);
    }
  }
}

/** The events in batches, in time order: the history data set, one owner, one project. */
export function* batches(total: number, size: number): Generator<StoredEvent[]> {
  let batch: StoredEvent[] = [];
  let i = 0;
  for (const at of times(total)) {
    const e = historyEvent(i, at, 1);
    e.projectId = PROJECT;
    const session = Math.floor(i / 20);
    e.client = { ...e.client!, country: COUNTRIES[session % COUNTRIES.length] };
    if (e.type === 'pageload' && session % 4 === 0) e.utm = UTM[session % UTM.length];
    i++;
    batch.push(e);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

export const GOALS: GoalDefinition[] = [
  { id: 'g1', name: 'Saw a product', page: '/app/product/**', event: null },
  { id: 'g2', name: 'Reached checkout', page: '/app/checkout/*', event: null },
  { id: 'g3', name: 'Signed up', page: null, event: 'signup' },
  { id: 'g4', name: 'Shared', page: null, event: 'share' },
  { id: 'g5', name: 'Searched', page: '/app/search/**', event: null },
];
export const RANGE = { from: NOW - 30 * DAY, to: NOW + DAY, goals: GOALS };
export const FUNNEL: FunnelQuery = {
  userId: USER, projectId: PROJECT, from: RANGE.from, to: RANGE.to, windowMs: 30 * MIN,
  steps: [{ page: '/app/home/*' }, { page: '/app/product/**' }, { event: 'filter' }, { page: '/app/checkout/*' }],
};

export async function load(store: Store, total: number, label: string): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  for (const batch of batches(total, 2000)) {
    await store.insert(batch);
    n += batch.length;
    if (n % 500_000 < 2000) console.log(`${label}: ${n.toLocaleString('en-US')} events`);
  }
  return (performance.now() - t0) / 1000;
}

