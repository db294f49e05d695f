// kill -9 while snapshots run all the time: a child process opens the store with a tiny journal
// threshold (so segments rotate, temp files are written, renamed and segments deleted constantly)
// and prints every acknowledged id; after the kill every printed id must be in the reopened store.
// The same file is the child when WATCHTOWER_SQLITE_KILL_CHILD names a database path.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise, type RawEvent } from '../lib/event.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';

declare const Deno: { execPath(): string; env: { get(name: string): string | undefined } } | undefined;
const env = (name: string) => (typeof Deno !== 'undefined' ? Deno.env.get(name) : process.env[name]);
const childPath = env('WATCHTOWER_SQLITE_KILL_CHILD');
/** Set: the child's store also seals its hot segment every this many events. */
const sealEvents = env('WATCHTOWER_SQLITE_KILL_SEAL') ? Number(env('WATCHTOWER_SQLITE_KILL_SEAL')) : undefined;

if (childPath) {
  const store = await openSqliteStore({ path: childPath, retentionDays: 0, journalMaxBytes: 3000, gapSnapshotMs: 5, quietSnapshotMs: 20, sealEvents });
  const tag = Math.random().toString(36).slice(2, 8);
  console.log('ready');
  for (let i = 0; ; i++) {
    const ids = [`${tag}-${i}-a`, `${tag}-${i}-b`, `${tag}-${i}-c`];
    const events = ids.map((id) => normalise({ id, type: 'click', sessionId: tag } as RawEvent, { now: Date.now(), owner: 'kill' }));
    await Promise.all([store.insert(events.slice(0, 2)), store.insert(events.slice(2))]);
    console.log('ack ' + ids.join(' '));
    // Pauses now and then let the gap-triggered snapshots run between bursts.
    if (i % 20 === 19) await new Promise((r) => setTimeout(r, 15));
  }
} else {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-kill-'));
  const path = join(dir, 'watchtower.sqlite');
  test.after(() => rmSync(dir, { recursive: true, force: true }));

  const runChild = (killAfterMs: number, path: string, seal?: number) =>
    new Promise<string[]>((resolve, reject) => {
      const self = fileURLToPath(import.meta.url);
      const [cmd, args] = typeof Deno !== 'undefined'
        ? [Deno.execPath(), ['run', '--allow-all', '--no-prompt', self]]
        : [process.execPath, ['--import', 'tsx', self]];
      const childEnv: Record<string, string | undefined> = { ...process.env, WATCHTOWER_SQLITE_KILL_CHILD: path, WATCHTOWER_SQLITE_KILL_SEAL: seal ? String(seal) : '' };
      const child = spawn(cmd, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '', err = '';
      let timer: ReturnType<typeof setTimeout> | undefined;
      child.stdout!.on('data', (c) => {
        out += c;
        if (!timer && out.includes('ready')) timer = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), killAfterMs);
      });
      child.stderr!.on('data', (c) => (err += c));
      child.once('exit', (code, signal) => {
        if (signal !== 'SIGKILL' && code !== 137) return reject(new Error(`child exited ${code} ${signal}: ${err}`));
        // Only complete lines count: a line cut by the kill was never fully printed.
        const lines = out.split('\n').slice(0, -1).filter((l) => l.startsWith('ack '));
        resolve(lines.flatMap((l) => l.slice(4).split(' ')));
      });
    });

  test('kill -9 while snapshots rotate and rename constantly: every acknowledged id survives, 4 times', async () => {
    const acked: string[] = [];
    for (let run = 0; run < 4; run++) {
      const ids = await runChild(400 + Math.floor(Math.random() * 600), path);
      assert.ok(ids.length > 0, `run ${run}: the child acknowledged something`);
      acked.push(...ids);
      const store = await openSqliteStore({ path, retentionDays: 0, log: () => {} });
      const present = new Set((await store.list({ userId: 'kill', limit: 1_000_000 })).events.map((e) => e.id));
      const missing = acked.filter((id) => !present.has(id));
      assert.equal(missing, [], `run ${run}: ${missing.length} of ${acked.length} acknowledged ids lost`);
      assert.is((await store.health()).eventCount, present.size);
      await store.close();
    }
  });

  test('kill -9 while the store seals a segment every 60 events: every acknowledged id survives exactly once, 4 times', async () => {
    const sealing = join(dir, 'sealing', 'watchtower.sqlite');
    const acked: string[] = [];
    for (let run = 0; run < 4; run++) {
      const ids = await runChild(500 + Math.floor(Math.random() * 800), sealing, 60);
      assert.ok(ids.length > 0, `run ${run}: the child acknowledged something`);
      acked.push(...ids);
      const store = await openSqliteStore({ path: sealing, retentionDays: 0, sealEvents: 60, log: () => {} });
      const listed = (await store.list({ userId: 'kill', limit: 1_000_000 })).events.map((e) => e.id);
      const present = new Set(listed);
      assert.is(listed.length, present.size, `run ${run}: no event twice`);
      const missing = acked.filter((id) => !present.has(id));
      assert.equal(missing, [], `run ${run}: ${missing.length} of ${acked.length} acknowledged ids lost`);
      assert.is((await store.health()).eventCount, present.size);
      // A retry of anything acknowledged is recognised, sealed or not.
      const retry = acked.slice(0, 3).map((id) => normalise({ id, type: 'click' } as RawEvent, { now: Date.now(), owner: 'kill' }));
      assert.equal(await store.insert(retry), [], `run ${run}: retries are duplicates`);
      await store.close();
    }
    assert.ok(readdirSync(join(dir, 'sealing')).some((f) => f.endsWith('.manifest')), 'the child sealed segments');
  });

  test.run();
}
