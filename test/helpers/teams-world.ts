// A project with one user of every standing towards it (docs/api.md#teams), built through the API,
// and the endpoints a project's team answers, for the generated access matrix and the property test.
import { atLeast, type Role } from '../../lib/teams/access.ts';

export type Send = (method: string, path: string, init?: { body?: unknown; headers?: Record<string, string> }) => Promise<Response>;

export const PRINCIPALS = ['owner', 'admin', 'member', 'viewer', 'nonmember', 'removed', 'anonymous', 'share'] as const;
export type Principal = (typeof PRINCIPALS)[number];

export interface World {
  tag: string;
  project: { id: string; key: string; name: string };
  users: Record<Principal, string | null>;
  issueId: string;
  alertId: string;
  invitationId: string;
  inviteToken: string;
  shareId: string;
  goalId: string;
  shareToken: string;
  funnelId: string;
  /** Text found in the project's events, name and records: no answer to an outsider may hold it. */
  secrets: string[];
}

const as = (user: string | null): Record<string, string> => (user ? { 'x-idp-user-id': user } : {});

/** Every principal's request headers: a user id, nothing, or the share token as a bearer token. */
export const headersOf = (w: World, p: Principal): Record<string, string> =>
  p === 'share' ? { authorization: `Bearer ${w.shareToken}` } : as(w.users[p]);

