// Grouping errors into issues: stack parsing, fingerprints, titles and culprits (lib/issues/stack.ts,
// lib/issues/fingerprint.ts, lib/issues/hash.ts). The state machine is in issues-state.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { groupEvent, normaliseMessage, stripContentHash } from '../lib/issues/fingerprint.ts';
import { fnv1a64 } from '../lib/issues/hash.ts';
import { framesFromSentry, isInApp, parseStack } from '../lib/issues/stack.ts';

/** A Chrome stack of the checkout bug, served from `origin` as `file`. */
const chromeStack = (message: string, origin = 'https://shop.example.com', file = 'assets/app-3f9a1c.js?v=12', line = 1) =>
  `TypeError: ${message}
    at applyCoupon (${origin}/${file}:${line}:1042)
    at Cart.checkout (${origin}/${file}:${line}:2210)
    at HTMLButtonElement.onClick (${origin}/${file}:${line}:88)`;

test('fnv1a64: the published FNV-1a 64 test vectors', () => {
  assert.is(fnv1a64(''), 'cbf29ce484222325');
  assert.is(fnv1a64('a'), 'af63dc4c8601ec8c');
  assert.is(fnv1a64('foobar'), '85944171f73967e8');
});

test('parseStack: Chrome frames, with async, new, [as alias], eval and native positions', () => {
  const frames = parseStack(`Error: boom @ 12:30
    at fetchUser (https://app.example.com/js/main.js:10:5)
    at async loadPage (https://app.example.com/js/main.js:20:7)
    at new Store (https://app.example.com/js/store.js:3:9)
    at Object.handler [as onload] (https://app.example.com/js/main.js:30:1)
    at https://app.example.com/js/boot.js:1:200
    at eval (eval at run (https://app.example.com/js/main.js:5:3), <anonymous>:1:13)
    at Array.map (<anonymous>)
    at async Promise.all (index 0)`);
  assert.equal(frames.map((f) => [f.function, f.file, f.line, f.column, f.inApp]), [
    ['fetchUser', 'https://app.example.com/js/main.js', 10, 5, true],
    ['loadPage', 'https://app.example.com/js/main.js', 20, 7, true],
    ['Store', 'https://app.example.com/js/store.js', 3, 9, true],
    ['Object.handler', 'https://app.example.com/js/main.js', 30, 1, true],
    [null, 'https://app.example.com/js/boot.js', 1, 200, true],
    ['eval', '<anonymous>', 1, 13, false],
    ['Array.map', '<anonymous>', null, null, false],
    ['Promise.all', 'index 0', null, null, false],
  ]);
});

test('parseStack: Firefox and Safari frames; a message line with "@" is not a frame', () => {
  const firefox = parseStack(`fetchUser@https://app.example.com/js/main.js:10:5
loadPage/<@https://app.example.com/js/main.js:20:7
@https://app.example.com/js/boot.js:1:200
run@https://app.example.com/js/main.js line 5 > eval:1:13`);
  assert.equal(firefox.map((f) => [f.function, f.file, f.line, f.column]), [
    ['fetchUser', 'https://app.example.com/js/main.js', 10, 5],
    ['loadPage', 'https://app.example.com/js/main.js', 20, 7],
    [null, 'https://app.example.com/js/boot.js', 1, 200],
    ['run', 'https://app.example.com/js/main.js', 5, null],
  ]);
  const safari = parseStack(`fetchUser@https://app.example.com/js/main.js:10:5
map@[native code]
global code@https://app.example.com/js/boot.js:1:200`);
  assert.equal(safari.map((f) => [f.function, f.file, f.line, f.inApp]), [
    ['fetchUser', 'https://app.example.com/js/main.js', 10, true],
    ['map', '[native code]', null, false],
    [null, 'https://app.example.com/js/boot.js', 1, true],
  ]);
  assert.equal(parseStack('mail ada@example.com failed'), []);
  assert.equal(parseStack(undefined), []);
});

test('framesFromSentry: outermost-first frames become innermost first; an explicit in_app wins', () => {
  const frames = framesFromSentry([
    { function: 'main', filename: '/js/boot.js', abs_path: 'https://app.example.com/js/boot.js', lineno: 1, colno: 10, in_app: true },
    { function: 'lib', abs_path: 'https://app.example.com/js/main.js', lineno: 9, colno: 2, in_app: false },
    { function: 'thrower', filename: 'app:///src/cart.js', lineno: 4, colno: 3 },
    'not a frame',
  ]);
  assert.equal(frames.map((f) => [f.function, f.file, f.line, f.column, f.inApp]), [
    ['thrower', 'app:///src/cart.js', 4, 3, true],
    ['lib', 'https://app.example.com/js/main.js', 9, 2, false],
    ['main', 'https://app.example.com/js/boot.js', 1, 10, true],
  ]);
});

