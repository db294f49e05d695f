// Teams through the HTTP API (docs/api.md#teams): a member's view of a shared project, roles on
// issues, invitations, share links, and a removed member's live stream.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { app, readUntil } from './helpers/app.ts';

async function team() {
  const t = app();
  const { send, as } = t;
  const json = async (method: string, path: string, user: string | null, body?: unknown) => {
    const res = await send(method, path, { headers: user ? as(user) : {}, body });
    return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text() };
  };
  const project = (await json('POST', '/api/projects', 'alice', { name: 'shop' })).body;
  const invite = async (role: string) => (await json('POST', `/api/projects/${project.id}/invitations`, 'alice', { role })).body;
  for (const [user, role] of [['bob', 'member'], ['vic', 'viewer'], ['ada', 'admin']]) {
    const { token } = await invite(role);
    assert.is((await json('POST', `/api/invitations/${token}/accept`, user)).status, 200);
  }
  return { ...t, json, project, invite };
}

test('a member sees exactly the project\'s events: never the owner\'s other events or projects', async () => {
  const { send, json, project } = await team();
  const other = (await json('POST', '/api/projects', 'alice', { name: 'other' })).body;
  await send('POST', `/api/events?key=${project.key}`, { body: { events: [{ type: 'pageload', id: 'in-1', route: '/a' }, { type: 'error', id: 'in-2', message: 'in-boom' }] } });
  await send('POST', `/api/events?key=${other.key}`, { body: { events: [{ type: 'pageload', id: 'other-1' }] } });
  await send('POST', '/api/events', { body: { events: [{ type: 'pageload', id: 'unkeyed-1' }] }, headers: { 'x-idp-user-id': 'alice' } });
  const mine = await json('GET', `/api/events?project=${project.id}&limit=1000`, 'bob');
  assert.is(mine.status, 200);
  assert.equal(mine.body.events.map((e: { id: string }) => e.id).sort(), ['in-1', 'in-2']);
  const owners = await json('GET', `/api/events?project=${project.id}&limit=1000`, 'alice');
  assert.equal(owners.body.events.map((e: { id: string }) => e.id).sort(), ['in-1', 'in-2'], 'the same view as the owner\'s');
  assert.equal((await json('GET', '/api/events', 'bob')).body.events, [], 'without project=: only Bob\'s own events');
  assert.is((await json('GET', `/api/events?project=${other.id}`, 'bob')).status, 404, 'another of the owner\'s projects');
  const stats = await json('GET', `/api/stats?project=${project.id}`, 'vic');
  assert.is(stats.body.totalEvents, 2);
  const exported = await send('GET', `/api/events/export?project=${project.id}`, { headers: { 'x-idp-user-id': 'vic' } });
  assert.equal((await exported.text()).trim().split('\n').map((l) => JSON.parse(l).id).sort(), ['in-1', 'in-2']);
  const query = await json('POST', `/api/developer/query?project=${project.id}`, 'bob', { groupBy: ['type'] });
  assert.is(query.body.scanned, 2);
  const listed = await json('GET', '/api/projects', 'vic');
  assert.equal(listed.body.projects.map((p: { id: string; role: string }) => [p.id, p.role]), [[project.id, 'viewer']]);
  assert.equal((await json('GET', '/api/projects', 'alice')).body.projects.map((p: { role: string }) => p.role), ['owner', 'owner']);
});

