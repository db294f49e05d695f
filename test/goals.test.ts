// Goals (docs/api.md#goals): page patterns, the definitions' validation, and their routes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pageMatcher, isPagePattern } from '../lib/goals/pattern.ts';
import { MAX_GOALS_PER_PROJECT } from '../lib/goals/goals.ts';
import { app } from './helpers/app.ts';

test('page patterns: * stays within a segment, ** crosses them, the rest is literal', () => {
  const cases: [string, string, boolean][] = [
    ['/checkout', '/checkout', true],
    ['/checkout', '/checkout/', false],
    ['/blog/*', '/blog/hello', true],
    ['/blog/*', '/blog/', true],
    ['/blog/*', '/blog/hello/comments', false],
    ['/blog/**', '/blog/hello/comments', true],
    ['/blog/**', '/blog', false],
    ['/*/settings', '/acme/settings', true],
    ['/*/settings', '/acme/team/settings', false],
    ['/**/settings', '/acme/team/settings', true],
    ['/p/*.html', '/p/a.html', true],
    ['/p/*.html', '/p/aXhtml', false],
    ['/a+(b)', '/a+(b)', true],
    ['/a+(b)', '/aa(b)', false],
    ['/[x]', '/[x]', true],
    ['/$^', '/$^', true],
  ];
  for (const [pattern, route, want] of cases) assert.is(pageMatcher(pattern)(route), want, `${pattern} ~ ${route}`);
  assert.ok(isPagePattern('/a/*'));
  for (const bad of ['a/b', '', '/' + 'x'.repeat(200), '/a\nb', 7, null]) assert.not.ok(isPagePattern(bad), String(bad));
});

test('goals: made, listed oldest first and deleted through the project, with clear 400s for bad bodies', async () => {
  const { send, as } = app();
  const project = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'shop' } })).json();
  const path = `/api/projects/${project.id}/goals`;
  const made = await send('POST', path, { headers: as('alice'), body: { name: 'Checkout', page: '/checkout/**' } });
  assert.is(made.status, 201);
  const goal = (await made.json()).goal;
  assert.equal([goal.name, goal.page, goal.event, goal.projectId, goal.createdBy], ['Checkout', '/checkout/**', null, project.id, 'alice']);
  await send('POST', path, { headers: as('alice'), body: { name: 'Signed up', event: 'signup' } });
  const listed = (await (await send('GET', path, { headers: as('alice') })).json()).goals;
  assert.equal(listed.map((g: { name: string }) => g.name), ['Checkout', 'Signed up']);

  const bad: [unknown, RegExp][] = [
    [{ name: 'x' }, /exactly one/],
    [{ name: 'x', page: '/a', event: 'b' }, /exactly one/],
    [{ name: '', page: '/a' }, /name/],
    [{ name: 'x', page: 'checkout' }, /page/],
    [{ name: 'x', event: '' }, /event/],
    [{ name: 'x', page: '/a', extra: 1 }, /extra/],
    [[1, 2], /JSON object/],
  ];
  for (const [body, message] of bad) {
    const res = await send('POST', path, { headers: as('alice'), body });
    assert.is(res.status, 400, JSON.stringify(body));
    const answer = await res.json();
    assert.is(answer.code, 'invalid_body');
    assert.match(answer.error, message);
  }
  assert.is((await send('POST', path, { headers: as('alice'), raw: '{"name":', })).status, 400);

  const gone = await send('DELETE', `${path}/${goal.id}`, { headers: as('alice') });
  assert.is(gone.status, 200);
  assert.is((await send('DELETE', `${path}/${goal.id}`, { headers: as('alice') })).status, 404);
  assert.equal((await (await send('GET', path, { headers: as('alice') })).json()).goals.map((g: { name: string }) => g.name), ['Signed up']);
  // Another user's project is not found, as a missing one.
  assert.is((await send('GET', path, { headers: as('mallory') })).status, 404);
  // The trail says who changed goals.
  const audit = (await (await send('GET', `/api/projects/${project.id}/audit`, { headers: as('alice') })).json()).entries;
  assert.ok(audit.some((e: { action: string }) => e.action === 'goal.deleted') && audit.some((e: { action: string }) => e.action === 'goal.created'));
});

test(`goals: at most ${MAX_GOALS_PER_PROJECT} per project`, async () => {
  const { send, as } = app();
  const project = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'shop' } })).json();
  const path = `/api/projects/${project.id}/goals`;
  for (let i = 0; i < MAX_GOALS_PER_PROJECT; i++) assert.is((await send('POST', path, { headers: as('alice'), body: { name: `g${i}`, event: `e${i}` } })).status, 201);
  const over = await send('POST', path, { headers: as('alice'), body: { name: 'one more', event: 'x' } });
  assert.is(over.status, 409);
  assert.is((await over.json()).code, 'too_many_goals');
});

test.run();
