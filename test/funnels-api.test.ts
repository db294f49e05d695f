// POST /api/funnels/query and the saved funnels of a project, through the handler: the answer's
// shape and arithmetic from events ingested with the project's key, every bound answered with a
// JSON 400, and saved funnels listed, audited and deleted. Who may call which is the access
// matrix's (test/teams-matrix.test.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_FUNNELS_PER_PROJECT } from '../lib/funnels/saved.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { app } from './helpers/app.ts';
import { tempSqliteStore } from './helpers/stores.ts';
import type { FunnelQuery } from '../lib/funnels/count.ts';

const OWNER = { 'x-idp-user-id': 'shop-owner' };

async function world() {
  const records = createMemoryRecords();
  const a = app({ records });
  const project = await (await a.send('POST', '/api/projects', { headers: OWNER, body: { name: 'shop' } })).json();
  return { ...a, records, project };
}

const from = () => new Date(Date.now() - 3_600_000).toISOString();
/** A range's end past the events just sent: one ending at now leaves out what was received in its millisecond. */
const until = () => new Date(Date.now() + 60_000).toISOString();

test('query: sessions, conversion and drop-off per step from ingested events', async () => {
  const { send, project } = await world();
  const ev = (sessionId: string, type: string, extra: Record<string, unknown>) => ({ type, sessionId, ...extra });
  const events = [
    ev('a', 'pageload', { route: '/' }), ev('a', 'pageload', { route: '/pricing' }), ev('a', 'custom', { name: 'signup' }),
    ev('b', 'pageload', { url: 'https://shop.example/?utm_source=x' }), ev('b', 'pageload', { route: '/pricing' }),
    ev('c', 'pageload', { route: '/' }),
    ev('d', 'custom', { name: 'signup' }),
  ];
  const posted = await send('POST', `/api/events?key=${project.key}`, { body: { events } });
  assert.is(posted.status, 200);
  // Keyless events of the same owner are no project's.
  await send('POST', '/api/events', { headers: OWNER, body: { events: [ev('z', 'pageload', { route: '/' })] } });
  const res = await send('POST', '/api/funnels/query', {
    headers: OWNER,
    body: { project: project.id, from: from(), to: until(), windowMinutes: 30, steps: [{ page: '/' }, { page: '/pricing' }, { event: 'signup' }] },
  });
  assert.is(res.status, 200);
  assert.equal(await res.json(), {
    steps: [
      { page: '/', sessions: 3, conversionRate: 1, dropOff: 0 },
      { page: '/pricing', sessions: 2, conversionRate: 0.6667, dropOff: 1 },
      { event: 'signup', sessions: 1, conversionRate: 0.3333, dropOff: 1 },
    ],
  });
});

test('query: nobody at step 1 gives zero rates, not NaN', async () => {
  const { send, project } = await world();
  const res = await send('POST', '/api/funnels/query', { headers: OWNER, body: { project: project.id, from: from(), windowMinutes: 5, steps: [{ page: '/' }, { event: 'x' }] } });
  assert.equal((await res.json()).steps.map((s: { conversionRate: number }) => s.conversionRate), [0, 0]);
});

test('query: bad input answers 400 invalid_funnel naming the problem', async () => {
  const { send, project } = await world();
  const ok = { project: project.id, from: from(), windowMinutes: 30, steps: [{ page: '/' }, { event: 'signup' }] };
  const cases: [unknown, RegExp][] = [
    [[], /JSON object/],
    [{ ...ok, extra: 1 }, /"extra" is not a field/],
    [{ ...ok, project: 'abc' }, /project/],
    [{ ...ok, from: 'yesterday' }, /"from"/],
    [{ ...ok, from: undefined }, /"from"/],
    [{ ...ok, to: ok.from }, /before "to"/],
    [{ ...ok, from: '2020-01-01', to: '2020-06-01' }, /at most 93 days/],
    [{ ...ok, windowMinutes: 0 }, /windowMinutes/],
    [{ ...ok, windowMinutes: 1.5 }, /windowMinutes/],
    [{ ...ok, windowMinutes: 43_201 }, /windowMinutes/],
    [{ ...ok, steps: [{ page: '/' }] }, /2 to 8 steps/],
    [{ ...ok, steps: Array.from({ length: 9 }, () => ({ page: '/' })) }, /2 to 8 steps/],
    [{ ...ok, steps: [{ page: '/' }, 'signup'] }, /steps\[1\] must be an object/],
    [{ ...ok, steps: [{ page: '/', event: 'x' }, { page: '/' }] }, /exactly one/],
    [{ ...ok, steps: [{ route: '/' }, { page: '/' }] }, /exactly one/],
    [{ ...ok, steps: [{ page: '' }, { page: '/' }] }, /non-empty string/],
    [{ ...ok, steps: [{ page: '/' + 'a'.repeat(200) }, { page: '/' }] }, /at most 200/],
    [{ ...ok, steps: [{ page: '/a\\b' }, { page: '/' }] }, /backslashes/],
    [{ ...ok, steps: [{ page: '/' }, { event: 'a\u0000' }] }, /control characters/],
    [{ ...ok, steps: [{ page: '/' }, { event: 'a\ud800' }] }, /unpaired surrogates/],
  ];
  for (const [body, message] of cases) {
    const res = await send('POST', '/api/funnels/query', { headers: OWNER, body });
    const out = await res.json();
    assert.is(res.status, 400, JSON.stringify(body).slice(0, 120));
    assert.is(out.code, 'invalid_funnel');
    assert.match(out.error, message);
  }
  const big = await send('POST', '/api/funnels/query', { headers: OWNER, raw: JSON.stringify({ ...ok, pad: 'x'.repeat(20_000) }) });
  assert.is(big.status, 413);
  assert.is((await send('POST', '/api/funnels/query', { body: ok })).status, 401);
});

