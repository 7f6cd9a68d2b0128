/**
 * The access line's serializer: the JSON text of an {@link AccessLogRecord},
 * written field by field for its one fixed shape instead of through pino's
 * generic object walk (which was 5-7% of a proxied request's CPU, the line
 * being 1.2 KB; bench/PROFILE.md).
 *
 * The contract, proven by test/audit/access-line.test.ts over generated
 * records: for every record of the declared types whose objects list their
 * keys in the declared order (which {@link toAccessLogRecord} builds),
 * {@link serializeAccessRecord} returns exactly `JSON.stringify(record)`;
 * for any other key order, the same JSON value. Strings go through
 * `JSON.stringify` itself (V8's fast path), so escaping (quotes, control
 * characters, lone surrogates) is JSON.stringify's. Keys absent from the
 * types are not written: the key lists below are checked against the types
 * at compile time, so a field added to the Decision or the record without a
 * line here fails `npm run typecheck`.
 *
 * Hand-written rather than schema-compiled (fast-json-stringify): a schema
 * would repeat the TypeScript types without being checked against them, add
 * ajv and five other packages, and compile code at startup; this is 100 lines
 * the compiler checks. Extension, not in RFC 9309.
 */
import type { DecisionIdentity, MatchedRule, PacingFacts, UpstreamFacts } from '../policy/decision.js';
import type { Logger } from 'pino';
import type { AccessEntry } from './access-entry.js';
import {
  ACCESS_LOG_FIELD as F,
  ACCESS_LOG_MESSAGE,
  toAccessLogRecord,
  type AccessLogRecord,
  type LoggedDecision,
  type LoggedSnapshot,
} from './access-log.js';
import { SAFE_RECORD, writeSerializedInfo } from './logger.js';

/** Every key of `T`, listed once: `true` when `List` names them all, else a type error at the use. */
type ListsEveryKey<T, List extends readonly (keyof T)[]> = Exclude<keyof T, List[number]> extends never ? true : { missing: Exclude<keyof T, List[number]> };

// The serializer's key lists, in output order. Each `satisfies` fails typecheck when a type gains a field the writer below does not write.
const RECORD_KEYS = [
  F.requestId, F.clientRequestId, F.startedAt, F.clientAddress, F.clientPort, F.identity, F.userAgent, F.productTokens, F.method, F.url, F.via,
  F.status, F.upstreamStatus, F.bytesSent, F.bytesReceived, F.clientAborted, F.queueWaitMs, F.upstreamMs, F.upstreamStartedAt, F.durationMs,
  F.error, F.decision, F.truncated,
] as const;
const DECISION_KEYS = [
  'verdict', 'reason', 'origin', 'path', 'productToken', 'agentTokens', 'group', 'rule', 'crawlDelaySeconds', 'snapshot', 'identity', 'policy',
  'wouldDeny', 'detail', 'proxyAuthenticate', 'retryAfterSeconds', 'pacing', 'upstream',
] as const;
const IDENTITY_KEYS = ['name', 'source', 'boundTokens', 'claimedTokens', 'isMismatch'] as const;
const SNAPSHOT_KEYS = ['url', 'state', 'status', 'error', 'fetchedAtMs', 'expiresAtMs', 'bytes', 'truncated', 'fetchedAt', 'expiresAt'] as const;
const RULE_KEYS = ['kind', 'pattern', 'line'] as const;
const PACING_KEYS = ['delayMs', 'waitedMs', 'queueLength', 'identityQueueLength', 'limit', 'retryAfterSeconds'] as const;
const UPSTREAM_KEYS = ['status', 'error', 'timedOut'] as const;
const KEY_LISTS_ARE_COMPLETE: [
  ListsEveryKey<AccessLogRecord, typeof RECORD_KEYS>,
  ListsEveryKey<LoggedDecision, typeof DECISION_KEYS>,
  ListsEveryKey<LoggedSnapshot, typeof SNAPSHOT_KEYS>,
  ListsEveryKey<MatchedRule, typeof RULE_KEYS>,
  ListsEveryKey<PacingFacts, typeof PACING_KEYS>,
  ListsEveryKey<UpstreamFacts, typeof UPSTREAM_KEYS>,
  ListsEveryKey<DecisionIdentity, typeof IDENTITY_KEYS>,
] = [true, true, true, true, true, true, true];
void KEY_LISTS_ARE_COMPLETE;

/** `"key":` for each top-level field, from {@link ACCESS_LOG_FIELD} (built once). */
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
 * pino's `level`, `time` and bindings. Pure; never throws for a record of the
 * declared types.
 * @param r the record (see {@link toAccessLogRecord}).
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

/**
 * Writes the one access log line of a finished request at level `info` with
 * message {@link ACCESS_LOG_MESSAGE}: the record is built once
 * ({@link toAccessLogRecord}), serialised once ({@link serializeAccessFields})
 * and written through the logger's own destination, so it is ordered with the
 * process's other lines and flushed with them. The line is what
 * `logger.info(record, ACCESS_LOG_MESSAGE)` wrote (same keys, same values):
 * `level`, `time`, the logger's bindings (`pid`, `hostname`), the record's
 * fields, `msg`. A logger not made by `createLogger` gets exactly that call.
 * Call it exactly once per request (or CONNECT), at its end. Never throws for
 * a well-formed entry.
 * @param logger the process logger (see `createLogger`).
 * @param entry the finished request.
 */
export function writeAccessLog(logger: Logger, entry: AccessEntry): void {
  if (!logger.isLevelEnabled('info')) return;
  const record = toAccessLogRecord(entry);
  if (writeSerializedInfo(logger, serializeAccessFields(record), ACCESS_LOG_MESSAGE)) return;
  (record as AccessLogRecord & { [SAFE_RECORD]?: true })[SAFE_RECORD] = true;
  logger.info(record, ACCESS_LOG_MESSAGE);
}