test('issues of a shared project: members triage, a viewer\'s PATCH is refused, the status history is kept', async () => {
  const { handler, send, json, project } = await team();
  await send('POST', `/api/events?key=${project.key}`, { body: { events: [{ type: 'error', message: 'TypeError: x is undefined' }] } });
  await handler.monitor.flush();
  const list = await json('GET', `/api/issues?project=${project.id}`, 'vic');
  assert.is(list.body.issues.length, 1);
  const id = list.body.issues[0].id;
  assert.is((await json('PATCH', `/api/issues/${id}?project=${project.id}`, 'vic', { status: 'resolved' })).status, 403);
  assert.is((await json('PATCH', `/api/issues/${id}?project=${project.id}`, 'bob', { status: 'resolved' })).status, 200);
  assert.is((await json('PATCH', `/api/issues/${id}?project=${project.id}`, 'mallory', { status: 'ignored' })).status, 404);
  assert.is((await json('GET', `/api/issues/${id}`, 'bob')).status, 404, 'without project=: not Bob\'s own issue');
  const shown = await json('GET', `/api/issues/${id}?project=${project.id}`, 'vic');
  assert.equal(shown.body.history.map((h: { actor: string; from: string; to: string }) => [h.actor, h.from, h.to]), [['bob', 'unresolved', 'resolved']]);
  const audit = await json('GET', `/api/projects/${project.id}/audit`, 'ada');
  assert.ok(audit.body.entries.some((e: { action: string; target: string }) => e.action === 'issue.status_changed' && e.target === id));
  assert.is((await json('GET', `/api/projects/${project.id}/audit`, 'bob')).status, 403);
});

test('a removed member\'s open stream closes within a second; the member is then as a stranger', async () => {
  const { send, json, project } = await team();
  const stream = await send('GET', `/api/events/stream?project=${project.id}`, { headers: { 'x-idp-user-id': 'bob' } });
  assert.is(stream.status, 200);
  const reader = stream.body!.getReader();
  await readUntil(reader, ': connected');
  await send('POST', `/api/events?key=${project.key}`, { body: { events: [{ type: 'pageload', id: 'live-1' }] } });
  await send('POST', '/api/events', { body: { events: [{ type: 'pageload', id: 'unkeyed-live' }] }, headers: { 'x-idp-user-id': 'alice' } });
  await send('POST', `/api/events?key=${project.key}`, { body: { events: [{ type: 'pageload', id: 'live-2' }] } });
  const seen = await readUntil(reader, 'live-2');
  assert.not.match(seen, /unkeyed-live/);
  const removed = Date.now();
  assert.is((await json('DELETE', `/api/projects/${project.id}/members/bob`, 'ada')).status, 200);
  const end = await readUntil(reader, 'event: revoked', 1500);
  assert.ok(Date.now() - removed < 1000, 'closed within a second');
  assert.match(end, /access to the project ended/);
  assert.ok((await reader.read()).done);
  for (const path of [`/api/events?project=${project.id}`, `/api/projects/${project.id}`, `/api/events/stream?project=${project.id}`]) {
    const [gone, none] = [await json('GET', path, 'bob'), await json('GET', path.replace(project.id, '999999999999'), 'bob')];
    assert.equal([gone.status, gone.body.code], [none.status, none.body.code], path);
  }
});

