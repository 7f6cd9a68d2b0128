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
 * Seven stretches of the line whose values usually repeat from one request to
 * the next are copied as the last line's bytes when every value they were
 * written from is the same ({@link LineStretch}; bench/PROFILE.md, "The access
 * line's repeating stretches").
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
import { DECISION_REASONS, type DecisionIdentity, type MatchedRule, type PacingFacts, type PolicyFacts, type SnapshotInfo, type UpstreamFacts, type Verdict } from '../policy/decision.js';
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
import { ConstantBytes, utf8Bytes, type LineBuffer } from './line-buffer.js';
import { LineStretch, keepItems, sameItems } from './line-stretch.js';
import { SAFE_RECORD, bindingsOf, encodedLineSinkOf, type EncodedLineSink } from './logger.js';

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

/** `,"name":` (or `{"name":` when `first`), as text. */
const key = (name: string, first = false): string => `${first ? '{' : ','}${JSON.stringify(name)}:`;
/** Bytes written as they are, from their text (see {@link ConstantBytes}). */
const run = (text: string): ConstantBytes => new ConstantBytes(text);
/** The runs of a value that is usually one of a closed set, with the keys around it (see {@link closedValue}). */
interface ClosedRuns {
  /** `before`, `"<value>"` and `after` in one run, for each value of the set. */
  readonly byValue: ReadonlyMap<string, ConstantBytes>;
  /** For any other value, written before and after its string. */
  readonly before: ConstantBytes | undefined;
  readonly after: ConstantBytes;
}
const runsOf = (values: readonly string[], before: string, after: string): ClosedRuns => ({
  byValue: new Map(values.map((value) => [value, run(`${before}${JSON.stringify(value)}${after}`)])),
  before: before === '' ? undefined : run(before),
  after: run(after),
});

// The line's constant bytes, in runs: each key with the punctuation around it and, where a value comes
// from a closed set or is null, with that value and the next key (one copy instead of three writes).
const LINE_START = run('{"level":"info","time":');
const LINE_END = run(`,"msg":${JSON.stringify(ACCESS_LOG_MESSAGE)}}\n`);
/** The decision object's end and the line's end, when nothing was cut (no `truncated`). */
const DECISION_END_LINE_END = run(`}${LINE_END.text}`);
const K = {
  requestId: run(key(F.requestId)),
  clientRequestId: run(key(F.clientRequestId)),
  clientRequestIdNull: run(`${key(F.clientRequestId)}null${key(F.startedAt)}`),
  startedAt: run(key(F.startedAt)),
  clientAddress: run(key(F.clientAddress)),
  clientPort: run(key(F.clientPort)),
  identity: run(key(F.identity)),
  identityNull: run(`${key(F.identity)}null${key(F.userAgent)}`),
  userAgent: run(key(F.userAgent)),
  productTokens: run(`${key(F.productTokens)}[`),
  method: run(`]${key(F.method)}`),
  upstreamStatus: run(key(F.upstreamStatus)),
  bytesSent: run(key(F.bytesSent)),
  bytesReceived: run(key(F.bytesReceived)),
  clientAborted: run(key(F.clientAborted)),
  clientAbortedFalse: run(`${key(F.clientAborted)}false${key(F.queueWaitMs)}`),
  clientAbortedTrue: run(`${key(F.clientAborted)}true${key(F.queueWaitMs)}`),
  queueWaitMs: run(key(F.queueWaitMs)),
  upstreamMs: run(key(F.upstreamMs)),
  upstreamStartedAt: run(key(F.upstreamStartedAt)),
  durationMs: run(key(F.durationMs)),
  error: run(key(F.error)),
  errorNull: run(`${key(F.error)}null${key(F.decision)}${key('verdict', true)}`),
  decision: run(`${key(F.decision)}${key('verdict', true)}`),
  truncated: run(`}${key(F.truncated)}`),
};
/** `"GET","url":` for the methods of nearly every request. */
const METHOD_URL = runsOf(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'CONNECT'], '', key(F.url));
/** `,"via":"http","status":` for each `via`. */
const VIA_STATUS = runsOf(['http', 'https-intercepted', 'http-tunnelled', 'connect'], key(F.via), key(F.status));
const VERDICT_REASON = runsOf(['allow', 'deny'] satisfies Verdict[], '', key('reason'));
const REASON_ORIGIN = runsOf(DECISION_REASONS, '', key('origin'));
const D = {
  path: run(key('path')),
  productToken: run(key('productToken')),
  productTokenNull: run(`${key('productToken')}null${key('agentTokens')}[`),
  agentTokens: run(`${key('agentTokens')}[`),
  group: run(`]${key('group')}`),
  rule: run(key('rule')),
  ruleNull: run(`${key('rule')}null${key('crawlDelaySeconds')}`),
  /** After the rule's run, which ends with `,"crawlDelaySeconds":`. */
  crawlDelayNullSnapshot: run(`null${key('snapshot')}`),
  snapshot: run(key('snapshot')),
  identity: run(key('identity')),
  identityNull: run(`${key('identity')}null`),
  policy: run(`${key('policy')}${key('rule', true)}`),
  policyAction: run(key('action')),
  wouldDeny: run(key('wouldDeny')),
  detail: run(key('detail')),
  proxyAuthenticate: run(key('proxyAuthenticate')),
  retryAfterSeconds: run(key('retryAfterSeconds')),
  pacing: run(`${key('pacing')}${key('delayMs', true)}`),
  upstream: run(key('upstream')),
};
const RULE = { line: run(key('line')), end: run(`}${key('crawlDelaySeconds')}`) };
/** `,"rule":{"kind":"allow","pattern":` for each kind. */
const RULE_KIND_PATTERN = runsOf(['allow', 'disallow'] satisfies MatchedRule['kind'][], `${key('rule')}${key('kind', true)}`, key('pattern'));
const SNAPSHOT = {
  url: run(key('url', true)), state: run(key('state')), status: run(key('status')), error: run(key('error')), fetchedAtMs: run(key('fetchedAtMs')),
  expiresAtMs: run(key('expiresAtMs')), bytes: run(key('bytes')), truncated: run(key('truncated')), fetchedAt: run(key('fetchedAt')), expiresAt: run(key('expiresAt')),
};
const IDENTITY = {
  name: run(key('name', true)), source: run(key('source')), boundTokens: run(key('boundTokens')), claimedTokens: run(key('claimedTokens')),
  isMismatch: run(key('isMismatch')),
};
const PACING = {
  waitedMs: run(key('waitedMs')), queueLength: run(key('queueLength')), identityQueueLength: run(key('identityQueueLength')),
  limit: run(key('limit')), retryAfterSeconds: run(key('retryAfterSeconds')),
};
const UPSTREAM = {
  status: [run(key('status', true)), run(key('status'))], error: [run(key('error', true)), run(key('error'))],
  timedOut: [run(key('timedOut', true)), run(key('timedOut'))],
} as const;
const EMPTY_OBJECT = run('{}');
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

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

