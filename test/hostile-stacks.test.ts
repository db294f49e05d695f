// Hostile stack text (issue 33): a crafted stack costs what an ordinary stack of the same length
// costs, and grouping a flood of them never holds up the event loop that every tenant shares.
// lib/issues/stack.ts, fingerprint.ts, sourcemap.ts and insights.ts's topFrame read client text
// without a backtracking regular expression; the scans that replaced them are checked here against
// the expressions they replaced, on inputs short enough for those to be cheap.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { groupEvent, stripContentHash } from '../lib/issues/fingerprint.ts';
import { sourceMapNames } from '../lib/issues/sourcemap.ts';
import { displayFile, MAX_FRAMES, MAX_LINE, MAX_STACK_CHARS, MAX_STACK_LINES, parseStack, withoutAlias, withoutQuery } from '../lib/issues/stack.ts';
import { topFrame } from '../lib/insights.ts';
import { spawn } from 'node:child_process';
import process from 'node:process';
import { ROOT, scriptCommand, startServer } from './helpers/server.ts';

/** A small generator with a seed, so a failure can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = (r: () => number, alphabet: string[], max: number) =>
  Array.from({ length: Math.floor(r() * max) }, () => alphabet[Math.floor(r() * alphabet.length)]).join('');

test('withoutAlias removes exactly what /\\s+\\[as [^\\]]+\\]$/ removed', () => {
  const old = (fn: string) => fn.replace(/\s+\[as [^\]]+\]$/, '');
  for (const fn of ['Object.handler [as onload]', 'a  \t[as b]', 'a[as b]', 'a [as ]', 'a [as b] [as c]', 'a [as x [as b]', 'a [as b]c]', ' [as b]', 'x']) {
    assert.is(withoutAlias(fn), old(fn), fn);
  }
  const r = random(33);
  for (let i = 0; i < 20_000; i++) {
    const fn = pick(r, ['a', ' ', '\t', '[as ', '[', ']', 'as', '\u00a0'], 12);
    assert.is(withoutAlias(fn), old(fn), JSON.stringify(fn));
  }
});

test('stripContentHash and withoutQuery give what the expressions they replaced gave', () => {
  // stripContentHash split the name with /([.~-])/ and dropped each hash with the separator before it.
  const isHashLike = (s: string) => {
    if (s.length < 6 || !/^\w+$/.test(s)) return false;
    const rest = s.slice(1);
    return (/\d/.test(s) && /[A-Za-z]/.test(s)) || /^[0-9a-f]{8,}$/i.test(s) || /^[A-Z]{8,}$/.test(s) || (/[a-z]/.test(rest) && /[A-Z]/.test(rest));
  };
  const oldStrip = (name: string) => {
    const parts = name.split(/([.~-])/);
    const kept: string[] = [];
    for (let i = 0; i < parts.length; i += 2) {
      if (!(i > 0 && i < parts.length - 1 && isHashLike(parts[i]))) kept.push(kept.length > 0 ? parts[i - 1] : '', parts[i]);
    }
    return kept.join('');
  };
  const r = random(7);
  for (let i = 0; i < 20_000; i++) {
    const name = pick(r, ['.', '-', '~', 'a', 'B', '3f9a1c', 'deadbeef', 'ABCDEFGH', 'app', 'js', 'xYz12'], 8);
    assert.is(stripContentHash(name), oldStrip(name), name);
    const url = pick(r, ['a', '/', '?', '#', ':'], 10);
    assert.is(withoutQuery(url), url.replace(/[?#].*$/, ''), url);
  }
  assert.is(stripContentHash('main.3f9a1c2b.abcdef12.js'), 'main.js');
  assert.is(displayFile('app.js?v=1\r#x'), 'app.js', 'a line break after the query string no longer keeps it');
  assert.equal(sourceMapNames('https://a.example/app.js?x\r'), ['https://a.example/app.js', '~/app.js']);
});

test('bounds: a stack is read up to 64 KiB and 1,000 lines, lines up to 2,048 characters, 50 frames', () => {
  assert.equal([MAX_STACK_CHARS, MAX_STACK_LINES, MAX_LINE, MAX_FRAMES], [65_536, 1000, 2048, 50]);
  const line = (i: number) => `    at f${i} (https://a.example/app.js:1:${i})`;
  const frames = (text: string) => parseStack(text).map((f) => f.function);
  assert.is(parseStack(Array.from({ length: 80 }, (_, i) => line(i)).join('\n')).length, 50);
  // Past line 1,000, nothing is read: a frame there is not seen.
  assert.equal(frames(`Error\n${'\n'.repeat(998)}${line(1)}\n${line(2)}`), ['f1']);
  // Past 64 KiB, nothing is read.
  const pad = 'x'.repeat(2000);
  const filler = Array.from({ length: 32 }, () => pad).join('\n');
  assert.equal(frames(`Error: ${filler}\n${line(1)}`), ['f1'], `${filler.length + 60} characters: within the bound`);
  assert.equal(frames(`Error: ${filler}${'y'.repeat(MAX_STACK_CHARS - filler.length)}\n${line(1)}`), [], 'its frame is past 64 KiB');
  // A line longer than 2,048 characters is not a frame; one of 2,048 is.
  const long = `    at g (https://a.example/${'a'.repeat(MAX_LINE)}.js:1:1)`;
  const fits = `    at g (https://a.example/${'a'.repeat(MAX_LINE - 36)}.js:1:1)`;
  assert.is(fits.length, MAX_LINE);
  assert.equal(frames(`${long}\n${line(1)}`), ['f1']);
  assert.equal(frames(`${fits}\n${line(1)}`), ['g', 'f1']);
  // Structured (Sentry) frames: the function and file cut to 2,048 characters.
  const sentry = groupEvent({ data: { frames: [{ function: 'h'.repeat(5000), filename: 'b'.repeat(5000) + '.js', lineno: 1 }] } });
  assert.equal([sentry.frames[0].function!.length, sentry.frames[0].file!.length], [MAX_LINE, MAX_LINE]);
});

/** The least time `fn` took over `runs` runs (after one to warm up), giving up once 3 s are spent. */
function cost(fn: () => void, runs: number): number {
  fn();
  let best = Infinity;
  const started = performance.now();
  for (let i = 0; i < runs && performance.now() - started < 3000; i++) {
    const t = performance.now();
    fn();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

const lines = (n: number, line: (i: number) => string) => Array.from({ length: n }, (_, i) => line(i)).join('\n');
/** An ordinary V8 stack of 30 lines of 2,000 characters (long bundle URLs): about 60 KB. */
const ordinary = lines(30, (i) => `    at fn${i} (https://shop.example.com/assets/${'a'.repeat(1940)}.js:1:${i})`);

test('an adversarial stack costs about what an ordinary stack of its length costs (< 5x)', () => {
  const group = (stack: string) => () => void groupEvent({ message: 'x', data: { stack } });
  const base = cost(group(ordinary), 30);
  const hostile: Record<string, string> = {
    // Spaces before "[as" that never close: /\s+\[as [^\]]+\]$/ rescanned the run from each space.
    '[as suffix': lines(30, () => '    at x' + ' '.repeat(2030) + '[as (a:1)'),
    // Firefox's "/<" markers not at the end: /(?:\/<)+$/ rescanned the run from each marker.
    'Firefox /<': lines(30, () => 'f' + '/<'.repeat(1000) + 'x@https://a.example/app.js:1:1'),
    // Blank lines: /\n\s*at\s/ (is it a V8 stack?) rescanned every later line break from each.
    'blank lines': '\n'.repeat(ordinary.length),
    // A query string that never ends before a line break: /[?#].*$/ scanned to the end from every "?".
    'query marks': lines(30, () => '    at f (app.js' + '?'.repeat(2000) + '\r:1:1)'),
  };
  for (const [name, stack] of Object.entries(hostile)) {
    assert.ok(Math.abs(stack.length - ordinary.length) < ordinary.length / 20, `${name}: about the same length`);
    const t = cost(group(stack), 10);
    assert.ok(t < base * 5, `${name}: ${t.toFixed(2)} ms against ${base.toFixed(2)} ms for an ordinary stack of its length`);
  }
  // Structured frames: a file of "?" that never ends before a line break.
  const frames = (file: string) => () => void groupEvent({ data: { frames: Array.from({ length: 30 }, () => ({ filename: file, function: 'f', lineno: 1 })) } });
  const sentryBase = cost(frames('https://a.example/' + 'a'.repeat(2000) + '.js'), 30);
  const t = cost(frames('app.js' + '?'.repeat(2000) + '\r'), 10);
  assert.ok(t < sentryBase * 5, `structured frames: ${t.toFixed(2)} ms against ${sentryBase.toFixed(2)} ms`);
  // insights.ts: a line of "@" (/@.+:\d+/ scanned to the end from every "@").
  const top = cost(() => void topFrame('@'.repeat(60_000)), 10);
  const topBase = cost(() => void topFrame('a@' + 'b'.repeat(59_998)), 30);
  assert.ok(top < Math.max(topBase, 0.05) * 5, `topFrame: ${top.toFixed(3)} ms against ${topBase.toFixed(3)} ms`);
});

/** Starts test/helpers/health-probe.ts against `url`; stop() ends it and resolves with its round trips (ms). */
function healthProbe(url: string): { stop(): Promise<number[]> } {
  const [cmd, args] = scriptCommand('test/helpers/health-probe.ts');
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, PROBE_URL: url }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    async stop() {
      child.stdin!.end();
      const code = await exited;
      assert.is(code, 0, `the probe failed: ${out}`);
      return JSON.parse(out.trim().split('\n').pop()!) as number[];
    },
  };
}

