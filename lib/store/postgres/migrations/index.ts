// Versioned schema of the PostgreSQL store. A migration is never edited once released: changes are
// new entries. Applied in order at start, inside one transaction holding an advisory lock, so
// several instances starting at once apply each version exactly once.
// The versions are in files of a few each (their SQL is most of their length); the runner is
// shared with the records' schema (./runner.ts).
import type postgres from 'postgres';
import { MIGRATIONS_1_TO_3 } from './0001-0003.ts';
import { MIGRATIONS_4_TO_9 } from './0004-0009.ts';
import { MIGRATIONS_10_TO_17 } from './0010-0017.ts';
import { MIGRATIONS_18_TO_19 } from './0018-0019.ts';
import { MIGRATIONS_20 } from './0020.ts';
import { MIGRATIONS_21_ON } from './0021.ts';
import { MIGRATIONS_22_ON } from './0022.ts';
import { MIGRATIONS_23_ON } from './0023.ts';
import { MIGRATION_LOCK } from './locks.ts';
import { migrationScript as scriptOf, runMigrations, type Migration, type Schema } from './runner.ts';

export type { Migration };

export const MIGRATIONS: readonly Migration[] = [...MIGRATIONS_1_TO_3, ...MIGRATIONS_4_TO_9, ...MIGRATIONS_10_TO_17, ...MIGRATIONS_18_TO_19, ...MIGRATIONS_20, ...MIGRATIONS_21_ON, ...MIGRATIONS_22_ON, ...MIGRATIONS_23_ON];

/** The event store's schema: its table of versions and its lock, apart from the records'. */
const SCHEMA: Schema = { table: 'watchtower_migrations', lock: MIGRATION_LOCK, tag: 'wt', what: 'migration' };

/** The DO block that applies `migrations` (all by default; tests and benchmarks apply the first few). */
export function migrationScript(migrations: readonly Migration[] = MIGRATIONS): string {
  return scriptOf(SCHEMA, migrations);
}

/** Applies the pending migrations at start, logging a change of version. */
export function migrate(sql: postgres.Sql, log: (msg: string) => void): Promise<void> {
  return runMigrations(sql, SCHEMA, MIGRATIONS, log);
}
