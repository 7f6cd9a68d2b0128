// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACCESS_LOG_FIELD as F,
  ACCESS_LOG_LIMITS,
  ACCESS_LOG_MESSAGE,
  toAccessLogRecord,
} from '../../src/audit/access-log.js';
import { writeAccessLog } from '../../src/audit/access-line.js';
import { createLogger } from '../../src/audit/logger.js';
import { CapturedLines, T0_MS, makeDecision, makeEntry, makeSnapshot } from './factories.js';

/** Writes `entry` through a real logger and returns the one parsed line. */
function logOnce(entry: Parameters<typeof writeAccessLog>[1]): Record<string, unknown> {
  const out = new CapturedLines();
  writeAccessLog(createLogger({ level: 'info', destination: out }), entry);
  const records = out.records();
  assert.equal(records.length, 1, 'exactly one line per request');
  return records[0] ?? {};
}

describe('writeAccessLog', () => {
  it('writes one info line with the decision nested, unchanged, and the request facts at the top', () => {
    const record = logOnce(
      makeEntry({
        timings: { queueWaitMs: 12.5, upstreamMs: null, durationMs: 14 },
        productTokens: ['gptbot', 'mozilla'],
      }),
    );
    assert.equal(record.level, 'info');
    assert.equal(record.msg, ACCESS_LOG_MESSAGE);
    assert.equal(record[F.requestId], '0123456789ab-1');
    assert.equal(record[F.clientRequestId], null);
    assert.equal(record[F.startedAt], new Date(T0_MS).toISOString());
    assert.equal(record[F.clientAddress], '127.0.0.1');
    assert.equal(record[F.clientPort], 50123);
    assert.equal(record[F.userAgent], 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)');
    assert.deepEqual(record[F.productTokens], ['gptbot', 'mozilla']);
    assert.equal(record[F.method], 'GET');
    assert.equal(record[F.url], 'http://127.0.0.1:8081/private/page?x=1');
    assert.equal(record[F.via], 'http');
    assert.equal(record[F.status], 403);
    assert.equal(record[F.upstreamStatus], null);
    assert.equal(record[F.queueWaitMs], 13, 'whole milliseconds');
    assert.equal(record[F.durationMs], 14);
    assert.equal(record[F.error], null);
    assert.equal(record[F.truncated], undefined, 'nothing was cut');
    const decision = record[F.decision] as Record<string, unknown>;
    assert.equal(decision.verdict, 'deny');
    assert.equal(decision.reason, 'rule-disallow');
    assert.equal(decision.origin, 'http://127.0.0.1:8081');
    assert.equal(decision.group, 'GPTBot');
    assert.deepEqual(decision.rule, { kind: 'disallow', pattern: '/private/', line: 3 });
    const snapshot = decision.snapshot as Record<string, unknown>;
    assert.equal(snapshot.state, 'ok');
    assert.equal(snapshot.status, 200);
    assert.equal(snapshot.fetchedAtMs, T0_MS);
    assert.equal(snapshot.fetchedAt, new Date(T0_MS).toISOString());
    assert.equal(snapshot.expiresAt, new Date(T0_MS + 86_400_000).toISOString());
    for (const flattened of ['verdict', 'reason', 'origin', 'rule', 'group']) {
      assert.equal(flattened in record, false, `${flattened} is not re-derived at the top level`);
    }
  });

  it("logs the client's own X-Request-Id apart from the proxy's id, capped", () => {
    const record = logOnce(makeEntry({ requestId: 'ffffffffffff-z', request: { clientRequestId: 'abc-123' } }));
    assert.equal(record[F.requestId], 'ffffffffffff-z');
    assert.equal(record[F.clientRequestId], 'abc-123');
    const long = logOnce(makeEntry({ request: { clientRequestId: 'x'.repeat(1000) } }));
    assert.equal((long[F.clientRequestId] as string).length, ACCESS_LOG_LIMITS.clientRequestIdChars);
    assert.deepEqual(long[F.truncated], [F.clientRequestId]);
  });

  it('carries upstream facts and the error code of a failed exchange', () => {
    const record = logOnce(
      makeEntry({
        decision: makeDecision({ verdict: 'allow', reason: 'upstream-error', rule: null, detail: 'connect ECONNREFUSED' }),
        timings: { queueWaitMs: 0, upstreamMs: 4, durationMs: 5 },
        response: { status: 502, upstreamStatus: null, bytesSent: 90, bytesReceived: 7 },
        error: 'ECONNREFUSED',
      }),
    );
    assert.equal((record[F.decision] as Record<string, unknown>).reason, 'upstream-error');
    assert.equal((record[F.decision] as Record<string, unknown>).detail, 'connect ECONNREFUSED');
    assert.equal(record[F.status], 502);
    assert.equal(record[F.upstreamMs], 4);
    assert.equal(record[F.bytesReceived], 7);
    assert.equal(record[F.error], 'ECONNREFUSED');
  });

  it('keeps null User-Agent and a decision without snapshot or rule', () => {
    const record = logOnce(
      makeEntry({
        request: { userAgent: null, method: 'CONNECT', url: '127.0.0.1:8443', via: 'connect' },
        decision: makeDecision({ verdict: 'deny', reason: 'tunnel-denied', rule: null, group: null, productToken: null, snapshot: null }),
      }),
    );
    assert.equal(record[F.userAgent], null);
    assert.equal(record[F.via], 'connect');
    const decision = record[F.decision] as Record<string, unknown>;
    assert.equal(decision.reason, 'tunnel-denied');
    assert.equal(decision.snapshot, null);
    assert.equal(decision.rule, null);
  });

  it('caps client-controlled values and lists what it cut', () => {
    const longUa = `Bot/1.0 ${'x'.repeat(5000)}`;
    const longUrl = `http://127.0.0.1:8081/${'a'.repeat(10_000)}`;
    const tokens = Array.from({ length: 40 }, (_, i) => `t${i}`);
    const record = logOnce(
      makeEntry({
        request: { userAgent: longUa, url: longUrl },
        productTokens: tokens,
        decision: makeDecision({ path: `/${'a'.repeat(10_000)}`, rule: { kind: 'disallow', pattern: `/${'p'.repeat(5000)}`, line: 9 } }),
      }),
    );
    assert.equal((record[F.userAgent] as string).length, ACCESS_LOG_LIMITS.userAgentChars);
    assert.ok(longUa.startsWith(record[F.userAgent] as string));
    assert.equal((record[F.url] as string).length, ACCESS_LOG_LIMITS.urlChars);
    assert.equal((record[F.productTokens] as string[]).length, ACCESS_LOG_LIMITS.productTokens);
    const decision = record[F.decision] as { path: string; rule: { pattern: string; line: number } };
    assert.equal(decision.path.length, ACCESS_LOG_LIMITS.urlChars);
    assert.equal(decision.rule.pattern.length, ACCESS_LOG_LIMITS.otherChars);
    assert.equal(decision.rule.line, 9);
    assert.deepEqual(record[F.truncated], [F.productTokens, F.userAgent, F.url, 'decision.path', 'decision.rule.pattern']);
  });

  it('never splits a surrogate pair when cutting, and keeps control characters inside the one line', () => {
    const ua = `${'x'.repeat(ACCESS_LOG_LIMITS.userAgentChars - 1)}\u{1F600}tail`;
    const record = toAccessLogRecord(makeEntry({ request: { userAgent: ua } }));
    assert.equal(record[F.userAgent], 'x'.repeat(ACCESS_LOG_LIMITS.userAgentChars - 1));
    const line = logOnce(makeEntry({ request: { userAgent: 'evil\n{"reason":"rule-allow"}\r\n' } }));
    assert.equal(line[F.userAgent], 'evil\n{"reason":"rule-allow"}\r\n');
  });

  it('toAccessLogRecord is pure: it does not modify the entry', () => {
    const entry = makeEntry({ decision: makeDecision({ snapshot: makeSnapshot({ state: 'unavailable', status: 404 }) }) });
    const before = structuredClone(entry);
    const record = toAccessLogRecord(entry);
    assert.deepEqual(entry, before);
    assert.equal(record[F.decision].snapshot?.state, 'unavailable');
  });
});
