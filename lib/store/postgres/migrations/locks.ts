// The event store's advisory locks, fixed bigints (the records' schema has its own).
/** Key of the transaction-level advisory lock that serialises migrations (any fixed bigint). */
export const MIGRATION_LOCK = 0x5761_7463_6874_6f;
/** Key of the advisory lock under which instances create and drop partitions. */
export const PARTITION_LOCK = 0x5761_7463_6870_74;
