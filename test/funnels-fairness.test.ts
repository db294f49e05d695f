// A long funnel on the sqlite store does not hold the database worker: it runs in slices, and
// another tenant's ingest sent while it runs, read back at once (the read is queued on the worker
// behind the insert, read-your-writes), is answered within a slice or so, not after the funnel.
// (The insert alone is acknowledged once journaled; it waits for the worker only when the worker's
// backlog is full, which the read stands for here.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type StoredEvent } from '../lib/event.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';

const dir = mkdtempSync(join(tmpdir(), 'watchtower-funnel-fair-'));
const DAY = 86_400_000;

test('an insert completes promptly while a large funnel runs', async () => {
  // One segment (no seal): the funnel reads it in SQL, page by page, the slowest path there is.
  const store = await openSqliteStore({ path: join(dir, 'watchtower.sqlite'), retentionDays: 0, sealEvents: 1_000_000 });
  try {
    const now = Date.now();
    let n = 0;
    const batch = (owner: string, size: number): StoredEvent[] => Array.from({ length: size }, () => {
      const i = n++;
      const e = normalise({ type: i % 3 ? 'pageload' : 'custom', sessionId: `s${i % 5000}`, route: `/p/${i % 7}`, name: 'go' }, { now: now - DAY + i, owner });
      e.projectId = '1';
      return e;
    });
    for (let i = 0; i < 40; i++) await store.insert(batch('big', 2000));
    await store.flush();
    const query = { userId: 'big', projectId: '1', from: now - 2 * DAY, to: now + DAY, windowMs: 30 * 60_000, steps: [{ page: '/p/*' }, { event: 'go' }, { page: '/p/1' }] };
    // Once alone, to know how long the read takes here.
    let t0 = performance.now();
    const alone = await store.funnel(query);
    const funnelMs = performance.now() - t0;
    t0 = performance.now();
    const running = store.funnel(query).then((counts) => ({ counts, ms: performance.now() - t0 }));
    await new Promise((r) => setTimeout(r, 20));
    await store.insert(batch('small', 10));
    // Timed from the acknowledgement: the journal's fsync before it is the main thread's, not the worker's.
    const t1 = performance.now();
    const page = await store.list({ userId: 'small', limit: 100 });
    const readMs = performance.now() - t1;
    const { counts, ms } = await running;
    assert.is(page.events.length, 10);
    assert.equal(counts, alone);
    assert.ok(counts[0] > 0 && counts[2] > 0, `the funnel counts sessions (${counts})`);
    // Meaningful only if the funnel takes well over a slice: it does here (80,000 rows in SQL).
    assert.ok(funnelMs > 150, `the funnel took ${funnelMs.toFixed(0)} ms alone: too short to tell`);
    assert.ok(readMs < Math.max(100, ms / 3), `reading the insert back took ${readMs.toFixed(0)} ms while the ${ms.toFixed(0)} ms funnel ran`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
