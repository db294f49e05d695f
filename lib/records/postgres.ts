// Records in PostgreSQL: the PostgreSQL store's companion, in tables of their own with their own
// versioned migrations, so the event store's schema and this one change independently.
import postgres from 'postgres';
import { runMigrations, type Schema } from '../store/postgres/migrations/runner.ts';
import { RecordConflictError, type RecordStore, type StoredRecord } from './types.ts';

export interface PostgresRecordsOptions {
  /** postgres://user@host:5432/db (DATABASE_URL). */
  url: string;
  /** Pooled connections. Default 4: records are read and written far less than events. */
  max?: number;
  connectTimeout?: number;
}

export interface RecordsMigration {
  version: number;
  name: string;
  sql: string;
}

/** Key of the transaction-level advisory lock serialising these migrations (not the event store's). */
export const RECORDS_MIGRATION_LOCK = 0x5774_7265_636f_7264;

/** Never edited once released: a change is a new entry. */
export const RECORDS_MIGRATIONS: readonly RecordsMigration[] = [
  {
    version: 1,
    name: 'records and blobs',
    // `body` is JSON text, not jsonb: the store never queries inside it, and text keeps it exactly
    // as written (jsonb would refuse an escaped NUL). Reads are by (kind, id) or by owner and kind.
    sql: `
      create table watchtower_records (
        kind text not null,
        id text not null,
        user_id text not null,
        body text not null,
        primary key (kind, id)
      );
      create index watchtower_records_owner on watchtower_records (user_id, kind);
      create table watchtower_blobs (
        key text primary key,
        bytes bytea not null
      );
    `,
  },
];

/** The records' schema: its own table of versions and lock, run by the event store's runner. */
const RECORDS_SCHEMA: Schema = { table: 'watchtower_records_migrations', lock: RECORDS_MIGRATION_LOCK, tag: 'wr', what: 'records migration' };

type Row = { kind: string; id: string; user_id: string; body: string };
const toRecord = <T>(r: Row): StoredRecord<T> => ({ kind: r.kind, id: r.id, userId: r.user_id, body: JSON.parse(r.body) as T });

export async function openPostgresRecords(options: PostgresRecordsOptions): Promise<RecordStore> {
  const sql = postgres(options.url, {
    max: options.max ?? 4,
    connect_timeout: options.connectTimeout ?? 5,
    onnotice: () => {},
    fetch_types: false,
    connection: { application_name: 'watchtower-records' },
  });
  try {
    await runMigrations(sql, RECORDS_SCHEMA, RECORDS_MIGRATIONS);
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw err;
  }

  return {
    async get<T>(kind: string, id: string, userId: string) {
      const [row] = await sql<Row[]>`select kind, id, user_id, body from watchtower_records where kind = ${kind} and id = ${id} and user_id = ${userId}`;
      return row ? toRecord<T>(row) : null;
    },
    async find<T>(kind: string, id: string) {
      const [row] = await sql<Row[]>`select kind, id, user_id, body from watchtower_records where kind = ${kind} and id = ${id}`;
      return row ? toRecord<T>(row) : null;
    },
    async list<T>(kind: string, userId: string) {
      const rows = await sql<Row[]>`select kind, id, user_id, body from watchtower_records where user_id = ${userId} and kind = ${kind}`;
      return rows.map((r) => toRecord<T>(r));
    },
    async count(kind: string, userId: string) {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from watchtower_records where user_id = ${userId} and kind = ${kind}`;
      return row.n;
    },
    async put(records) {
      // One statement, so all or none without a transaction. The last of several puts of one record
      // in a batch wins (one statement may not update a row twice); two owners in one batch conflict.
      const batch = new Map<string, StoredRecord>();
      for (const r of records) {
        const key = JSON.stringify([r.kind, r.id]);
        const before = batch.get(key);
        if (before && before.userId !== r.userId) throw new RecordConflictError(r.kind, r.id);
        batch.set(key, r);
      }
      if (!batch.size) return;
      const rows = [...batch.values()];
      try {
        await sql`
          insert into watchtower_records (kind, id, user_id, body)
          select * from unnest(
            ${pgArray(rows.map((r) => r.kind))}::text[], ${pgArray(rows.map((r) => r.id))}::text[],
            ${pgArray(rows.map((r) => r.userId))}::text[], ${pgArray(rows.map((r) => JSON.stringify(r.body ?? null)))}::text[])
          on conflict (kind, id) do update set
            body = excluded.body,
            -- Another owner's record: null breaks the not-null constraint and fails the whole statement.
            user_id = case when watchtower_records.user_id = excluded.user_id then excluded.user_id end`;
      } catch (err) {
        if ((err as { code?: string }).code === '23502') {
          const held = await sql<Row[]>`
            select kind, id, user_id, body from watchtower_records
            where (kind, id) in (select * from unnest(${pgArray(rows.map((r) => r.kind))}::text[], ${pgArray(rows.map((r) => r.id))}::text[]))`;
          const owner = new Map(held.map((h) => [JSON.stringify([h.kind, h.id]), h.user_id]));
          const clash = rows.find((r) => { const o = owner.get(JSON.stringify([r.kind, r.id])); return o !== undefined && o !== r.userId; });
          throw new RecordConflictError(clash?.kind ?? rows[0].kind, clash?.id ?? rows[0].id);
        }
        throw err;
      }
    },
    async delete(kind, id, userId) {
      const rows = await sql`delete from watchtower_records where kind = ${kind} and id = ${id} and user_id = ${userId} returning 1`;
      return rows.length > 0;
    },
    async putBlob(key, bytes) {
      await sql`insert into watchtower_blobs (key, bytes) values (${key}, ${bytes}) on conflict (key) do update set bytes = excluded.bytes`;
    },
    async getBlob(key) {
      const [row] = await sql<{ bytes: Uint8Array }[]>`select bytes from watchtower_blobs where key = ${key}`;
      return row ? new Uint8Array(row.bytes) : null;
    },
    async deleteBlob(key) {
      await sql`delete from watchtower_blobs where key = ${key}`;
    },
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}

/** A text array literal postgres.js sends as one parameter (with fetch_types off it cannot infer arrays). */
function pgArray(values: string[]): string {
  return '{' + values.map((v) => '"' + v.replace(/[\\"]/g, '\\$&') + '"').join(',') + '}';
}
