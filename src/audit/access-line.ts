/**
 * The access line's encoder: the whole log line of a finished request,
 * `{"level":"info","time":…<bindings>,<record's fields>,"msg":"request"}\n`,
 * written as UTF-8 straight into the log destination's batch buffer
 * ({@link LineBuffer}), field by field for its one fixed shape, from the
 * {@link AccessEntry} itself: no record object, no strings built per request.
 * Before, the record was built (toAccessLogRecord), serialised into a string of
 * ~40 pieces, joined with the batch and converted to UTF-8 by write(2)'s
 * binding: 8.4 KB allocated per line, against 82 bytes now, and a quarter
 * fewer CPU µs per line in process (bench/PROFILE.md, "The access line as bytes").
 *
 * The contract, proven by test/audit/access-line.test.ts over generated
 * entries: the bytes are those of the line the string serializer wrote
 * (`JSON.stringify(toAccessLogRecord(entry))` spliced between pino's `level`,
 * `time`, bindings and `msg`), UTF-8 encoded; the caps and the `truncated`
 * list are {@link toAccessLogRecord}'s, in its order. Strings are escaped as
 * JSON.stringify escapes them (a lone surrogate as `\udXXX`), numbers written
 * as it writes them (NaN and ±Infinity as null). Keys absent from the types
 * are not written: the key lists below are checked against the types at
 * compile time, so a field added to the Decision or the record without a line
 * here fails `npm run typecheck`. Extension, not in RFC 9309.
 */
import type { DecisionIdentity, MatchedRule, PacingFacts, SnapshotInfo, UpstreamFacts } from '../policy/decision.js';
import type { Logger } from 'pino';
import type { AccessEntry } from './access-entry.js';
import {
  ACCESS_LOG_FIELD as F,
  ACCESS_LOG_LIMITS as L,
  ACCESS_LOG_MESSAGE,
  toAccessLogRecord,
  type AccessLogRecord,
  type LoggedDecision,
  type LoggedSnapshot,
} from './access-log.js';
import { createIsoWriter } from './iso-time.js';
import { utf8Bytes, type LineBuffer } from './line-buffer.js';
import { SAFE_RECORD, bindingsOf, encodedLineSinkOf } from './logger.js';

/** Every key of `T`, listed once: `true` when `List` names them all, else a type error at the use. */
type ListsEveryKey<T, List extends readonly (keyof T)[]> = Exclude<keyof T, List[number]> extends never ? true : { missing: Exclude<keyof T, List[number]> };

// The encoder's key lists, in output order. Each `satisfies` fails typecheck when a type gains a field the writer below does not write.
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

/** UTF-8 of `,"key":` (or `{"key":` when `first`). */
const key = (name: string, first = false): Uint8Array => utf8Bytes(`${first ? '{' : ','}${JSON.stringify(name)}:`);

/** `,"<field>":` for each top-level field, from {@link ACCESS_LOG_FIELD} (built once). */
const K = Object.fromEntries(RECORD_KEYS.map((name) => [name, key(name)])) as Record<(typeof RECORD_KEYS)[number], Uint8Array>;
const LINE_START = utf8Bytes('{"level":"info","time":');
const LINE_END = utf8Bytes(`,"msg":${JSON.stringify(ACCESS_LOG_MESSAGE)}}\n`);
const D = {
  verdict: key('verdict', true), reason: key('reason'), origin: key('origin'), path: key('path'), productToken: key('productToken'),
  agentTokens: key('agentTokens'), group: key('group'), rule: key('rule'), crawlDelaySeconds: key('crawlDelaySeconds'),
  snapshot: key('snapshot'), identity: key('identity'), policy: key('policy'), wouldDeny: key('wouldDeny'), detail: key('detail'),
  proxyAuthenticate: key('proxyAuthenticate'), retryAfterSeconds: key('retryAfterSeconds'), pacing: key('pacing'), upstream: key('upstream'),
};
const RULE = { kind: key('kind', true), pattern: key('pattern'), line: key('line') };
const POLICY = { rule: key('rule', true), action: key('action') };
const SNAPSHOT = {
  url: key('url', true), state: key('state'), status: key('status'), error: key('error'), fetchedAtMs: key('fetchedAtMs'),
  expiresAtMs: key('expiresAtMs'), bytes: key('bytes'), truncated: key('truncated'), fetchedAt: key('fetchedAt'), expiresAt: key('expiresAt'),
};
const IDENTITY = { name: key('name', true), source: key('source'), boundTokens: key('boundTokens'), claimedTokens: key('claimedTokens'), isMismatch: key('isMismatch') };
const PACING = {
  delayMs: key('delayMs', true), waitedMs: key('waitedMs'), queueLength: key('queueLength'), identityQueueLength: key('identityQueueLength'),
  limit: key('limit'), retryAfterSeconds: key('retryAfterSeconds'),
};
const UPSTREAM = { status: [key('status', true), key('status')], error: [key('error', true), key('error')], timedOut: [key('timedOut', true), key('timedOut')] } as const;
const EMPTY_OBJECT = utf8Bytes('{}');
const CLOSE_OBJECT = 0x7d;

