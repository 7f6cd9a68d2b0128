/**
 * Read side of the ledger: the figures the report shows, straight from SQL
 * over the rollups, refusals and robots.txt versions, for a time range and
 * filters. A read-only connection (WAL: it never blocks the writer).
 * Extension, not in RFC 9309.
 */
import { existsSync } from 'node:fs';
import Database, { type Database as Db } from 'better-sqlite3';
import { LedgerError } from '../../errors.js';
import { MINUTE_MS, WAIT_BUCKET_BOUNDS_MS, type RefusalRecord } from '../ledger/rollup.js';
import type { DecisionReason } from '../../policy/decision.js';
import { schemaVersionOf, WAIT_COLUMNS } from '../ledger/schema.js';
import type { ReportQuery } from './report-query.js';

/** Figures summed over rollup rows (one key, one origin, one bot or one time bucket). */
export interface Totals {
  requests: number;
  allowed: number;
  refused: number;
  /** Refused by a robots.txt rule (`rule-disallow`). */
  refusedByRule: number;
  /** Refused because robots.txt was unreachable (`robots-unreachable`, RFC 9309 §2.3.1.4). */
  robotsUnreachable: number;
  /** Refused by the queue (`queue-full`: 429). */
  queueFull: number;
  refusedOther: number;
  /** Requests that went through the per-origin queue (granted a start slot). */
  paced: number;
  waitSumMs: number;
  waitMaxMs: number;
  /** Queue-wait histogram counts (see `WAIT_BUCKET_BOUNDS_MS`). */
  waitBuckets: number[];
  bytesIn: number;
  bytesOut: number;
  /** Upstream 429 and 503 answers (each paused the origin). */
  backoffs: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
  sError: number;
  /** Largest pacing delay applied, ms. */
  delayMaxMs: number;
}

/**
 * The comparison of each filter: a product token in any case (RFC 9309 §2.2.1: tokens are
 * case-insensitive, and the ledger keeps the spelling the User-Agent used, `GPTBot`, so
 * `--token gptbot` found nothing); identities and origins exactly (origins are normalised by the
 * query, report-query.ts). Tokens are ASCII, which SQLite's NOCASE folds.
 */
const FILTER_CLAUSES = { identity: 'identity = ?', token: 'token = ? COLLATE NOCASE', origin: 'origin = ?' } as const;

/** One latest-known robots.txt version of an origin (or one in a history). */
export interface RobotsVersion {
  id: number;
  origin: string;
  url: string;
  state: string;
  status: number | null;
  error: string | null;
  sha256: string;
  bytes: number;
  truncated: boolean;
  warnings: Array<{ line: number; code: string; message: string }>;
  crawlDelays: Record<string, number>;
  firstFetchedMs: number;
  lastFetchedMs: number;
  fetches: number;
  hasBody: boolean;
  bodyCut: boolean;
  /** True when the origin had an earlier version: this one is a change (of content, status or state). */
  hasPrevious: boolean;
}

/** One refusal row, as the ledger wrote it. */
export type RefusalRow = RefusalRecord;

/** A rule and how many refusals it caused. */
export interface RuleCount {
  identity: string;
  token: string;
  origin: string;
  robotsUrl: string | null;
  ruleLine: number | null;
  rulePattern: string | null;
  reason: string;
  /** The operator policy rule that refused it (or matched a `report-only` one), or null. */
  policyRule: string | null;
  /** For `report-only`: the reason it would have been refused, or null. */
  wouldDeny: string | null;
  refusals: number;
}

// Refusals are counted by verdict first: a request forwarded in report mode keeps its robots.txt
// reason with verdict allow (issue 8), and was not refused.
const SUM_COLUMNS = `
  sum(requests) AS requests,
  sum(CASE WHEN verdict = 'allow' THEN requests ELSE 0 END) AS allowed,
  sum(CASE WHEN verdict = 'deny' THEN requests ELSE 0 END) AS refused,
  sum(CASE WHEN verdict = 'deny' AND reason = 'rule-disallow' THEN requests ELSE 0 END) AS refusedByRule,
  sum(CASE WHEN verdict = 'deny' AND reason = 'robots-unreachable' THEN requests ELSE 0 END) AS robotsUnreachable,
  sum(CASE WHEN verdict = 'deny' AND reason = 'queue-full' THEN requests ELSE 0 END) AS queueFull,
  sum(queued) AS paced, sum(wait_sum_ms) AS waitSumMs, max(wait_max_ms) AS waitMaxMs,
  ${WAIT_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(', ')},
  sum(bytes_in) AS bytesIn, sum(bytes_out) AS bytesOut, sum(backoffs) AS backoffs,
  sum(s2xx) AS s2xx, sum(s3xx) AS s3xx, sum(s4xx) AS s4xx, sum(s5xx) AS s5xx, sum(s_error) AS sError,
  max(delay_max_ms) AS delayMaxMs`;

