/**
 * The generators and the reference shared by the access line's tests (access-line.test.ts and
 * access-line-stretches.test.ts): awkward values for every field of an entry (any UTF-16 unit, lone
 * surrogates, control characters, quotes, long values past the caps, any number including NaN and
 * ±Infinity, null and absent fields), and the old serializer's line (test/audit/old-access-line.ts,
 * JSON.stringify's byte for byte) with pino's framing.
 */
import * as fc from 'fast-check';
import { createIsoFormatter } from '../../src/audit/iso-time.js';
import { toAccessLogRecord, type AccessLogRecord, type LoggedDecision, type LoggedSnapshot } from '../../src/audit/access-log.js';
import type { AccessEntry } from '../../src/audit/access-entry.js';
import { DECISION_REASONS, type Decision, type DecisionIdentity, type MatchedRule, type PacingFacts, type SnapshotInfo, type UpstreamFacts } from '../../src/policy/decision.js';
import { serializeAccessFields } from './old-access-line.js';
import { makeEntry } from './factories.js';

/** Any UTF-16 code unit: lone surrogates, control characters, quotes, backslashes, U+2028. */
export const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
/** Mostly the characters that need escaping, so short strings hit them often. */
export const trickyUnit = fc.constantFrom('"', '\\', '\n', '\r', '\t', '\u0000', '\u001f', '\u007f', '\u2028', '\ud83d', '\ude00', 'é', '/', '<');
export const text = fc.oneof(
  fc.string({ unit: anyUnit, maxLength: 40 }),
  fc.string({ unit: trickyUnit, maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 3000 }),
);
/** Every number JSON.stringify treats specially, and ordinary ones. */
export const anyNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.maxSafeNat(),
  fc.integer({ min: 0, max: 9_999_999 }).map((low) => 1_700_000_000_000 + low), // ms timestamps, the low nine digits with leading zeros
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 1e21, 1e-7, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 2 ** 31 - 1, 2 ** 31, 1e9, 5_000_000_007, 0.1 + 0.2, 1_700_000_000_123.456),
);
export const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined });
export const nullable = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { nil: null });

/** Arbitraries for every key of `T`, in its declared order: a key added to the type must be added here (typecheck). */
export type Model<T> = { [K in keyof Required<T>]: fc.Arbitrary<T[K]> };

export const ruleModel: Model<MatchedRule> = { kind: fc.constantFrom('allow', 'disallow'), pattern: text, line: anyNumber };
export const snapshotModel: Model<LoggedSnapshot> = {
  url: text,
  state: fc.constantFrom('ok', 'unavailable', 'unreachable'),
  status: optional(anyNumber),
  error: optional(text),
  fetchedAtMs: anyNumber,
  expiresAtMs: anyNumber,
  bytes: anyNumber,
  truncated: fc.boolean(),
  fetchedAt: text,
  expiresAt: text,
};
export const pacingModel: Model<PacingFacts> = {
  delayMs: anyNumber,
  waitedMs: anyNumber,
  queueLength: anyNumber,
  identityQueueLength: anyNumber,
  limit: fc.constantFrom('max-queue-per-identity', 'max-queue', 'max-wait'),
  retryAfterSeconds: anyNumber,
};
export const identityModel: Model<DecisionIdentity> = {
  name: text,
  source: fc.constantFrom('credentials', 'client-range'),
  boundTokens: fc.array(text, { maxLength: 3 }),
  claimedTokens: fc.array(text, { maxLength: 3 }),
  isMismatch: fc.boolean(),
};
export const upstreamModel: Model<UpstreamFacts> = { status: anyNumber, error: text, timedOut: fc.boolean() };
export const decisionModel: Model<LoggedDecision> = {
  verdict: fc.constantFrom('allow', 'deny'),
  reason: fc.constantFrom(...DECISION_REASONS),
  origin: text,
  path: text,
  productToken: nullable(text),
  agentTokens: fc.array(text, { maxLength: 4 }),
  group: nullable(text),
  rule: nullable(fc.record(ruleModel)),
  crawlDelaySeconds: nullable(anyNumber),
  snapshot: nullable(fc.record(snapshotModel)),
  identity: nullable(fc.record(identityModel)),
  policy: fc.record({ rule: text, action: fc.constantFrom('deny', 'allow', 'report', 'pace') }),
  wouldDeny: fc.constantFrom(...DECISION_REASONS),
  detail: text,
  proxyAuthenticate: text,
  retryAfterSeconds: anyNumber,
  pacing: fc.record(pacingModel, { requiredKeys: ['delayMs', 'waitedMs'] }),
  upstream: fc.record(upstreamModel, { requiredKeys: [] }),
};
export const recordModel: Model<AccessLogRecord> = {
  requestId: text,
  clientRequestId: nullable(text),
  startedAt: text,
  clientAddress: text,
  clientPort: anyNumber,
  identity: nullable(text),
  userAgent: nullable(text),
  productTokens: fc.array(text, { maxLength: 4 }),
  method: text,
  url: text,
  via: fc.constantFrom('http', 'https-intercepted', 'http-tunnelled', 'connect'),
  status: anyNumber,
  upstreamStatus: nullable(anyNumber),
  bytesSent: anyNumber,
  bytesReceived: anyNumber,
  clientAborted: fc.boolean(),
  queueWaitMs: nullable(anyNumber),
  upstreamMs: nullable(anyNumber),
  upstreamStartedAt: nullable(text),
  durationMs: anyNumber,
  error: nullable(text),
  decision: fc.record(decisionModel, {
    requiredKeys: ['verdict', 'reason', 'origin', 'path', 'productToken', 'agentTokens', 'group', 'rule', 'crawlDelaySeconds', 'snapshot', 'identity'],
  }),
  truncated: fc.array(text, { maxLength: 3 }),
};
export const anyRecord: fc.Arbitrary<AccessLogRecord> = fc.record(recordModel, {
  requiredKeys: (Object.keys(recordModel) as (keyof AccessLogRecord)[]).filter((key) => key !== 'truncated'),
});