/** The top-level identity name last written and its run with the keys around it (see encodeAccessLine). */
let lastIdentityName: string | undefined = undefined;
let lastIdentityRun: ConstantBytes = K.identityNull;

/** A duration in whole ms or null, as toAccessLogRecord logs it. */
function wholeMsOrNull(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms);
}

// The stretches of the line whose values usually repeat from one request to the next, each kept as the
// bytes last written with the values they were written from (see LineStretch): copied when every value is
// the same (`===`; arrays item by item, never by identity; rounded durations as written), else encoded and
// kept. Every value the stretch's bytes depend on is compared, so a changed one is never copied stale.

/** `,"clientAddress":"<address>","clientPort":`. */
const ADDRESS = { stretch: new LineStretch(), address: '' };

function addressStretch(out: LineBuffer, address: string): void {
  const a = ADDRESS;
  if (a.stretch.isValid && address === a.address) return a.stretch.copy(out, truncated);
  a.stretch.begin(out, truncated);
  out.constant(K.clientAddress);
  out.string(address);
  out.constant(K.clientPort);
  a.stretch.end(out, truncated);
  a.address = address;
}

/** `,"identity":…,"userAgent":…,"productTokens":[…],"method":"<method>","url":`: a client's, line after line. */
const AGENT = {
  stretch: new LineStretch(),
  identity: undefined as string | null | undefined,
  userAgent: null as string | null,
  /** The first (up to the cap) product tokens. */
  productTokens: [] as string[],
  method: '',
};