type Row = Record<string, unknown>;

function num(value: unknown): number {
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : 0;
}

/** Totals from a row of {@link SUM_COLUMNS}. */
function totalsOf(row: Row | undefined): Totals {
  const r = row ?? {};
  const refused = num(r['refused']);
  const refusedByRule = num(r['refusedByRule']);
  const robotsUnreachable = num(r['robotsUnreachable']);
  const queueFull = num(r['queueFull']);
  return {
    requests: num(r['requests']),
    allowed: num(r['allowed']),
    refused,
    refusedByRule,
    robotsUnreachable,
    queueFull,
    refusedOther: refused - refusedByRule - robotsUnreachable - queueFull,
    paced: num(r['paced']),
    waitSumMs: num(r['waitSumMs']),
    waitMaxMs: num(r['waitMaxMs']),
    waitBuckets: WAIT_COLUMNS.map((c) => num(r[c])),
    bytesIn: num(r['bytesIn']),
    bytesOut: num(r['bytesOut']),
    backoffs: num(r['backoffs']),
    s2xx: num(r['s2xx']),
    s3xx: num(r['s3xx']),
    s4xx: num(r['s4xx']),
    s5xx: num(r['s5xx']),
    sError: num(r['sError']),
    delayMaxMs: num(r['delayMaxMs']),
  };
}

/**
 * A quantile of the queue wait, ms, estimated from the coarse histogram: linear within the
 * bucket that holds it (the last bucket runs from its bound to `maxMs`). Null when nothing waited.
 */
export function waitQuantileMs(buckets: readonly number[], maxMs: number, q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let before = 0;
  for (let i = 0; i < buckets.length; i++) {
    const count = buckets[i] as number;
    if (count > 0 && before + count >= rank) {
      const lower = i === 0 ? 0 : (WAIT_BUCKET_BOUNDS_MS[i - 1] as number);
      const upper = Math.min(WAIT_BUCKET_BOUNDS_MS[i] ?? maxMs, Math.max(maxMs, lower));
      return Math.round(lower + ((upper - lower) * (rank - before)) / count);
    }
    before += count;
  }
  return maxMs;
}

function parseJson<T>(text: unknown, fallback: T): T {
  try {
    return typeof text === 'string' ? (JSON.parse(text) as T) : fallback;
  } catch {
    return fallback;
  }
}

function versionOf(r: Row): RobotsVersion {
  return {
    id: num(r['id']),
    origin: String(r['origin']),
    url: String(r['url']),
    state: String(r['state']),
    status: r['status'] === null ? null : num(r['status']),
    error: (r['error'] as string | null) ?? null,
    sha256: String(r['sha256']),
    bytes: num(r['bytes']),
    truncated: num(r['truncated']) === 1,
    warnings: parseJson(r['warnings'], []),
    crawlDelays: parseJson(r['crawl_delays'], {}),
    firstFetchedMs: num(r['first_fetched_ms']),
    lastFetchedMs: num(r['last_fetched_ms']),
    fetches: num(r['fetches']),
    hasBody: num(r['has_body']) === 1,
    bodyCut: num(r['body_cut']) === 1,
    hasPrevious: num(r['has_previous']) === 1,
  };
}

const VERSION_COLUMNS = `id, origin, url, state, status, error, sha256, bytes, truncated, warnings, crawl_delays, first_fetched_ms, last_fetched_ms, fetches,
  body IS NOT NULL AS has_body, body_cut, EXISTS (SELECT 1 FROM robots_versions p WHERE p.origin = robots_versions.origin AND p.id < robots_versions.id) AS has_previous`;

/**
 * The error of a ledger file SQLite could not read (opened, then a query failed: damaged pages,
 * another process's lock), naming the file and what the code means; other errors (bugs) as they are.
 * @returns a {@link LedgerError} `ERR_LEDGER_OPEN` for an SQLite error, else `error` itself.
 */
export function unreadableLedgerError(path: string, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error;
  const hint =
    code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB'
      ? ' (the file is damaged: the proxy, if running, keeps serving; move the file away and it starts a new one, or recover it with `sqlite3 FILE .recover`)'
      : code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')
        ? ' (another process holds a lock on it; try again)'
        : '';
  return new LedgerError('ERR_LEDGER_OPEN', `cannot read the ledger ${path}: ${(error as Error).message}${hint}`, { cause: error });
}

