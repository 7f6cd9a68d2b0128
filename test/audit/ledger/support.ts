/**
 * Helpers for the ledger tests: temp directories, a read-only look at a ledger
 * file, and a small traffic mix through a real proxy.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { proxyGet } from '../../helpers/harness.js';

/** A fresh temp directory. */
export function tempDir(prefix = 'robots-ledger-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Opens a ledger file read-only (a second connection, as an auditor would). */
export function openReadOnly(path: string): Database.Database {
  return new Database(path, { readonly: true, fileMustExist: true });
}

/** Summed rollup figures per (token, origin, verdict, reason), as `token origin verdict reason` -> requests. */
export function requestsByKey(db: Database.Database): Map<string, number> {
  const rows = db.prepare('SELECT token, origin, verdict, reason, sum(requests) AS n FROM rollups GROUP BY token, origin, verdict, reason').all() as Array<{
    token: string;
    origin: string;
    verdict: string;
    reason: string;
    n: number;
  }>;
  return new Map(rows.map((r) => [`${r.token} ${r.origin} ${r.verdict} ${r.reason}`, r.n]));
}

/** User-Agents of the bots the ledger tests send. */
export const UA = {
  gpt: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
  example: 'ExampleBot/1.0 (+https://example.com/bot)',
  ccbot: 'CCBot/2.0 (https://commoncrawl.org/faq/)',
} as const;

/** Sends `count` GETs of `url` with `userAgent` through the proxy, one after the other; returns the statuses. */
export async function sendMany(proxyPort: number, url: string, userAgent: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await proxyGet(proxyPort, url, { headers: { 'user-agent': userAgent } })).status);
  return statuses;
}

/** Requests summed over every rollup of a ledger file (read with a second, read-only connection). */
export function totalRequests(path: string): number {
  const db = openReadOnly(path);
  try {
    return (db.prepare('SELECT sum(requests) AS n FROM rollups').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Requests per key and the number of refusal and robots.txt version rows of a ledger file (read-only). */
export function ledgerCounts(path: string): { byKey: Map<string, number>; refusals: number; robotsVersions: number } {
  const db = openReadOnly(path);
  try {
    const count = (table: string): number => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { byKey: requestsByKey(db), refusals: count('refusals'), robotsVersions: count('robots_versions') };
  } finally {
    db.close();
  }
}
