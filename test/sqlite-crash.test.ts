// kill -9 of the real server (server.ts on the sqlite store) in the middle of ingestion, several
// times on the same database file: after each restart every event id that got a 200 is present.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer, type RunningServer } from './helpers/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'watchtower-crash-'));
const env = { SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: join(dir, 'watchtower.sqlite'), SERVICE_RATE_LIMIT: '0', SERVICE_RETENTION_DAYS: '0' };
let server: RunningServer | null = null;
test.after(async () => {
  await server?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const WORKERS = 6;
const RUNS = 3;
/** user → ids acknowledged with a 200, over every run. */
const acked = new Map<string, Set<string>>();

async function ingestUntilKilled(s: RunningServer, run: number, killAfterMs: number): Promise<number> {
  let stop = false;
  let ok = 0;
  const worker = async (w: number) => {
    for (let seq = 0; !stop; seq++) {
      // A new user every 200 requests: the check reads each user's events in one page of 1000.
      const user = `crash-r${run}-w${w}-${Math.floor(seq / 200)}`;
      const mine = acked.get(user) ?? new Set<string>();
      acked.set(user, mine);
      const ids = [`${user}-${seq}-a`, `${user}-${seq}-b`];
      try {
        const res = await fetch(`${s.url}/api/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-idp-user-id': user },
          body: JSON.stringify({ events: ids.map((id) => ({ id, type: 'click', sessionId: `s${w}`, data: { seq } })) }),
        });
        const body = await res.text();
        if (res.status === 200) {
          for (const id of ids) mine.add(id);
          ok++;
        } else if (res.status !== 503) {
          throw new Error(`unexpected ${res.status}: ${body}`);
        }
      } catch (err) {
        if (stop || (err as Error).message.startsWith('unexpected')) {
          if (!stop) throw err;
          return;
        }
        return; // connection refused/reset: the server is gone
      }
    }
  };
  const running = Array.from({ length: WORKERS }, (_, w) => worker(w));
  await new Promise((r) => setTimeout(r, killAfterMs));
  await s.stop('SIGKILL');
  stop = true;
  await Promise.all(running);
  return ok;
}

/** Every event id of the user, paging through GET /api/events with before (docs/api.md#list). */
async function presentIds(s: RunningServer, user: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let before = '';
  for (;;) {
    const res = await fetch(`${s.url}/api/events?limit=1000${before && `&before=${before}`}`, { headers: { 'x-idp-user-id': user } });
    assert.is(res.status, 200);
    const { events, nextCursor } = (await res.json()) as { events: { id: string }[]; nextCursor: string | null };
    for (const e of events) ids.add(e.id);
    if (nextCursor === null) return ids;
    before = nextCursor;
  }
}

test(`kill -9 at a random moment, ${RUNS} times: every acknowledged event id is present after restart`, async () => {
  server = await startServer(env);
  let totalAcked = 0;
  for (let run = 1; run <= RUNS; run++) {
    const killAfter = 300 + Math.floor(Math.random() * 700);
    const ok = await ingestUntilKilled(server, run, killAfter);
    assert.ok(ok > 0, `run ${run}: some requests were acknowledged before the kill at ${killAfter} ms`);
    server = await startServer(env);
    let present = 0;
    for (const [user, ids] of acked) {
      const found = await presentIds(server, user);
      const missing = [...ids].filter((id) => !found.has(id));
      assert.equal(missing, [], `run ${run}: ${user} lost acknowledged events`);
      present += found.size;
    }
    totalAcked = [...acked.values()].reduce((sum, ids) => sum + ids.size, 0);
    const health = (await (await fetch(`${server.url}/api/health`)).json()) as { storage: string; eventCount: number };
    assert.is(health.storage, 'sqlite');
    assert.is(health.eventCount, present, 'health counts what is stored');
    assert.ok(present >= totalAcked);
  }
  // A graceful stop after all that leaves a compacted database that opens again.
  assert.is(await server.stop('SIGTERM'), 0);
  server = await startServer(env);
  for (const [user, ids] of acked) {
    const found = await presentIds(server, user);
    assert.ok([...ids].every((id) => found.has(id)), `${user} after a graceful restart`);
  }
  assert.ok(totalAcked > 0);
});

test.run();