/**
 * Queries over one ledger file. Open with {@link LedgerReader.open}; close when done.
 * Every method takes a {@link ReportQuery} (range, filters, row limit).
 */
export class LedgerReader {
  readonly #db: Db;

  private constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Opens `path` read-only.
   * @throws {LedgerError} `ERR_LEDGER_OPEN` when the file is missing, not a ledger, or unreadable;
   *   `ERR_LEDGER_SCHEMA` when it is from a newer version.
   */
  static open(path: string): LedgerReader {
    let db: Db;
    try {
      db = new Database(path, { readonly: true, fileMustExist: true, timeout: 1000 });
    } catch (error) {
      const hint = existsSync(path) ? '' : ' (the proxy creates it when it starts with the ledger on: run `robots-proxy serve` with the same config, or name the file with --ledger)';
      throw new LedgerError('ERR_LEDGER_OPEN', `cannot open the ledger ${path}: ${(error as Error).message}${hint}`, { cause: error });
    }
    try {
      const version = schemaVersionOf(db);
      if (version === 0) throw new LedgerError('ERR_LEDGER_OPEN', `${path} is not a robots-proxy ledger (no schema)`);
      return LedgerReader.#at(db, version);
    } catch (error) {
      db.close();
      if (error instanceof LedgerError) throw error;
      throw unreadableLedgerError(path, error);
    }
  }

  /** Wraps an open connection (an in-memory ledger rebuilt from logs, for one). */
  static of(db: Db): LedgerReader {
    return LedgerReader.#at(db, schemaVersionOf(db));
  }

