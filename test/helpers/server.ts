// Starts the real server (server.ts) as a child process on 127.0.0.1, on the runtime running the tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

declare const Deno: { execPath(): string } | undefined;

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface RunningServer {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export function serverCommand(): [string, string[]] {
  return scriptCommand('server.ts');
}

/** How to run a TypeScript file of the project (a path from the root) on the runtime running the tests. */
export function scriptCommand(script: string): [string, string[]] {
  return typeof Deno !== 'undefined'
    ? [Deno.execPath(), ['run', '--allow-all', '--no-prompt', script]]
    : [process.execPath, ['--import', 'tsx', script]];
}

/**
 * The tests' own clients (fetch says `node` or `Deno/…`, the browser `HeadlessChrome`) are bots to
 * the ingest filter: servers started here keep bots' events unless a test sets SERVICE_KEEP_BOTS=''.
 */
const TEST_ENV = { PORT: '0', HOST: '127.0.0.1', SERVICE_STORAGE: 'memory', SERVICE_KEEP_BOTS: 'true' };

/** Starts server.ts with PORT=0 (unless given) and resolves once it listens. */
export function startServer(env: Record<string, string> = {}, timeoutMs = 20_000, command = serverCommand()): Promise<RunningServer> {
  const [cmd, args] = command;
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, ...TEST_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening on http:\/\/[\d.]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        const port = Number(m[1]);
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          child,
          output: () => out,
          exited,
          stop: (signal = 'SIGTERM') => {
            // process.kill, not child.kill: Deno's child_process then reports a signal, not the exit code.
            if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, signal);
            return exited;
          },
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}`));
    });
  });
}

/** Runs server.ts to completion (for start-up failures) and returns its exit code and output. */
export function runServerToExit(env: Record<string, string>, timeoutMs = 20_000): Promise<{ code: number | null; output: string }> {
  const [cmd, args] = serverCommand();
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, HOST: '127.0.0.1', SERVICE_STORAGE: 'memory', SERVICE_KEEP_BOTS: 'true', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