function agentStretch(out: LineBuffer, entry: AccessEntry, tokenCount: number): void {
  const a = AGENT;
  const { request, productTokens } = entry;
  if (
    a.stretch.isValid && entry.identity === a.identity && request.userAgent === a.userAgent && request.method === a.method
    && sameItems(a.productTokens, productTokens, tokenCount)
  ) return a.stretch.copy(out, truncated);
  a.stretch.begin(out, truncated);
  if (entry.identity === undefined || entry.identity === null) out.constant(K.identityNull);
  else {
    // The same client's name line after line: its run (`,"identity":"<name>","userAgent":`) made once per name.
    if (entry.identity !== lastIdentityName) {
      lastIdentityName = entry.identity;
      lastIdentityRun = run(`${K.identity.text}${JSON.stringify(entry.identity)}${K.userAgent.text}`);
    }
    out.constant(lastIdentityRun);
  }
  if (out.stringOrNull(request.userAgent, L.userAgentChars)) truncated.push(CUT.userAgent);
  out.constant(K.productTokens);
  for (let i = 0; i < tokenCount; i++) {
    if (i > 0) out.byte(COMMA);
    if (out.string(productTokens[i] as string, L.productTokenChars)) truncated.push(`${CUT.productTokens}.${i}`);
  }
  out.constant(K.method);
  closedValue(out, request.method, METHOD_URL, L.methodChars, CUT.method);
  a.stretch.end(out, truncated);
  a.identity = entry.identity;
  a.userAgent = request.userAgent;
  keepItems(a.productTokens, productTokens, tokenCount);
  a.method = request.method;
}

/**
 * `,"via":"<via>","status":<status>,"upstreamStatus":<status>,"bytesSent":`. The sizes and durations after it
 * are not in it: they change from one response to the next (in the proxy under callgrind, a stretch through
 * `upstreamMs` missed 96% of lines, and a miss costs its capture on top of the encoding).
 */
const RESPONSE = { stretch: new LineStretch(), via: '' as string, status: 0, upstreamStatus: null as number | null };

function responseStretch(out: LineBuffer, entry: AccessEntry): void {
  const r = RESPONSE;
  const { request, response } = entry;
  if (r.stretch.isValid && request.via === r.via && response.status === r.status && response.upstreamStatus === r.upstreamStatus) {
    return r.stretch.copy(out, truncated);
  }
  r.stretch.begin(out, truncated);
  closedValue(out, request.via, VIA_STATUS);
  out.number(response.status);
  out.constant(K.upstreamStatus);
  out.numberOrNull(response.upstreamStatus);
  out.constant(K.bytesSent);
  r.stretch.end(out, truncated);
  r.via = request.via;
  r.status = response.status;
  r.upstreamStatus = response.upstreamStatus;
}

/** `<bytesSent>,"bytesReceived":…` through `,"upstreamStartedAt":`, durations in whole ms. */
function sizesAndTimes(out: LineBuffer, entry: AccessEntry): void {
  const { response, timings } = entry;
  out.number(response.bytesSent);
  out.constant(K.bytesReceived);
  out.number(response.bytesReceived);
  if (response.clientAborted === false) out.constant(K.clientAbortedFalse);
  else if (response.clientAborted === true) out.constant(K.clientAbortedTrue);
  else {
    out.constant(K.clientAborted);
    out.boolean(response.clientAborted);
    out.constant(K.queueWaitMs);
  }
  out.numberOrNull(wholeMsOrNull(timings.queueWaitMs));
  out.constant(K.upstreamMs);
  out.numberOrNull(wholeMsOrNull(timings.upstreamMs));
  out.constant(K.upstreamStartedAt);
}

/** `,"error":…,"decision":{"verdict":"<verdict>","reason":"<reason>","origin":`. */
const VERDICT = { stretch: new LineStretch(), error: null as string | null, verdict: '' as string, reason: '' as string };

function verdictStretch(out: LineBuffer, entry: AccessEntry): void {
  const v = VERDICT;
  const d = entry.decision;
  if (v.stretch.isValid && entry.error === v.error && d.verdict === v.verdict && d.reason === v.reason) return v.stretch.copy(out, truncated);
  v.stretch.begin(out, truncated);
  nullableStringThen(out, entry.error, K.errorNull, K.error, K.decision, L.errorChars, CUT.error);
  closedValue(out, d.verdict, VERDICT_REASON);
  closedValue(out, d.reason, REASON_ORIGIN);
  v.stretch.end(out, truncated);
  v.error = entry.error;
  v.verdict = d.verdict;
  v.reason = d.reason;
}

/** `,"rule":` and the rule (or null), then `,"crawlDelaySeconds":`. */
function ruleThenDelayKey(out: LineBuffer, value: MatchedRule | null): void {
  if (value === null) return out.constant(D.ruleNull);
  closedValue(out, value.kind, RULE_KIND_PATTERN);
  if (out.string(value.pattern, L.otherChars)) truncated.push(CUT.rulePattern);
  out.constant(RULE.line);
  out.number(value.line);
  out.constant(RULE.end);
}