test('isInApp: extensions, public CDNs, node_modules and vendor chunks are not the app', () => {
  for (const file of [
    'chrome-extension://abcdef/content.js', 'moz-extension://x/inject.js', 'safari-web-extension://x/a.js',
    'https://cdn.jsdelivr.net/npm/lodash@4/lodash.min.js', 'https://unpkg.com/react@18/umd/react.production.min.js',
    'https://app.example.com/node_modules/.vite/deps/react.js', 'https://app.example.com/js/vendor.3f9a1c.js',
    'https://app.example.com/static/js/vendors~main.chunk.js', 'https://app.example.com/js/chunk-vendors.1a2b.js',
    'https://app.example.com/_next/static/chunks/framework-2c79e2a6.js', '<anonymous>', null,
  ]) assert.not.ok(isInApp(file), String(file));
  for (const file of ['https://app.example.com/js/app.js', 'https://static.example-cdn.net/app-3f9a1c.js', '/js/main.js', 'app:///src/cart.js']) {
    assert.ok(isInApp(file), file);
  }
});

test('stripContentHash: bundler hashes go, names and extensions stay', () => {
  assert.is(stripContentHash('app-3f9a1c.js'), 'app.js');
  assert.is(stripContentHash('main.3f9a1c2b.chunk.js'), 'main.chunk.js');
  assert.is(stripContentHash('main-N3GXTLWO.js'), 'main.js');
  assert.is(stripContentHash('index-BxKqTzAa.js'), 'index.js');
  assert.is(stripContentHash('app.js'), 'app.js');
  assert.is(stripContentHash('checkout-page.js'), 'checkout-page.js');
  assert.is(stripContentHash('3f9a1c2b.js'), '3f9a1c2b.js', 'a file named only by its hash keeps it');
});

test('normaliseMessage: numbers, hex, UUIDs, URLs, e-mail addresses and quoted values become placeholders', () => {
  assert.is(
    normaliseMessage(`Order 1234 for ada@example.com failed at https://api.example.com/orders/1234?x=1 (id 0x1f, trace 3f9a1c2b7d, user 0190f5e2-7a1b-7c3d-9e4f-123456789abc, field 'zip')`),
    'Order <n> for <email> failed at <url> (id <hex>, trace <hex>, user <uuid>, field <str>)',
  );
  assert.is(normaliseMessage(`Can't find variable: foo`), `Can't find variable: foo`, 'an apostrophe is not a quote');
});

test('same bug, different numbers, ids and URLs in the message (no stack): one issue', () => {
  const a = groupEvent({ message: 'Order 12 failed for ada@example.com at https://api.example.com/o/12' });
  const b = groupEvent({ message: 'Order 99 failed for bob@example.org at https://api.example.com/o/99' });
  const c = groupEvent({ message: 'Payment 12 failed for ada@example.com at https://api.example.com/o/12' });
  assert.is(a.fingerprint, b.fingerprint);
  assert.is.not(a.fingerprint, c.fingerprint, 'different words: another bug');
  assert.match(a.fingerprint, /^[0-9a-f]{16}$/);
  assert.is(a.title, 'Order 12 failed for ada@example.com at https://api.example.com/o/12');
  assert.is(a.culprit, null);
});

test('with a stack: the message does not matter, the top in-app frames do', () => {
  const a = groupEvent({ message: 'Uncaught TypeError: x is undefined', data: { stack: chromeStack('x is undefined') } });
  const b = groupEvent({ message: 'Uncaught TypeError: y is undefined', data: { stack: chromeStack('y is undefined') } });
  assert.is(a.fingerprint, b.fingerprint);
  assert.is(a.type, 'TypeError');
  assert.is(a.title, 'TypeError: x is undefined');
  assert.is(a.culprit, 'applyCoupon (/assets/app-3f9a1c.js)');
  assert.equal(a.components, ['type:TypeError', 'frame:applyCoupon@app.js', 'frame:Cart.checkout@app.js', 'frame:HTMLButtonElement.onClick@app.js']);

  const otherTop = groupEvent({ message: 'x is undefined', data: { stack: chromeStack('x is undefined').replace('applyCoupon', 'applyDiscount') } });
  assert.is.not(otherTop.fingerprint, a.fingerprint, 'a different top frame is another issue');
  const otherType = groupEvent({ message: 'x is undefined', data: { stack: chromeStack('x is undefined').replace('TypeError', 'RangeError') } });
  assert.is.not(otherType.fingerprint, a.fingerprint, 'a different exception type is another issue');
});

