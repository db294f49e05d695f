// Goals (docs/api.md#goals): page patterns, the definitions' validation, and their routes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { patternMatcher } from '../lib/funnels/steps.ts';
import { MAX_GOALS_PER_PROJECT } from '../lib/goals/goals.ts';
import { normalise, type RawEvent, type StoredEvent } from '../lib/event.ts';
import { routeKey } from '../lib/event-keys.ts';
import { computeStats } from '../lib/stats.ts';
import { createMemoryStore } from '../lib/store/memory.ts';
import type { Store } from '../lib/store/types.ts';
import { app } from './helpers/app.ts';
import { openFreshPostgresStore, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';
import { tempSqliteStore } from './helpers/stores.ts';

test('goal page patterns (the funnels\' rule): * stays within a segment, ** crosses them, the rest is literal', () => {
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
  for (const [pattern, route, want] of cases) assert.is(patternMatcher(pattern).test(route), want, `${pattern} ~ ${route}`);
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
    [{ name: 'x', page: '/a\\b' }, /page/],
    [{ name: 'x', page: '/' + 'x'.repeat(200) }, /page/],
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

const NOW = Date.parse('2026-05-16T12:00:00.000Z');
const FROM = '2026-05-15T00:00:00.000Z';

/** Events of one project as ingest stores them, received over the day before NOW. */
function projectEvents(projectId: string, raws: RawEvent[], owner = 'alice'): StoredEvent[] {
  let n = 0;
  return raws.map((raw, i) => ({
    ...normalise(raw, { now: NOW - 20 * 3600_000 + i * 60_000, owner, newId: () => `${projectId}-${owner}-${++n}-${i}` }),
    projectId,
  }));
}

const pageload = (sessionId: string | undefined, route: string): RawEvent => ({ type: 'pageload', sessionId, route, data: { duration: 100 } });
const custom = (sessionId: string, name: string): RawEvent => ({ type: 'custom', sessionId, name });

const stores: [string, () => Promise<Store>][] = [['memory', async () => createMemoryStore()], ['sqlite', tempSqliteStore]];
const pgReason = await unavailableReason();
if (pgReason === null) stores.push(['postgres', openFreshPostgresStore]);
else if (REQUIRE_POSTGRES) stores.push(['postgres', () => Promise.reject(new Error(`PostgreSQL is required: ${pgReason}`))]);

for (const [name, open] of stores) {
  test(`goals over a range, hand-checked, on ${name}: conversions, converted sessions and the rate; other projects do not count`, async () => {
    const store = await open();
    try {
      const { send, as } = app({ store, now: () => NOW });
      const project = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'shop' } })).json();
      const other = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'blog' } })).json();
      const goal = async (body: object) => (await (await send('POST', `/api/projects/${project.id}/goals`, { headers: as('alice'), body })).json()).goal;
      const checkout = await goal({ name: 'Checkout', page: '/checkout/**' });
      const signup = await goal({ name: 'Signed up', event: 'signup' });
      const post = await goal({ name: 'A post', page: '/blog/*' });
      const never = await goal({ name: 'Never', event: 'nope' });
      await store.insert([
        ...projectEvents(project.id, [
          pageload('s1', '/checkout/cart'), pageload('s1', '/checkout/pay'), custom('s1', 'signup'),
          pageload('s2', '/checkout/cart'), custom('s2', 'signup'), custom('s2', 'signup'),
          pageload('s3', '/blog/a'), pageload('s3', '/blog/a/comments'), custom('s3', 'other'),
          pageload('s4', '/checkout'),
          pageload(undefined, '/checkout/x'),
        ]),
        // Another project of the same owner, and another owner: neither counts.
        ...projectEvents(other.id, [pageload('s9', '/checkout/cart'), custom('s9', 'signup')]),
        ...projectEvents(project.id, [pageload('s8', '/checkout/cart')], 'mallory'),
      ]);
      const stats = await (await send('GET', `/api/stats?from=${FROM}&project=${project.id}`, { headers: as('alice') })).json();
      assert.equal(stats.goals, [
        // 4 sessions in the project's range: s1-s4 (the event without a session converts, and is no
        // session). Made within one millisecond (the clock is fixed), the goals still come in the
        // order they were made.
        { id: checkout.id, name: 'Checkout', conversions: 4, sessions: 2, conversionRate: 0.5 },
        { id: signup.id, name: 'Signed up', conversions: 3, sessions: 2, conversionRate: 0.5 },
        { id: post.id, name: 'A post', conversions: 1, sessions: 1, conversionRate: 0.25 },
        { id: never.id, name: 'Never', conversions: 0, sessions: 0, conversionRate: 0 },
      ]);
      // Goals made after the events count them all the same; without a range or a project, none.
      assert.is((await (await send('GET', `/api/stats?project=${project.id}`, { headers: as('alice') })).json()).goals, undefined);
      assert.is((await (await send('GET', `/api/stats?from=${FROM}`, { headers: as('alice') })).json()).goals, undefined);
      // A share link's statistics count them too.
      const share = await (await send('POST', `/api/projects/${project.id}/shares`, { headers: as('alice'), body: {} })).json();
      const shared = await (await send('GET', `/api/shared/${share.token}/stats?from=${FROM}`)).json();
      assert.equal(shared.stats.goals.map((g: { sessions: number }) => g.sessions), [2, 2, 1, 0]);
    } finally {
      await store.close();
    }
  });
}

test('goals equal a count straight from the raw events, on random sessions (seeded)', () => {
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
  const goals = [
    { id: 'a', name: 'a', page: '/shop/*', event: null },
    { id: 'b', name: 'b', page: '/**', event: null },
    { id: 'c', name: 'c', page: '/shop/*/buy', event: null },
    { id: 'd', name: 'd', page: null, event: 'signup' },
    { id: 'e', name: 'e', page: null, event: 'e3' },
  ];
  for (let round = 0; round < 30; round++) {
    const raws: RawEvent[] = Array.from({ length: 200 }, () => {
      const session = rand() < 0.1 ? undefined : `s${Math.floor(rand() * 40)}`;
      return rand() < 0.5
        ? pageload(session, pick(['/', '/shop/a', '/shop/b/buy', '/shop/', '/blog/x', `/shop/${Math.floor(rand() * 9)}/buy`]))
        : rand() < 0.6 ? { ...custom(session ?? '', pick(['signup', 'e3', 'e4', ''])), sessionId: session } : { type: 'click', sessionId: session };
    });
    const events = projectEvents('p', raws);
    const stats = computeStats(events, NOW, { from: Date.parse(FROM), goals });
    const sessions = new Set(events.filter((e) => e.sessionId).map((e) => e.sessionId));
    for (const g of goals) {
      const re = g.page === null ? null : new RegExp('^' + g.page.replace('/**', '/.*').replace(/\*/g, (m, at: number, all: string) => (all[at - 1] === '.' ? '*' : '[^/]*')) + '$');
      const hits = events.filter((e) => (re ? e.type === 'pageload' && re.test(routeKey(e)) : e.type === 'custom' && e.name === g.event));
      const converted = new Set(hits.filter((e) => e.sessionId).map((e) => e.sessionId));
      const row = stats.goals!.find((x) => x.id === g.id)!;
      assert.equal([row.conversions, row.sessions, row.conversionRate], [hits.length, converted.size, Math.round((converted.size / sessions.size) * 10_000) / 10_000], `round ${round}, goal ${g.id}`);
    }
  }
});

test.run();