/** A snapshot's logged object as bytes, with the values it was encoded from. */
interface EncodedSnapshot {
  readonly from: SnapshotInfo;
  /** Whether the snapshot was frozen when encoded (then its fields cannot have changed since: not compared). */
  readonly isFrozen: boolean;
  /** Whether its url was cut (`decision.snapshot.url` in `truncated`). */
  readonly isUrlCut: boolean;
  readonly bytes: ConstantBytes;
}

/**
 * The encoded snapshot object of each {@link SnapshotInfo} seen: one object is
 * shared by every request decided on that robots.txt, so its ~300 bytes (two ISO
 * times, three large numbers) are encoded once and copied after. A frozen one (the
 * robots cache freezes them, `cacheEntryOf`) is copied as it is; any other is checked
 * field by field on every use, so a changed object is encoded again. (Reading the
 * fields of the cache's snapshots cost ~400 instructions a line in megamorphic loads:
 * they come in several shapes, bench/PROFILE.md "The access line's encoder, cheaper".)
 */
const encodedSnapshots = new WeakMap<SnapshotInfo, EncodedSnapshot>();

function snapshot(out: LineBuffer, value: SnapshotInfo | null): void {
  if (value === null) return out.null();
  const cached = encodedSnapshots.get(value);
  if (cached !== undefined && (cached.isFrozen || isSameSnapshot(cached.from, value))) {
    out.constant(cached.bytes);
    if (cached.isUrlCut) truncated.push(CUT.snapshotUrl);
    return;
  }
  const isFrozen = Object.isFrozen(value);
  const start = out.length;
  const cutBefore = truncated.length;
  encodeSnapshot(out, value);
  const from: SnapshotInfo = {
    url: value.url, state: value.state, status: value.status, error: value.error, fetchedAtMs: value.fetchedAtMs,
    expiresAtMs: value.expiresAtMs, bytes: value.bytes, truncated: value.truncated,
  };
  const bytes = new ConstantBytes('');
  out.capture(bytes, start);
  encodedSnapshots.set(value, { from, isFrozen, isUrlCut: truncated.length > cutBefore, bytes });
}

/** Whether two snapshots log the same (every field of {@link SnapshotInfo}; NaN never equals, so it is encoded again). */
function isSameSnapshot(a: SnapshotInfo, b: SnapshotInfo): boolean {
  return a.url === b.url && a.state === b.state && a.status === b.status && a.error === b.error && a.fetchedAtMs === b.fetchedAtMs
    && a.expiresAtMs === b.expiresAtMs && a.bytes === b.bytes && a.truncated === b.truncated;
}

function encodeSnapshot(out: LineBuffer, value: SnapshotInfo): void {
  out.constant(SNAPSHOT.url);
  if (out.string(value.url, L.otherChars)) truncated.push(CUT.snapshotUrl);
  out.constant(SNAPSHOT.state);
  out.string(value.state);
  if (value.status !== undefined) {
    out.constant(SNAPSHOT.status);
    out.number(value.status);
  }
  if (value.error !== undefined) {
    out.constant(SNAPSHOT.error);
    out.string(value.error);
  }
  out.constant(SNAPSHOT.fetchedAtMs);
  out.number(value.fetchedAtMs);
  out.constant(SNAPSHOT.expiresAtMs);
  out.number(value.expiresAtMs);
  out.constant(SNAPSHOT.bytes);
  out.number(value.bytes);
  out.constant(SNAPSHOT.truncated);
  out.boolean(value.truncated);
  out.constant(SNAPSHOT.fetchedAt);
  isoFetchedAt(out, value.fetchedAtMs);
  out.constant(SNAPSHOT.expiresAt);
  isoExpiresAt(out, value.expiresAtMs);
  out.byte(CLOSE_OBJECT);
}

/**
 * `,"identity":` and the identity, or null. A frozen identity (as `identifyAgent` makes them, one per
 * identity and User-Agent, shared by all their requests) is encoded once and its bytes copied on every
 * later line (issue 8: the same ~100 bytes on every line of a client); any other is encoded each time.
 */
function identity(out: LineBuffer, value: DecisionIdentity | null): void {
  if (value === null) return out.constant(D.identityNull);
  const bytes = onceEncoded(identityRuns, value, identityText);
  if (bytes !== undefined) return out.constant(bytes);
  out.constant(D.identity);
  out.constant(IDENTITY.name);
  out.string(value.name);
  out.constant(IDENTITY.source);
  out.string(value.source);
  out.constant(IDENTITY.boundTokens);
  out.strings(value.boundTokens);
  out.constant(IDENTITY.claimedTokens);
  out.strings(value.claimedTokens);
  out.constant(IDENTITY.isMismatch);
  out.boolean(value.isMismatch);
  out.byte(CLOSE_OBJECT);
}