test('invitations through the API: 201 with a link, shown for the accept page, accepted once, revoked, expired', async () => {
  const { json, project, invite } = await team();
  const made = await json('POST', `/api/projects/${project.id}/invitations`, 'ada', { role: 'member', email: 'eve@example.com' });
  assert.is(made.status, 201);
  assert.match(made.body.url, new RegExp(`/invite/#${made.body.token}$`));
  assert.is(Date.parse(made.body.expiresAt) - Date.now() > 6.9 * 86_400_000, true, 'seven days by default');
  const shown = await json('GET', `/api/invitations/${made.body.token}`, null);
  assert.equal(shown.body, { project: { id: project.id, name: 'shop' }, role: 'member', expiresAt: made.body.expiresAt });
  assert.is((await json('POST', `/api/invitations/${made.body.token}/accept`, null)).status, 401);
  assert.is((await json('POST', `/api/invitations/${made.body.token}/accept`, 'eve')).status, 200);
  assert.is((await json('POST', `/api/invitations/${made.body.token}/accept`, 'mallory')).status, 410);
  assert.is((await json('GET', `/api/invitations/${made.body.token}`, null)).status, 410);
  const revoked = await invite('viewer');
  assert.is((await json('DELETE', `/api/projects/${project.id}/invitations/${revoked.id}`, 'alice')).status, 200);
  assert.is((await json('POST', `/api/invitations/${revoked.token}/accept`, 'mallory')).status, 410);
  const listed = await json('GET', `/api/projects/${project.id}/invitations`, 'ada');
  assert.not.match(JSON.stringify(listed.body), new RegExp(made.body.token), 'tokens are never listed');
  assert.equal(listed.body.invitations.map((i: { status: string }) => i.status).sort(), ['revoked', 'used', 'used', 'used', 'used']);
  assert.is((await json('POST', `/api/projects/${project.id}/invitations`, 'bob', { role: 'viewer' })).status, 403);
  const members = await json('GET', `/api/projects/${project.id}/members`, 'vic');
  type Shown = { userId: string; role: string; addedAt: string };
  const listedMembers = members.body.members as Shown[];
  // Listed by the time each was added, then by user id (members added in one millisecond).
  assert.equal(listedMembers, [...listedMembers].sort((a, b) => a.addedAt.localeCompare(b.addedAt) || a.userId.localeCompare(b.userId)));
  assert.equal(listedMembers.map((m) => `${m.userId}:${m.role}`).sort(), ['ada:admin', 'alice:owner', 'bob:member', 'eve:member', 'vic:viewer']);
});

test('an invitation with an e-mail address is also sent by e-mail when mail is configured', async () => {
  const sent: { to: string[]; subject: string; text: string }[] = [];
  const { send, as } = app({ monitoring: { mailer: { send: async (m) => void sent.push(m) } } });
  const project = await (await send('POST', '/api/projects', { headers: as('alice'), body: { name: 'shop' } })).json();
  const made = await (await send('POST', `/api/projects/${project.id}/invitations`, { headers: as('alice'), body: { role: 'viewer', email: 'eve@example.com' } })).json();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(sent.map((m) => m.to), [['eve@example.com']]);
  assert.match(sent[0].subject, /shop/);
  assert.ok(sent[0].text.includes(made.url), 'the mail carries the link');
  await send('POST', `/api/projects/${project.id}/invitations`, { headers: as('alice'), body: { role: 'viewer' } });
  assert.is(sent.length, 1, 'no address, no mail');
});