export async function buildWorld(send: Send, tag: string, flush: () => Promise<void>): Promise<World> {
  const call = async (method: string, path: string, user: string | null, body?: unknown) => {
    const res = await send(method, path, { headers: as(user), body });
    const out = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(out)}`);
    return out;
  };
  const users = {
    owner: `owner-${tag}`, admin: `admin-${tag}`, member: `member-${tag}`, viewer: `viewer-${tag}`,
    nonmember: `stranger-${tag}`, removed: `removed-${tag}`, anonymous: null, share: null,
  } satisfies Record<Principal, string | null>;
  const name = `proj-${tag}-name`;
  const project = await call('POST', '/api/projects', users.owner, { name });
  const roles: [string, Role][] = [[users.admin, 'admin'], [users.member, 'member'], [users.viewer, 'viewer'], [users.removed, 'member'], [`target-${tag}`, 'viewer']];
  for (const [user, role] of roles) {
    const { token } = await call('POST', `/api/projects/${project.id}/invitations`, users.owner, { role });
    await call('POST', `/api/invitations/${token}/accept`, user);
  }
  await call('DELETE', `/api/projects/${project.id}/members/${users.removed}`, users.owner);
  const marker = `evt-${tag}-secret`;
  await send('POST', `/api/events?key=${project.key}`, {
    body: { events: [{ type: 'pageload', id: `${marker}-1`, route: `/r-${tag}`, data: { duration: 10 } }, { type: 'error', id: `${marker}-2`, message: `${marker} boom` }] },
  });
  await flush();
  const issues = await call('GET', `/api/issues?project=${project.id}`, users.owner);
  // Made by the member: a member changes the rules they made (admins and the owner, any).
  const alert = await call('POST', '/api/alerts', users.member, { on: 'new_issue', project: project.id, email: `alerts-${tag}@example.com` });
  const invitation = await call('POST', `/api/projects/${project.id}/invitations`, users.owner, { role: 'viewer' });
  const share = await call('POST', `/api/projects/${project.id}/shares`, users.owner, {});
  const goal = await call('POST', `/api/projects/${project.id}/goals`, users.member, { name: `goal-${tag}`, page: '/checkout/**' });
  const steps = [{ page: `/r-${tag}` }, { event: 'signup' }];
  const funnel = await call('POST', `/api/projects/${project.id}/funnels`, users.member, { name: `funnel-${tag}-name`, windowMinutes: 30, steps });
  return {
    tag, project, users, issueId: issues.issues[0].id, alertId: alert.alert.id,
    invitationId: invitation.id, inviteToken: invitation.token, shareId: share.id, shareToken: share.token, goalId: goal.goal.id, funnelId: funnel.funnel.id,
    secrets: [marker, name, project.key, `r-${tag}`, `target-${tag}`, `alerts-${tag}`, `goal-${tag}`, `funnel-${tag}`],
  };
}

/**
 * How an endpoint is reached: `least` is the weakest role it takes; `signedIn`, anyone signed in
 * (accepting an invitation); `shareToken`, the holder of a share link (the token in the path).
 * `changes`: it changes the world, so every principal gets a world of its own.
 */
export interface Endpoint {
  method: string;
  path: (w: World, projectId: string, who: Principal) => string;
  body?: (w: World, projectId: string) => unknown;
  least: Role | 'signedIn' | 'shareToken';
  ok: number;
  stream?: boolean;
  changes?: boolean;
}

const p = (_w: World, id: string) => `/api/projects/${id}`;
const NO_SUCH_TOKEN = 'x'.repeat(43);
export const ENDPOINTS: Endpoint[] = [
  { method: 'GET', path: (w, id) => `${p(w, id)}`, least: 'viewer', ok: 200 },
  { method: 'GET', path: (_w, id) => `/api/events?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'GET', path: (_w, id) => `/api/events/export?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'GET', path: (_w, id) => `/api/stats?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'GET', path: (_w, id) => `/api/events/stream?project=${id}`, least: 'viewer', ok: 200, stream: true },
  { method: 'GET', path: (_w, id) => `/api/developer/stream?project=${id}`, least: 'viewer', ok: 200, stream: true },
  { method: 'GET', path: (_w, id) => `/api/developer/insights?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'POST', path: (_w, id) => `/api/developer/query?project=${id}`, body: () => ({ groupBy: ['type'] }), least: 'viewer', ok: 200 },
  { method: 'GET', path: (_w, id) => `/api/issues?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'GET', path: (w, id) => `/api/issues/${w.issueId}?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'GET', path: (w, id) => `/api/issues/${w.issueId}/events?project=${id}`, least: 'viewer', ok: 200 },
  { method: 'PATCH', path: (w, id) => `/api/issues/${w.issueId}?project=${id}`, body: () => ({ status: 'resolved' }), least: 'member', ok: 200, changes: true },
  { method: 'GET', path: (w, id) => `${p(w, id)}/members`, least: 'viewer', ok: 200 },
  { method: 'PATCH', path: (w, id) => `${p(w, id)}/members/target-${w.tag}`, body: () => ({ role: 'member' }), least: 'admin', ok: 200, changes: true },
  { method: 'DELETE', path: (w, id) => `${p(w, id)}/members/target-${w.tag}`, least: 'admin', ok: 200, changes: true },
  { method: 'POST', path: (w, id) => `${p(w, id)}/invitations`, body: () => ({ role: 'viewer' }), least: 'admin', ok: 201, changes: true },
  { method: 'GET', path: (w, id) => `${p(w, id)}/invitations`, least: 'admin', ok: 200 },
  { method: 'DELETE', path: (w, id) => `${p(w, id)}/invitations/${w.invitationId}`, least: 'admin', ok: 200, changes: true },
  { method: 'POST', path: (w) => `/api/invitations/${w.inviteToken}/accept`, least: 'signedIn', ok: 200, changes: true },
  { method: 'POST', path: (w, id) => `${p(w, id)}/shares`, body: () => ({}), least: 'admin', ok: 201, changes: true },
  { method: 'GET', path: (w, id) => `${p(w, id)}/shares`, least: 'admin', ok: 200 },
  { method: 'DELETE', path: (w, id) => `${p(w, id)}/shares/${w.shareId}`, least: 'admin', ok: 200, changes: true },
  { method: 'GET', path: (w, id) => `${p(w, id)}/goals`, least: 'viewer', ok: 200 },
  { method: 'POST', path: (w, id) => `${p(w, id)}/goals`, body: (w) => ({ name: `more-${w.tag}`, event: 'signup' }), least: 'member', ok: 201, changes: true },
  { method: 'DELETE', path: (w, id) => `${p(w, id)}/goals/${w.goalId}`, least: 'member', ok: 200, changes: true },
  // Only the share principal holds the link's token; anyone else tries one that is no link's.
  { method: 'GET', path: (w, _id, who) => `/api/shared/${who === 'share' ? w.shareToken : NO_SUCH_TOKEN}/stats`, least: 'shareToken', ok: 200 },
  { method: 'GET', path: (w, id) => `${p(w, id)}/audit`, least: 'admin', ok: 200 },
  { method: 'GET', path: (w, id) => `${p(w, id)}/sourcemaps`, least: 'admin', ok: 200 },
  { method: 'PATCH', path: (w, id) => `${p(w, id)}`, body: () => ({ name: 'renamed' }), least: 'admin', ok: 200, changes: true },
  { method: 'POST', path: (w, id) => `${p(w, id)}/rotate-key`, least: 'admin', ok: 200, changes: true },
  { method: 'DELETE', path: (w, id) => `${p(w, id)}`, least: 'owner', ok: 200, changes: true },
  { method: 'GET', path: (_w, id) => `/api/alerts?project=${id}`, least: 'member', ok: 200 },
  { method: 'POST', path: () => '/api/alerts', body: (w, id) => ({ on: 'regression', project: id, email: `more-${w.tag}@example.com` }), least: 'member', ok: 201, changes: true },
  { method: 'PATCH', path: (w, id) => `/api/alerts/${w.alertId}?project=${id}`, body: () => ({ enabled: false }), least: 'member', ok: 200, changes: true },
  { method: 'DELETE', path: (w, id) => `/api/alerts/${w.alertId}?project=${id}`, least: 'member', ok: 200, changes: true },
  {
    method: 'POST', path: () => '/api/funnels/query', least: 'viewer', ok: 200,
    body: (w, id) => ({ project: id, from: new Date(Date.now() - 86_400_000).toISOString(), windowMinutes: 30, steps: [{ page: `/r-${w.tag}` }, { event: 'signup' }] }),
  },
  { method: 'GET', path: (w, id) => `${p(w, id)}/funnels`, least: 'viewer', ok: 200 },
  {
    method: 'POST', path: (w, id) => `${p(w, id)}/funnels`, least: 'member', ok: 201, changes: true,
    body: () => ({ name: 'checkout', windowMinutes: 60, steps: [{ page: '/' }, { page: '/checkout/**' }] }),
  },
  { method: 'DELETE', path: (w, id) => `${p(w, id)}/funnels/${w.funnelId}`, least: 'member', ok: 200, changes: true },
];

/**
 * The status a principal should get, or 'as-missing': the same answer as for a project that does
 * not exist (someone with no role on the project). Roles follow lib/teams/access.ts's table.
 */
export function expected(e: Endpoint, who: Principal): number | 'as-missing' {
  if (e.least === 'shareToken') return who === 'share' ? e.ok : 404;
  if (who === 'anonymous' || who === 'share') return 401;
  if (e.least === 'signedIn') return e.ok;
  if (who === 'nonmember' || who === 'removed') return 'as-missing';
  return atLeast(who, e.least) ? e.ok : 403;
}
