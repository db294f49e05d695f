// Environment → typed configuration. Every environment variable the service reads is named here.
import { issuerFromPublishableKey } from './auth.ts';
import { DEFAULT_CACHE_MB, DEFAULT_DEDUPE_DAYS, DEFAULT_MAX_EVENTS, DEFAULT_RETENTION_DAYS } from './store/defaults.ts';

export type StorageKind = 'sqlite' | 'memory' | 'postgres';

export interface Config {
  port: number;
  host: string;
  storage: StorageKind;
  /** Absolute path of the sqlite database file. */
  dbPath: string;
  /** PostgreSQL connection URL (SERVICE_STORAGE=postgres). */
  databaseUrl: string | null;
  bufferSize: number;
  retentionDays: number;
  maxEvents: number;
  /** sqlite: memory budget of the sealed segments held open, MiB. */
  cacheMb: number;
  /** sqlite: a retried event is recognised for at least this many days. */
  dedupeDays: number;
  defaultOwner: string | null;
  /** SERVICE_TRUST_USER_HEADER=true: accept X-IdP-User-Id even with a provider configured. */
  trustUserHeaderForced: boolean;
  /** X-IdP-User-Id is believed: no provider configured (development mode), or forced. */
  trustHeader: boolean;
  publishableKey: string | null;
  issuer: string | null;
  jwksUrl: string | null;
  authorizedParties: string[];
  /** Ingestion requests per second per client address (0 = unlimited) and the burst allowed. */
  rateLimit: number;
  rateBurst: number;
  trustProxy: boolean;
  /** SERVICE_KEEP_BOTS=true: store events from bot user agents instead of dropping them. */
  keepBots: boolean;
  /** SERVICE_GEO=off: no country lookups of client addresses (README "Countries"). Default on. */
  geo: boolean;
  /** SERVICE_SOURCEMAP_MAX_MB: source map text one project may hold, MiB. */
  sourceMapMaxMb: number;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_DB_PATH = 'data/prototype_1/watchtower.sqlite';
/** Source map text a project may hold by default, MiB (lib/issues/sourcemap-store.ts). */
export const DEFAULT_SOURCEMAP_MAX_MB = 100;

type Env = Record<string, string | undefined>;

const get = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v === '' ? undefined : v;
};

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = get(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max} (got "${raw}")`);
  }
  return Number(raw);
}

/** `true`/`1` or `false`/`0` (any case); unset or empty is false. */
export function boolean(env: Env, name: string): boolean {
  const raw = get(env, name)?.toLowerCase();
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ConfigError(name, `must be true or false (got "${env[name]}")`);
}

/** `on` or `off` (any case, or a boolean()'s value); unset or empty is `fallback`. */
function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = get(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (raw === 'on') return true;
  return raw === 'off' ? false : boolean(env, name);
}

function url(env: Env, name: string): string | undefined {
  const raw = get(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL (got "${raw}")`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new ConfigError(name, `must be an absolute http(s) URL (got "${raw}")`);
  }
  return raw.replace(/\/+$/, '');
}

/**
 * Pure: an environment record (and the project root, for the default database path) → Config.
 * Throws ConfigError naming the variable on the first invalid value.
 */
export function loadConfig(env: Env, projectRoot: string): Config {
  const storage = (get(env, 'SERVICE_STORAGE') ?? 'sqlite').toLowerCase();
  if (storage !== 'sqlite' && storage !== 'memory' && storage !== 'postgres') {
    throw new ConfigError('SERVICE_STORAGE', `must be sqlite, memory or postgres (got "${env.SERVICE_STORAGE}")`);
  }
  const databaseUrl = get(env, 'DATABASE_URL') ?? null;
  if (storage === 'postgres' && !databaseUrl) {
    throw new ConfigError('DATABASE_URL', 'is required when SERVICE_STORAGE=postgres (postgres://user@host:5432/db)');
  }
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// URL');
  }
  const dbPath = get(env, 'SERVICE_P1_DB');
  if (dbPath !== undefined && !isAbsolute(dbPath)) {
    throw new ConfigError('SERVICE_P1_DB', `must be an absolute path (got "${dbPath}")`);
  }
  const root = projectRoot.endsWith('/') ? projectRoot : projectRoot + '/';
  const publishableKey = get(env, 'IDP_PUBLISHABLE_KEY') ?? null;
  let issuer = url(env, 'IDP_JWT_ISSUER') ?? null;
  if (publishableKey !== null) {
    try {
      const derived = issuerFromPublishableKey(publishableKey);
      issuer ??= derived;
    } catch (err) {
      throw new ConfigError('IDP_PUBLISHABLE_KEY', (err as Error).message);
    }
  }
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: get(env, 'HOST') ?? '0.0.0.0',
    storage,
    dbPath: dbPath ?? root + DEFAULT_DB_PATH,
    databaseUrl,
    bufferSize: integer(env, 'SERVICE_BUFFER_SIZE', 10_000, 1, 10_000_000),
    retentionDays: integer(env, 'SERVICE_RETENTION_DAYS', DEFAULT_RETENTION_DAYS, 0, 36_500),
    maxEvents: integer(env, 'SERVICE_MAX_EVENTS', DEFAULT_MAX_EVENTS, 1, 1_000_000_000),
    cacheMb: integer(env, 'SERVICE_CACHE_MB', DEFAULT_CACHE_MB, 1, 1_000_000),
    dedupeDays: integer(env, 'SERVICE_DEDUPE_DAYS', DEFAULT_DEDUPE_DAYS, 1, 36_500),
    defaultOwner: get(env, 'DEFAULT_INGEST_OWNER_USER_ID') ?? null,
    trustUserHeaderForced: boolean(env, 'SERVICE_TRUST_USER_HEADER'),
    trustHeader: issuer === null || boolean(env, 'SERVICE_TRUST_USER_HEADER'),
    publishableKey,
    issuer,
    jwksUrl: url(env, 'IDP_JWKS_URL') ?? null,
    authorizedParties: (get(env, 'IDP_AUTHORIZED_PARTIES') ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    rateLimit: integer(env, 'SERVICE_RATE_LIMIT', 1000, 0, 10_000_000),
    rateBurst: integer(env, 'SERVICE_RATE_BURST', 2000, 1, 10_000_000),
    trustProxy: boolean(env, 'SERVICE_TRUST_PROXY'),
    keepBots: boolean(env, 'SERVICE_KEEP_BOTS'),
    geo: onOff(env, 'SERVICE_GEO', true),
    sourceMapMaxMb: integer(env, 'SERVICE_SOURCEMAP_MAX_MB', DEFAULT_SOURCEMAP_MAX_MB, 1, 1_000_000),
  };
}

const isAbsolute = (p: string) => p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p);