/** Names listed under `truncated`, as toAccessLogRecord lists them. */
const CUT = {
  clientRequestId: F.clientRequestId, userAgent: F.userAgent, productTokens: F.productTokens, method: F.method, url: F.url, error: F.error,
  origin: `${F.decision}.origin`, path: `${F.decision}.path`, productToken: `${F.decision}.productToken`, group: `${F.decision}.group`,
  rulePattern: `${F.decision}.rule.pattern`, snapshotUrl: `${F.decision}.snapshot.url`, detail: `${F.decision}.detail`,
} as const;

// One writer per kind of timestamp, so that each keeps its own second cached.
const isoTime = createIsoWriter();
const isoStartedAt = createIsoWriter();
const isoUpstreamStartedAt = createIsoWriter();
const isoFetchedAt = createIsoWriter();
const isoExpiresAt = createIsoWriter();

/** The fields cut to their cap in the line being encoded, in toAccessLogRecord's order (reused). */
const truncated: string[] = [];

/** The bindings last written and their UTF-8 (a logger's bindings rarely change). */
let lastBindings = '';
let lastBindingsBytes: Uint8Array = new Uint8Array(0);

/** A duration in whole ms, as toAccessLogRecord writes it. */
function wholeMsOrNull(out: LineBuffer, ms: number | null): void {
  out.numberOrNull(ms === null ? null : Math.round(ms));
}

function rule(out: LineBuffer, value: MatchedRule | null): void {
  if (value === null) return out.null();
  out.bytes(RULE.kind);
  out.string(value.kind);
  out.bytes(RULE.pattern);
  if (out.string(value.pattern, L.otherChars)) truncated.push(CUT.rulePattern);
  out.bytes(RULE.line);
  out.number(value.line);
  out.byte(CLOSE_OBJECT);
}

/** A snapshot's logged object as bytes, with the values it was encoded from. */
interface EncodedSnapshot {
  readonly from: SnapshotInfo;
  /** Whether its url was cut (`decision.snapshot.url` in `truncated`). */
  readonly isUrlCut: boolean;
  readonly bytes: Uint8Array;
}

/**
 * The encoded snapshot object of each {@link SnapshotInfo} seen: one object is
 * shared by every request decided on that robots.txt, so its ~300 bytes (two ISO
 * times, three large numbers) are encoded once and copied after. Checked field by
 * field on every use, so a changed object is encoded again.
 */
const encodedSnapshots = new WeakMap<SnapshotInfo, EncodedSnapshot>();

function snapshot(out: LineBuffer, value: SnapshotInfo | null): void {
  if (value === null) return out.null();
  const cached = encodedSnapshots.get(value);
  if (cached !== undefined && isSameSnapshot(cached.from, value)) {
    out.bytes(cached.bytes);
    if (cached.isUrlCut) truncated.push(CUT.snapshotUrl);
    return;
  }
  const start = out.length;
  const cutBefore = truncated.length;
  encodeSnapshot(out, value);
  const from: SnapshotInfo = {
    url: value.url, state: value.state, status: value.status, error: value.error, fetchedAtMs: value.fetchedAtMs,
    expiresAtMs: value.expiresAtMs, bytes: value.bytes, truncated: value.truncated,
  };
  // A copy (Buffer#slice would be a view of the batch buffer, which the next batch overwrites).
  encodedSnapshots.set(value, { from, isUrlCut: truncated.length > cutBefore, bytes: new Uint8Array(out.buf.subarray(start, out.length)) });
}

