// `npm run bench:issues`: how fast stored errors become issues, on the embedded deployment (the
// sqlite store and the record file beside it, as `npm start` runs them): errors/s grouped with 1, 10
// and 1,000 owners, and with 100,000 issues already held, and the longest event-loop stall while
// grouping runs (a 5 ms timer's lateness). Each round stores the errors first and lets the store
// seal them (not timed), then times IssueProcessor.drain() until every one is counted. Errors are
// browser errors with a 10-frame stack, 100 bugs per owner, spread over each owner's bugs. Figures
// go to BENCHMARKS.md (section bench:issues). BENCH_ERRORS scales the errors per round (default
// 100,000), BENCH_ROUNDS the rounds (3), BENCH_SCENARIO runs one scenario alone (0–3), and
// BENCH_PROFILE=FILE writes a CPU profile of the timed part.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { IssueProcessor } from '../lib/issues/processor.ts';
import { RecordIssueStore } from '../lib/issues/records.ts';
import { openSqliteRecords } from '../lib/records/file.ts';
import { openSqliteStore } from '../lib/store/sqlite/store.ts';
import { machine, median, spread, writeSection } from './lib.ts';

const ERRORS = Number(process.env.BENCH_ERRORS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Bugs per owner (the held scenario holds exactly these as issues). */
const BUGS = 100;
const T0 = Date.now() - 3_600_000;

let seed = 7;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
/** Letters only: grouping folds digits in messages. */
const word = (i: number) => i.toString(26).replace(/./g, (c) => String.fromCharCode(97 + parseInt(c, 26)));
const FRAMES = ['dispatch', 'invokeGuarded', 'batchedUpdates', 'commitRoot', 'renderList', 'useEffect', 'fetchJson', 'onSubmit', 'handleClick'];

function bugOf(owner: number, bug: number): { message: string; stack: string } {
  const message = `TypeError: Cannot read properties of undefined (reading '${word(owner)}_${word(bug)}')`;
  const top = `    at component_${word(bug)} (https://shop.example/assets/app.${word(owner)}.js:${1 + (bug % 40)}:${100 + bug})`;
  const rest = FRAMES.map((f, i) => `    at ${f} (https://shop.example/assets/vendor.js:${i + 1}:${(i * 37) % 200})`);
  return { message, stack: [message, top, ...rest].join('\n') };
}

let n = 0;
function errorEvent(owner: number, bug: number, at: number): StoredEvent {
  const { message, stack } = bugOf(owner, bug);
  return normalise({
    type: 'error', message, sessionId: `s-${owner}-${Math.floor(rand() * 500)}`, deployVersion: '1.4.2',
    url: `https://shop.example/p/${bug}`, data: { message, stack, source: 'https://shop.example/assets/app.js', line: 1, col: 100 + bug },
  } as RawEvent, { now: at, owner: `owner-${owner}`, newId: () => `e${++n}` });
}

/** Waits until the store has sealed every full segment and taken no new one for a second. */
async function settle(store: Awaited<ReturnType<typeof openSqliteStore>>): Promise<void> {
  const sealed = async () => ((await store.health()).segments as { sealed: number; hotEvents: number });
  let last = await sealed();
  for (let quiet = 0; quiet < 10; quiet++) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await sealed();
    if (now.sealed !== last.sealed || now.hotEvents >= 50_000) quiet = 0;
    last = now;
  }
}

interface Round { errorsPerSec: number; stallMs: number; cpuPerError: number; issues: number }

