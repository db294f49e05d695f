// The migration runner of every PostgreSQL schema of this project: the event store's
// (./index.ts) and the records' (lib/records/postgres.ts), each with its own list, table of
// applied versions and advisory lock, so that the two schemas change independently.
import type postgres from 'postgres';

/** One version of a schema. Never edited once released: a change is a new entry. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Where a schema keeps its applied versions, and how its DO block is quoted and locked. */
export interface Schema {
  /** Table of the versions applied (created by the script). */
  table: string;
  /** Key of the transaction-level advisory lock that serialises the schema's migrations. */
  lock: number;
  /** Dollar-quote tag of the block; each migration is quoted by `<tag>_<version>`. */
  tag: string;
  /** What an error calls one migration of the schema. */
  what: string;
}

/**
 * One DO block: PL/pgSQL runs it as a single statement in its own transaction, so the advisory
 * lock is held until every pending migration is committed, and no reserved connection is needed
 * (the event store avoids them: see lib/store/postgres/store.ts). Instances starting at once queue
 * on the lock and then find the versions applied.
 */
export function migrationScript(schema: Schema, migrations: readonly Migration[]): string {
  const { table } = schema;
  const steps = migrations.map((m) => {
    const tag = `$${schema.tag}_${m.version}$`;
    if (m.sql.includes(tag)) throw new Error(`${schema.what} ${m.version} contains its own quote tag`);
    return `
    if not exists (select 1 from ${table} where version = ${m.version}) then
      execute ${tag}${m.sql}${tag};
      insert into ${table} (version, name) values (${m.version}, ${tag}${m.name}${tag});
    end if;`;
  });
  return `do $${schema.tag}$
  begin
    perform pg_advisory_xact_lock(${schema.lock});
    create table if not exists ${table} (
      version integer primary key, name text not null, applied_at timestamptz not null default now());
    ${steps.join('')}
  end
  $${schema.tag}$`;
}

/**
 * Applies the schema's pending migrations. With `log`, the versions before and after are read
 * too, and a change of version is logged.
 */
export async function runMigrations(sql: postgres.Sql, schema: Schema, migrations: readonly Migration[], log?: (msg: string) => void): Promise<void> {
  const versions = async () =>
    (await sql<{ v: number | null }[]>`select max(version) as v from ${sql(schema.table)}`.catch(() => [{ v: null }]))[0].v;
  const before = log ? await versions().catch(() => null) : null;
  // Constant text from this repository, never client input: the one place unsafe() is used.
  await sql.unsafe(migrationScript(schema, migrations)).simple();
  if (!log) return;
  const after = await versions();
  if (after !== before) log(`database schema migrated from version ${before ?? 0} to ${after}`);
}