/** Whether two snapshots log the same (every field of {@link SnapshotInfo}; NaN never equals, so it is encoded again). */
function isSameSnapshot(a: SnapshotInfo, b: SnapshotInfo): boolean {
  return a.url === b.url && a.state === b.state && a.status === b.status && a.error === b.error && a.fetchedAtMs === b.fetchedAtMs
    && a.expiresAtMs === b.expiresAtMs && a.bytes === b.bytes && a.truncated === b.truncated;
}

function encodeSnapshot(out: LineBuffer, value: SnapshotInfo): void {
  out.bytes(SNAPSHOT.url);
  if (out.string(value.url, L.otherChars)) truncated.push(CUT.snapshotUrl);
  out.bytes(SNAPSHOT.state);
  out.string(value.state);
  if (value.status !== undefined) {
    out.bytes(SNAPSHOT.status);
    out.number(value.status);
  }
  if (value.error !== undefined) {
    out.bytes(SNAPSHOT.error);
    out.string(value.error);
  }
  out.bytes(SNAPSHOT.fetchedAtMs);
  out.number(value.fetchedAtMs);
  out.bytes(SNAPSHOT.expiresAtMs);
  out.number(value.expiresAtMs);
  out.bytes(SNAPSHOT.bytes);
  out.number(value.bytes);
  out.bytes(SNAPSHOT.truncated);
  out.boolean(value.truncated);
  out.bytes(SNAPSHOT.fetchedAt);
  isoFetchedAt(out, value.fetchedAtMs);
  out.bytes(SNAPSHOT.expiresAt);
  isoExpiresAt(out, value.expiresAtMs);
  out.byte(CLOSE_OBJECT);
}

function identity(out: LineBuffer, value: DecisionIdentity | null): void {
  if (value === null) return out.null();
  out.bytes(IDENTITY.name);
  out.string(value.name);
  out.bytes(IDENTITY.source);
  out.string(value.source);
  out.bytes(IDENTITY.boundTokens);
  out.strings(value.boundTokens);
  out.bytes(IDENTITY.claimedTokens);
  out.strings(value.claimedTokens);
  out.bytes(IDENTITY.isMismatch);
  out.boolean(value.isMismatch);
  out.byte(CLOSE_OBJECT);
}

/** The pacing facts, `waitedMs` in whole ms (as toAccessLogRecord logs it). */
function pacing(out: LineBuffer, value: PacingFacts): void {
  out.bytes(PACING.delayMs);
  out.number(value.delayMs);
  out.bytes(PACING.waitedMs);
  out.number(Math.round(value.waitedMs));
  if (value.queueLength !== undefined) {
    out.bytes(PACING.queueLength);
    out.number(value.queueLength);
  }
  if (value.identityQueueLength !== undefined) {
    out.bytes(PACING.identityQueueLength);
    out.number(value.identityQueueLength);
  }
  if (value.limit !== undefined) {
    out.bytes(PACING.limit);
    out.string(value.limit);
  }
  if (value.retryAfterSeconds !== undefined) {
    out.bytes(PACING.retryAfterSeconds);
    out.number(value.retryAfterSeconds);
  }
  out.byte(CLOSE_OBJECT);
}

