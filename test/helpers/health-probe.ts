// Measures GET /api/health of the server at PROBE_URL, one request after another every 10 ms, from a
// process of its own, so that the test runner's own pauses (its garbage collection after hundreds
// of tests) are not counted as the server's. Runs until its standard input ends, then prints the
// round trips in ms as one JSON array and exits. Run on Node (tsx) or Deno, as the tests are.
import process from 'node:process';

const url = `${process.env.PROBE_URL}/api/health`;
let stopping = false;
process.stdin.on('data', () => {});
process.stdin.on('end', () => (stopping = true));
process.stdin.resume();

const waits: number[] = [];
while (!stopping) {
  const t = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  waits.push(performance.now() - t);
  await new Promise((r) => setTimeout(r, 10));
}
process.stdout.write(JSON.stringify(waits) + '\n');
process.exit(0);
