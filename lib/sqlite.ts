// Entry point `watchtower/sqlite`: the persisted embedded store (sql.js on a worker thread plus an
// fsynced journal). Apart from the root so that only embedders who use it load its worker and sql.js.
export {
  openSqliteStore,
  CorruptDatabaseError,
  type SqliteStoreOptions,
} from './store/sqlite/store.ts';
export { DEFAULT_RETENTION_DAYS, DEFAULT_MAX_EVENTS } from './store/defaults.ts';
// Its record store (projects, issues, alert rules, source maps): a directory beside the database.
export { openSqliteRecords, openFileRecords, CorruptRecordsError, type FileRecordsOptions } from './records/file.ts';