async function round(owners: number, held: number): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'watchtower-bench-issues-'));
  const path = join(dir, 'watchtower.sqlite');
  const store = await openSqliteStore({ path, retentionDays: 0, log: () => {} });
  const records = await openSqliteRecords({ path });
  try {
    const issues = new RecordIssueStore(records, { perOwner: 100_000 });
    const processor = new IssueProcessor({ issues, records, source: store });
    await processor.drain();
    // Issues held before the round (not timed): one error of each owner's bugs, grouped. The timed
    // errors then update those issues.
    if (held > 0) {
      for (let o = 0; o < owners; o++) await store.insert(Array.from({ length: held / owners }, (_, b) => errorEvent(o, b, T0)));
      await processor.drain();
    }
    for (let i = 0; i < ERRORS; i += 500) {
      await store.insert(Array.from({ length: Math.min(500, ERRORS - i) }, (_, k) => errorEvent(Math.floor(rand() * owners), Math.floor(rand() * BUGS), T0 + i + k)));
    }
    // The store seals a segment every 50,000 events: let the seals the stored errors started finish
    // first, so that the stall measured is grouping's (a seal's own stall is bench:history's).
    await settle(store);
    // BENCH_PROFILE=FILE writes a CPU profile of the grouping thread while it is timed.
    const profile = process.env.BENCH_PROFILE ? new Session() : null;
    if (profile) {
      profile.connect();
      await profile.post('Profiler.enable');
      await profile.post('Profiler.start');
    }
    let stall = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last - 5);
      last = now;
    }, 5);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await processor.drain();
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(probe);
    if (profile) {
      const { profile: taken } = await profile.post('Profiler.stop');
      writeFileSync(process.env.BENCH_PROFILE!, JSON.stringify(taken));
      profile.disconnect();
    }
    let count = 0, made = 0;
    for (let o = 0; o < owners; o++) {
      for (const i of await issues.listIssues(`owner-${o}`, Date.now())) {
        count += i.count;
        made++;
      }
    }
    const expected = ERRORS + held;
    if (count !== expected || processor.failed) throw new Error(`counted ${count} of ${expected} errors (${processor.failed} failed)`);
    return { errorsPerSec: ERRORS / (ms / 1000), stallMs: stall, cpuPerError: (cpu.user + cpu.system) / ERRORS, issues: made };
  } finally {
    await store.close();
    await records.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const scenarios: [label: string, owners: number, held: number][] = [
  ['1 owner', 1, 0],
  ['10 owners', 10, 0],
  ['1,000 owners', 1_000, 0],
  ['1,000 owners, 100,000 issues held', 1_000, 100_000],
];

const rows: string[] = [];
// BENCH_SCENARIO=3 runs one scenario alone (for a profile); the section is written only for all.
const only = process.env.BENCH_SCENARIO === undefined ? null : Number(process.env.BENCH_SCENARIO);
for (const [label, owners, held] of scenarios.filter((_, i) => only === null || i === only)) {
  const results: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    results.push(await round(owners, held));
    const x = results[results.length - 1];
    console.log(`${label}: ${x.errorsPerSec.toFixed(0)} errors/s, stall ${x.stallMs.toFixed(1)} ms, ${x.cpuPerError.toFixed(1)} µs CPU/error, ${x.issues} issues (load ${loadavg()[0].toFixed(2)})`);
  }
  rows.push(`| ${label} | ${spread(results.map((x) => x.errorsPerSec))} | ${spread(results.map((x) => x.cpuPerError), 1)} | ${spread(results.map((x) => x.stallMs), 1)} | ${median(results.map((x) => x.issues)).toLocaleString('en-US')} |`);
}

if (only === null) writeSection('issues', `## Issue grouping

\`npm run bench:issues\` — the sqlite store and its record file (the embedded deployment); ${ERRORS.toLocaleString('en-US')} browser errors (10-frame stacks, 100 bugs per owner) stored first (and sealed by the store), then grouped by \`IssueProcessor.drain()\` until every one is counted; ${ROUNDS} rounds, each on new files. CPU is the process's (both threads) per error. Stall: the longest a 5 ms timer of the grouping thread was late. Targets: ≥ 10,000 errors/s with 100,000 issues held; stall < 50 ms. ${machine()}.

| owners | errors/s | CPU µs/error | longest stall ms | issues made or updated |
|---|---|---|---|---|
${rows.join('\n')}
`);
