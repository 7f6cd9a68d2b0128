/**
 * Rebuilds ledger aggregates from JSON access-log files (the proxy's stdout,
 * one JSON object per line; several files from several instances add up), so
 * a fleet whose logs are gathered centrally gets one report. Access lines
 * (`msg: "request"`) become rollups, refusals and bot samples exactly as the
 * live ledger records them; `robots-fetch` lines become robots.txt versions
 * (content hash, status, size and warnings; bodies and crawl-delays are not
 * in the log). Other lines are skipped; a line that is not JSON, or an access
 * line without the fields the ledger needs, is counted and skipped.
 * Extension, not in RFC 9309.
 */
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { AccessEntry } from '../access-entry.js';
import { ACCESS_LOG_MESSAGE } from '../access-log.js';
import { Ledger } from '../ledger/ledger.js';
import type { RobotsFetchRecord } from '../ledger/robots-history.js';
import { DECISION_REASONS, type Decision, type DecisionReason, type SnapshotInfo } from '../../policy/decision.js';
import { systemClock } from '../../clock.js';
import { LedgerError } from '../../errors.js';
import { LedgerReader } from './ledger-reader.js';
import { boundedLines } from '../../bounded-lines.js';

/** Longest log line read, characters; a longer one is counted as bad (access lines are capped far below). */
const MAX_LINE_CHARS = 1_048_576;
/** Access lines aggregated between two writes to the temporary ledger. */
const LINES_PER_FLUSH = 50_000;

