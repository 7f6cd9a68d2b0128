/**
 * The access log: one JSON line per request, written when the request ends,
 * whatever its outcome. The {@link Decision} is nested, unchanged but for
 * length caps, under `decision`; the request and response facts are top-level
 * keys. Field names are the constants below, so dashboards and tests share
 * them. Extension, not in RFC 9309.
 */
import type { Decision, PacingFacts, SnapshotInfo } from '../policy/decision.js';
import { createIsoFormatter } from './iso-time.js';
import type { AccessEntry } from './access-entry.js';

/** Top-level field names of an access log line (besides pino's `level`, `time`, `pid`, `hostname`, `msg`). */
export const ACCESS_LOG_FIELD = {
  /** The proxy's request id, as sent to the client (`X-Robots-Proxy-Request-Id`). */
  requestId: 'requestId',
  /** The client's own `X-Request-Id`, capped to {@link ACCESS_LOG_LIMITS}.clientRequestIdChars; null when absent. */
  clientRequestId: 'clientRequestId',
  /** When the request arrived, ISO-8601 (pino's `time` is when the line was written, at the end). */
  startedAt: 'startedAt',
  clientAddress: 'clientAddress',
  clientPort: 'clientPort',
  /** The client's identity (proxy credentials or client range), or null when none applies. */
  identity: 'identity',
  /** The client's User-Agent, capped to {@link ACCESS_LOG_LIMITS}.userAgentChars; null when absent. */
  userAgent: 'userAgent',
  /** Candidate product tokens from the User-Agent (RFC 9309 §2.2.1), capped in number and length. */
  productTokens: 'productTokens',
  method: 'method',
  /** The target URL as the proxy understood it, capped to {@link ACCESS_LOG_LIMITS}.urlChars. */
  url: 'url',
  /** `http`, `https-intercepted`, `http-tunnelled` or `connect`. */
  via: 'via',
  /** Status sent to the client. */
  status: 'status',
  /** Upstream status, or null when nothing was forwarded or no response arrived. */
  upstreamStatus: 'upstreamStatus',
  bytesSent: 'bytesSent',
  bytesReceived: 'bytesReceived',
  clientAborted: 'clientAborted',
  /** Time waiting for a start slot, ms; null when not queued. */
  queueWaitMs: 'queueWaitMs',
  /** Upstream request start to end of upstream response, ms; null when not forwarded. */
  upstreamMs: 'upstreamMs',
  upstreamStartedAt: 'upstreamStartedAt',
  /** Arrival to last byte sent, ms. */
  durationMs: 'durationMs',
  /** Error code when the exchange failed, or null. */
  error: 'error',
  /** The {@link Decision} (with ISO fetch and expiry times added to its snapshot). */
  decision: 'decision',
  /** Names of the fields above (dotted for nested ones) that were cut to their cap; present only when some were. */
  truncated: 'truncated',
} as const;

/** The `msg` of every access log line. */
export const ACCESS_LOG_MESSAGE = 'request';

/** Length caps for values the client (or a remote robots.txt) controls, in UTF-16 code units. */
export const ACCESS_LOG_LIMITS = {
  userAgentChars: 512,
  clientRequestIdChars: 128,
  urlChars: 2048,
  methodChars: 32,
  productTokens: 16,
  productTokenChars: 128,
  /** Rule patterns, the robots.txt URL and the decision's detail. */
  otherChars: 1024,
  errorChars: 256,
} as const;

type F = typeof ACCESS_LOG_FIELD;

/** The snapshot as logged: the Decision's, plus ISO-8601 forms of its times. */
export type LoggedSnapshot = NonNullable<Decision['snapshot']> & { fetchedAt: string; expiresAt: string };

/** The Decision as logged: unchanged but for length caps and the ISO snapshot times. */
export type LoggedDecision = Omit<Decision, 'snapshot'> & { snapshot: LoggedSnapshot | null };