function upstream(out: LineBuffer, value: UpstreamFacts): void {
  let isFirst = 1;
  if (value.status !== undefined) {
    out.bytes(UPSTREAM.status[1 - isFirst] as Uint8Array);
    out.number(value.status);
    isFirst = 0;
  }
  if (value.error !== undefined) {
    out.bytes(UPSTREAM.error[1 - isFirst] as Uint8Array);
    out.string(value.error);
    isFirst = 0;
  }
  if (value.timedOut !== undefined) {
    out.bytes(UPSTREAM.timedOut[1 - isFirst] as Uint8Array);
    out.boolean(value.timedOut);
    isFirst = 0;
  }
  if (isFirst === 1) out.bytes(EMPTY_OBJECT);
  else out.byte(CLOSE_OBJECT);
}

/** The Decision as toLoggedDecision logs it: capped values, ISO snapshot times. */
function decision(out: LineBuffer, d: AccessEntry['decision']): void {
  out.bytes(D.verdict);
  out.string(d.verdict);
  out.bytes(D.reason);
  out.string(d.reason);
  out.bytes(D.origin);
  if (out.string(d.origin, L.urlChars)) truncated.push(CUT.origin);
  out.bytes(D.path);
  if (out.string(d.path, L.urlChars)) truncated.push(CUT.path);
  out.bytes(D.productToken);
  if (out.stringOrNull(d.productToken, L.productTokenChars)) truncated.push(CUT.productToken);
  out.bytes(D.agentTokens);
  out.strings(d.agentTokens);
  out.bytes(D.group);
  if (out.stringOrNull(d.group, L.otherChars)) truncated.push(CUT.group);
  out.bytes(D.rule);
  rule(out, d.rule);
  out.bytes(D.crawlDelaySeconds);
  out.numberOrNull(d.crawlDelaySeconds);
  out.bytes(D.snapshot);
  snapshot(out, d.snapshot);
  out.bytes(D.identity);
  identity(out, d.identity);
  // The operator policy rule (a name and a closed-set action) and the would-deny reason (closed set).
  if (d.policy !== undefined) {
    out.bytes(D.policy);
    out.bytes(POLICY.rule);
    out.string(d.policy.rule);
    out.bytes(POLICY.action);
    out.string(d.policy.action);
    out.byte(CLOSE_OBJECT);
  }
  if (d.wouldDeny !== undefined) {
    out.bytes(D.wouldDeny);
    out.string(d.wouldDeny);
  }
  if (d.detail !== undefined) {
    out.bytes(D.detail);
    if (out.string(d.detail, L.otherChars)) truncated.push(CUT.detail);
  }
  if (d.proxyAuthenticate !== undefined) {
    out.bytes(D.proxyAuthenticate);
    out.string(d.proxyAuthenticate);
  }
  if (d.retryAfterSeconds !== undefined) {
    out.bytes(D.retryAfterSeconds);
    out.number(d.retryAfterSeconds);
  }
  if (d.pacing !== undefined) {
    out.bytes(D.pacing);
    pacing(out, d.pacing);
  }
  if (d.upstream !== undefined) {
    out.bytes(D.upstream);
    upstream(out, d.upstream);
  }
  out.byte(CLOSE_OBJECT);
}

/**
 * Appends the whole access line of `entry` to `out`: `{"level":"info","time":"<ISO of nowMs>"<bindings>,`
 * the fields of `toAccessLogRecord(entry)` in its order and with its caps, `,"msg":"request"}` and a newline,
 * as UTF-8. Never throws for a well-formed entry.
 * @param out where the bytes go (a destination's batch).
 * @param entry the finished request.
 * @param bindings the logger's bindings as pino holds them (`,"pid":1,"hostname":"h"`), already JSON.
 * @param nowMs the line's `time`, ms since the epoch.
 */