test('content hashes, query strings, hosts, lines and columns do not split an issue', () => {
  const a = groupEvent({ message: 'x', data: { stack: chromeStack('x', 'https://shop.example.com', 'assets/app-3f9a1c.js?v=12', 1) } });
  const b = groupEvent({ message: 'x', data: { stack: chromeStack('x', 'https://staging.shop.example.com:8443', 'static/1.5.0/app-77b0e2.js?v=13', 3) } });
  assert.is(a.fingerprint, b.fingerprint);
  assert.is(b.culprit, 'applyCoupon (/static/1.5.0/app-77b0e2.js)', 'the culprit shows the file as served');
});

test('frames outside the app do not count; the culprit is the top in-app frame', () => {
  const stack = `TypeError: x is undefined
    at e.exports (https://cdn.jsdelivr.net/npm/lib@1/lib.min.js:1:500)
    at inject (chrome-extension://abcdef/content.js:4:2)
    at applyCoupon (https://shop.example.com/assets/app.js:1:1042)`;
  const g = groupEvent({ message: 'x is undefined', data: { stack } });
  assert.is(g.culprit, 'applyCoupon (/assets/app.js)');
  assert.equal(g.components, ['type:TypeError', 'frame:applyCoupon@app.js']);
  const viaOtherLib = groupEvent({ message: 'x is undefined', data: { stack: stack.replace('e.exports', 'n.run').replace('lib@1', 'other@2') } });
  assert.is(viaOtherLib.fingerprint, g.fingerprint);
});

test('only frames outside the app: grouped by those frames, no culprit', () => {
  const g = groupEvent({ message: 'boom', data: { stack: 'Error: boom\n    at run (chrome-extension://abc/content.js:1:2)' } });
  assert.equal(g.components, ['type:Error', 'frame:run@content.js']);
  assert.is(g.culprit, null);
});

test('a Sentry fingerprint wins; {{ default }} stands for the default grouping', () => {
  const stackA = chromeStack('a');
  const stackB = chromeStack('b').replace('applyCoupon', 'somethingElse');
  const a = groupEvent({ message: 'a', fingerprint: ['checkout-failure'], data: { stack: stackA } });
  const b = groupEvent({ message: 'b', data: { stack: stackB, fingerprint: ['checkout-failure'] } });
  assert.is(a.fingerprint, b.fingerprint, 'same client fingerprint, different stacks: one issue');
  assert.equal(a.components, ['custom:checkout-failure']);

  const plain = groupEvent({ message: 'a', data: { stack: stackA } });
  assert.is(groupEvent({ message: 'a', fingerprint: ['{{ default }}'], data: { stack: stackA } }).fingerprint, plain.fingerprint);
  const perTenant = (tenant: string) => groupEvent({ message: 'a', fingerprint: ['{{default}}', tenant], data: { stack: stackA } });
  assert.is(perTenant('acme').fingerprint, perTenant('acme').fingerprint);
  assert.is.not(perTenant('acme').fingerprint, perTenant('globex').fingerprint);
  assert.is.not(perTenant('acme').fingerprint, plain.fingerprint);

  const ignored = groupEvent({ message: 'a', fingerprint: 'not-an-array', data: { stack: stackA } });
  assert.is(ignored.fingerprint, plain.fingerprint, 'a malformed fingerprint is ignored');
});

test('Sentry-shaped events: the exception value, type and frames are read', () => {
  const g = groupEvent({
    message: null,
    data: {
      exception: {
        values: [{
          type: 'ChunkLoadError',
          value: 'Loading chunk 7 failed',
          stacktrace: { frames: [
            { function: 'boot', abs_path: 'https://app.example.com/js/main.js', lineno: 1, colno: 5, in_app: true },
            { function: 'loadChunk', abs_path: 'https://app.example.com/js/main.js', lineno: 1, colno: 99, in_app: true },
          ] },
        }],
      },
    },
  });
  assert.is(g.title, 'ChunkLoadError: Loading chunk 7 failed');
  assert.is(g.culprit, 'loadChunk (/js/main.js)');
  assert.equal(g.components, ['type:ChunkLoadError', 'frame:loadChunk@main.js', 'frame:boot@main.js']);
});

test('titles: the type from a window.onerror message, "(no message)", and a cut at 200 characters', () => {
  assert.is(groupEvent({ message: 'Uncaught ReferenceError: foo is not defined' }).title, 'ReferenceError: foo is not defined');
  assert.is(groupEvent({ message: 'Uncaught ReferenceError: foo is not defined' }).type, 'ReferenceError');
  assert.is(groupEvent({ message: 'Script error.' }).type, null);
  assert.is(groupEvent({}).title, '(no message)');
  const long = groupEvent({ message: 'x'.repeat(500) }).title;
  assert.is(long.length, 200);
  assert.ok(long.endsWith('…'));
  assert.is(groupEvent({ message: 'boom', data: { exceptionType: 'CheckoutError' } }).title, 'CheckoutError: boom');
});

test.run();