/** One access log record, before pino adds `level`, `time`, `pid`, `hostname` and `msg`. */
export interface AccessLogRecord {
  [ACCESS_LOG_FIELD.requestId]: string;
  [ACCESS_LOG_FIELD.clientRequestId]: string | null;
  [ACCESS_LOG_FIELD.startedAt]: string;
  [ACCESS_LOG_FIELD.clientAddress]: string;
  [ACCESS_LOG_FIELD.clientPort]: number;
  [ACCESS_LOG_FIELD.identity]: string | null;
  [ACCESS_LOG_FIELD.userAgent]: string | null;
  [ACCESS_LOG_FIELD.productTokens]: string[];
  [ACCESS_LOG_FIELD.method]: string;
  [ACCESS_LOG_FIELD.url]: string;
  [ACCESS_LOG_FIELD.via]: AccessEntry['request']['via'];
  [ACCESS_LOG_FIELD.status]: number;
  [ACCESS_LOG_FIELD.upstreamStatus]: number | null;
  [ACCESS_LOG_FIELD.bytesSent]: number;
  [ACCESS_LOG_FIELD.bytesReceived]: number;
  [ACCESS_LOG_FIELD.clientAborted]: boolean;
  [ACCESS_LOG_FIELD.queueWaitMs]: number | null;
  [ACCESS_LOG_FIELD.upstreamMs]: number | null;
  /** When the request was written upstream (ISO 8601, ms precision), or null when not forwarded. */
  [ACCESS_LOG_FIELD.upstreamStartedAt]: string | null;
  [ACCESS_LOG_FIELD.durationMs]: number;
  [ACCESS_LOG_FIELD.error]: string | null;
  [ACCESS_LOG_FIELD.decision]: LoggedDecision;
  [ACCESS_LOG_FIELD.truncated]?: string[];
}

/**
 * Cuts `value` to at most `maxChars` UTF-16 code units without splitting a
 * surrogate pair (a lone surrogate would not survive as UTF-8), recording
 * `field` (`field.index` when an index is given) in `truncated` when it cut. Pure.
 */
