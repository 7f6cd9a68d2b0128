/**
 * The compliance ledger: finished requests and robots.txt fetches aggregated
 * in memory ({@link RollupAggregator}) and written to an SQLite file in one
 * transaction per flush interval, off the request path. A database that
 * cannot be written (locked by another connection, full disk, read-only file,
 * unopenable) is logged and counted, never raised to a request: the pending
 * aggregates stay in memory (bounded) and the next flush tries again.
 * Extension, not in RFC 9309.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database, { type Database as Db, type Statement } from 'better-sqlite3';
import type { AccessEntry } from '../access-entry.js';
import type { Clock } from '../../clock.js';
import { makeDirectorySync } from '../../make-directory.js';
import { MINUTE_MS, RollupAggregator, type RollupAggregatorStats, type RollupCell } from './rollup.js';
import { migrate, refuseForeignFile, WAIT_COLUMNS } from './schema.js';
import { isSameVersion, versionRowOf, type RobotsFetchRecord, type RobotsVersionRow } from './robots-history.js';

/** Why a write (or an open) failed, as counted: a metrics label. */
export type LedgerFailureKind = 'busy' | 'full' | 'readonly' | 'open' | 'schema' | 'other';

/** Every {@link LedgerFailureKind}. */
export const LEDGER_FAILURE_KINDS: readonly LedgerFailureKind[] = ['busy', 'full', 'readonly', 'open', 'schema', 'other'];

/** The subset of a pino logger the ledger uses. */
export interface LedgerLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Options of {@link Ledger}. Defaults match `ledger.*` in config/default.yaml. */
export interface LedgerOptions {
  /** The SQLite file; its directory is created when missing. */
  path: string;
  clock: Clock;
  logger: LedgerLogger;
  /** Time between write transactions, ms; 0: no timer (the owner calls {@link Ledger.flush}). @default 1000 */
  flushIntervalMs?: number;
  /** Time between retention prunes, ms; 0: no timer (the owner calls {@link Ledger.prune}). @default 600_000 */
  pruneIntervalMs?: number;
  /** Age past which rollups (and robots.txt versions other than each origin's latest, and bot samples) go, ms. @default 90 days */
  rollupRetentionMs?: number;
  /** Age past which refusals go, ms. @default 7 days */
  refusalRetentionMs?: number;
  /** Most refusal rows kept. @default 1_000_000 */
  maxRefusals?: number;
  /** Distinct keys per minute before requests are counted under origin `(other)`. @default 50_000 */
  maxKeysPerMinute?: number;
  /** robots.txt bodies kept per origin. @default 5 */
  robotsBodiesPerOrigin?: number;
  /** Longest body kept, bytes. @default 512_000 */
  robotsBodyBytes?: number;
}

/** Counters and state of a {@link Ledger}, for metrics and health. */
export interface LedgerStats extends RollupAggregatorStats {
  /** True while the file is open for writing. */
  isOpen: boolean;
  /** Write transactions committed since start. */
  writes: number;
  /** Failed writes and opens since start, by kind. */
  failures: Record<LedgerFailureKind, number>;
  /** robots.txt fetches waiting to be written. */
  pendingRobotsFetches: number;
  /** robots.txt fetches not recorded because too many were waiting. */
  droppedRobotsFetches: number;
  /** Rows deleted by retention prunes since start. */
  prunedRows: number;
  /** Duration of the latest write transaction, ms. */
  lastWriteMs: number;
}

const DAY_MS = 86_400_000;
/** Bounds of what waits in memory while the file cannot be written. */
const MAX_PENDING_CELLS = 200_000;
const MAX_PENDING_REFUSALS = 100_000;
const MAX_PENDING_ROBOTS = 10_000;
const MAX_PENDING_ROBOTS_BODY_BYTES = 32 * 1_048_576;
/** Rows one prune statement deletes; a prune runs statements until done or {@link PRUNE_BUDGET_MS} passed. */
const PRUNE_BATCH_ROWS = 5_000;
const PRUNE_BUDGET_MS = 50;
/** How long the write at close waits for another connection's lock, ms. */
const CLOSE_BUSY_TIMEOUT_MS = 2_000;
/** At most one log line per failure kind per this long (the rest are counted). */
const FAILURE_LOG_INTERVAL_MS = 60_000;

/** The failure kind of a better-sqlite3 error code. */
export function failureKindOf(error: unknown): LedgerFailureKind {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'other';
  if (code === 'ERR_LEDGER_SCHEMA') return 'schema';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code === 'SQLITE_FULL') return 'full';
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM' || code === 'EACCES' || code === 'EROFS' || code === 'EPERM') return 'readonly';
  if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT') || code.startsWith('SQLITE_IOERR')) return 'open';
  return 'other';
}

