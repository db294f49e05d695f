// Teams in every record store (lib/teams/): members and the one owner, transfer, invitations
// (one-time, expiring, revocable, hashed at rest), share links, the audit trail; and two instances
// on one PostgreSQL database agreeing on a removal at once.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createProjects } from '../lib/projects.ts';
import { createMemoryRecords } from '../lib/records/memory.ts';
import { openFileRecords } from '../lib/records/file.ts';
import { openPostgresRecords } from '../lib/records/postgres.ts';
import { nodeFs } from '../lib/store/fs.ts';
import type { RecordStore } from '../lib/records/types.ts';
import { decide, effectiveMembers, LEAST_ROLE, ROLES, type Action } from '../lib/teams/access.ts';
import { createTeams } from '../lib/teams/teams.ts';
import { createInvitations, INVITATION_TTL_MS } from '../lib/teams/invitations.ts';
import { createShares } from '../lib/teams/shares.ts';
import { HttpError } from '../lib/http.ts';
import { createTestDatabase, REQUIRE_POSTGRES, unavailableReason } from './helpers/postgres.ts';

const root = mkdtempSync(join(tmpdir(), 'watchtower-teams-'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));
let n = 0;

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof HttpError) return e.status;
    throw e;
  }
}

function open(records: RecordStore, clock: { now: number }) {
  const now = () => clock.now;
  const teams = createTeams(records, now);
  return { records, projects: createProjects(records, now), teams, invitations: createInvitations(records, teams, now), shares: createShares(records, teams, now) };
}

type Factory = () => Promise<{ records: RecordStore; rawText: () => Promise<string>; second?: () => Promise<RecordStore>; close: () => Promise<void> }>;

const factories: [string, Factory][] = [
  ['memory', async () => {
    const records = createMemoryRecords();
    return { records, rawText: async () => '', close: () => records.close() };
  }],
  ['file', async () => {
    const dir = join(root, `f${++n}`);
    const records = await openFileRecords({ dir, fs: nodeFs });
    return { records, rawText: async () => readdirSync(dir).map((f) => readFileSync(join(dir, f), 'latin1')).join('\n'), close: () => records.close() };
  }],
];
const pgReason = await unavailableReason();
if (pgReason === null) {
  factories.push(['postgres', async () => {
    const db = await createTestDatabase();
    const opened: RecordStore[] = [];
    const openOne = async () => {
      const r = await openPostgresRecords({ url: db.url, max: 2 });
      opened.push(r);
      return r;
    };
    const records = await openOne();
    return {
      records,
      rawText: async () => JSON.stringify(await db.query((sql) => sql`select kind, id, user_id, body from watchtower_records`)),
      second: openOne,
      close: async () => {
        for (const r of opened) await r.close();
        await db.drop();
      },
    };
  }]);
} else if (REQUIRE_POSTGRES) {
  throw new Error(`PostgreSQL is required (WATCHTOWER_REQUIRE_POSTGRES=1): ${pgReason}`);
}

const pure = suite('access: the one decision');
pure('every role × action: allowed exactly from the least role up; nobody and no project is no role', () => {
  const project = { creator: 'c', createdAt: '2026-01-01T00:00:00.000Z' };
  for (const action of Object.keys(LEAST_ROLE) as Action[]) {
    for (const role of ROLES) {
      const members = role === 'owner' ? [] : [{ userId: 'u', role, addedAt: '' }];
      const user = role === 'owner' ? 'c' : 'u';
      const d = decide({ userId: user, project, members, action });
      assert.is(d.allowed, ROLES.indexOf(role) >= ROLES.indexOf(LEAST_ROLE[action]), `${role} ${action}`);
      assert.is(d.role, role);
    }
    assert.equal(decide({ userId: 'x', project, members: [], action }), { allowed: false, role: null });
    assert.equal(decide({ userId: null, project, members: [], action }), { allowed: false, role: null });
    assert.equal(decide({ userId: 'c', project: null, members: [], action }), { allowed: false, role: null });
  }
  // A stored owner other than the creator: the creator counts only as what is stored for them.
  const moved = effectiveMembers(project, [{ userId: 'n', role: 'owner', addedAt: '' }, { userId: 'c', role: 'admin', addedAt: '' }]);
  assert.equal(moved.filter((m) => m.role === 'owner').map((m) => m.userId), ['n']);
});
pure.run();

