/**
 * What the ledger keeps of each robots.txt fetch: a version (state, status,
 * content hash, size, parse warnings, crawl-delays) per change, and the body
 * of the latest few. A fetch equal to the origin's latest version only moves
 * that version's last-fetched time and count, so the table holds the history
 * of changes (A, B, A is three rows). RFC 9309 §2.3 (one robots.txt per origin).
 */
import { createHash } from 'node:crypto';
import type { RobotsSnapshot } from '../../policy/snapshot.js';
import type { ParseWarning } from '../../robots/types.js';

/** Parse warnings stored per version; a hostile file may raise thousands. */
export const MAX_STORED_WARNINGS = 100;
/** Crawl-delays stored per version (per product token); the rest are counted. */
export const MAX_STORED_CRAWL_DELAYS = 100;

/** One robots.txt fetch as handed to the ledger (held in memory until the next write). */
export interface RobotsFetchRecord {
  origin: string;
  snapshot: RobotsSnapshot;
  /** The body bytes that were parsed (at most `robots.maxBytes`), or null when there was none (4xx, unreachable). */
  body: Buffer | null;
  /** The hex SHA-256 of `body` when the caller has it (or a log line gives it without the body); otherwise computed from `body`. */
  sha256?: string;
}

/** A version row as written (see the `robots_versions` table). */
export interface RobotsVersionRow {
  origin: string;
  url: string;
  state: string;
  status: number | null;
  error: string | null;
  /** Hex SHA-256 of the parsed body; `''` when there was no body. */
  sha256: string;
  bytes: number;
  truncated: number;
  /** JSON array of {@link ParseWarning} (at most {@link MAX_STORED_WARNINGS}). */
  warnings: string;
  /** JSON object: lower-cased product token (or `*`) -> crawl-delay seconds. */
  crawlDelays: string;
  fetchedAtMs: number;
  /** The body to keep (cut to the byte bound), or null. */
  body: Buffer | null;
  /** 1 when `body` was cut to the byte bound. */
  bodyCut: number;
}

/** Hex SHA-256 of `body`, `''` for none. */
export function contentHashOf(body: Buffer | null): string {
  return body === null ? '' : createHash('sha256').update(body).digest('hex');
}

/** The crawl-delays a parsed file gives, per lower-cased product token; bounded. */
function crawlDelaysOf(snapshot: RobotsSnapshot): Record<string, number> {
  const delays: Record<string, number> = {};
  let count = 0;
  for (const [token, merged] of snapshot.robots?.groupsByToken ?? []) {
    if (merged.crawlDelaySeconds === undefined) continue;
    if (count++ >= MAX_STORED_CRAWL_DELAYS) break;
    // Own properties only: a token spelt `__proto__` stays data.
    Object.defineProperty(delays, token, { value: merged.crawlDelaySeconds, enumerable: true });
  }
  return delays;
}

/**
 * The version row of one fetch. `maxBodyBytes` bounds the body kept (0 keeps none).
 * Hashes the body (SHA-256): call it off the request path. Never throws.
 */
export function versionRowOf(record: RobotsFetchRecord, maxBodyBytes: number): RobotsVersionRow {
  const { info, robots } = record.snapshot;
  const warnings: readonly ParseWarning[] = robots?.warnings ?? [];
  const body = record.body;
  const kept = body === null || maxBodyBytes === 0 ? null : body.length > maxBodyBytes ? body.subarray(0, maxBodyBytes) : body;
  return {
    origin: record.origin,
    url: info.url,
    state: info.state,
    status: info.status ?? null,
    error: info.error ?? null,
    sha256: record.sha256 ?? contentHashOf(body),
    bytes: info.bytes,
    truncated: info.truncated ? 1 : 0,
    warnings: JSON.stringify(warnings.slice(0, MAX_STORED_WARNINGS)),
    crawlDelays: JSON.stringify(crawlDelaysOf(record.snapshot)),
    fetchedAtMs: info.fetchedAtMs,
    body: kept === null ? null : Buffer.from(kept),
    bodyCut: body !== null && kept !== null && kept.length < body.length ? 1 : 0,
  };
}

/** True when two fetches are the same version: same state, status, error and content. */
export function isSameVersion(
  a: Pick<RobotsVersionRow, 'state' | 'status' | 'error' | 'sha256'>,
  b: Pick<RobotsVersionRow, 'state' | 'status' | 'error' | 'sha256'>,
): boolean {
  return a.state === b.state && a.status === b.status && a.error === b.error && a.sha256 === b.sha256;
}