/** What {@link identity} writes for `value`, as text (JSON.stringify writes strings as {@link LineBuffer.string} does). */
function identityText(value: DecisionIdentity): string {
  return `${D.identity.text}${IDENTITY.name.text}${JSON.stringify(value.name)}${IDENTITY.source.text}${JSON.stringify(value.source)}${IDENTITY.boundTokens.text}${JSON.stringify(value.boundTokens)}${IDENTITY.claimedTokens.text}${JSON.stringify(value.claimedTokens)}${IDENTITY.isMismatch.text}${String(value.isMismatch)}}`;
}

/** `,"policy":{"rule":"<name>","action":"<action>"}` for a matched rule's facts, as text. */
function policyText(value: PolicyFacts): string {
  return `${D.policy.text}${JSON.stringify(value.rule)}${D.policyAction.text}${JSON.stringify(value.action)}}`;
}

/**
 * The bytes of frozen identities and policy facts, encoded once each (see {@link onceEncoded}): the
 * last one written of each kind, then all of them by object.
 */
interface EncodedOnce<T extends object> {
  last: T | undefined;
  lastBytes: ConstantBytes | undefined;
  readonly all: WeakMap<T, ConstantBytes>;
}
const identityRuns: EncodedOnce<DecisionIdentity> = { last: undefined, lastBytes: undefined, all: new WeakMap() };
const policyRuns: EncodedOnce<PolicyFacts> = { last: undefined, lastBytes: undefined, all: new WeakMap() };

/**
 * The bytes of a frozen object's fields on the line, from `runs` or encoded by `textOf` and kept there
 * for as long as the object lives; undefined for an object that is not frozen (the caller encodes it).
 * Only frozen objects, which cannot change once encoded (their arrays are the configuration's and the
 * pipeline's token lists, never changed after they are made). The last object is compared first: one
 * client's requests repeat it, and a comparison costs less than a WeakMap look-up, and much less than
 * `Object.isFrozen` (a runtime call), which only an object seen for the first time pays.
 */
function onceEncoded<T extends object>(runs: EncodedOnce<T>, value: T, textOf: (value: T) => string): ConstantBytes | undefined {
  if (value === runs.last) return runs.lastBytes;
  let bytes = runs.all.get(value);
  if (bytes === undefined) {
    if (!Object.isFrozen(value)) return undefined;
    bytes = run(textOf(value));
    runs.all.set(value, bytes);
  }
  runs.last = value;
  runs.lastBytes = bytes;
  return bytes;
}

/** The pacing facts' fields after `waitedMs` and the closing brace. */
function pacingAfterWaited(out: LineBuffer, value: PacingFacts): void {
  if (value.queueLength !== undefined) {
    out.constant(PACING.queueLength);
    out.number(value.queueLength);
  }
  if (value.identityQueueLength !== undefined) {
    out.constant(PACING.identityQueueLength);
    out.number(value.identityQueueLength);
  }
  if (value.limit !== undefined) {
    out.constant(PACING.limit);
    out.string(value.limit);
  }
  if (value.retryAfterSeconds !== undefined) {
    out.constant(PACING.retryAfterSeconds);
    out.number(value.retryAfterSeconds);
  }
  out.byte(CLOSE_OBJECT);
}

function upstream(out: LineBuffer, value: UpstreamFacts): void {
  let isFirst = 1;
  if (value.status !== undefined) {
    out.constant(UPSTREAM.status[1 - isFirst] as ConstantBytes);
    out.number(value.status);
    isFirst = 0;
  }
  if (value.error !== undefined) {
    out.constant(UPSTREAM.error[1 - isFirst] as ConstantBytes);
    out.string(value.error);
    isFirst = 0;
  }
  if (value.timedOut !== undefined) {
    out.constant(UPSTREAM.timedOut[1 - isFirst] as ConstantBytes);
    out.boolean(value.timedOut);
    isFirst = 0;
  }
  if (isFirst === 1) out.constant(EMPTY_OBJECT);
  else out.byte(CLOSE_OBJECT);
}

/**
 * A nullable string field and the key after it: `nullRun` (`,"a":null,"b":`) when null, else `keyRun`, the
 * string cut at `maxChars` UTF-16 units (`cut` listed under truncated when it was) and `nextKey`.
 */