/** A Decision's snapshot as the robots cache makes it (times often real ones). */
export const anySnapshotInfo: fc.Arbitrary<SnapshotInfo> = fc.record({
  url: text,
  state: snapshotModel.state,
  status: optional(anyNumber),
  error: optional(text),
  fetchedAtMs: fc.oneof(anyNumber, fc.integer({ min: 0, max: 4_102_444_800_000 })),
  expiresAtMs: anyNumber,
  bytes: anyNumber,
  truncated: fc.boolean(),
} satisfies Model<SnapshotInfo>);

/** Entries as the proxy makes them: the record builder's own input, with every reason and the optional facts. */
export const anyEntry: fc.Arbitrary<AccessEntry> = fc
  .record({
    decision: fc.record(
      {
        ...decisionModel,
        snapshot: nullable(anySnapshotInfo),
      },
      { requiredKeys: ['verdict', 'reason', 'origin', 'path', 'productToken', 'agentTokens', 'group', 'rule', 'crawlDelaySeconds', 'snapshot', 'identity'] },
    ) as fc.Arbitrary<Decision>,
    requestId: text,
    startedAtMs: fc.oneof(anyNumber, fc.integer({ min: 0, max: 4_102_444_800_000 })),
    clientRequestId: optional(nullable(text)),
    identity: optional(nullable(text)),
    userAgent: nullable(text),
    productTokens: fc.array(text, { maxLength: 20 }),
    upstreamStartedAtMs: optional(nullable(fc.double({ min: 0, max: 4e12, noNaN: true }))),
  })
  .map(({ decision, requestId, startedAtMs, clientRequestId, identity, userAgent, productTokens, upstreamStartedAtMs }) => {
    const entry = makeEntry({
      decision,
      requestId,
      startedAtMs,
      productTokens,
      request: { userAgent, ...(clientRequestId === undefined ? {} : { clientRequestId }) },
      timings: upstreamStartedAtMs === undefined ? {} : { upstreamStartedAtMs },
    });
    return identity === undefined ? entry : { ...entry, identity };
  });

/** The line the old serializer wrote for `entry` (test/audit/old-access-line.ts), as UTF-8, with pino's framing. */
export function oldLine(entry: AccessEntry, bindings: string, nowMs: number): Buffer {
  const time = JSON.stringify(createIsoFormatter()(nowMs));
  return Buffer.from(`{"level":"info","time":${time}${bindings},${serializeAccessFields(toAccessLogRecord(entry))},"msg":"request"}\n`, 'utf8');
}

/** Bindings as pino holds them: a plain process's, and a child's with characters to escape. */
export const anyBindings = fc.oneof(
  fc.constant(`,"pid":${process.pid},"hostname":"vm"`),
  text.map((value) => `,"pid":1,"hostname":"h","component":${JSON.stringify(value)}`),
);
export const anyNowMs = fc.oneof(fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.constantFrom(-1, NaN, 1_700_000_000_999.9, 253_402_300_800_000));