test('share link: the stats match the owner\'s for the same range; events, export, issues and streams refuse the token', async () => {
  const { send, json, project } = await team();
  await send('POST', `/api/events?key=${project.key}`, { body: { events: [{ type: 'pageload', route: '/a', data: { duration: 120 } }, { type: 'error', message: 'secret-message' }] } });
  const share = await json('POST', `/api/projects/${project.id}/shares`, 'ada', {});
  assert.is(share.status, 201);
  assert.match(share.body.url, new RegExp(`/share/${share.body.token}$`));
  const range = `from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
  const shared = await json('GET', `/api/shared/${share.body.token}/stats?${range}`, null);
  assert.is(shared.status, 200);
  const owners = (await json('GET', `/api/stats?project=${project.id}&${range}`, 'alice')).body;
  const { recentErrors: _e, recentActivity: _a, ...aggregates } = owners;
  // activeUsers counts a five-minute window up to now: the same in both answers, read moments apart.
  assert.equal(shared.body.stats, aggregates);
  assert.not.match(JSON.stringify(shared.body), /secret-message/);
  const bearer = { authorization: `Bearer ${share.body.token}` };
  for (const [method, path] of [['GET', `/api/events?project=${project.id}`], ['GET', `/api/events/export?project=${project.id}`], ['GET', `/api/issues?project=${project.id}`], ['GET', `/api/events/stream?project=${project.id}`], ['GET', `/api/developer/stream?project=${project.id}`]]) {
    const res = await send(method, path, { headers: bearer });
    assert.is(res.status, 401, path);
    await res.body?.cancel();
  }
  assert.is((await json('DELETE', `/api/projects/${project.id}/shares/${share.body.id}`, 'alice')).status, 200);
  assert.is((await json('GET', `/api/shared/${share.body.token}/stats`, null)).status, 404);
});

test('share link: rate-limited per token', async () => {
  const { json, project } = await team();
  const { token } = (await json('POST', `/api/projects/${project.id}/shares`, 'alice', {})).body;
  const statuses: number[] = [];
  for (let i = 0; i < 62; i++) statuses.push((await json('GET', `/api/shared/${token}/stats`, null)).status);
  assert.is(statuses.filter((s) => s === 200).length, 60);
  assert.is(statuses.at(-1), 429);
  const other = (await json('POST', `/api/projects/${project.id}/shares`, 'alice', {})).body.token;
  assert.is((await json('GET', `/api/shared/${other}/stats`, null)).status, 200, 'another link has its own budget');
});

test('alert rules on a shared project: members make them, change their own; admins change any; they watch the project', async () => {
  const { json, project } = await team();
  const rule = { on: 'new_issue', project: project.id, email: 'team@example.com' };
  assert.is((await json('POST', '/api/alerts', 'vic', rule)).status, 403, 'a viewer keeps no rules');
  const bobs = (await json('POST', '/api/alerts', 'bob', rule)).body.alert;
  assert.is(bobs.createdBy, 'bob');
  const alices = (await json('POST', '/api/alerts', 'alice', rule)).body.alert;
  assert.is(alices.createdBy, undefined, 'the owner\'s own rule');
  const listed = await json('GET', `/api/alerts?project=${project.id}`, 'bob');
  assert.equal(listed.body.alerts.map((a: { id: string }) => a.id).sort(), [alices.id, bobs.id].sort());
  assert.is((await json('PATCH', `/api/alerts/${bobs.id}?project=${project.id}`, 'bob', { enabled: false })).status, 200);
  assert.is((await json('PATCH', `/api/alerts/${alices.id}?project=${project.id}`, 'bob', { enabled: false })).status, 403);
  assert.is((await json('PATCH', `/api/alerts/${bobs.id}?project=${project.id}`, 'bob', { project: '1' })).status, 400, 'a rule stays on its project');
  assert.is((await json('DELETE', `/api/alerts/${bobs.id}?project=${project.id}`, 'ada')).status, 200, 'an admin changes any');
  assert.is((await json('GET', `/api/alerts?project=${project.id}`, 'mallory')).status, 404);
});

test('ownership: only the owner transfers or deletes; the old owner becomes admin; the events stay where they were', async () => {
  const { send, json, project } = await team();
  await send('POST', `/api/events?key=${project.key}`, { body: { events: [{ type: 'pageload', id: 'kept' }] } });
  assert.is((await json('PATCH', `/api/projects/${project.id}/members/bob`, 'ada', { role: 'owner' })).status, 403);
  assert.is((await json('DELETE', `/api/projects/${project.id}`, 'ada')).status, 403);
  assert.is((await json('PATCH', `/api/projects/${project.id}/members/bob`, 'alice', { role: 'owner' })).status, 200);
  assert.equal((await json('GET', `/api/projects/${project.id}`, 'alice')).body.role, 'admin');
  assert.equal((await json('GET', `/api/events?project=${project.id}`, 'bob')).body.events.map((e: { id: string }) => e.id), ['kept']);
  assert.is((await json('DELETE', `/api/projects/${project.id}/members/bob`, 'alice')).status, 409, 'the owner cannot be removed');
  assert.is((await json('DELETE', `/api/projects/${project.id}/members/%E0`, 'bob')).status, 400, 'a malformed member id');
  assert.is((await json('DELETE', `/api/projects/${project.id}`, 'bob')).status, 200);
  assert.is((await json('GET', `/api/projects/${project.id}`, 'bob')).status, 404);
  assert.equal((await json('GET', '/api/projects', 'vic')).body.projects, []);
});

test.run();