test('saved funnels: created by a member, listed newest first, audited, deleted; bounded per project', async () => {
  const { send, project, records } = await world();
  const path = `/api/projects/${project.id}/funnels`;
  const body = (name: string) => ({ name, windowMinutes: 60, steps: [{ page: '/' }, { page: '/checkout/**' }] });
  const first = await send('POST', path, { headers: OWNER, body: body('  Checkout  ') });
  assert.is(first.status, 201);
  const { funnel } = await first.json();
  assert.equal({ name: funnel.name, windowMinutes: funnel.windowMinutes, steps: funnel.steps, createdBy: funnel.createdBy },
    { name: 'Checkout', windowMinutes: 60, steps: [{ page: '/' }, { page: '/checkout/**' }], createdBy: 'shop-owner' });
  assert.is((await send('POST', path, { headers: OWNER, body: { ...body('x'), windowMinutes: 0 } })).status, 400);
  assert.is((await send('POST', path, { headers: OWNER, body: { ...body('x'), color: 'red' } })).status, 400);
  assert.is((await send('POST', path, { headers: OWNER, body: body('') })).status, 400);
  const second = (await (await send('POST', path, { headers: OWNER, body: body('Signup') })).json()).funnel;
  const listed = await (await send('GET', path, { headers: OWNER })).json();
  assert.equal(listed.funnels.map((f: { id: string }) => f.id), [second.id, funnel.id], 'newest first, even within one millisecond');
  const removed = await send('DELETE', `${path}/${funnel.id}`, { headers: OWNER });
  assert.is(removed.status, 200);
  assert.is((await removed.json()).funnel.id, funnel.id);
  assert.is((await send('DELETE', `${path}/${funnel.id}`, { headers: OWNER })).status, 404);
  assert.is((await send('DELETE', `${path}/not-an-id`, { headers: OWNER })).status, 404);
  assert.equal((await (await send('GET', path, { headers: OWNER })).json()).funnels.map((f: { id: string }) => f.id), [second.id]);
  const audit = await (await send('GET', `/api/projects/${project.id}/audit`, { headers: OWNER })).json();
  const actions = audit.entries.filter((e: { action: string }) => e.action.startsWith('funnel.')).map((e: { action: string; target: string }) => [e.action, e.target]);
  assert.equal(actions, [['funnel.deleted', funnel.id], ['funnel.created', second.id], ['funnel.created', funnel.id]]);
  for (let i = 1; i < MAX_FUNNELS_PER_PROJECT; i++) await send('POST', path, { headers: OWNER, body: body(`f${i}`) });
  const over = await send('POST', path, { headers: OWNER, body: body('one too many') });
  assert.is(over.status, 409);
  // Deleting the project takes its funnels with it.
  assert.is(await records.count('funnel', `project:${project.id}`), MAX_FUNNELS_PER_PROJECT);
  assert.is((await send('DELETE', `/api/projects/${project.id}`, { headers: OWNER })).status, 200);
  assert.is(await records.count('funnel', `project:${project.id}`), 0);
});

test('query on sqlite: a funnel past its reading budget gives up with 422 funnel_too_large, and the worker serves the next request', async () => {
  const sqlite = await tempSqliteStore();
  try {
    // The store as it is, with the budget the route passes lowered to nothing.
    const store = Object.assign(Object.create(sqlite), { funnel: (q: FunnelQuery) => sqlite.funnel({ ...q, budgetMs: 0 }) });
    const records = createMemoryRecords();
    const { send } = app({ records, store });
    const project = await (await send('POST', '/api/projects', { headers: OWNER, body: { name: 'shop' } })).json();
    const events = Array.from({ length: 5000 }, (_, i) => ({ type: 'pageload', sessionId: `s${i % 900}`, route: i % 2 ? '/' : '/pricing' }));
    for (let i = 0; i < events.length; i += 500) {
      assert.is((await send('POST', `/api/events?key=${project.key}`, { body: { events: events.slice(i, i + 500) } })).status, 200);
    }
    const body = { project: project.id, from: from(), windowMinutes: 30, steps: [{ page: '/' }, { page: '/pricing' }] };
    const res = await send('POST', '/api/funnels/query', { headers: OWNER, body });
    assert.is(res.status, 422);
    const answer = await res.json();
    assert.is(answer.code, 'funnel_too_large');
    assert.match(answer.error, /narrow its range/);
    // Without the budget the same funnel is answered, by the same worker.
    const full = await sqlite.funnel({ userId: 'shop-owner', projectId: project.id, from: Date.parse(body.from), to: Date.now() + 1, windowMs: 30 * 60_000, steps: body.steps });
    assert.ok(full[0] > 0, JSON.stringify(full));
  } finally {
    await sqlite.close();
  }
});

test.run();