test('a health check never waits > 200 ms while adversarial stacks are grouped', async () => {
  const server = await startServer();
  try {
    const user = { 'x-idp-user-id': 'mallory', 'content-type': 'application/json' };
    // 16 batches of 16 errors with 60 KB stacks (each batch under the 1 MiB body limit), every
    // event different so none is grouped on the strength of another.
    const batches = Array.from({ length: 16 }, (_, b) => JSON.stringify({
      events: Array.from({ length: 16 }, (_, e) => ({
        type: 'error',
        message: `boom ${b}-${e}`,
        data: { stack: `Error: boom ${b}-${e}\n` + lines(29, (i) => `    at x${b}_${e}_${i}` + ' '.repeat(2020) + '[as (a:1)') },
      })),
    }));
    const sent = 16 * 16;
    // The health checks run from a process of their own (the probe), measuring the server alone.
    const probe = healthProbe(server.url);
    await new Promise((r) => setTimeout(r, 300));
    // A sustained flood: a batch every 100 ms, so each of the processor's runs (every 0.5 s) groups
    // about five batches. (A run groups up to 500 events without yielding: 500 events of 60 KB take
    // a few hundred ms whatever their stacks hold, which is the processor's to bound.)
    for (const body of batches) {
      const res = await fetch(`${server.url}/api/events`, { method: 'POST', headers: user, body });
      assert.is(res.status, 200, await res.clone().text());
      assert.is((await res.json()).accepted, 16);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Until every error is in an issue (or 30 s): the probe keeps measuring while they are grouped.
    let grouped = 0;
    for (const deadline = Date.now() + 30_000; grouped < sent && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 100));
      const res = await fetch(`${server.url}/api/issues?limit=1000`, { headers: user });
      grouped = ((await res.json()) as { issues: { count: number }[] }).issues.reduce((n, i) => n + i.count, 0);
    }
    const waits = await probe.stop();
    assert.is(grouped, sent, 'every error was grouped');
    assert.ok(waits.length >= 20, `${waits.length} health checks`);
    const worst = Math.max(...waits.slice(1)); // the first one opens the connection
    assert.ok(worst < 200, `the slowest of ${waits.length} health checks took ${worst.toFixed(0)} ms`);
  } finally {
    await server.stop();
  }
});

test.run();
