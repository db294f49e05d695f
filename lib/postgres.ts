// Entry point `watchtower/postgres`: the PostgreSQL store. Apart from the root so that only
// embedders who use it load postgres.js.
export { openPostgresStore, type PostgresStoreOptions } from './store/postgres/store.ts';
// Its record store (projects, issues, alert rules, source maps): tables of their own.
export { openPostgresRecords, type PostgresRecordsOptions } from './records/postgres.ts';
