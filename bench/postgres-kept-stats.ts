// Reads the statistics of a database kept by `bench:postgres-busy` (BENCH_KEEP_DB=1) straight from
// the store, in this process, to compare code versions on the same data:
//   node --import tsx bench/postgres-kept-stats.ts <database url> [<other checkout>]
// Prints one JSON line: per read (from = now − 30 days; from in the middle of the busiest minute of
// 30 days ago, the burst's; now − 7 days by day; now − 1 hour; all time; each with breakdowns and
// vitals), the p50 and spread of BENCH_RUNS (11) reads after one warm-up, and the p50 of the
// process's CPU time per read (what the read costs the instance, less moved by the machine's other
// work than its wall time, which also waits for PostgreSQL). With another checkout of the
// repository (say `git worktree add ../base <commit>`), its store is opened on the same database
// too, and each read alternates between the two, so that the load of a shared machine falls on
// both alike. Stores are opened with their background work an hour apart and their default pools
// (10 connections), and closed at the end.
//
// BENCH_BACKFILL_TIMES=1 instead writes the receive times of the kept points of closed days
// (watchtower_day_points.received, migration 23) from their blocks, as blockDay writes them since
// that migration: a database compacted before it then reads as one compacted after.
import postgres from 'postgres';
import { DAY_MS, HOUR_MS, type StatsRange } from '../lib/stats.ts';
import { openPostgresStore } from '../lib/store/postgres/store.ts';

const url = process.argv[2];
if (!url) throw new Error('usage: bench/postgres-kept-stats.ts <database url>');
const RUNS = Number(process.env.BENCH_RUNS ?? 11);
const USER = process.env.BENCH_USER ?? 'busy-user';

if (process.env.BENCH_BACKFILL_TIMES === '1') {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const updated = await sql.begin(async (tx) => {
      await tx`create temp table kept_times on commit drop as
        select b.user_id, b.day, v.seq, v.at from watchtower_event_blocks b cross join lateral unnest(b.seqs, b.received) v(seq, at)
        where (b.user_id, b.day) in (select distinct user_id, day from watchtower_day_points where received is null)`;
      await tx`create index on kept_times (user_id, day, seq)`;
      await tx`analyze kept_times`;
      return (await tx`
        update watchtower_day_points p set received = (
          select array_agg(k.at order by u.i) from unnest(p.seqs) with ordinality u(seq, i)
          join kept_times k on k.user_id = p.user_id and k.day = p.day and k.seq = u.seq)
        where p.received is null`).count;
    });
    console.log(JSON.stringify({ backfilled: updated }));
  } finally {
    await sql.end({ timeout: 2 });
  }
} else {
  const other = process.argv[3];
  const open = async (dir: string) => (await import(`${dir}/lib/store/postgres/store.ts`) as typeof import('../lib/store/postgres/store.ts'))
    .openPostgresStore({ url, upkeepIntervalMs: 3_600_000 });
  const stores = [['this', await openPostgresStore({ url, upkeepIntervalMs: 3_600_000 })] as const,
    ...(other ? [['other', await open(other)] as const] : [])];
  try {
    // The busiest minute of the day 30 days ago, by its blocks' first receive times.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const [busiest] = await sql<{ at: Date }[]>`
      select date_trunc('minute', first_received) as at from watchtower_event_blocks
      where user_id = ${USER} and day = ${Math.floor((Date.now() - 30 * DAY_MS) / DAY_MS)} group by 1 order by count(*) desc limit 1`;
    await sql.end();
    const reads: [string, (now: number) => StatsRange | undefined][] = [
      ['30 days', (now) => ({ from: now - 30 * DAY_MS })],
      ...(busiest ? [['from mid-burst 30 days ago', () => ({ from: busiest.at.getTime() + 30_000 })] as [string, () => StatsRange]] : []),
      ['7 days by day', (now) => ({ from: now - 7 * DAY_MS, interval: 'day' })],
      ['last hour', (now) => ({ from: now - HOUR_MS })],
      ['all time', () => undefined],
    ];
    const round = (x: number) => Math.round(x * 10) / 10;
    const out: Record<string, Record<string, { p50: number; min: number; max: number; cpu: number }>> = {};
    for (const [name, range] of reads) {
      const times = new Map<string, number[]>(stores.map(([which]) => [which, []]));
      const cpu = new Map<string, number[]>(stores.map(([which]) => [which, []]));
      for (let i = 0; i <= RUNS; i++) {
        // Which goes first alternates too.
        for (const [which, store] of i % 2 ? [...stores].reverse() : stores) {
          const now = Date.now();
          const t = performance.now(), c = process.cpuUsage();
          await store.stats(USER, now, range(now));
          const { user, system } = process.cpuUsage(c);
          if (i > 0) times.get(which)!.push(performance.now() - t), cpu.get(which)!.push((user + system) / 1000);
        }
      }
      for (const [which, list] of times) {
        list.sort((a, b) => a - b);
        const c = cpu.get(which)!.sort((a, b) => a - b);
        (out[which] ??= {})[name] = { p50: round(list[Math.floor(list.length / 2)]), min: round(list[0]), max: round(list[list.length - 1]), cpu: round(c[Math.floor(c.length / 2)]) };
      }
    }
    console.log(JSON.stringify(out));
  } finally {
    for (const [, store] of stores) await store.close();
  }
}
