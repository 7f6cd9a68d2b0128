/** The compliance ledger (SQLite): per-minute rollups, refusals, robots.txt versions; its writer and readers. */
export { Ledger, LEDGER_FAILURE_KINDS, failureKindOf, openLedgerDatabase, type LedgerFailureKind, type LedgerLogger, type LedgerOptions, type LedgerStats } from './ledger.js';
export { LEDGER_SCHEMA_VERSION, MIGRATIONS, migrate, schemaVersionOf } from './schema.js';
export { MINUTE_MS, OTHER_ORIGIN, RollupAggregator, WAIT_BUCKET_BOUNDS_MS, ledgerTokenOf, type RefusalRecord, type RollupCell } from './rollup.js';
export { contentHashOf, versionRowOf, type RobotsFetchRecord } from './robots-history.js';
