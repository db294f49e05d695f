// Projects (README "Projects"): an app a user monitors, with its public ingest key, the origins it
// may send from and its rate limit. Kept in the record store as kind 'project', owned by its user;
// each key also has a 'project-key' record (id: the key) so ingestion finds the project by key.
import { HttpError } from './http.ts';
import { createRateLimiter, type RateLimiter } from './ratelimit.ts';
import { creationTime, type RecordStore, type StoredRecord } from './records/types.ts';

export interface Project {
  /** Decimal digits: Sentry SDKs refuse a DSN whose project id is not a number. */
  id: string;
  name: string;
  /** 32 hex digits (128 random bits): URL-safe, and word characters as a Sentry DSN requires. */
  key: string;
  /** Origins (`https://shop.example`) browsers may send from; empty: any. */
  allowedOrigins: string[];
  createdAt: string;
  /** Events per minute the project may send; past it, 429 with Retry-After. */
  rateLimitPerMinute: number;
}

/** A project with its owner, as ingestion finds it by key. */
export interface KeyedProject {
  project: Project;
  owner: string;
}

export const PROJECT_KIND = 'project';
export const PROJECT_KEY_KIND = 'project-key';
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 6000;
export const MAX_RATE_LIMIT_PER_MINUTE = 1_000_000;
export const MAX_PROJECTS_PER_USER = 100;
export const MAX_ALLOWED_ORIGINS = 50;
/** How long a key lookup is remembered. A rotated or deleted key stops at once on the instance that
 * rotated it; other instances sharing a PostgreSQL database notice within this time. */
export const KEY_CACHE_MS = 5_000;
const KEY_CACHE_SIZE = 10_000;

/** What a key in a request must look like before it is looked up (the Sentry DSN rule, bounded). */
export const KEY_PATTERN = /^\w{1,128}$/;

const invalid = (message: string) => new HttpError(400, 'invalid_body', message);
export const projectNotFound = (id: string) => new HttpError(404, 'project_not_found', `No project ${id}`);

export interface ProjectInput {
  name?: unknown;
  allowedOrigins?: unknown;
  rateLimitPerMinute?: unknown;
}

function name(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.trim().length > 100) {
    throw invalid('"name" must be a string of 1 to 100 characters');
  }
  return value.trim();
}

/** Origins as browsers send them: scheme, host and port, nothing else. */
function origins(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_ALLOWED_ORIGINS) {
    throw invalid(`"allowedOrigins" must be an array of at most ${MAX_ALLOWED_ORIGINS} origins`);
  }
  const out = new Set<string>();
  for (const o of value) {
    let url: URL | null = null;
    try {
      url = typeof o === 'string' && o.length <= 512 ? new URL(o) : null;
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || o.replace(/\/$/, '') !== url.origin) {
      throw invalid(`"allowedOrigins": ${JSON.stringify(o)} is not an origin like https://shop.example (scheme, host, optional port)`);
    }
    out.add(url.origin);
  }
  return [...out];
}

function rateLimit(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_RATE_LIMIT_PER_MINUTE) {
    throw invalid(`"rateLimitPerMinute" must be an integer from 1 to ${MAX_RATE_LIMIT_PER_MINUTE}`);
  }
  return value;
}

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
export const newKey = () => hex(crypto.getRandomValues(new Uint8Array(16)));
/** 12 digits, never starting with 0: numeric for Sentry DSNs, hard to guess, short to read. */
const newId = () => {
  const [high, low] = crypto.getRandomValues(new Uint32Array(2));
  return String(100_000_000_000 + (high % 900_000) * 1_000_000 + (low % 1_000_000));
};

export interface Projects {
  list(userId: string): Promise<Project[]>;
  /** The user's project, or 404 project_not_found (another user's too). */
  get(userId: string, id: string): Promise<Project>;
  create(userId: string, input: ProjectInput): Promise<Project>;
  update(userId: string, id: string, input: ProjectInput): Promise<Project>;
  rotateKey(userId: string, id: string): Promise<Project>;
  remove(userId: string, id: string): Promise<void>;
  /** The project a key belongs to, or null for an unknown, rotated or deleted key. */
  byKey(key: string): Promise<KeyedProject | null>;
  /** 0 when the project may take `events` more events now, else the seconds to wait. */
  takeEvents(project: Project, events: number, now: number): number;
}