for (const [name, factory] of factories) {
  const t = suite(`teams (${name})`);

  t('the creator is the one owner; members join, change role, transfer, leave; the audit trail says who did what', async () => {
    const env = await factory();
    try {
      const clock = { now: Date.parse('2026-05-01T00:00:00Z') };
      const { projects, teams } = open(env.records, clock);
      const p = await projects.create('alice', { name: 'shop' });
      assert.equal((await teams.members(p.id)).map((m) => [m.userId, m.role]), [['alice', 'owner']]);
      const owner = await teams.access('alice', p.id, 'own');
      await teams.join(p.id, 'bob', 'member', 'alice');
      await teams.join(p.id, 'carol', 'viewer', 'alice');
      assert.equal((await teams.projectsOf('bob')).map((a) => [a.project.id, a.role, a.owner]), [[p.id, 'member', 'alice']]);
      assert.is(await status(teams.access('carol', p.id, 'triage')), 403);
      assert.is(await status(teams.access('dave', p.id, 'read')), 404, 'a non-member: as no project');
      await teams.setRole(owner, 'carol', 'admin');
      const carol = await teams.access('carol', p.id, 'manage');
      assert.is(await status(teams.setRole(carol, 'bob', 'owner')), 403, 'only the owner transfers');
      assert.is(await status(teams.setRole(owner, 'alice', 'viewer')), 409, 'the owner cannot step down without a successor');
      await teams.setRole(owner, 'bob', 'owner');
      const roles = Object.fromEntries((await teams.members(p.id)).map((m) => [m.userId, m.role]));
      assert.equal(roles, { alice: 'admin', bob: 'owner', carol: 'admin' });
      assert.is((await teams.access('bob', p.id, 'own')).owner, 'alice', 'the events stay the creator\'s');
      assert.is(await status(teams.remove(await teams.access('bob', p.id, 'read'), 'bob')), 409, 'the owner cannot leave');
      await teams.remove(await teams.access('carol', p.id, 'read'), 'carol');
      assert.is(await status(teams.access('carol', p.id, 'read')), 404, 'removal takes effect at once');
      assert.equal(await teams.projectsOf('carol'), []);
      const actions = (await teams.audit.list(p.id)).map((e) => `${e.actor} ${e.action} ${e.target ?? ''}`).reverse();
      assert.equal(actions, [
        'alice member.added bob', 'alice member.added carol', 'alice member.role_changed carol',
        'alice ownership.transferred bob', 'carol member.left carol',
      ]);
    } finally {
      await env.close();
    }
  });

  t('invitations: one-time, expiring, revocable, and only a hash of the token is stored', async () => {
    const env = await factory();
    try {
      const clock = { now: Date.parse('2026-05-01T00:00:00Z') };
      const { projects, teams, invitations } = open(env.records, clock);
      const p = await projects.create('alice', { name: 'shop' });
      const admin = await teams.access('alice', p.id, 'manage');
      const { token, invitation } = await invitations.create(admin, { role: 'viewer', email: 'bob@example.com' });
      assert.is(Date.parse(invitation.expiresAt) - clock.now, INVITATION_TTL_MS);
      assert.is((await invitations.open(token)).project.name, 'shop');
      await invitations.accept(token, 'bob');
      assert.is((await teams.access('bob', p.id, 'read')).role, 'viewer');
      assert.is(await status(invitations.accept(token, 'mallory')), 410, 'used');
      assert.is(await status(invitations.open(token)), 410);

      const second = await invitations.create(admin, { role: 'member' });
      await invitations.revoke(admin, second.invitation.id);
      assert.is(await status(invitations.accept(second.token, 'carol')), 410, 'revoked');

      const third = await invitations.create(admin, { role: 'admin', expiresInDays: 1 });
      clock.now += 86_400_000;
      assert.is(await status(invitations.accept(third.token, 'dave')), 410, 'expired');
      assert.is(await status(invitations.accept('x'.repeat(43), 'dave')), 404, 'unknown');
      assert.is(await status(invitations.create(admin, { role: 'owner' })), 400);
      assert.is(await status(teams.access('carol', p.id, 'read')), 404);
      assert.is(await status(teams.access('dave', p.id, 'read')), 404);

      const raw = await env.rawText();
      for (const t of [token, second.token, third.token]) assert.not.ok(raw.includes(t), 'the raw token is not stored');
      if (name !== 'memory') assert.ok(raw.includes(invitation.id), 'the store was read');
    } finally {
      await env.close();
    }
  });

  t('share links: open until revoked or expired; the token is stored hashed', async () => {
    const env = await factory();
    try {
      const clock = { now: Date.parse('2026-05-01T00:00:00Z') };
      const { projects, teams, shares } = open(env.records, clock);
      const p = await projects.create('alice', { name: 'shop' });
      const admin = await teams.access('alice', p.id, 'manage');
      const forever = await shares.create(admin, null);
      const day = await shares.create(admin, { expiresAt: new Date(clock.now + 86_400_000).toISOString() });
      assert.equal((await shares.open(forever.token)).owner, 'alice');
      assert.is((await shares.open(day.token)).project.id, p.id);
      clock.now += 86_400_000;
      assert.is(await status(shares.open(day.token)), 404, 'expired');
      await shares.revoke(admin, forever.share.id);
      assert.is(await status(shares.open(forever.token)), 404, 'revoked');
      const raw = await env.rawText();
      assert.not.ok(raw.includes(forever.token) || raw.includes(day.token));
      await teams.forget(p.id);
      assert.equal(await shares.list(p.id), []);
    } finally {
      await env.close();
    }
  });

  if (name === 'postgres') {
    t('two instances on one database: a removal on one is honoured by the other at once', async () => {
      const env = await factory();
      try {
        const clock = { now: Date.now() };
        const a = open(env.records, clock);
        const b = open(await env.second!(), clock);
        const p = await a.projects.create('alice', { name: 'shop' });
        await a.teams.join(p.id, 'bob', 'member', 'alice');
        assert.is((await b.teams.access('bob', p.id, 'read')).role, 'member');
        await a.teams.remove(await a.teams.access('alice', p.id, 'manage'), 'bob');
        assert.is(await status(b.teams.access('bob', p.id, 'read')), 404);
        await b.teams.join(p.id, 'carol', 'viewer', 'alice');
        assert.is((await a.teams.access('carol', p.id, 'read')).role, 'viewer');
      } finally {
        await env.close();
      }
    });
  }
  t.run();
}
