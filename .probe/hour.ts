import { openPostgresStore } from '../lib/store/postgres.ts';
const url = process.argv[2];
const store = await openPostgresStore({ url, log: () => {} });
const HOUR = 3_600_000;
const kinds: Record<string, () => any> = {
  hour: () => ({ from: Date.now() - HOUR }),
  week: () => ({ from: Date.now() - 7 * 86_400_000, interval: 'day' }),
  month: () => ({ from: Date.now() - 30 * 86_400_000 }),
  all: () => undefined,
};
for (const k of (process.argv[3] ?? 'hour').split(',')) {
  const times: number[] = [];
  for (let i = 0; i < 8; i++) {
    const t = performance.now();
    await store.stats('busy-user', Date.now(), kinds[k]());
    times.push(performance.now() - t);
  }
  console.log(k, times.map((x) => x.toFixed(0)).join(' '));
}
await store.close();
