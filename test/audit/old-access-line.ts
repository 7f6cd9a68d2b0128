/**
 * The access line's serializer as it was before the line was encoded straight
 * into bytes (src/audit/access-line.ts at main ec9afcc, string-building half):
 * the reference the new encoder is compared with, byte for byte, in
 * access-line.test.ts. Itself proven equal to `JSON.stringify(record)` there.
 * Test code only; do not change it to follow the new encoder.
 */
import type { DecisionIdentity, MatchedRule, PacingFacts, UpstreamFacts } from '../../src/policy/decision.js';
import { ACCESS_LOG_FIELD as F, type AccessLogRecord, type LoggedDecision, type LoggedSnapshot } from '../../src/audit/access-log.js';

const RECORD_KEYS = [
  F.requestId, F.clientRequestId, F.startedAt, F.clientAddress, F.clientPort, F.identity, F.userAgent, F.productTokens, F.method, F.url, F.via,
  F.status, F.upstreamStatus, F.bytesSent, F.bytesReceived, F.clientAborted, F.queueWaitMs, F.upstreamMs, F.upstreamStartedAt, F.durationMs,
  F.error, F.decision, F.truncated,
] as const;
/** `"key":` for each top-level field. */
const K = Object.fromEntries(RECORD_KEYS.map((key) => [key, `${JSON.stringify(key)}:`])) as Record<(typeof RECORD_KEYS)[number], string>;

/** A string as JSON.stringify writes it. */
const str = (value: string): string => JSON.stringify(value);
/** A nullable string. */
const strOrNull = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));
/** A number as JSON.stringify writes it: `null` for NaN and ±Infinity. */
const num = (value: number): string => (Number.isFinite(value) ? `${value}` : 'null');
/** A nullable number. */
const numOrNull = (value: number | null): string => (value === null ? 'null' : num(value));

function strings(values: readonly string[]): string {
  if (values.length === 0) return '[]';
  let out = `[${str(values[0] as string)}`;
  for (let i = 1; i < values.length; i++) out += `,${str(values[i] as string)}`;
  return `${out}]`;
}

function rule(value: MatchedRule | null): string {
  if (value === null) return 'null';
  return `{"kind":${str(value.kind)},"pattern":${str(value.pattern)},"line":${num(value.line)}}`;
}

function snapshot(value: LoggedSnapshot | null): string {
  if (value === null) return 'null';
  let out = `{"url":${str(value.url)},"state":${str(value.state)}`;
  if (value.status !== undefined) out += `,"status":${num(value.status)}`;
  if (value.error !== undefined) out += `,"error":${str(value.error)}`;
  return `${out},"fetchedAtMs":${num(value.fetchedAtMs)},"expiresAtMs":${num(value.expiresAtMs)},"bytes":${num(value.bytes)},"truncated":${value.truncated},"fetchedAt":${str(value.fetchedAt)},"expiresAt":${str(value.expiresAt)}}`;
}

function pacing(value: PacingFacts): string {
  let out = `{"delayMs":${num(value.delayMs)},"waitedMs":${num(value.waitedMs)}`;
  if (value.queueLength !== undefined) out += `,"queueLength":${num(value.queueLength)}`;
  if (value.identityQueueLength !== undefined) out += `,"identityQueueLength":${num(value.identityQueueLength)}`;
  if (value.limit !== undefined) out += `,"limit":${str(value.limit)}`;
  if (value.retryAfterSeconds !== undefined) out += `,"retryAfterSeconds":${num(value.retryAfterSeconds)}`;
  return `${out}}`;
}

function upstream(value: UpstreamFacts): string {
  let out = '';
  if (value.status !== undefined) out += `,"status":${num(value.status)}`;
  if (value.error !== undefined) out += `,"error":${str(value.error)}`;
  if (value.timedOut !== undefined) out += `,"timedOut":${value.timedOut}`;
  return out === '' ? '{}' : `{${out.slice(1)}}`;
}

function identity(value: DecisionIdentity | null): string {
  if (value === null) return 'null';
  return `{"name":${str(value.name)},"source":${str(value.source)},"boundTokens":${strings(value.boundTokens)},"claimedTokens":${strings(value.claimedTokens)},"isMismatch":${value.isMismatch}}`;
}

function decision(d: LoggedDecision): string {
  let out =
    `{"verdict":${str(d.verdict)},"reason":${str(d.reason)},"origin":${str(d.origin)},"path":${str(d.path)},` +
    `"productToken":${strOrNull(d.productToken)},"agentTokens":${strings(d.agentTokens)},"group":${strOrNull(d.group)},` +
    `"rule":${rule(d.rule)},"crawlDelaySeconds":${numOrNull(d.crawlDelaySeconds)},"snapshot":${snapshot(d.snapshot)},"identity":${identity(d.identity)}`;
  // The operator policy rule (a name and a closed-set action) and the would-deny reason (closed set).
  if (d.policy !== undefined) out += `,"policy":{"rule":${str(d.policy.rule)},"action":${str(d.policy.action)}}`;
  if (d.wouldDeny !== undefined) out += `,"wouldDeny":${str(d.wouldDeny)}`;
  if (d.detail !== undefined) out += `,"detail":${str(d.detail)}`;
  if (d.proxyAuthenticate !== undefined) out += `,"proxyAuthenticate":${str(d.proxyAuthenticate)}`;
  if (d.retryAfterSeconds !== undefined) out += `,"retryAfterSeconds":${num(d.retryAfterSeconds)}`;
  if (d.pacing !== undefined) out += `,"pacing":${pacing(d.pacing)}`;
  if (d.upstream !== undefined) out += `,"upstream":${upstream(d.upstream)}`;
  return `${out}}`;
}

/**
 * The record's fields as JSON, without the enclosing braces
 * (`"requestId":"…",…,"decision":{…}`), for splicing into a log line after
 * pino's `level`, `time` and bindings.
 */
export function serializeAccessFields(r: AccessLogRecord): string {
  let out =
    `${K.requestId}${str(r.requestId)},${K.clientRequestId}${strOrNull(r.clientRequestId)},${K.startedAt}${str(r.startedAt)},` +
    `${K.clientAddress}${str(r.clientAddress)},${K.clientPort}${num(r.clientPort)},${K.identity}${strOrNull(r.identity)},` +
    `${K.userAgent}${strOrNull(r.userAgent)},${K.productTokens}${strings(r.productTokens)},${K.method}${str(r.method)},` +
    `${K.url}${str(r.url)},${K.via}${str(r.via)},${K.status}${num(r.status)},${K.upstreamStatus}${numOrNull(r.upstreamStatus)},` +
    `${K.bytesSent}${num(r.bytesSent)},${K.bytesReceived}${num(r.bytesReceived)},${K.clientAborted}${r.clientAborted},` +
    `${K.queueWaitMs}${numOrNull(r.queueWaitMs)},${K.upstreamMs}${numOrNull(r.upstreamMs)},` +
    `${K.upstreamStartedAt}${strOrNull(r.upstreamStartedAt)},${K.durationMs}${num(r.durationMs)},${K.error}${strOrNull(r.error)},` +
    `${K.decision}${decision(r.decision)}`;
  const truncated = r[F.truncated];
  if (truncated !== undefined) out += `,${K.truncated}${strings(truncated)}`;
  return out;
}

/**
 * The record as one JSON object: `JSON.stringify(record)` for a record built
 * by {@link toAccessLogRecord} (see the module's contract). Pure.
 */
export function serializeAccessRecord(r: AccessLogRecord): string {
  return `{${serializeAccessFields(r)}}`;
}