export function encodeAccessLine(out: LineBuffer, entry: AccessEntry, bindings: string, nowMs: number): void {
  truncated.length = 0;
  const { request, timings, response, productTokens } = entry;
  const tokenCount = Math.min(productTokens.length, L.productTokens);
  if (productTokens.length > L.productTokens) truncated.push(CUT.productTokens);
  out.bytes(LINE_START);
  isoTime(out, nowMs);
  if (bindings !== lastBindings) {
    lastBindings = bindings;
    lastBindingsBytes = utf8Bytes(bindings);
  }
  out.bytes(lastBindingsBytes);
  out.bytes(K.requestId);
  out.string(entry.requestId);
  out.bytes(K.clientRequestId);
  if (out.stringOrNull(request.clientRequestId ?? null, L.clientRequestIdChars)) truncated.push(CUT.clientRequestId);
  out.bytes(K.startedAt);
  isoStartedAt(out, entry.startedAtMs);
  out.bytes(K.clientAddress);
  out.string(entry.client.address);
  out.bytes(K.clientPort);
  out.number(entry.client.port);
  out.bytes(K.identity);
  out.stringOrNull(entry.identity ?? null);
  out.bytes(K.userAgent);
  if (out.stringOrNull(request.userAgent, L.userAgentChars)) truncated.push(CUT.userAgent);
  out.bytes(K.productTokens);
  out.byte(0x5b);
  for (let i = 0; i < tokenCount; i++) {
    if (i > 0) out.byte(0x2c);
    if (out.string(productTokens[i] as string, L.productTokenChars)) truncated.push(`${CUT.productTokens}.${i}`);
  }
  out.byte(0x5d);
  out.bytes(K.method);
  if (out.string(request.method, L.methodChars)) truncated.push(CUT.method);
  out.bytes(K.url);
  if (out.string(request.url, L.urlChars)) truncated.push(CUT.url);
  out.bytes(K.via);
  out.string(request.via);
  out.bytes(K.status);
  out.number(response.status);
  out.bytes(K.upstreamStatus);
  out.numberOrNull(response.upstreamStatus);
  out.bytes(K.bytesSent);
  out.number(response.bytesSent);
  out.bytes(K.bytesReceived);
  out.number(response.bytesReceived);
  out.bytes(K.clientAborted);
  out.boolean(response.clientAborted);
  out.bytes(K.queueWaitMs);
  wholeMsOrNull(out, timings.queueWaitMs);
  out.bytes(K.upstreamMs);
  wholeMsOrNull(out, timings.upstreamMs);
  out.bytes(K.upstreamStartedAt);
  if (timings.upstreamStartedAtMs == null) out.null();
  else isoUpstreamStartedAt(out, timings.upstreamStartedAtMs);
  out.bytes(K.durationMs);
  out.number(Math.round(timings.durationMs));
  out.bytes(K.error);
  if (out.stringOrNull(entry.error, L.errorChars)) truncated.push(CUT.error);
  out.bytes(K.decision);
  decision(out, entry.decision);
  if (truncated.length > 0) {
    out.bytes(K.truncated);
    out.strings(truncated);
  }
  out.bytes(LINE_END);
}

/**
 * Writes the one access log line of a finished request at level `info` with
 * message {@link ACCESS_LOG_MESSAGE}, encoded straight into the logger's
 * destination ({@link encodeAccessLine}), so it is ordered with the process's
 * other lines and flushed with them. The line is what
 * `logger.info(toAccessLogRecord(entry), ACCESS_LOG_MESSAGE)` wrote (same
 * keys, same values): `level`, `time`, the logger's bindings (`pid`,
 * `hostname`), the record's fields, `msg`. A logger not made by
 * `createLogger` gets exactly that call. Call it exactly once per request (or
 * CONNECT), at its end. Never throws for a well-formed entry; for a malformed
 * one (a required fact missing) it throws the TypeError and writes nothing.
 * @param logger the process logger (see `createLogger`).
 * @param entry the finished request.
 */
export function writeAccessLog(logger: Logger, entry: AccessEntry): void {
  if (!logger.isLevelEnabled('info')) return;
  const sink = encodedLineSinkOf(logger);
  if (sink !== undefined) {
    const start = sink.out.length;
    try {
      encodeAccessLine(sink.out, entry, bindingsOf(logger), Date.now());
    } catch (err) {
      sink.out.length = start; // a malformed entry leaves no partial line before the next one
      throw err;
    }
    sink.commitLine(start);
    return;
  }
  const record = toAccessLogRecord(entry);
  (record as AccessLogRecord & { [SAFE_RECORD]?: true })[SAFE_RECORD] = true;
  logger.info(record, ACCESS_LOG_MESSAGE);
}
