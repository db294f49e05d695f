// Issues survive the process: the real server on the sqlite store is killed with -9 right after it
// acknowledged errors, or stopped with SIGTERM while tens of thousands wait to be grouped; after a
// restart every acknowledged error is counted in exactly one issue, once, and no new-issue alert is
// sent twice for one issue.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer, type RunningServer } from './helpers/server.ts';

const BUGS = ['TypeError: cart is undefined', 'RangeError: quantity out of range', 'SyntaxError: bad coupon code'];
const user = { 'X-IdP-User-Id': 'owner-1' };

/** Letters only: grouping folds digits in messages. */
const word = (i: number) => i.toString(26).replace(/./g, (c) => String.fromCharCode(97 + parseInt(c, 26)));

/** Errors `from` … of the 3 bugs; with `distinctEvery`, every such event is a bug of its own instead. */
const errorsOf = (from: number, count: number, tag: string, distinctEvery = 0) =>
  Array.from({ length: count }, (_, i) => {
    const k = from + i;
    const message = distinctEvery && k % distinctEvery === 0 ? `Error: widget ${word(k)} failed` : BUGS[k % BUGS.length];
    const fn = distinctEvery && k % distinctEvery === 0 ? `render_${word(k)}` : ['addToCart', 'setQuantity', 'applyCoupon'][k % 3];
    return { id: `${tag}-${k}`, type: 'error', message, data: { stack: `${message}\n    at ${fn} (https://shop.example/app.js:1:1)` }, environment: k % 2 ? 'production' : 'staging', userId: `user-${k % 7}` };
  });