function nullableStringThen(
  out: LineBuffer, value: string | null, nullRun: ConstantBytes, keyRun: ConstantBytes, nextKey: ConstantBytes, maxChars = Infinity, cut = '',
): void {
  if (value === null) return out.constant(nullRun);
  out.constant(keyRun);
  if (out.string(value, maxChars)) truncated.push(cut);
  out.constant(nextKey);
}

/**
 * A value that is usually one of a closed set, with the keys around it: its run (one copy) or, for any
 * other value, `runs.before`, the string cut at `maxChars` UTF-16 units (`cut` listed under truncated
 * when it was) and `runs.after`.
 */
function closedValue(out: LineBuffer, value: string, runs: ClosedRuns, maxChars = Infinity, cut = ''): void {
  const known = runs.byValue.get(value);
  if (known !== undefined) return out.constant(known);
  if (runs.before !== undefined) out.constant(runs.before);
  if (out.string(value, maxChars)) truncated.push(cut);
  out.constant(runs.after);
}

/** Items of a JSON array of strings, comma-separated (the brackets are in the runs around). */
function stringItems(out: LineBuffer, values: readonly string[]): void {
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out.byte(COMMA);
    out.string(values[i] as string);
  }
}

/** Origins kept with their JSON string's bytes (at most this many; then the table starts again). */
const MAX_KEPT_ORIGINS = 1024;
/** Longest origin kept, UTF-16 units (an origin is `scheme://host[:port]`; a longer one is written each time). */
const MAX_KEPT_ORIGIN_CHARS = 256;
/** Each origin met (up to {@link MAX_KEPT_ORIGINS}) and the bytes of its JSON string, quotes included. */
const originBytes = new Map<string, ConstantBytes>();

/**
 * The decision's origin as a JSON string, cut at the URL cap (listed under truncated when it was). A client's
 * requests go to a few origins, each one written as its bytes kept from its first line: a look-up in a map
 * by the string (whose hash V8 keeps) and a copy of words, instead of the string's encoding, ~700 instructions
 * fewer a line for a 22-character origin (issue 11). An origin that could be cut is never kept.
 */
function originString(out: LineBuffer, origin: string): void {
  const kept = originBytes.get(origin);
  if (kept !== undefined) return out.constant(kept);
  const start = out.length;
  if (out.string(origin, L.urlChars)) truncated.push(CUT.origin);
  if (origin.length > MAX_KEPT_ORIGIN_CHARS || origin.length > L.urlChars) return;
  if (originBytes.size >= MAX_KEPT_ORIGINS) originBytes.clear();
  const bytes = new ConstantBytes('');
  out.capture(bytes, start);
  originBytes.set(origin, bytes);
}

/** The Decision as toLoggedDecision logs it, after `"reason":"<reason>","origin":`: capped values, ISO snapshot times; its closing brace excluded. */
function decision(out: LineBuffer, d: AccessEntry['decision']): void {
  originString(out, d.origin);
  out.constant(D.path);
  if (out.string(d.path, L.urlChars)) truncated.push(CUT.path);
  matchStretch(out, d);
  snapshot(out, d.snapshot);
  identity(out, d.identity);
  // The operator policy rule (a name and a closed-set action) and the would-deny reason (closed set).
  const policyBytes = d.policy === undefined ? undefined : onceEncoded(policyRuns, d.policy, policyText);
  if (policyBytes !== undefined) out.constant(policyBytes);
  else if (d.policy !== undefined) {
    out.constant(D.policy);
    out.string(d.policy.rule);
    out.constant(D.policyAction);
    out.string(d.policy.action);
    out.byte(CLOSE_OBJECT);
  }
  tailStretch(out, d);
}

/** `,"productToken":…` through `,"snapshot":`: the matched token, group and rule, the same for a client's requests to one origin. */
const MATCH = {
  stretch: new LineStretch(),
  productToken: null as string | null,
  agentTokens: [] as string[],
  group: null as string | null,
  hasRule: false,
  ruleKind: '' as string,
  rulePattern: '',
  ruleLine: 0,
  crawlDelaySeconds: null as number | null,
};