  static #at(db: Db, version: number): LedgerReader {
    if (version < 1) throw new LedgerError('ERR_LEDGER_OPEN', 'not a robots-proxy ledger (no schema)');
    return new LedgerReader(db);
  }

  close(): void {
    this.#db.close();
  }

  /** The WHERE clause and parameters of the rollups for `query`. */
  #rollupWhere(q: ReportQuery): { where: string; params: unknown[] } {
    const parts = ['minute >= ?', 'minute < ?'];
    const params: unknown[] = [Math.floor(q.fromMs / MINUTE_MS), Math.ceil(q.toMs / MINUTE_MS)];
    for (const key of ['identity', 'token', 'origin'] as const) {
      if (q[key] !== undefined) {
        parts.push(FILTER_CLAUSES[key]);
        params.push(q[key]);
      }
    }
    return { where: parts.join(' AND '), params };
  }

  /** Totals over the range and filters. */
  totals(q: ReportQuery): Totals {
    const { where, params } = this.#rollupWhere(q);
    return totalsOf(this.#db.prepare(`SELECT ${SUM_COLUMNS} FROM rollups WHERE ${where}`).get(...params) as Row);
  }

  /** Requests per verdict and reason, most first. */
  reasons(q: ReportQuery): Array<{ verdict: string; reason: string; requests: number }> {
    const { where, params } = this.#rollupWhere(q);
    return this.#db.prepare(`SELECT verdict, reason, sum(requests) AS requests FROM rollups WHERE ${where} GROUP BY verdict, reason ORDER BY requests DESC, verdict, reason`).all(...params) as Array<{
      verdict: string;
      reason: string;
      requests: number;
    }>;
  }

  /** Totals per time bucket of `bucketMinutes` minutes (only buckets with traffic), oldest first. */
  trend(q: ReportQuery, bucketMinutes: number): Array<{ bucketMinute: number; totals: Totals }> {
    const { where, params } = this.#rollupWhere(q);
    const rows = this.#db.prepare(`SELECT (minute / ${bucketMinutes}) * ${bucketMinutes} AS bucket, ${SUM_COLUMNS} FROM rollups WHERE ${where} GROUP BY bucket ORDER BY bucket`).all(...params) as Row[];
    return rows.map((r) => ({ bucketMinute: num(r['bucket']), totals: totalsOf(r) }));
  }

  /** Totals per bot (identity, token), most requests first. */
  bots(q: ReportQuery): Array<{ identity: string; token: string; origins: number; totals: Totals }> {
    const { where, params } = this.#rollupWhere(q);
    const rows = this.#db.prepare(`SELECT identity, token, count(DISTINCT origin) AS origins, ${SUM_COLUMNS} FROM rollups WHERE ${where} GROUP BY identity, token ORDER BY requests DESC, identity, token LIMIT ?`).all(...params, q.limit) as Row[];
    return rows.map((r) => ({ identity: String(r['identity']), token: String(r['token']), origins: num(r['origins']), totals: totalsOf(r) }));
  }

  /**
   * Per bot, the minute and origin where it offered the most requests relative to what the
   * crawl-delay in force allowed (60 000 / delay ms per minute): how hard it pushed. Offered:
   * the requests that reached the queue (allowed, or refused by it with `queue-full`).
   */
  pressure(q: ReportQuery): Array<{ identity: string; token: string; origin: string; minute: number; offered: number; delayMs: number }> {
    const { where, params } = this.#rollupWhere(q);
    const rows = this.#db
      .prepare(
        `SELECT identity, token, origin, minute, sum(CASE WHEN verdict = 'allow' OR reason = 'queue-full' THEN requests ELSE 0 END) AS offered,
           max(delay_max_ms) AS delayMs FROM rollups WHERE ${where}
         GROUP BY identity, token, origin, minute HAVING delayMs > 0`,
      )
      .all(...params) as Array<{ identity: string; token: string; origin: string; minute: number; offered: number; delayMs: number }>;
    const best = new Map<string, (typeof rows)[number]>();
    for (const r of rows) {
      const key = `${r.identity}\n${r.token}`;
      const held = best.get(key);
      if (held === undefined || r.offered * r.delayMs > held.offered * held.delayMs) best.set(key, r);
    }
    return [...best.values()];
  }

  /** Totals per origin, most requests first, with the number of distinct bots. */
  origins(q: ReportQuery): Array<{ origin: string; bots: number; botNames: string[]; totals: Totals }> {
    const { where, params } = this.#rollupWhere(q);
    const botName = "CASE WHEN identity = '' THEN token ELSE identity || ' / ' || token END";
    const rows = this.#db
      .prepare(
        `SELECT origin, count(DISTINCT identity || char(10) || token) AS bots, group_concat(DISTINCT ${botName}) AS botNames, ${SUM_COLUMNS}
         FROM rollups WHERE ${where} GROUP BY origin ORDER BY requests DESC, origin LIMIT ?`,
      )
      .all(...params, q.limit) as Row[];
    // group_concat joins with ','; a token never holds one (RFC 9309 §2.2.1 tokens are letters, '-' and '_'), an identity may: fine for display.
    const namesOf = (value: unknown): string[] => (typeof value === 'string' && value !== '' ? value.split(',').sort() : []);
    return rows.map((r) => ({ origin: String(r['origin']), bots: num(r['bots']), botNames: namesOf(r['botNames']), totals: totalsOf(r) }));
  }

  /** Distinct identities, tokens and origins seen in the range (for the filters), at most `limit` each. */
  filterValues(q: ReportQuery): { identities: string[]; tokens: string[]; origins: string[] } {
    const range = { ...q, identity: undefined, token: undefined, origin: undefined } as ReportQuery;
    const { where, params } = this.#rollupWhere(range);
    const distinct = (column: string): string[] =>
      (this.#db.prepare(`SELECT ${column} AS v, sum(requests) AS n FROM rollups WHERE ${where} GROUP BY ${column} ORDER BY n DESC LIMIT ?`).all(...params, q.limit) as Array<{ v: string }>).map((r) => r.v);
    return { identities: distinct('identity'), tokens: distinct('token'), origins: distinct('origin') };
  }

  /** The WHERE clause and parameters of the refusals for `query`. */
  #refusalWhere(q: ReportQuery): { where: string; params: unknown[] } {
    const parts = ['at_ms >= ?', 'at_ms < ?'];
    const params: unknown[] = [q.fromMs, q.toMs];
    for (const key of ['identity', 'token', 'origin'] as const) {
      if (q[key] !== undefined) {
        parts.push(FILTER_CLAUSES[key]);
        params.push(q[key]);
      }
    }
    return { where: parts.join(' AND '), params };
  }

  /** The latest refusals, newest first, at most `limit`. */
  refusals(q: ReportQuery): RefusalRow[] {
    const { where, params } = this.#refusalWhere(q);
    const rows = this.#db.prepare(`SELECT * FROM refusals WHERE ${where} ORDER BY at_ms DESC, id DESC LIMIT ?`).all(...params, q.limit) as Row[];
    return rows.map((r) => ({
      atMs: num(r['at_ms']),
      requestId: (r['request_id'] as string | null) ?? null,
      identity: String(r['identity']),
      token: String(r['token']),
      origin: String(r['origin']),
      url: String(r['url']),
      reason: String(r['reason']) as DecisionReason,
      status: num(r['status']),
      robotsUrl: (r['robots_url'] as string | null) ?? null,
      group: (r['group_name'] as string | null) ?? null,
      ruleKind: (r['rule_kind'] as string | null) ?? null,
      rulePattern: (r['rule_pattern'] as string | null) ?? null,
      ruleLine: r['rule_line'] === null ? null : num(r['rule_line']),
      policyRule: (r['policy_rule'] as string | null) ?? null,
      wouldDeny: ((r['would_deny'] as string | null) ?? null) as DecisionReason | null,
    }));
  }

  /** Refusals counted per (bot, origin, robots.txt rule and line, reason, policy rule, would-deny reason), most first. */
  ruleCounts(q: ReportQuery): RuleCount[] {
    const { where, params } = this.#refusalWhere(q);
    return this.#db
      .prepare(
        `SELECT identity, token, origin, robots_url AS robotsUrl, rule_line AS ruleLine, rule_pattern AS rulePattern, reason,
           policy_rule AS policyRule, would_deny AS wouldDeny, count(*) AS refusals
         FROM refusals WHERE ${where} GROUP BY identity, token, origin, robots_url, rule_line, rule_pattern, reason, policy_rule, would_deny
         ORDER BY refusals DESC, token, origin LIMIT ?`,
      )
      .all(...params, q.limit) as RuleCount[];
  }

  /** The oldest refusal kept, ms since the epoch (refusals have a shorter retention), or null. */
  oldestRefusalMs(): number | null {
    const row = this.#db.prepare('SELECT min(at_ms) AS t FROM refusals').get() as { t: number | null };
    return row.t;
  }

  /** The latest robots.txt version of each origin (filtered by `origin`), as of the end of the range. */
  latestVersions(q: ReportQuery): RobotsVersion[] {
    const originFilter = q.origin === undefined ? '' : 'AND origin = ?';
    const params: unknown[] = [q.toMs, ...(q.origin === undefined ? [] : [q.origin])];
    const rows = this.#db
      .prepare(`SELECT ${VERSION_COLUMNS} FROM robots_versions WHERE id IN (SELECT max(id) FROM robots_versions WHERE first_fetched_ms < ? ${originFilter} GROUP BY origin) ORDER BY origin LIMIT ?`)
      .all(...params, q.limit) as Row[];
    return rows.map(versionOf);
  }

  /** robots.txt versions seen in the range (fetched within it), newest first. */
  versions(q: ReportQuery): RobotsVersion[] {
    const originFilter = q.origin === undefined ? '' : 'AND origin = ?';
    const params: unknown[] = [q.toMs, q.fromMs, ...(q.origin === undefined ? [] : [q.origin])];
    const rows = this.#db
      .prepare(`SELECT ${VERSION_COLUMNS} FROM robots_versions WHERE first_fetched_ms < ? AND last_fetched_ms >= ? ${originFilter} ORDER BY id DESC LIMIT ?`)
      .all(...params, q.limit) as Row[];
    return rows.map(versionOf);
  }

  /** One version with its body (null when not kept), and the previous version of its origin. */
  versionWithPrevious(id: number): { version: RobotsVersion; body: Buffer | null; previous: RobotsVersion | null; previousBody: Buffer | null } | undefined {
    const row = this.#db.prepare(`SELECT ${VERSION_COLUMNS}, body FROM robots_versions WHERE id = ?`).get(id) as Row | undefined;
    if (row === undefined) return undefined;
    const prev = this.#db.prepare(`SELECT ${VERSION_COLUMNS}, body FROM robots_versions WHERE origin = ? AND id < ? ORDER BY id DESC LIMIT 1`).get(row['origin'], id) as Row | undefined;
    return {
      version: versionOf(row),
      body: (row['body'] as Buffer | null) ?? null,
      previous: prev === undefined ? null : versionOf(prev),
      previousBody: (prev?.['body'] as Buffer | null | undefined) ?? null,
    };
  }

  /** The sample User-Agent of each token (for operator and category). */
  userAgents(tokens: readonly string[]): Map<string, string> {
    const found = new Map<string, string>();
    const statement = this.#db.prepare('SELECT user_agent FROM bots WHERE token = ?');
    for (const token of tokens) {
      const row = statement.get(token) as { user_agent: string } | undefined;
      if (row !== undefined) found.set(token, row.user_agent);
    }
    return found;
  }
}