/** Sends `total` errors in batches of 500, concurrently `parallel` at a time; resolves once all are acknowledged. */
async function sendErrors(server: RunningServer, total: number, tag: string, parallel = 4, distinctEvery = 0): Promise<number> {
  let acked = 0;
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const from = next;
      next += 500;
      const res = await fetch(`${server.url}/api/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...user },
        body: JSON.stringify({ events: errorsOf(from, Math.min(500, total - from), tag, distinctEvery) }),
      });
      assert.is(res.status, 200);
      // Read first: `acked += await …` would add to the value read before the await.
      const { accepted } = await res.json();
      acked += accepted;
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return acked;
}

interface Shown { id: string; count: number; users: { count: number }; tags: { environment: { values: { value: string; count: number }[]; total: number } } }

async function issues(server: RunningServer): Promise<Shown[]> {
  const res = await fetch(`${server.url}/api/issues?limit=100`, { headers: user });
  assert.is(res.status, 200);
  return (await res.json()).issues;
}

/** Waits until the issues count `total` errors (or the time is up), then a little more to see it stays. */
async function settled(server: RunningServer, total: number, withinMs = 30_000): Promise<Shown[]> {
  const end = Date.now() + withinMs;
  let now = await issues(server);
  while (now.reduce((s, i) => s + i.count, 0) < total && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 200));
    now = await issues(server);
  }
  await new Promise((r) => setTimeout(r, 1_500));
  return issues(server);
}

/** A webhook receiver on 127.0.0.1 that keeps the issue ids of the new-issue alerts it hears. */
async function receiver(): Promise<{ server: Server; url: string; newIssues: string[] }> {
  const newIssues: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      for (const a of JSON.parse(body).alerts ?? []) if (a.issue?.id) newIssues.push(a.issue.id);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, newIssues };
}

let dir = '';
test.before.each(() => {
  dir = mkdtempSync(join(tmpdir(), 'watchtower-issues-crash-'));
});
test.after.each(() => rmSync(dir, { recursive: true, force: true }));

const env = () => ({ SERVICE_STORAGE: 'sqlite', SERVICE_P1_DB: join(dir, 'watchtower.sqlite'), ALERT_ALLOW_PRIVATE_WEBHOOKS: 'true' });

test('kill -9 right after 6,000 acknowledged errors of 3 bugs: after restart, 3 issues counting exactly 6,000, each announced once', async () => {
  const hook = await receiver();
  let server = await startServer(env());
  try {
    const rule = await fetch(`${server.url}/api/alerts`, { method: 'POST', headers: { 'content-type': 'application/json', ...user }, body: JSON.stringify({ on: 'new_issue', webhook: hook.url }) });
    assert.is(rule.status, 201);
    assert.is(await sendErrors(server, 6_000, 'k'), 6_000);
    await server.stop('SIGKILL');
    server = await startServer(env());
    const after = await settled(server, 6_000);
    assert.is(after.length, 3);
    assert.equal(after.map((i) => i.count).sort(), [2_000, 2_000, 2_000]);
    // What issues derive from their events is rebuilt as exactly as the counts: each bug's errors
    // alternate between the two environments and come from all 7 users.
    for (const i of after) {
      assert.equal(i.tags.environment.values.map((v) => v.count), [1_000, 1_000], JSON.stringify(i.tags.environment));
      assert.is(i.users.count, 7);
    }
    // Alerts go out in the background: give them a moment, then no issue may have been announced twice.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.is(new Set(hook.newIssues).size, hook.newIssues.length, `announced: ${hook.newIssues.join(', ')}`);
  } finally {
    await server.stop('SIGKILL');
    hook.server.close();
  }
});

test('SIGTERM with 60,000 errors waiting to be grouped, 5,000 of them new bugs: the server stops in time, and after restart every one is counted once', async () => {
  let server = await startServer(env());
  try {
    assert.is(await sendErrors(server, 60_000, 't', 6, 12), 60_000);
    const started = Date.now();
    const code = await server.stop('SIGTERM');
    assert.is(code, 0, server.output());
    assert.ok(Date.now() - started < 9_000, `stopped in ${Date.now() - started} ms`);
    server = await startServer(env());
    // The 3 bugs count 55,000 between them; each of the 5,000 others is an issue of its own.
    const end = Date.now() + 60_000;
    let body: { issues: { count: number }[]; total: number };
    do {
      await new Promise((r) => setTimeout(r, 300));
      body = await (await fetch(`${server.url}/api/issues?sort=count&limit=3`, { headers: user })).json();
    } while ((body.total < 5_003 || body.issues.reduce((s, i) => s + i.count, 0) < 55_000) && Date.now() < end);
    await new Promise((r) => setTimeout(r, 1_500));
    body = await (await fetch(`${server.url}/api/issues?sort=count&limit=3`, { headers: user })).json();
    assert.is(body.total, 5_003);
    assert.equal(body.issues.map((i) => i.count).sort(), [15_000, 20_000, 20_000]);
  } finally {
    await server.stop('SIGKILL');
  }
});

test('one owner floods 20,000 new bugs, another sends one error after them: its issue appears within seconds, and the flood stops at 10,000 issues plus an overflow issue', async () => {
  const server = await startServer(env());
  const flooder = { 'X-IdP-User-Id': 'flooder' };
  try {
    for (let from = 0; from < 20_000; from += 500) {
      const events = Array.from({ length: 500 }, (_, i) => ({ type: 'error', message: `Error: widget ${word(from + i)} failed`, data: { stack: `Error: widget ${word(from + i)} failed\n    at render_${word(from + i)} (https://a.example/app.js:1:1)` } }));
      const res = await fetch(`${server.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...flooder }, body: JSON.stringify({ events }) });
      assert.is((await res.json()).accepted, 500);
    }
    const res = await fetch(`${server.url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...user }, body: JSON.stringify({ type: 'error', message: 'TypeError: checkout failed' }) });
    assert.is((await res.json()).accepted, 1);
    const acked = Date.now();
    while ((await issues(server)).length === 0) {
      assert.ok(Date.now() - acked < 5_000, 'the second owner\'s issue appeared within 5 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const waited = Date.now() - acked;
    const end = Date.now() + 60_000;
    let body: { issues: { title: string; count: number }[]; total: number };
    do {
      await new Promise((r) => setTimeout(r, 300));
      body = await (await fetch(`${server.url}/api/issues?sort=count&limit=1`, { headers: flooder })).json();
    } while ((body.issues[0]?.count ?? 0) < 10_000 && Date.now() < end);
    assert.is(body.total, 10_001, `the bound held at creation (the second owner waited ${waited} ms)`);
    assert.match(body.issues[0].title, /limit of 10,000 issues/);
    assert.is(body.issues[0].count, 10_000);
  } finally {
    await server.stop('SIGKILL');
  }
});

test.run();