/** What reading the logs found. */
export interface LogImportCounts {
  files: number;
  lines: number;
  accessLines: number;
  robotsFetches: number;
  /** Lines that are not JSON objects, or access lines missing what the ledger needs. */
  badLines: number;
  /** `file:line` of the first few bad lines. */
  firstBad: string[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const numOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const REASONS: ReadonlySet<string> = new Set(DECISION_REASONS);

/**
 * The access entry of one access log line, with what the ledger reads; undefined when the line
 * lacks it (a time, a decision with verdict, reason and origin, a status). Pure; never throws.
 */
export function entryFromAccessLine(line: Json): AccessEntry | undefined {
  const startedAtMs = Date.parse(str(line['startedAt']) ?? '');
  const d = line['decision'];
  const status = numOrNull(line['status']);
  if (!Number.isFinite(startedAtMs) || !isObject(d) || status === null) return undefined;
  const verdict = d['verdict'];
  const reason = d['reason'];
  const origin = str(d['origin']);
  if ((verdict !== 'allow' && verdict !== 'deny') || typeof reason !== 'string' || !REASONS.has(reason) || origin === null) return undefined;
  const rule = isObject(d['rule']) && typeof d['rule']['pattern'] === 'string' && typeof d['rule']['line'] === 'number'
    ? { kind: d['rule']['kind'] === 'allow' ? ('allow' as const) : ('disallow' as const), pattern: d['rule']['pattern'], line: d['rule']['line'] }
    : null;
  const snapshotUrl = isObject(d['snapshot']) ? str(d['snapshot']['url']) : null;
  const delayMs = isObject(d['pacing']) ? numOrNull(d['pacing']['delayMs']) : null;
  const policyRule = isObject(d['policy']) ? str(d['policy']['rule']) : null;
  const policyAction = isObject(d['policy']) ? d['policy']['action'] : undefined;
  const wouldDeny = d['wouldDeny'];
  const tokens = Array.isArray(line['productTokens']) ? line['productTokens'].filter((t): t is string => typeof t === 'string') : [];
  const decision: Decision = {
    verdict,
    reason: reason as DecisionReason,
    origin,
    path: str(d['path']) ?? '',
    productToken: str(d['productToken']),
    agentTokens: tokens,
    group: str(d['group']),
    rule,
    crawlDelaySeconds: numOrNull(d['crawlDelaySeconds']),
    snapshot: snapshotUrl === null ? null : ({ url: snapshotUrl } as SnapshotInfo),
    // The ledger reads the line's top-level `identity`; the decision's identity facts are not needed.
    identity: null,
    ...(delayMs === null ? {} : { pacing: { delayMs, waitedMs: 0 } }),
    ...(policyRule !== null && (policyAction === 'deny' || policyAction === 'allow' || policyAction === 'report' || policyAction === 'pace')
      ? { policy: { rule: policyRule, action: policyAction } }
      : {}),
    ...(typeof wouldDeny === 'string' && REASONS.has(wouldDeny) ? { wouldDeny: wouldDeny as DecisionReason } : {}),
  };
  const requestId = str(line['requestId']);
  return {
    ...(requestId === null ? {} : { requestId }),
    startedAtMs,
    client: { address: str(line['clientAddress']) ?? '', port: numOrNull(line['clientPort']) ?? 0 },
    request: { method: str(line['method']) ?? '', url: str(line['url']) ?? '', userAgent: str(line['userAgent']), via: 'http' },
    identity: str(line['identity']),
    decision,
    productTokens: tokens,
    timings: { queueWaitMs: numOrNull(line['queueWaitMs']), upstreamMs: numOrNull(line['upstreamMs']), durationMs: numOrNull(line['durationMs']) ?? 0 },
    response: {
      status,
      upstreamStatus: numOrNull(line['upstreamStatus']),
      bytesSent: numOrNull(line['bytesSent']) ?? 0,
      bytesReceived: numOrNull(line['bytesReceived']) ?? 0,
      clientAborted: line['clientAborted'] === true,
    },
    error: str(line['error']),
  } as AccessEntry;
}

/** The robots.txt fetch of one `robots-fetch` log line; undefined when it lacks its snapshot info. Pure. */
export function fetchFromRobotsLine(line: Json): RobotsFetchRecord | undefined {
  const origin = str(line['origin']);
  const info = line['robots'];
  if (origin === null || !isObject(info)) return undefined;
  const state = info['state'];
  const fetchedAtMs = numOrNull(info['fetchedAtMs']);
  if ((state !== 'ok' && state !== 'unavailable' && state !== 'unreachable') || fetchedAtMs === null) return undefined;
  const warnings = Array.isArray(line['warnings']) ? line['warnings'].filter(isObject) : [];
  const snapshotInfo: SnapshotInfo = {
    url: str(info['url']) ?? `${origin}/robots.txt`,
    state,
    status: numOrNull(info['status']) ?? undefined,
    error: str(info['error']) ?? undefined,
    fetchedAtMs,
    expiresAtMs: numOrNull(info['expiresAtMs']) ?? fetchedAtMs,
    bytes: numOrNull(info['bytes']) ?? 0,
    truncated: info['truncated'] === true,
  };
  const sha256 = str(line['sha256']);
  return {
    origin,
    // Only what the ledger reads of the parsed file: its warnings (the log has no groups).
    snapshot: { info: snapshotInfo, robots: state === 'ok' ? ({ warnings, groupsByToken: new Map() } as never) : null },
    body: null,
    ...(sha256 === null ? {} : { sha256 }),
  };
}

/** Reads the lines of one source (a file, or `-` for standard input) into the ledger. */
async function importSource(name: string, input: Readable, ledger: Ledger, counts: LogImportCounts, fetches: RobotsFetchRecord[]): Promise<void> {
  // A line past the bound is skipped as it arrives (readline held it whole: a RangeError past 512 Mi characters).
  const lines = boundedLines(input, MAX_LINE_CHARS);
  let lineNumber = 0;
  let sinceFlush = 0;
  const bad = (): void => {
    counts.badLines++;
    if (counts.firstBad.length < 5) counts.firstBad.push(`${name}:${lineNumber}`);
  };
  for await (const text of lines) {
    lineNumber++;
    counts.lines++;
    if (typeof text !== 'string') {
      bad();
      continue;
    }
    if (text.trim() === '') continue;
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      bad();
      continue;
    }
    if (!isObject(record)) {
      bad();
      continue;
    }
    if (record['msg'] === ACCESS_LOG_MESSAGE && 'decision' in record) {
      const entry = entryFromAccessLine(record);
      if (entry === undefined) {
        bad();
        continue;
      }
      counts.accessLines++;
      ledger.observe(entry);
      if (++sinceFlush >= LINES_PER_FLUSH) {
        sinceFlush = 0;
        if (!ledger.flush()) throw new LedgerError('ERR_LEDGER_OPEN', 'cannot write the temporary ledger the logs are read into');
      }
    } else if (record['event'] === 'robots-fetch') {
      const fetched = fetchFromRobotsLine(record);
      if (fetched === undefined) bad();
      else {
        counts.robotsFetches++;
        fetches.push(fetched);
      }
    }
  }
}

/**
 * Reads access-log files into a temporary ledger file and opens it for reading. Robots.txt
 * fetches of every file are recorded in time order, so the history of an origin seen by several
 * instances interleaves correctly.
 * @param files paths, or `-` for standard input.
 * @returns the reader (closing it deletes the temporary file), a one-line summary and the counts.
 * @throws file errors (ENOENT...) as Node raises them; {@link LedgerError} when the temporary ledger fails.
 */
export async function readerFromLogs(files: string[]): Promise<{ reader: LedgerReader; summary: string; counts: LogImportCounts }> {
  const dir = mkdtempSync(join(tmpdir(), 'robots-proxy-report-'));
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
    const path = join(dir, 'ledger.sqlite');
    const ledger = new Ledger({ path, clock: systemClock, logger, flushIntervalMs: 0, pruneIntervalMs: 0, maxKeysPerMinute: 10_000_000 });
    const counts: LogImportCounts = { files: 0, lines: 0, accessLines: 0, robotsFetches: 0, badLines: 0, firstBad: [] };
    const fetches: RobotsFetchRecord[] = [];
    for (const file of files) {
      counts.files++;
      const input = file === '-' ? process.stdin : createReadStream(file, { encoding: 'utf8' });
      await importSource(file === '-' ? '(stdin)' : file, input, ledger, counts, fetches);
    }
    fetches.sort((a, b) => a.snapshot.info.fetchedAtMs - b.snapshot.info.fetchedAtMs);
    for (const fetched of fetches) ledger.recordRobotsFetch(fetched);
    const isWritten = ledger.flush();
    ledger.close();
    if (!isWritten) throw new LedgerError('ERR_LEDGER_OPEN', 'cannot write the temporary ledger the logs are read into');
    const opened = LedgerReader.open(path);
    const reader = Object.assign(opened, {
      close: () => {
        LedgerReader.prototype.close.call(opened);
        remove();
      },
    });
    const bad = counts.badLines === 0 ? '' : `, ${counts.badLines} unreadable (first: ${counts.firstBad.join(', ')})`;
    return { reader, counts, summary: `read ${counts.accessLines} access lines and ${counts.robotsFetches} robots.txt fetches from ${counts.files} file(s), ${counts.lines} lines${bad}` };
  } catch (error) {
    remove();
    throw error;
  }
}