/** The prepared statements of an open file. */
interface Statements {
  upsertCell: Statement;
  insertRefusal: Statement;
  upsertBot: Statement;
  latestVersion: Statement;
  touchVersion: Statement;
  insertVersion: Statement;
  trimBodies: Statement;
}

/**
 * Opens `path` for writing: creates the directory, sets WAL (readers never block the writer),
 * `synchronous=NORMAL` and no busy wait (a locked file fails the write at once rather than
 * stalling the event loop), and migrates the schema. Another application's database is refused
 * before anything is written to it.
 * @throws SQLite or file-system errors; {@link LedgerError} for a newer schema or a foreign file.
 */
export function openLedgerDatabase(path: string): Db {
  // Not mkdirSync's recursive mode: under /proc it never returns (the proxy hung at start, spinning).
  makeDirectorySync(dirname(path), 0o777);
  const db = new Database(path, { timeout: 0 });
  try {
    refuseForeignFile(db);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function prepare(db: Db): Statements {
  const cellColumns = ['minute', 'identity', 'token', 'origin', 'verdict', 'reason', 'requests', 'bytes_in', 'bytes_out', 'queued', 'wait_sum_ms', 'wait_max_ms', ...WAIT_COLUMNS, 's1xx', 's2xx', 's3xx', 's4xx', 's5xx', 's_error', 'backoffs', 'delay_max_ms'];
  const added = cellColumns.slice(6).map((c) => (c === 'wait_max_ms' || c === 'delay_max_ms' ? `${c} = max(${c}, excluded.${c})` : `${c} = ${c} + excluded.${c}`));
  return {
    upsertCell: db.prepare(
      `INSERT INTO rollups (${cellColumns.join(', ')}) VALUES (${cellColumns.map(() => '?').join(', ')})
       ON CONFLICT (minute, identity, token, origin, verdict, reason) DO UPDATE SET ${added.join(', ')}`,
    ),
    insertRefusal: db.prepare(
      `INSERT INTO refusals (at_ms, request_id, identity, token, origin, url, reason, status, robots_url, group_name, rule_kind, rule_pattern, rule_line, policy_rule, would_deny)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    upsertBot: db.prepare(
      `INSERT INTO bots (token, user_agent, first_seen_ms, last_seen_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (token) DO UPDATE SET user_agent = excluded.user_agent, last_seen_ms = max(last_seen_ms, excluded.last_seen_ms)`,
    ),
    latestVersion: db.prepare('SELECT id, state, status, error, sha256 FROM robots_versions WHERE origin = ? ORDER BY id DESC LIMIT 1'),
    touchVersion: db.prepare('UPDATE robots_versions SET last_fetched_ms = max(last_fetched_ms, ?), fetches = fetches + 1 WHERE id = ?'),
    insertVersion: db.prepare(
      `INSERT INTO robots_versions (origin, url, state, status, error, sha256, bytes, truncated, warnings, crawl_delays, first_fetched_ms, last_fetched_ms, fetches, body, body_cut)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
    ),
    trimBodies: db.prepare(
      `UPDATE robots_versions SET body = NULL WHERE origin = ? AND body IS NOT NULL AND id NOT IN
         (SELECT id FROM robots_versions WHERE origin = ? AND body IS NOT NULL ORDER BY id DESC LIMIT ?)`,
    ),
  };
}

/**
 * The upsert's 37 parameters of one cell, in `cellColumns` order. Passed spread, as arguments
 * (`run(...cellParams(cell))`), not as one array: better-sqlite3 then binds from the call's
 * arguments instead of reading the array element by element through V8's API (`Object::Get` and
 * a lookup per parameter), ~20% of a cell's write (bench/PROFILE.md, "50 origins against one
 * under close"). A flush writes one cell per (minute, identity, token, origin, verdict, reason)
 * seen since the last one: with many origins, about one per request.
 */
function cellParams(c: RollupCell): unknown[] {
  return [c.minute, c.identity, c.token, c.origin, c.verdict, c.reason, c.requests, c.bytesIn, c.bytesOut, c.queued, c.waitSumMs, c.waitMaxMs, ...c.waitBuckets, c.s1xx, c.s2xx, c.s3xx, c.s4xx, c.s5xx, c.sError, c.backoffs, c.delayMaxMs];
}

/**
 * The ledger with its lifecycle: create one per proxy, feed it with
 * {@link Ledger.observe} from the one `onFinished` hook and with
 * {@link Ledger.recordRobotsFetch}, and {@link Ledger.close} it on shutdown
 * (which writes what is pending). The constructor never throws: a file that
 * cannot be opened is retried at each flush.
 */
export class Ledger {
  readonly path: string;
  readonly #options: Required<Omit<LedgerOptions, 'path' | 'clock' | 'logger'>>;
  readonly #clock: Clock;
  readonly #logger: LedgerLogger;
  readonly #aggregator: RollupAggregator;
  #db: Db | undefined;
  #statements: Statements | undefined;
  /** The file the open handle writes (device and inode), to notice it deleted or replaced. */
  #fileId: string | undefined;
  #robots: RobotsVersionRow[] = [];
  #robotsBodyBytes = 0;
  #droppedRobotsFetches = 0;
  #writes = 0;
  #prunedRows = 0;
  #lastWriteMs = 0;
  readonly #failures: Record<LedgerFailureKind, number> = { busy: 0, full: 0, readonly: 0, open: 0, schema: 0, other: 0 };
  readonly #lastFailureLogMs = new Map<LedgerFailureKind, number>();
  #flushTimer: NodeJS.Timeout | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  #isPruneUnfinished = false;
  #isClosed = false;

  /** Opens (or creates) the file and starts the flush and prune timers. Never throws. */
  constructor(options: LedgerOptions) {
    this.path = options.path;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#options = {
      flushIntervalMs: options.flushIntervalMs ?? 1_000,
      pruneIntervalMs: options.pruneIntervalMs ?? 600_000,
      rollupRetentionMs: options.rollupRetentionMs ?? 90 * DAY_MS,
      refusalRetentionMs: options.refusalRetentionMs ?? 7 * DAY_MS,
      maxRefusals: options.maxRefusals ?? 1_000_000,
      maxKeysPerMinute: options.maxKeysPerMinute ?? 50_000,
      robotsBodiesPerOrigin: options.robotsBodiesPerOrigin ?? 5,
      robotsBodyBytes: options.robotsBodyBytes ?? 512_000,
    };
    this.#aggregator = new RollupAggregator({
      maxKeysPerMinute: this.#options.maxKeysPerMinute,
      maxPendingCells: MAX_PENDING_CELLS,
      maxPendingRefusals: MAX_PENDING_REFUSALS,
    });
    // A ledger without a prune timer (a report rebuilt from old logs) keeps everything.
    if (this.#open() && this.#options.pruneIntervalMs > 0) this.prune();
    if (this.#options.flushIntervalMs > 0) {
      this.#flushTimer = setInterval(() => this.#tick(), this.#options.flushIntervalMs);
      this.#flushTimer.unref();
    }
    if (this.#options.pruneIntervalMs > 0) {
      this.#pruneTimer = setInterval(() => this.prune(), this.#options.pruneIntervalMs);
      this.#pruneTimer.unref();
    }
  }

  /** Folds one finished request in (memory only; O(1)). Never throws for a well-formed entry. */
  observe(entry: AccessEntry): void {
    if (!this.#isClosed) this.#aggregator.add(entry);
  }

  /**
   * Records one robots.txt fetch (memory only until the next write): hashes its body and keeps
   * it, bounded, for the version history. Never throws.
   * @param body the parsed bytes (at most `robots.maxBytes`), or null when there was no body.
   */
  recordRobotsFetch(record: RobotsFetchRecord): void {
    if (this.#isClosed) return;
    if (this.#robots.length >= MAX_PENDING_ROBOTS) {
      this.#droppedRobotsFetches++;
      return;
    }
    const row = versionRowOf(record, this.#options.robotsBodiesPerOrigin > 0 ? this.#options.robotsBodyBytes : 0);
    if (row.body !== null && this.#robotsBodyBytes + row.body.length > MAX_PENDING_ROBOTS_BODY_BYTES) row.body = null;
    this.#robotsBodyBytes += row.body?.length ?? 0;
    this.#robots.push(row);
  }

  /**
   * Writes everything pending in one transaction. On failure (locked, full, read-only,
   * unopenable) the pending data stays for the next attempt, and the failure is counted and
   * logged (at most once a minute per kind). Never throws.
   * @returns true when nothing is pending any more.
   */
  flush(): boolean {
    if (this.#aggregator.isEmpty && this.#robots.length === 0) return true;
    if (this.#db !== undefined && !this.#isFileInPlace()) this.#reopenReplaced();
    if (this.#db === undefined && !this.#open()) return false;
    const db = this.#db as Db;
    const s = this.#statements as Statements;
    const startedMs = performance.now();
    try {
      db.transaction(() => {
        for (const cell of this.#aggregator.cells()) s.upsertCell.run(...cellParams(cell));
        for (const r of this.#aggregator.refusals()) {
          s.insertRefusal.run(r.atMs, r.requestId, r.identity, r.token, r.origin, r.url, r.reason, r.status, r.robotsUrl, r.group, r.ruleKind, r.rulePattern, r.ruleLine, r.policyRule, r.wouldDeny);
        }
        for (const b of this.#aggregator.bots()) s.upsertBot.run(b.token, b.userAgent, b.seenAtMs, b.seenAtMs);
        for (const row of this.#robots) this.#writeVersion(s, row);
      }).immediate();
    } catch (error) {
      this.#fail(error, 'write');
      return false;
    }
    this.#lastWriteMs = performance.now() - startedMs;
    this.#writes++;
    this.#aggregator.clear(this.#clock.nowMs());
    this.#robots = [];
    this.#robotsBodyBytes = 0;
    return true;
  }

  /**
   * Deletes what retention says is old: rollups, robots.txt versions (each origin's latest
   * stays) and bot samples past `rollupRetentionMs`, refusals past `refusalRetentionMs` or
   * beyond `maxRefusals`. Works in batches for at most ~50 ms; what is left is continued at
   * the next flush. A failure is counted and logged. Never throws.
   * @returns rows deleted.
   */
  prune(): number {
    if (this.#db === undefined) return 0;
    const db = this.#db;
    const nowMs = this.#clock.nowMs();
    const rollupCutoffMinute = Math.floor((nowMs - this.#options.rollupRetentionMs) / MINUTE_MS);
    const refusalCutoffMs = nowMs - this.#options.refusalRetentionMs;
    const versionCutoffMs = nowMs - this.#options.rollupRetentionMs;
    const startedMs = performance.now();
    let deleted = 0;
    const batch = (sql: string, ...params: unknown[]): boolean => {
      const changes = db.prepare(sql).run(...params).changes;
      deleted += changes;
      return changes === PRUNE_BATCH_ROWS && performance.now() - startedMs < PRUNE_BUDGET_MS;
    };
    try {
      while (batch(`DELETE FROM rollups WHERE rowid IN (SELECT rowid FROM rollups WHERE minute < ? LIMIT ${PRUNE_BATCH_ROWS})`, rollupCutoffMinute));
      while (batch(`DELETE FROM refusals WHERE id IN (SELECT id FROM refusals WHERE at_ms < ? LIMIT ${PRUNE_BATCH_ROWS})`, refusalCutoffMs));
      const boundary = db.prepare('SELECT id FROM refusals ORDER BY id DESC LIMIT 1 OFFSET ?').get(this.#options.maxRefusals) as { id: number } | undefined;
      if (boundary !== undefined) {
        while (batch(`DELETE FROM refusals WHERE id IN (SELECT id FROM refusals WHERE id <= ? LIMIT ${PRUNE_BATCH_ROWS})`, boundary.id));
      }
      deleted += db
        .prepare('DELETE FROM robots_versions WHERE last_fetched_ms < ? AND id NOT IN (SELECT max(id) FROM robots_versions GROUP BY origin)')
        .run(versionCutoffMs).changes;
      deleted += db.prepare('DELETE FROM bots WHERE last_seen_ms < ?').run(versionCutoffMs).changes;
    } catch (error) {
      this.#fail(error, 'prune');
    }
    this.#isPruneUnfinished = performance.now() - startedMs >= PRUNE_BUDGET_MS;
    this.#prunedRows += deleted;
    return deleted;
  }

  /** Counters and state, for metrics. */
  stats(): LedgerStats {
    return {
      ...this.#aggregator.stats(),
      isOpen: this.#db !== undefined,
      writes: this.#writes,
      failures: { ...this.#failures },
      pendingRobotsFetches: this.#robots.length,
      droppedRobotsFetches: this.#droppedRobotsFetches,
      prunedRows: this.#prunedRows,
      lastWriteMs: this.#lastWriteMs,
    };
  }

  /**
   * Stops the timers, writes what is pending (one last attempt; what cannot be written is
   * logged with its size) and closes the file. Later `observe` calls are ignored. Idempotent;
   * never throws.
   */
  close(): void {
    if (this.#isClosed) return;
    clearInterval(this.#flushTimer);
    clearInterval(this.#pruneTimer);
    // The last write may wait a little for another connection's lock: nothing else is served now.
    try {
      this.#db?.pragma(`busy_timeout = ${CLOSE_BUSY_TIMEOUT_MS}`);
    } catch {
      // A broken handle: flush() reopens or reports it.
    }
    if (!this.flush()) {
      const { pendingCells, pendingRefusals } = this.#aggregator.stats();
      this.#logger.error({ event: 'ledger-lost', path: this.path, pendingCells, pendingRefusals, pendingRobotsFetches: this.#robots.length }, 'ledger: closing with aggregates that could not be written');
    }
    this.#isClosed = true;
    this.#closeDb();
  }

  #tick(): void {
    this.flush();
    if (this.#isPruneUnfinished) this.prune();
  }

  #writeVersion(s: Statements, row: RobotsVersionRow): void {
    const latest = s.latestVersion.get(row.origin) as (Pick<RobotsVersionRow, 'state' | 'status' | 'error' | 'sha256'> & { id: number }) | undefined;
    if (latest !== undefined && isSameVersion(latest, row)) {
      s.touchVersion.run(row.fetchedAtMs, latest.id);
      return;
    }
    const keepsBody = this.#options.robotsBodiesPerOrigin > 0 ? row.body : null;
    s.insertVersion.run(row.origin, row.url, row.state, row.status, row.error, row.sha256, row.bytes, row.truncated, row.warnings, row.crawlDelays, row.fetchedAtMs, row.fetchedAtMs, keepsBody, row.bodyCut);
    if (keepsBody !== null) s.trimBodies.run(row.origin, row.origin, this.#options.robotsBodiesPerOrigin);
  }

  /** Opens the file; false (counted, logged) when it cannot be. */
  #open(): boolean {
    try {
      this.#db = openLedgerDatabase(this.path);
      this.#statements = prepare(this.#db);
      this.#fileId = fileIdOf(this.path) ?? undefined;
      return true;
    } catch (error) {
      this.#db = undefined;
      this.#statements = undefined;
      const kind = failureKindOf(error);
      this.#fail(error, 'open', kind === 'other' ? 'open' : kind);
      return false;
    }
  }

  #fail(error: unknown, during: 'open' | 'write' | 'prune', kind: LedgerFailureKind = failureKindOf(error)): void {
    this.#failures[kind]++;
    // A read-only or broken handle will not heal: reopen it at the next flush.
    if (during !== 'open' && (kind === 'readonly' || kind === 'open')) this.#closeDb();
    const nowMs = this.#clock.nowMs();
    const last = this.#lastFailureLogMs.get(kind);
    if (last !== undefined && nowMs - last < FAILURE_LOG_INTERVAL_MS) return;
    this.#lastFailureLogMs.set(kind, nowMs);
    const { pendingCells, pendingRefusals } = this.#aggregator.stats();
    this.#logger.error(
      {
        event: 'ledger-write-failed',
        during,
        kind,
        path: this.path,
        code: (error as { code?: unknown }).code ?? null,
        err: (error as Error).message,
        failures: this.#failures[kind],
        pendingCells,
        pendingRefusals,
      },
      'ledger: cannot write the database; requests are unaffected and the aggregates are kept to retry',
    );
  }

  /** True while the path still names the file the handle writes (one stat per flush); true when that cannot be told. */
  #isFileInPlace(): boolean {
    if (this.#fileId === undefined) return true;
    const id = fileIdOf(this.path);
    return id === null || id === this.#fileId;
  }

  /**
   * The file was deleted or replaced under the open handle (SQLite would go on writing into the
   * unlinked file, lost to every reader): logged, and the next open creates or opens the file at
   * the path. What was written to the old file stays with it.
   */
  #reopenReplaced(): void {
    this.#logger.warn(
      { event: 'ledger-file-replaced', path: this.path, exists: existsSync(this.path) },
      'ledger: the database file was deleted or replaced while open; writing to the file now at the path',
    );
    this.#closeDb();
  }

  #closeDb(): void {
    try {
      this.#db?.close();
    } catch {
      // Closing a broken handle may throw; it is dropped either way.
    }
    this.#db = undefined;
    this.#statements = undefined;
    this.#fileId = undefined;
  }
}

/** `device:inode` of `path`; undefined when there is no such file; null when it cannot be told (EACCES...). Never throws. */
function fileIdOf(path: string): string | undefined | null {
  try {
    const stats = statSync(path, { throwIfNoEntry: false });
    return stats === undefined ? undefined : `${stats.dev}:${stats.ino}`;
  } catch {
    return null;
  }
}
