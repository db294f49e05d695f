// What a funnel step matches (lib/funnels/steps.ts): page patterns, where "*" stays within a path
// segment and "**" crosses segments, every other character literal; and a custom event's name.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { customEventName, patternMatcher, stepMatcher } from '../lib/funnels/steps.ts';

test('page patterns: * within a segment, ** across, the rest literal and case-sensitive', () => {
  const cases: [string, string, boolean][] = [
    ['/', '/', true], ['/', '/a', false],
    ['/blog/*', '/blog/a', true], ['/blog/*', '/blog/', true], ['/blog/*', '/blog/a/b', false], ['/blog/*', '/blog', false],
    ['/blog/**', '/blog/a/b', true], ['/blog/**', '/blog/', true], ['/blog/**', '/blogs', false],
    ['/*/edit', '/notes/edit', true], ['/*/edit', '/a/b/edit', false], ['/**/edit', '/a/b/edit', true],
    ['*', 'unknown', true], ['*', '/a', false], ['**', '/a/b', true], ['/a**b', '/a/x/b', true],
    ['/a.b', '/axb', false], ['/a.b', '/a.b', true], ['/(x)+[y]?', '/(x)+[y]?', true], ['/$^|{}', '/$^|{}', true],
    ['/Checkout', '/checkout', false], ['/é/*', '/é/ü', true], ['/**', '/a\nb', true], ['/*', '/a\nb', true],
  ];
  for (const [pattern, key, want] of cases) assert.is(patternMatcher(pattern).test(key), want, `${pattern} ~ ${JSON.stringify(key)}`);
});

test('custom event name: name, else eventName, else data.name, the first non-empty string', () => {
  assert.is(customEventName({ name: 'a', eventName: 'b', data: { name: 'c' } }), 'a');
  assert.is(customEventName({ name: '', eventName: 'b', data: { name: 'c' } }), 'b');
  assert.is(customEventName({ name: 5, eventName: null, data: { name: 'c' } }), 'c');
  assert.is(customEventName({ name: { x: 1 }, data: {} }), null);
  assert.is(customEventName({ data: { name: '' } }), null);
});

test('a step mask: pages match pageloads only, events custom events only', () => {
  const match = stepMatcher([{ page: '/**' }, { event: 'signup' }, { page: '/signup' }]);
  assert.is(match({ type: 'pageload', page: '/signup', name: null }), 0b101);
  assert.is(match({ type: 'custom', page: null, name: 'signup' }), 0b010);
  assert.is(match({ type: 'click', page: '/signup', name: 'signup' }), 0);
});

test.run();
