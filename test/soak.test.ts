// A bounded load soak against the real server on 127.0.0.1: mixed valid, invalid and oversized
// requests at a steady rate with live subscribers attached. Zero 5xx, nothing acknowledged lost,
// bounded memory. Then SIGTERM under load: in-flight requests finish, the process exits 0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startServer, type RunningServer } from './helpers/server.ts';
import { readUntil } from './helpers/app.ts';

const SECONDS = Number(process.env.WATCHTOWER_SOAK_SECONDS ?? 12);
const RATE = 80; // requests per second
const USERS = Array.from({ length: 12 }, (_, i) => `soak-user-${i}`);

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

function request(server: RunningServer, i: number): { init: RequestInit; ids: string[]; user: string | null } {
  const user = USERS[i % USERS.length];
  const kind = i % 10;
  if (kind === 7) return { init: { method: 'POST', body: '{"events": [ broken', headers: { 'content-type': 'application/json' } }, ids: [], user: null };
  if (kind === 8) return { init: { method: 'POST', body: JSON.stringify({ type: 'x', data: { pad: 'p'.repeat(1_100_000) } }), headers: { 'content-type': 'application/json' } }, ids: [], user: null };
  if (kind === 9) return { init: { method: 'POST', body: JSON.stringify({ events: [{ nope: 1 }, { type: '' }] }), headers: { 'content-type': 'text/plain' } }, ids: [], user: null };
  const ids = Array.from({ length: 1 + (i % 5) }, (_, k) => `soak-${i}-${k}`);
  const events = ids.map((id, k) => ({ id, type: ['pageload', 'click', 'error', 'custom'][k % 4], sessionId: `s${i % 30}`, userId: user, route: '/soak', data: { duration: 100 + k } }));
  return { init: { method: 'POST', body: JSON.stringify({ events }), headers: { 'content-type': 'application/json' } }, ids, user };
}

test(`soak: ${SECONDS} s of mixed traffic at ${RATE} req/s with subscribers attached`, async () => {
  const server = await startServer({ SERVICE_BUFFER_SIZE: '1000000' });
  try {
    const streams = await Promise.all(
      [...USERS.slice(0, 4), null].map(async (user) => {
        const res = await fetch(`${server.url}/api/events/stream`, { headers: user ? { 'x-idp-user-id': user } : {} });
        const reader = res.body!.getReader();
        await readUntil(reader, ': connected');
        return { user, reader };
      }),
    );
    // Drain the streams in the background, as a dashboard would.
    const seen = new Map<string | null, string>();
    const draining = streams.map(async ({ user, reader }) => {
      const decoder = new TextDecoder();
      let text = '';
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (text.length > 200_000) text = text.slice(-100_000);
        seen.set(user, text);
      }
    });
    const rssBefore = rssMiB(server.child.pid!);
    const acked = new Map<string, string[]>();
    const statuses = new Map<number, number>();
    const start = performance.now();
    const inflight: Promise<void>[] = [];
    const failures: string[] = [];
    for (let i = 0; i < SECONDS * RATE; i++) {
      const wait = start + (i * 1000) / RATE - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const { init, ids, user } = request(server, i);
      inflight.push(
        fetch(`${server.url}/api/events`, init).then(async (res) => {
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const body = await res.json();
          if (res.status === 200 && user) {
            // The memory store answers with the counts (docs/api.md#stores): all of them accepted.
            assert.equal(body, { accepted: ids.length, rejected: 0 });
            acked.set(user, [...(acked.get(user) ?? []), ...ids]);
          }
        }).catch((err) => {
          // Caught here, not left to Promise.all below: a rejection while requests are still being
          // sent would end the whole test process instead of failing this test.
          failures.push(`request ${i}: ${err?.cause?.code ?? err?.message ?? err}`);
        }),
      );
    }
    await Promise.all(inflight);
    assert.equal(failures, [], 'requests that got no answer');
    const fivexx = [...statuses].filter(([s]) => s >= 500);
    assert.equal(fivexx, [], `5xx responses: ${JSON.stringify([...statuses])}`);
    assert.ok((statuses.get(200) ?? 0) >= SECONDS * RATE * 0.79, JSON.stringify([...statuses]));
    assert.ok((statuses.get(413) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0, JSON.stringify([...statuses]));

    for (const user of USERS) {
      const read = (await (await fetch(`${server.url}/api/events?limit=1000`, { headers: { 'x-idp-user-id': user } })).json()).events;
      const stored = new Set(read.map((e: { id: string }) => e.id));
      const missing = (acked.get(user) ?? []).filter((id) => !stored.has(id));
      assert.equal(missing, [], `${user}: acknowledged but not stored`);
      assert.ok(stored.size < 1000, 'the read window covers every event of the user');
    }
    for (const { user } of streams.slice(0, 4)) assert.match(seen.get(user) ?? '', new RegExp(`"user_id":"${user}"`), `stream of ${user}`);
    assert.not.match(seen.get(null) ?? '', /soak-user/, 'the anonymous stream saw no owned event');

    const rssAfter = rssMiB(server.child.pid!);
    assert.ok(rssAfter < rssBefore + 150, `RSS grew from ${rssBefore.toFixed(0)} to ${rssAfter.toFixed(0)} MiB`);
    for (const { reader } of streams) await reader.cancel().catch(() => {});
    await Promise.race([Promise.all(draining), new Promise((r) => setTimeout(r, 1000))]);
  } finally {
    await server.stop();
  }
});

test('graceful shutdown under load: in-flight requests finish, the process exits 0, nothing acknowledged is lost', async () => {
  const dir = mkdtempSync(tmpdir() + '/watchtower-shutdown-');
  const env = { SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: dir + '/watchtower.sqlite' };
  try {
    const server = await startServer(env);
    const results: (number | string)[] = [];
    const acked: string[] = [];
    const load = Array.from({ length: 200 }, (_, i) =>
      new Promise((r) => setTimeout(r, i * 5)).then(() =>
        fetch(`${server.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ events: [{ type: 'x', id: `g${i}`, userId: 'g' }] }) })
          .then(async (res) => {
            await res.arrayBuffer();
            results.push(res.status);
            if (res.status === 200) acked.push(`g${i}`);
          })
          .catch(() => results.push('refused')),
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    const code = await server.stop('SIGTERM');
    await Promise.all(load);
    assert.is(code, 0, server.output());
    assert.ok(acked.length > 0, 'requests before the signal were served');
    assert.ok(results.every((s) => s === 200 || s === 'refused'), `only 200 or refused: ${JSON.stringify(results)}`);

    const again = await startServer(env);
    try {
      const stored = new Set((await (await fetch(`${again.url}/api/events?limit=1000`, { headers: { 'x-idp-user-id': 'g' } })).json()).events.map((e: { id: string }) => e.id));
      assert.equal(acked.filter((id) => !stored.has(id)), [], 'acknowledged before shutdown, missing after restart');
    } finally {
      await again.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
