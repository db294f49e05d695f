// The API's routes, in the order they are tried (lib/handler.ts matches them).
import { IttyRouter } from 'itty-router/IttyRouter';
import type { IRequest } from 'itty-router';
import { beacon, exportEvents, ingest, listEvents } from './events.ts';
import { health, stats, syncUser } from './read.ts';
import { eventStream } from './stream.ts';
import { developerStream, insights, query } from './developer.ts';
import { createProject, deleteProject, getProject, listProjects, rotateProjectKey, updateProject } from './projects.ts';
import { sentryEnvelope, sentryStore } from './sentry.ts';
import { listMembers, projectAudit, removeMember, updateMember } from './members.ts';
import { acceptInvitation, createInvitation, listInvitations, revokeInvitation, showInvitation } from './invitations.ts';
import { createShare, listShares, revokeShare, sharedStatsRoute } from './shares.ts';
import { createGoal, deleteGoal, listGoals } from './goals.ts';
import { createAlert, deleteAlert, listAlerts, testAlert, updateAlert } from './alerts.ts';
import { listIssueEvents } from './issue-events.ts';
import { getIssue, listIssues, patchIssue } from './issues.ts';
import { createFunnel, deleteFunnel, listFunnels, queryFunnel } from './funnels.ts';
import { deleteSourceMap, listSourceMaps, uploadSourceMap } from './sourcemaps.ts';
import type { Context, ServeInfo } from '../context.ts';

/** The route table under `base` (no trailing slash). */
export function apiRouter(base: string) {
  // Every route is registered on itty-router, which compiles its pattern (base path, trailing
  // slashes, `:params`) to a regex. Routes are tried in order, one regex test each: ingestion, the
  // hot path, comes first. A route reads path parameters (`/api/issues/:id`) from request.params.
  return IttyRouter<IRequest, [Context, ServeInfo | undefined]>({ base })
    .post('/api/events', ingest)
    .post('/api/beacon', beacon)
    .get('/api/events', listEvents)
    .get('/api/events/export', exportEvents)
    .get('/api/events/stream', eventStream)
    .get('/api/stats', stats)
    .get('/api/health', health)
    .post('/api/users/sync', syncUser)
    .get('/api/developer/stream', developerStream)
    .get('/api/developer/insights', insights)
    .post('/api/developer/query', query)
    .get('/api/issues', listIssues)
    .get('/api/issues/:id', getIssue)
    .get('/api/issues/:id/events', listIssueEvents)
    .patch('/api/issues/:id', patchIssue)
    .post('/api/projects/:id/sourcemaps', uploadSourceMap)
    .get('/api/projects/:id/sourcemaps', listSourceMaps)
    .delete('/api/projects/:id/sourcemaps/:mapId', deleteSourceMap)
    .get('/api/alerts', listAlerts)
    .post('/api/alerts', createAlert)
    .patch('/api/alerts/:id', updateAlert)
    .delete('/api/alerts/:id', deleteAlert)
    .post('/api/alerts/:id/test', testAlert)
    .get('/api/projects', listProjects)
    .post('/api/projects', createProject)
    .get('/api/projects/:id', getProject)
    .patch('/api/projects/:id', updateProject)
    .delete('/api/projects/:id', deleteProject)
    .post('/api/projects/:id/rotate-key', rotateProjectKey)
    .get('/api/projects/:id/members', listMembers)
    .patch('/api/projects/:id/members/:userId', updateMember)
    .delete('/api/projects/:id/members/:userId', removeMember)
    .post('/api/projects/:id/invitations', createInvitation)
    .get('/api/projects/:id/invitations', listInvitations)
    .delete('/api/projects/:id/invitations/:invitationId', revokeInvitation)
    .get('/api/invitations/:token', showInvitation)
    .post('/api/invitations/:token/accept', acceptInvitation)
    .post('/api/projects/:id/shares', createShare)
    .get('/api/projects/:id/shares', listShares)
    .delete('/api/projects/:id/shares/:shareId', revokeShare)
    .get('/api/projects/:id/goals', listGoals)
    .post('/api/projects/:id/goals', createGoal)
    .delete('/api/projects/:id/goals/:goalId', deleteGoal)
    .get('/api/shared/:token/stats', sharedStatsRoute)
    .get('/api/projects/:id/audit', projectAudit)
    .post('/api/funnels/query', queryFunnel)
    .get('/api/projects/:id/funnels', listFunnels)
    .post('/api/projects/:id/funnels', createFunnel)
    .delete('/api/projects/:id/funnels/:funnelId', deleteFunnel)
    // Sentry SDKs post to /api/<project id>/envelope/ (docs/sentry.md); the id must be digits.
    .post('/api/:projectId/envelope', sentryEnvelope)
    .post('/api/:projectId/store', sentryStore);
}
