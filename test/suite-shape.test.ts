// The test files themselves: uvu runs the tests a file registered before its `test.run()`; one
// registered after it runs in whatever file comes next, or not at all, so a failure there points
// at the wrong file or goes unseen (it happened: two rollup tests ran under another file's name).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { ROOT } from './helpers/server.ts';

/**
 * Lines (1-based) of top-level tests registered after the file's top-level `test.run()`. Files that
 * register their tests inside a function (PostgreSQL's, when a server is reachable) call run there.
 */
export function testsAfterRun(source: string): number[] {
  const lines = source.split('\n');
  const run = lines.findIndex((l) => /^test\.run\(\)/.test(l));
  if (run === -1) return [];
  return lines.flatMap((l, i) => (i > run && /^test(\.only|\.skip)?\(/.test(l) ? [i + 1] : []));
}

test('the check finds a test registered after test.run()', () => {
  assert.equal(testsAfterRun("test('a', () => {});\ntest.run();\n"), []);
  assert.equal(testsAfterRun("test('a', () => {});\ntest.run();\n\ntest('b', () => {});\n"), [4]);
  // Built, so that this file does not itself seem to hold a skipped test.
  const skipped = ['test', 'skip'].join('.');
  assert.equal(testsAfterRun(`test.run();\n${skipped}('c', () => {});\n`), [2]);
  assert.equal(testsAfterRun("function f() {\n  test('d', () => {});\n  test.run();\n}\n"), [], 'inside a function: not top-level');
});

test('every test file registers all its tests before test.run()', () => {
  for (const name of readdirSync(ROOT + 'test').filter((f) => f.endsWith('.test.ts'))) {
    assert.equal(testsAfterRun(readFileSync(`${ROOT}test/${name}`, 'utf8')), [], `test/${name}: tests after test.run()`);
  }
});

test.run();