function matchStretch(out: LineBuffer, d: AccessEntry['decision']): void {
  const m = MATCH;
  const rule = d.rule;
  if (
    m.stretch.isValid && d.productToken === m.productToken && d.group === m.group && d.crawlDelaySeconds === m.crawlDelaySeconds
    && (rule === null ? !m.hasRule : m.hasRule && rule.kind === m.ruleKind && rule.pattern === m.rulePattern && rule.line === m.ruleLine)
    && sameItems(m.agentTokens, d.agentTokens, d.agentTokens.length)
  ) return m.stretch.copy(out, truncated);
  m.stretch.begin(out, truncated);
  nullableStringThen(out, d.productToken, D.productTokenNull, D.productToken, D.agentTokens, L.productTokenChars, CUT.productToken);
  stringItems(out, d.agentTokens);
  out.constant(D.group);
  if (out.stringOrNull(d.group, L.otherChars)) truncated.push(CUT.group);
  ruleThenDelayKey(out, rule);
  if (d.crawlDelaySeconds === null) out.constant(D.crawlDelayNullSnapshot);
  else {
    out.number(d.crawlDelaySeconds);
    out.constant(D.snapshot);
  }
  m.stretch.end(out, truncated);
  m.productToken = d.productToken;
  keepItems(m.agentTokens, d.agentTokens, d.agentTokens.length);
  m.group = d.group;
  m.hasRule = rule !== null;
  if (rule !== null) {
    m.ruleKind = rule.kind;
    m.rulePattern = rule.pattern;
    m.ruleLine = rule.line;
  }
  m.crawlDelaySeconds = d.crawlDelaySeconds;
}

/**
 * The decision's last fields, `wouldDeny` through pacing's `"waitedMs":` (absent ones as undefined), as last
 * written: the same request after request to one origin. `waitedMs` itself is not in it: it changes whenever
 * requests wait for their start (a Crawl-delay).
 */
const TAIL = {
  stretch: new LineStretch(),
  wouldDeny: undefined as string | undefined,
  detail: undefined as string | undefined,
  proxyAuthenticate: undefined as string | undefined,
  retryAfterSeconds: undefined as number | undefined,
  hasPacing: false,
  delayMs: 0,
};

/** After pacing's `waitedMs` (or after the tail when there is no pacing): pacing's other facts and `upstream`. */
const AFTER_WAITED = {
  stretch: new LineStretch(),
  hasPacing: false,
  queueLength: undefined as number | undefined,
  identityQueueLength: undefined as number | undefined,
  limit: undefined as string | undefined,
  retryAfterSeconds: undefined as number | undefined,
  hasUpstream: false,
  status: undefined as number | undefined,
  error: undefined as string | undefined,
  timedOut: undefined as boolean | undefined,
};

function tailStretch(out: LineBuffer, d: AccessEntry['decision']): void {
  const t = TAIL;
  const p = d.pacing;
  if (
    t.stretch.isValid && d.wouldDeny === t.wouldDeny && d.detail === t.detail && d.proxyAuthenticate === t.proxyAuthenticate
    && d.retryAfterSeconds === t.retryAfterSeconds && (p === undefined ? !t.hasPacing : t.hasPacing && p.delayMs === t.delayMs)
  ) t.stretch.copy(out, truncated);
  else {
    t.stretch.begin(out, truncated);
    tailFields(out, d);
    if (p !== undefined) {
      out.constant(D.pacing);
      out.number(p.delayMs);
      out.constant(PACING.waitedMs);
    }
    t.stretch.end(out, truncated);
    t.wouldDeny = d.wouldDeny;
    t.detail = d.detail;
    t.proxyAuthenticate = d.proxyAuthenticate;
    t.retryAfterSeconds = d.retryAfterSeconds;
    t.hasPacing = p !== undefined;
    if (p !== undefined) t.delayMs = p.delayMs;
  }
  if (p !== undefined) out.number(Math.round(p.waitedMs));
  afterWaitedStretch(out, p, d.upstream);
}

function afterWaitedStretch(out: LineBuffer, p: PacingFacts | undefined, u: UpstreamFacts | undefined): void {
  const a = AFTER_WAITED;
  if (
    a.stretch.isValid
    && (p === undefined ? !a.hasPacing : a.hasPacing && p.queueLength === a.queueLength && p.identityQueueLength === a.identityQueueLength
      && p.limit === a.limit && p.retryAfterSeconds === a.retryAfterSeconds)
    && (u === undefined ? !a.hasUpstream : a.hasUpstream && u.status === a.status && u.error === a.error && u.timedOut === a.timedOut)
  ) return a.stretch.copy(out, truncated);
  a.stretch.begin(out, truncated);
  if (p !== undefined) pacingAfterWaited(out, p);
  if (u !== undefined) {
    out.constant(D.upstream);
    upstream(out, u);
  }
  a.stretch.end(out, truncated);
  a.hasPacing = p !== undefined;
  if (p !== undefined) {
    a.queueLength = p.queueLength;
    a.identityQueueLength = p.identityQueueLength;
    a.limit = p.limit;
    a.retryAfterSeconds = p.retryAfterSeconds;
  }
  a.hasUpstream = u !== undefined;
  if (u !== undefined) {
    a.status = u.status;
    a.error = u.error;
    a.timedOut = u.timedOut;
  }
}