function cap(value: string, maxChars: number, field: string, truncated: string[], index?: number): string {
  if (value.length <= maxChars) return value;
  truncated.push(index === undefined ? field : `${field}.${index}`);
  const last = value.charCodeAt(maxChars - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? maxChars - 1 : maxChars;
  return value.slice(0, end);
}

/** Dotted names of the Decision's capped fields, as listed under `truncated`. */
const DECISION_FIELD = Object.fromEntries(
  (['origin', 'path', 'productToken', 'group', 'rule.pattern', 'snapshot.url', 'detail'] as const).map((name) => [name.replace('.', '_'), `${ACCESS_LOG_FIELD.decision}.${name}`]),
) as Record<'origin' | 'path' | 'productToken' | 'group' | 'rule_pattern' | 'snapshot_url' | 'detail', string>;

/** Reused by every {@link toAccessLogRecord} call (copied into the record only when something was cut). */
const scratchTruncated: string[] = [];

// One formatter per kind of timestamp, so that each keeps its own second cached.
const isoStartedAt = createIsoFormatter();
const isoUpstreamStartedAt = createIsoFormatter();
const isoFetchedAt = createIsoFormatter();
const isoExpiresAt = createIsoFormatter();

/** A duration in whole milliseconds, as the line shows it (the clock's sub-millisecond fraction is noise there). */
function wholeMs<T extends number | null>(ms: T): T {
  return (ms === null ? null : Math.round(ms)) as T;
}

/**
 * The Decision as logged, built field by field in the Decision's declared
 * order (the serializer's order, see access-line.ts); nested pacing and
 * upstream facts are shared with the Decision, not copied.
 */
function toLoggedDecision(decision: Decision, truncated: string[]): LoggedDecision {
  const d = DECISION_FIELD;
  const other = ACCESS_LOG_LIMITS.otherChars;
  const { rule, snapshot } = decision;
  const logged: LoggedDecision = {
    verdict: decision.verdict,
    reason: decision.reason,
    origin: cap(decision.origin, ACCESS_LOG_LIMITS.urlChars, d.origin, truncated),
    path: cap(decision.path, ACCESS_LOG_LIMITS.urlChars, d.path, truncated),
    productToken:
      decision.productToken === null
        ? null
        : cap(decision.productToken, ACCESS_LOG_LIMITS.productTokenChars, d.productToken, truncated),
    agentTokens: decision.agentTokens,
    group: decision.group === null ? null : cap(decision.group, other, d.group, truncated),
    rule: rule === null ? null : { kind: rule.kind, pattern: cap(rule.pattern, other, d.rule_pattern, truncated), line: rule.line },
    crawlDelaySeconds: decision.crawlDelaySeconds,
    snapshot: snapshot === null ? null : toLoggedSnapshot(snapshot, cap(snapshot.url, other, d.snapshot_url, truncated)),
    identity: decision.identity,
  };
  // The operator's rule (its name is the operator's, at most 300 chars by the schema) and the would-deny reason.
  if (decision.policy !== undefined) logged.policy = decision.policy;
  if (decision.wouldDeny !== undefined) logged.wouldDeny = decision.wouldDeny;
  if (decision.detail !== undefined) logged.detail = cap(decision.detail, other, d.detail, truncated);
  if (decision.proxyAuthenticate !== undefined) logged.proxyAuthenticate = decision.proxyAuthenticate;
  if (decision.retryAfterSeconds !== undefined) logged.retryAfterSeconds = decision.retryAfterSeconds;
  // In whole ms, as the line's other durations; copied only when the wait has a fraction.
  const { pacing } = decision;
  if (pacing !== undefined) logged.pacing = Number.isInteger(pacing.waitedMs) ? pacing : toLoggedPacing(pacing);
  if (decision.upstream !== undefined) logged.upstream = decision.upstream;
  return logged;
}

/** The pacing facts with `waitedMs` in whole ms, field by field in their declared order (no spread). */
function toLoggedPacing(pacing: PacingFacts): PacingFacts {
  const logged: PacingFacts = { delayMs: pacing.delayMs, waitedMs: wholeMs(pacing.waitedMs) };
  if (pacing.queueLength !== undefined) logged.queueLength = pacing.queueLength;
  if (pacing.identityQueueLength !== undefined) logged.identityQueueLength = pacing.identityQueueLength;
  if (pacing.limit !== undefined) logged.limit = pacing.limit;
  if (pacing.retryAfterSeconds !== undefined) logged.retryAfterSeconds = pacing.retryAfterSeconds;
  return logged;
}

/** The snapshot with its url capped and its times also in ISO-8601; absent status and error stay absent. */
function toLoggedSnapshot(snapshot: SnapshotInfo, url: string): LoggedSnapshot {
  const logged = { url, state: snapshot.state } as LoggedSnapshot;
  if (snapshot.status !== undefined) logged.status = snapshot.status;
  if (snapshot.error !== undefined) logged.error = snapshot.error;
  logged.fetchedAtMs = snapshot.fetchedAtMs;
  logged.expiresAtMs = snapshot.expiresAtMs;
  logged.bytes = snapshot.bytes;
  logged.truncated = snapshot.truncated;
  logged.fetchedAt = isoFetchedAt(snapshot.fetchedAtMs);
  logged.expiresAt = isoExpiresAt(snapshot.expiresAtMs);
  return logged;
}

/**
 * Builds the access log record of one finished request. Pure; never throws.
 * Values the client controls (User-Agent, URL, method, product tokens) and
 * values a remote robots.txt controls (group, rule pattern) are cut to
 * {@link ACCESS_LOG_LIMITS}, and the cut fields are listed under `truncated`.
 * The Decision's reason and verdict are copied, never re-derived.
 * @param entry the finished request.
 * @returns a plain object ready for `logger.info(record, msg)`.
 */
export function toAccessLogRecord(entry: AccessEntry): AccessLogRecord {
  const truncated = scratchTruncated;
  truncated.length = 0;
  const L = ACCESS_LOG_LIMITS;
  const f: F = ACCESS_LOG_FIELD;
  const tokenCount = Math.min(entry.productTokens.length, L.productTokens);
  if (entry.productTokens.length > L.productTokens) truncated.push(f.productTokens);
  const clientRequestId = entry.request.clientRequestId ?? null;
  const clientRequestIdLogged = clientRequestId === null ? null : cap(clientRequestId, L.clientRequestIdChars, f.clientRequestId, truncated);
  const userAgent = entry.request.userAgent === null ? null : cap(entry.request.userAgent, L.userAgentChars, f.userAgent, truncated);
  const tokens = new Array<string>(tokenCount);
  for (let i = 0; i < tokenCount; i++) tokens[i] = cap(entry.productTokens[i] as string, L.productTokenChars, f.productTokens, truncated, i);
  // Literal keys: ACCESS_LOG_FIELD's values, which the record's type checks.
  const record: AccessLogRecord = {
    requestId: entry.requestId,
    clientRequestId: clientRequestIdLogged,
    startedAt: isoStartedAt(entry.startedAtMs),
    clientAddress: entry.client.address,
    clientPort: entry.client.port,
    identity: entry.identity ?? null,
    userAgent,
    productTokens: tokens,
    method: cap(entry.request.method, L.methodChars, f.method, truncated),
    url: cap(entry.request.url, L.urlChars, f.url, truncated),
    via: entry.request.via,
    status: entry.response.status,
    upstreamStatus: entry.response.upstreamStatus,
    bytesSent: entry.response.bytesSent,
    bytesReceived: entry.response.bytesReceived,
    clientAborted: entry.response.clientAborted,
    queueWaitMs: wholeMs(entry.timings.queueWaitMs),
    upstreamMs: wholeMs(entry.timings.upstreamMs),
    upstreamStartedAt: entry.timings.upstreamStartedAtMs == null ? null : isoUpstreamStartedAt(entry.timings.upstreamStartedAtMs),
    durationMs: wholeMs(entry.timings.durationMs),
    error: entry.error === null ? null : cap(entry.error, L.errorChars, f.error, truncated),
    decision: toLoggedDecision(entry.decision, truncated),
  };
  if (truncated.length > 0) record.truncated = truncated.slice();
  return record;
}
