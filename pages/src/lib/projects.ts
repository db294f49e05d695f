// A project as GET /api/projects answers it (docs/api.md#projects), and the snippets that connect an
// app to it: shared by the projects page and the dashboard's project panel.
import type { Project as StoredProject } from '../../../lib/projects.ts';
import type { Role } from '../../../lib/teams/access.ts';

/** A project with the user's role on it (their own, or shared with them). */
export type Project = StoredProject & { role?: Role };
export type { Role };

/** The ready-to-paste script tag that loads the SDK from `origin` with the project's key. */
export const scriptTag = (p: Project, origin: string): string =>
  `<script src="${origin}/sdk/watchtower.js"\n        data-key="${p.key}" data-app-name="${p.name.replace(/[^\w.-]+/g, '-').toLowerCase()}" defer></script>`;

/** The project's Sentry DSN on this service (docs/sentry.md). */
export const dsn = (p: Project, where: { protocol: string; host: string }): string => `${where.protocol}//${p.key}@${where.host}/${p.id}`;
