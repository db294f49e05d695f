// Property: with random projects, memberships and removals (memory store), no answer to someone
// without a role on a project holds any of its data, and everyone with a role reads exactly the
// project's events, never its owner's other events.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROLES, type Role } from '../lib/teams/access.ts';
import { app } from './helpers/app.ts';

/** mulberry32: a small seeded generator, so a failing seed can be replayed. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const USERS = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5'];
const READS = (id: string) => [
  ['GET', `/api/events?project=${id}&limit=1000`], ['GET', `/api/events/export?project=${id}`], ['GET', `/api/stats?project=${id}`],
  ['GET', `/api/developer/insights?project=${id}`], ['POST', `/api/developer/query?project=${id}`], ['GET', `/api/issues?project=${id}`],
  ['GET', `/api/projects/${id}`], ['GET', `/api/projects/${id}/members`], ['GET', `/api/projects/${id}/audit`],
  ['GET', `/api/projects/${id}/invitations`], ['GET', `/api/projects/${id}/shares`], ['GET', `/api/alerts?project=${id}`],
  ['GET', '/api/projects'],
] as const;

for (const seed of [1, 2, 3, 4, 5, 6]) {
  test(`no answer to someone without access holds the project's data (seed ${seed})`, async () => {
    const rand = random(seed);
    const pick = <T>(list: readonly T[]) => list[Math.floor(rand() * list.length)];
    const { handler, send, as } = app();
    const call = async (method: string, path: string, user: string, body?: unknown) => {
      const res = await send(method, path, { headers: as(user), body: method === 'POST' ? body ?? {} : undefined });
      return { status: res.status, text: await res.text() };
    };
    // The model: who holds which role on which project.
    const roles = new Map<string, Map<string, Role>>();
    const projects: { id: string; key: string; name: string; owner: string; marker: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const owner = pick(USERS);
      const name = `s${seed}-p${i}-name`;
      const p = JSON.parse((await call('POST', '/api/projects', owner, { name })).text);
      const marker = `s${seed}-p${i}-event`;
      projects.push({ id: p.id, key: p.key, name, owner, marker });
      roles.set(p.id, new Map([[owner, 'owner']]));
      await send('POST', `/api/events?key=${p.key}`, { body: { events: [{ type: 'pageload', id: `${marker}-a`, route: `/${marker}` }, { type: 'error', id: `${marker}-b`, message: marker }] } });
      // The owner's own events outside any project.
      await send('POST', '/api/events', { body: { events: [{ type: 'pageload', id: `s${seed}-p${i}-unkeyed` }] }, headers: as(owner) });
    }
    for (let step = 0; step < 12; step++) {
      const p = pick(projects);
      const team = roles.get(p.id)!;
      const user = pick(USERS);
      if (team.get(user) === 'owner') continue;
      if (team.has(user) && rand() < 0.4) {
        assert.is((await call('DELETE', `/api/projects/${p.id}/members/${user}`, p.owner)).status, 200);
        team.delete(user);
      } else {
        const role = pick(ROLES.filter((r) => r !== 'owner'));
        const inv = JSON.parse((await call('POST', `/api/projects/${p.id}/invitations`, p.owner, { role })).text);
        assert.is((await call('POST', `/api/invitations/${inv.token}/accept`, user)).status, 200);
        if (!team.has(user)) team.set(user, role);
      }
    }
    await handler.monitor.flush();

    for (const p of projects) {
      const secrets = [p.name, p.key, p.marker];
      for (const user of USERS) {
        const role = roles.get(p.id)!.get(user);
        for (const [method, path] of READS(p.id)) {
          const { status, text } = await call(method, path, user);
          if (role === undefined) {
            for (const s of secrets) assert.not.ok(text.includes(s), `seed ${seed}: ${user} (no role) ${method} ${path} answered ${status} holding ${s}`);
          } else if (path.startsWith('/api/events?')) {
            const ids = JSON.parse(text).events.map((e: { id: string }) => e.id).sort();
            assert.equal(ids, [`${p.marker}-a`, `${p.marker}-b`], `seed ${seed}: ${user} (${role}) reads exactly the project's events`);
          }
        }
      }
    }
  });
}

test.run();
