// The real @sentry/node SDK, unmodified, reporting to a capturing server; what it sends goes
// through the service's body reader and the Sentry protocol layer (docs/sentry.md). The SDK runs in
// a Node child process (on Deno too): it instruments node:http for its whole process.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { normalise } from '../lib/event.ts';
import { validateEvents } from '../lib/schema.ts';
import { ROOT } from './helpers/server.ts';
import { capturedEvents, startSentryCapture, type SentryCapture } from './helpers/sentry-capture.ts';
import type { RawEvent } from '../lib/event.ts';

declare const Deno: unknown;

const APP = 'test/helpers/sentry-node-app.ts';
const THROW_LINE = readFileSync(ROOT + APP, 'utf8').split('\n').findIndex((l) => l.includes('sentry-node-app: throw')) + 1;

let capture: SentryCapture;
let ids: Record<string, string>;
let events: RawEvent[];

/** Runs the instrumented app against the capture server; resolves with what it printed. */
function runApp(dsn: string): Promise<{ flushed: boolean; ids: Record<string, string> }> {
  const node = typeof Deno !== 'undefined' ? 'node' : process.execPath;
  const child = spawn(node, ['--import', 'tsx', APP], { cwd: ROOT, env: { ...process.env, SENTRY_DSN: dsn }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`the Sentry app exited ${code}:\n${out}\n${err}`));
      else resolve(JSON.parse(line));
    }),
  );
}

test.before(async () => {
  capture = await startSentryCapture();
  const result = await runApp(capture.dsn('0123456789abcdef0123456789abcdef', '42'));
  assert.ok(result.flushed, 'the SDK flushed');
  ids = result.ids;
  // flush() resolves once the answers are back, so everything has arrived; waitFor only guards that.
  await capture.waitFor((rs) => capturedEvents(rs).length >= 4);
  events = capturedEvents(capture.requests).map((c) => c.event);
});

test.after(async () => {
  await capture?.close();
});

const byId = (id: string) => {
  const e = events.find((x) => x.id === id);
  if (!e) throw new Error(`no event ${id} among ${JSON.stringify(events.map((x) => [x.id, x.type, x.message]))}`);
  return e as RawEvent & { data: Record<string, any> };
};

test('every request is authenticated by the DSN key in the query string, parses, and is answered 200 with its event id', () => {
  assert.ok(capture.requests.length >= 4);
  for (const r of capture.requests) {
    assert.is(r.error, undefined);
    assert.is(r.status, 200);
    assert.is(r.path, '/api/42/envelope/');
    assert.is(r.auth?.publicKey, '0123456789abcdef0123456789abcdef');
    assert.match(r.auth?.client ?? '', /^sentry\.javascript\.node\/\d+\.\d+\.\d+$/);
  }
  const answered = capture.requests.map((r) => r.ingest?.id).filter(Boolean);
  for (const id of Object.values(ids)) assert.ok(answered.includes(id), `answer names ${id}`);
});

test('captureException of a thrown TypeError: message, severity, release, environment, id, fingerprint, frames, top frame', () => {
  const e = byId(ids.exception);
  assert.is(e.type, 'error');
  assert.is(e.message, 'TypeError: card declined for 42');
  assert.is(e.severity, 'error');
  assert.is(e.deployVersion, 'shop@2.4.1');
  assert.is(e.environment, 'staging');
  assert.is(e.data.name, 'TypeError');
  assert.equal(e.data.fingerprint, ['payments', 'declined']);
  assert.equal(e.data.tags, { team: 'checkout' });
  assert.is(e.data.user.id, 'customer-7');
  assert.is(e.data.sdk.name, 'sentry.javascript.node');
  assert.is(e.data.mechanism, 'generic');
  assert.is(e.data.handled, true);
  assert.is(e.userId, undefined, "the app's user never claims a Watchtower owner");

  const top = e.data.frames[0];
  assert.is(top.function, 'chargeCard');
  assert.ok(top.file.endsWith('sentry-node-app.ts'), top.file);
  assert.is(top.line, THROW_LINE);
  assert.type(top.col, 'number');
  assert.is(top.inApp, true);
  assert.ok(e.data.source.endsWith('sentry-node-app.ts'));
  assert.is(e.data.line, THROW_LINE);
  const lines = e.data.stack.split('\n');
  assert.is(lines[0], 'TypeError: card declined for 42');
  assert.match(lines[1], new RegExp(`^    at chargeCard \\(.*sentry-node-app\\.ts:${THROW_LINE}:\\d+\\)$`));
  assert.ok(Date.parse(e.timestamp as string) > Date.now() - 120_000, 'timestamp converted from seconds');
});

test('captureMessage with a level: an error event with that severity and the message', () => {
  const e = byId(ids.message);
  assert.is(e.type, 'error');
  assert.is(e.message, 'inventory running low');
  assert.is(e.severity, 'warning');
  assert.is(e.data.name, undefined, 'no exception type for a message');
  assert.is(e.deployVersion, 'shop@2.4.1');
});

test('captureFeedback: a feedback event with the message, name and email', () => {
  const e = byId(ids.feedback);
  assert.is(e.type, 'feedback');
  assert.is(e.message, 'Checkout feels slow');
  assert.is(e.data.comment, 'Checkout feels slow');
  assert.is(e.data.name, 'Ada');
  assert.is(e.data.email, 'ada@example.com');
  assert.is(e.severity, 'info');
  assert.is(e.data.contexts?.feedback, undefined, 'the feedback context is not kept twice');
});

test('a report over 32 KiB arrives gzipped, is read through the body reader, and stays within the event size limit', () => {
  const request = capturedEvents(capture.requests).find((c) => c.event.id === ids.large)!.request;
  assert.is(request.headers['content-encoding'], 'gzip');
  const e = byId(ids.large);
  assert.is(e.message, 'large report');
  assert.is(e.data.extra.dump.length, 40_000);
});

test('sessions sent by the SDK are counted as skipped, not stored', () => {
  const skipped = capture.requests.map((r) => r.ingest?.skipped ?? {});
  assert.ok(skipped.some((s) => (s.session ?? 0) + (s.sessions ?? 0) > 0), JSON.stringify(skipped));
});

test('the mapped events pass the service validation and normalise with message, source and severity in place', () => {
  const { valid, rejected } = validateEvents(events, 1 << 20);
  assert.is(rejected, 0);
  const stored = valid.map((raw) => normalise(raw, { now: Date.now(), owner: 'owner-1' }));
  const error = stored.find((s) => s.id === ids.exception)!;
  assert.is(error.message, 'TypeError: card declined for 42');
  assert.ok(error.source?.endsWith('sentry-node-app.ts'));
  assert.is(error.severity, 'error');
  assert.is(error.deployVersion, 'shop@2.4.1');
  assert.is(error.environment, 'staging');
});

test.run();