/** `wouldDeny` through `retryAfterSeconds`, each when present. */
function tailFields(out: LineBuffer, d: AccessEntry['decision']): void {
  if (d.wouldDeny !== undefined) {
    out.constant(D.wouldDeny);
    out.string(d.wouldDeny);
  }
  if (d.detail !== undefined) {
    out.constant(D.detail);
    if (out.string(d.detail, L.otherChars)) truncated.push(CUT.detail);
  }
  if (d.proxyAuthenticate !== undefined) {
    out.constant(D.proxyAuthenticate);
    out.string(d.proxyAuthenticate);
  }
  if (d.retryAfterSeconds !== undefined) {
    out.constant(D.retryAfterSeconds);
    out.number(d.retryAfterSeconds);
  }
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
  // Only when something was cut: a store to an array's length is a generic store IC call in optimised code (~150 instructions).
  if (truncated.length !== 0) truncated.length = 0;
  const { request, timings, productTokens } = entry;
  const tokenCount = Math.min(productTokens.length, L.productTokens);
  if (productTokens.length > L.productTokens) truncated.push(CUT.productTokens);
  out.constant(LINE_START);
  isoTime(out, nowMs);
  if (bindings !== lastBindings) {
    lastBindings = bindings;
    lastBindingsBytes = utf8Bytes(bindings);
  }
  out.bytes(lastBindingsBytes);
  out.constant(K.requestId);
  out.string(entry.requestId);
  nullableStringThen(out, request.clientRequestId ?? null, K.clientRequestIdNull, K.clientRequestId, K.startedAt, L.clientRequestIdChars, CUT.clientRequestId);
  isoStartedAt(out, entry.startedAtMs);
  addressStretch(out, entry.client.address);
  out.number(entry.client.port);
  agentStretch(out, entry, tokenCount);
  if (out.string(request.url, L.urlChars)) truncated.push(CUT.url);
  responseStretch(out, entry);
  sizesAndTimes(out, entry);
  if (timings.upstreamStartedAtMs == null) out.null();
  else isoUpstreamStartedAt(out, timings.upstreamStartedAtMs);
  out.constant(K.durationMs);
  out.number(Math.round(timings.durationMs));
  verdictStretch(out, entry);
  decision(out, entry.decision);
  if (truncated.length === 0) return out.constant(DECISION_END_LINE_END);
  out.constant(K.truncated);
  out.strings(truncated);
  out.constant(LINE_END);
}

/**
 * What {@link writeAccessLog} reads of a logger, read once per logger rather than per line: pino's
 * logger is reached through symbol-keyed properties that V8 loads megamorphically (issue 11,
 * ~550 instructions a line). The destination never changes for a logger; its level does, and
 * pino emits `level-change` on the logger at every level set (`logger.level = ...`, as a config
 * reload does), which reads it again. The bindings are still read per line (`setBindings` emits
 * nothing).
 */
interface AccessLogTarget {
  readonly logger: Logger;
  /** `logger.isLevelEnabled('info')`, as of the last `level-change`. */
  isInfoEnabled: boolean;
  /** `encodedLineSinkOf(logger)`. */
  readonly sink: EncodedLineSink | undefined;
}

/** The target of the logger last written to (one process logger: a hit on every line). */
let lastTarget: AccessLogTarget | undefined;
/** Every logger's target, each made once (its `level-change` listener added once). */
const targets = new WeakMap<Logger, AccessLogTarget>();

/** The {@link AccessLogTarget} of `logger`, made (and its level followed) at its first use. */
function accessLogTargetOf(logger: Logger): AccessLogTarget {
  const last = lastTarget;
  if (last !== undefined && last.logger === logger) return last;
  let target = targets.get(logger);
  if (target === undefined) {
    const made: AccessLogTarget = { logger, isInfoEnabled: logger.isLevelEnabled('info'), sink: encodedLineSinkOf(logger) };
    logger.on('level-change', () => {
      made.isInfoEnabled = logger.isLevelEnabled('info');
    });
    targets.set(logger, made);
    target = made;
  }
  lastTarget = target;
  return target;
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
  const target = accessLogTargetOf(logger);
  if (!target.isInfoEnabled) return;
  const sink = target.sink;
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
