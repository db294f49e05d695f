// Shared benchmark plumbing: child servers, wrk runs, medians, and BENCHMARKS.md sections.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const DENO = ROOT + 'node_modules/.bin/deno';

export interface Child { url: string; child: ChildProcess; stop(): Promise<void> }

export function start(cmd: string, args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<Child> {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start: ${out}`)), 60_000);
    const onData = (c: Buffer) => {
      out += c;
      const m = /listening on http:\/\/[\d.]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        child.stderr!.resume();
        resolve({
          url: `http://127.0.0.1:${m[1]}`,
          child,
          stop: () =>
            new Promise((r) => {
              if (child.exitCode !== null) return r();
              child.once('exit', () => r());
              process.kill(child.pid!, 'SIGTERM');
              setTimeout(() => child.exitCode === null && process.kill(child.pid!, 'SIGKILL'), 30_000);
            }),
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c) => (out += c));
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

/**
 * How `npm start` starts the server, read from package.json's start script (so that a bench that
 * measures the server "as started" cannot drift from it): its environment and Node's flags.
 */
export function npmStart(): { env: Record<string, string>; flags: string[] } {
  const script: string = JSON.parse(readFileSync(ROOT + 'package.json', 'utf8')).scripts.start;
  const words = script.split(/\s+/);
  const node = words.indexOf('node');
  const env = Object.fromEntries(words.slice(0, node).map((w) => w.split('=') as [string, string]));
  const flags = words.slice(node + 1, words.indexOf('--import'));
  return { env, flags };
}

export interface WrkResult { rps: number; p50: number; p99: number; errors: number; requests: number }

const ms = (value: string, unit: string) => Number(value) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 } as Record<string, number>)[unit];

/** One wrk run from a separate process: 1 thread (the server has the other core), keep-alive. */
export function wrk(url: string, opts: { connections: number; seconds: number; bodyFile: string; path: string; forwardedFor?: string[] }): WrkResult {
  try {
    return parseWrk(execFileSync('wrk', wrkArgs(url, opts), { env: wrkEnv(opts), encoding: 'utf8' }));
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') throw new Error('this benchmark drives the server with wrk, which is not installed (Debian: apt-get install wrk)');
    throw err;
  }
}

export const wrkArgs = (url: string, opts: { connections: number; seconds: number }) =>
  ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency', '-s', ROOT + 'bench/post.lua', url];
/** `forwardedFor`: each request carries the next of these addresses as X-Forwarded-For (bench/post.lua). */
export const wrkEnv = (opts: { bodyFile: string; path: string; forwardedFor?: string[] }) =>
  ({ ...process.env, BODY_FILE: opts.bodyFile, BODY_PATH: opts.path, FORWARDED_FOR: opts.forwardedFor?.join(',') ?? '' });

/** Requests/s, latency percentiles, errors (non-2xx and socket errors) and request count of wrk's report. */
export function parseWrk(out: string): WrkResult {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m ? ms(m[1], m[2]) : NaN;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { rps, p50: pct('50'), p99: pct('99'), errors, requests };
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** "median (min–max)" */
export function spread(values: number[], digits = 0): string {
  const f = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  return `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.versions.node}, ${new Date().toISOString().slice(0, 10)}`;
}

/**
 * Replaces (or appends) the section between `<!-- bench:NAME -->` markers in BENCHMARKS.md; with
 * BENCH_WRITE=0 it does not (a trial run, or one on a machine busy with other work).
 */
export function writeSection(name: string, markdown: string): void {
  if (process.env.BENCH_WRITE === '0') return;
  const file = ROOT + 'BENCHMARKS.md';
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  let text = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Benchmarks\n\nWritten by `npm run bench` (see bench/). Figures are medians of several rounds with (min–max); ratios compare with a baseline measured in the same run, because this machine is shared and absolute figures drift.\n';
  const block = `${begin}\n${markdown.trim()}\n${end}`;
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  text = i >= 0 && j > i ? text.slice(0, i) + block + text.slice(j + end.length) : text.trimEnd() + '\n\n' + block + '\n';
  writeFileSync(file, text);
}

/** The `data` of a generated event of this type (durations, ratings, errors, clicks), drawn from `rand`. */
export function eventData(type: string, rand: () => number): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  if (type === 'pageload') {
    data.duration = Math.round(50 + rand() * rand() * 4000);
    data.ttfb = Math.round(rand() * 400);
  } else if (type === 'feedback') data.rating = 1 + Math.floor(rand() * 5);
  else if (type === 'error') {
    data.message = `TypeError: x is undefined #${Math.floor(rand() * 50)}`;
    data.stack = 'at f (app.js:1:1)\nat g (app.js:2:2)';
  } else if (type === 'click') {
    data.target = '#buy';
    data.text = 'Buy';
  }
  return data;
}
