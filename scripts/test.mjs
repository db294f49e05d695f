// `npm test`: the whole suite on Node, then again on Deno; one closing line summing both runs.
import { spawn } from 'node:child_process';

const filter = process.argv.slice(2);
const runs = [
  ['Node', process.execPath, ['--import', 'tsx', 'test/run.ts', ...filter]],
  ['Deno', 'node_modules/.bin/deno', ['run', '--allow-all', '--no-prompt', 'test/run.ts', ...filter]],
];
if (process.env.WATCHTOWER_TEST_RUNTIMES) {
  const only = process.env.WATCHTOWER_TEST_RUNTIMES.toLowerCase().split(',');
  runs.splice(0, runs.length, ...runs.filter(([name]) => only.includes(name.toLowerCase())));
}

let passed = 0, failed = 0, broken = false;
for (const [name, cmd, args] of runs) {
  console.log(`\n=== ${name} ===`);
  const { code, out } = await run(cmd, args);
  const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
  const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1]);
  const ok = Number(/Passed:\s+(\d+)/.exec(plain)?.[1]);
  if (!Number.isFinite(total) || !Number.isFinite(ok)) {
    console.log(`${name}: the suite did not finish (exit ${code})`);
    broken = true;
    continue;
  }
  passed += ok;
  failed += total - ok;
  if (code !== 0 && total === ok) broken = true;
}
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed || broken ? 1 : 0);

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, FORCE_COLOR: '0' } });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      process.stdout.write(chunk);
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}
