/**
 * The ledger's SQLite schema and its migrations. The schema version lives in
 * `PRAGMA user_version`; each migration moves the file one version up in its
 * own transaction, so a file is always at one whole version. A file written by
 * a newer robots-proxy (a higher version) is refused, never altered.
 * Extension, not in RFC 9309.
 */
import type { Database } from 'better-sqlite3';
import { LedgerError } from '../../errors.js';
import { WAIT_BUCKETS } from './rollup.js';

/** Columns of the queue-wait histogram: `w0` .. `w11`. */
export const WAIT_COLUMNS: readonly string[] = Array.from({ length: WAIT_BUCKETS }, (_, i) => `w${i}`);

/**
 * The migrations, in order: entry `i` moves a file from version `i` to `i + 1`.
 * Never edit a migration that has shipped; add one.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: per-minute rollups, recent refusals, robots.txt versions.
  `
  CREATE TABLE rollups (
    minute INTEGER NOT NULL,
    identity TEXT NOT NULL,
    token TEXT NOT NULL,
    origin TEXT NOT NULL,
    verdict TEXT NOT NULL,
    reason TEXT NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    bytes_in INTEGER NOT NULL DEFAULT 0,
    bytes_out INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,
    wait_sum_ms REAL NOT NULL DEFAULT 0,
    wait_max_ms REAL NOT NULL DEFAULT 0,
    ${WAIT_COLUMNS.map((c) => `${c} INTEGER NOT NULL DEFAULT 0`).join(',\n    ')},
    s1xx INTEGER NOT NULL DEFAULT 0,
    s2xx INTEGER NOT NULL DEFAULT 0,
    s3xx INTEGER NOT NULL DEFAULT 0,
    s4xx INTEGER NOT NULL DEFAULT 0,
    s5xx INTEGER NOT NULL DEFAULT 0,
    s_error INTEGER NOT NULL DEFAULT 0,
    backoffs INTEGER NOT NULL DEFAULT 0,
    delay_max_ms REAL NOT NULL DEFAULT 0
  );
  CREATE UNIQUE INDEX rollups_key ON rollups (minute, identity, token, origin, verdict, reason);
  CREATE TABLE refusals (
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    request_id TEXT,
    identity TEXT NOT NULL,
    token TEXT NOT NULL,
    origin TEXT NOT NULL,
    url TEXT NOT NULL,
    reason TEXT NOT NULL,
    status INTEGER NOT NULL,
    robots_url TEXT,
    group_name TEXT,
    rule_kind TEXT,
    rule_pattern TEXT,
    rule_line INTEGER
  );
  CREATE INDEX refusals_at ON refusals (at_ms);
  CREATE TABLE robots_versions (
    id INTEGER PRIMARY KEY,
    origin TEXT NOT NULL,
    url TEXT NOT NULL,
    state TEXT NOT NULL,
    status INTEGER,
    error TEXT,
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    warnings TEXT NOT NULL,
    crawl_delays TEXT NOT NULL,
    first_fetched_ms INTEGER NOT NULL,
    last_fetched_ms INTEGER NOT NULL,
    fetches INTEGER NOT NULL,
    body BLOB,
    body_cut INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX robots_versions_origin ON robots_versions (origin, id);
  CREATE INDEX robots_versions_last ON robots_versions (last_fetched_ms);
  `,
  // 2: one sample User-Agent per product token, for the operator and category of each bot.
  `
  CREATE TABLE bots (
    token TEXT PRIMARY KEY,
    user_agent TEXT NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL
  );
  `,
  // 3: the operator policy rule that refused (or, in report mode, would have refused) a request,
  // and the reason a forwarded `report-only` request would have had.
  `
  ALTER TABLE refusals ADD COLUMN policy_rule TEXT;
  ALTER TABLE refusals ADD COLUMN would_deny TEXT;
  `,
];

/** The schema version this build writes. */
export const LEDGER_SCHEMA_VERSION = MIGRATIONS.length;

/** The schema version of an open file (0 for a new, empty one). */
export function schemaVersionOf(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Refuses a file that holds another application's database (a `ledger.path` naming the wrong
 * file): tables at schema version 0, or no `rollups` table at a later one. Read-only; call it
 * before anything writes to the file (the journal mode included).
 * @throws {LedgerError} `ERR_LEDGER_SCHEMA` naming the tables found.
 */
export function refuseForeignFile(db: Database): void {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  const version = schemaVersionOf(db);
  if (version === 0 ? tables.length === 0 : tables.includes('rollups')) return;
  const shown = tables.slice(0, 5).join(', ') + (tables.length > 5 ? `, ... (${tables.length} tables)` : '');
  throw new LedgerError(
    'ERR_LEDGER_SCHEMA',
    `the file is not a robots-proxy ledger (schema version ${version}, tables: ${shown || 'none'}); it is left untouched: name another ledger.path`,
  );
}

/**
 * Brings `db` to {@link LEDGER_SCHEMA_VERSION}, one migration per transaction.
 * @param target version to stop at (tests build older files with it). @default LEDGER_SCHEMA_VERSION
 * @returns the version the file had before.
 * @throws {LedgerError} `ERR_LEDGER_SCHEMA` when the file is newer than this build;
 *   SQLite errors (busy, read-only, full, corrupt) as better-sqlite3 raises them.
 */
export function migrate(db: Database, target: number = LEDGER_SCHEMA_VERSION): number {
  const from = schemaVersionOf(db);
  if (from > LEDGER_SCHEMA_VERSION) {
    throw new LedgerError(
      'ERR_LEDGER_SCHEMA',
      `the ledger file has schema version ${from}, newer than this robots-proxy writes (${LEDGER_SCHEMA_VERSION}); use a newer robots-proxy or another ledger.path`,
    );
  }
  for (let version = from; version < target; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version] as string);
      db.pragma(`user_version = ${version + 1}`);
    }).immediate();
  }
  return from;
}