export function createProjects(records: RecordStore, clock: () => number): Projects {
  const cache = new Map<string, { found: KeyedProject | null; at: number }>();
  const limiters = new Map<string, { perMinute: number; limiter: RateLimiter }>();
  const forget = (key: string) => cache.delete(key);

  async function own(userId: string, id: string): Promise<StoredRecord<Project>> {
    const found = /^\d{1,20}$/.test(id) ? await records.get<Project>(PROJECT_KIND, id, userId) : null;
    if (!found) throw projectNotFound(id);
    return found;
  }

  async function save(userId: string, project: Project): Promise<void> {
    await records.put([
      { kind: PROJECT_KIND, id: project.id, userId, body: project },
      { kind: PROJECT_KEY_KIND, id: project.key, userId, body: { projectId: project.id } },
    ]);
  }

  return {
    async list(userId) {
      const all = await records.list<Project>(PROJECT_KIND, userId);
      return all.map((r) => r.body).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    },
    async get(userId, id) {
      return (await own(userId, id)).body;
    },
    async create(userId, input) {
      const project: Project = {
        id: '',
        name: name(input.name),
        key: newKey(),
        allowedOrigins: input.allowedOrigins === undefined ? [] : origins(input.allowedOrigins),
        createdAt: '',
        rateLimitPerMinute: input.rateLimitPerMinute === undefined ? DEFAULT_RATE_LIMIT_PER_MINUTE : rateLimit(input.rateLimitPerMinute),
      };
      const mine = await records.list<Project>(PROJECT_KIND, userId);
      if (mine.length >= MAX_PROJECTS_PER_USER) {
        throw new HttpError(409, 'too_many_projects', `At most ${MAX_PROJECTS_PER_USER} projects per user`);
      }
      project.createdAt = creationTime(clock(), mine.map((r) => r.body.createdAt));
      do project.id = newId();
      while (await records.find(PROJECT_KIND, project.id));
      await save(userId, project);
      return project;
    },
    async update(userId, id, input) {
      const project = { ...(await own(userId, id)).body };
      if (input.name !== undefined) project.name = name(input.name);
      if (input.allowedOrigins !== undefined) project.allowedOrigins = origins(input.allowedOrigins);
      if (input.rateLimitPerMinute !== undefined) project.rateLimitPerMinute = rateLimit(input.rateLimitPerMinute);
      await save(userId, project);
      forget(project.key);
      return project;
    },
    async rotateKey(userId, id) {
      const old = (await own(userId, id)).body;
      const project = { ...old, key: newKey() };
      await save(userId, project);
      forget(old.key);
      // The old key's record goes too. Were this step lost (a crash), the old key would still find
      // nothing: byKey checks that the project still holds the key.
      await records.delete(PROJECT_KEY_KIND, old.key, userId);
      return project;
    },
    async remove(userId, id) {
      const project = (await own(userId, id)).body;
      await records.delete(PROJECT_KIND, id, userId);
      forget(project.key);
      limiters.delete(id);
      await records.delete(PROJECT_KEY_KIND, project.key, userId);
    },
    async byKey(key) {
      const now = clock();
      const hit = cache.get(key);
      if (hit && now - hit.at < KEY_CACHE_MS) return hit.found;
      let found: KeyedProject | null = null;
      const keyRecord = await records.find<{ projectId: string }>(PROJECT_KEY_KIND, key);
      if (keyRecord) {
        const project = await records.get<Project>(PROJECT_KIND, keyRecord.body.projectId, keyRecord.userId);
        if (project && project.body.key === key) found = { project: project.body, owner: project.userId };
      }
      cache.delete(key);
      if (cache.size >= KEY_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(key, { found, at: now });
      return found;
    },
    takeEvents(project, events, now) {
      let entry = limiters.get(project.id);
      if (!entry || entry.perMinute !== project.rateLimitPerMinute) {
        const perMinute = project.rateLimitPerMinute;
        entry = { perMinute, limiter: createRateLimiter({ rate: perMinute / 60, burst: perMinute, maxClients: 1 }) };
        limiters.set(project.id, entry);
      }
      return entry.limiter.take(project.id, now, events);
    },
  };
}

/** Where a request to POST /api/events or /api/beacon names a project key; 401 invalid_key when they disagree. */
export function requestKey(request: Request, body?: unknown): string | null {
  const keys: string[] = [];
  const header = request.headers.get('x-watchtower-key');
  if (header !== null) keys.push(header.trim());
  // Only URLs with a query string are parsed: most requests carry none.
  if (request.url.includes('?')) {
    const query = new URL(request.url).searchParams.get('key');
    if (query !== null) keys.push(query);
  }
  const fromBody = body !== null && typeof body === 'object' && Array.isArray((body as { events?: unknown }).events) ? (body as { key?: unknown }).key : undefined;
  if (fromBody !== undefined && fromBody !== null) keys.push(typeof fromBody === 'string' ? fromBody : '');
  if (!keys.length) return null;
  if (keys.some((k) => k !== keys[0])) throw new HttpError(401, 'invalid_key', 'The request names more than one project key');
  return keys[0];
}

/**
 * The project of a key, checked for the request: 401 invalid_key for a malformed, unknown, rotated or
 * deleted key; 403 origin_not_allowed for a browser Origin the project does not list. A request
 * without Origin (a server, a script) passes: Origin stops browsers, not scripts.
 */
export async function projectOfKey(projects: Projects, key: string, request: Request): Promise<KeyedProject> {
  const found = KEY_PATTERN.test(key) ? await projects.byKey(key) : null;
  if (!found) throw new HttpError(401, 'invalid_key', 'Unknown project key (rotated or deleted keys stop working)');
  const origin = request.headers.get('origin');
  const allowed = found.project.allowedOrigins;
  if (origin !== null && allowed.length && !allowed.includes(origin)) {
    throw new HttpError(403, 'origin_not_allowed', `Origin ${origin} may not send events to this project`);
  }
  return found;
}

/** 429 rate_limited when the project has had its events for this minute. */
export function limitProject(
  projects: Projects,
  project: Project,
  events: number,
  now: number,
  headers: (wait: number) => Record<string, string> = () => ({}),
): void {
  const wait = events > 0 ? projects.takeEvents(project, events, now) : 0;
  if (wait) {
    throw new HttpError(429, 'rate_limited', `Project ${project.id} sends more than ${project.rateLimitPerMinute} events a minute; retry later`, {
      'retry-after': String(wait),
      ...headers(wait),
    });
  }
}
