import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_RETRY_AFTER_SECONDS, renderProxyResponse, statusFor, decisionHeaderValue, toDelaySeconds } from '../../src/proxy/responses.js';
import { decide, decideWithoutRobots } from '../../src/policy/decide.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import type { Decision } from '../../src/policy/decision.js';

const nowMs = Date.UTC(2026, 10, 30, 12, 0, 0);
const info = { url: 'http://a.example/robots.txt', status: 200, error: undefined, fetchedAtMs: nowMs - 5000, expiresAtMs: nowMs + 30_000, bytes: 40, truncated: false };

function denied(): Decision {
  const robots = parseRobotsTxt('User-agent: *\nDisallow: /private/\n');
  return decide({ info: { ...info, state: 'ok' }, robots }, { origin: 'http://a.example', pathAndQuery: '/private/x', productTokens: ['ExampleBot'] });
}

describe('renderProxyResponse', () => {
  it('explains a disallow in text/plain: robots.txt, fetch time, token, group, rule, line, path', () => {
    const r = renderProxyResponse(denied(), { accept: undefined, nowMs });
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
    assert.match(r.headers['content-type']!, /^text\/plain/);
    for (const part of ['http://a.example/robots.txt', new Date(info.fetchedAtMs).toISOString(), 'ExampleBot', 'user-agent: *', 'disallow: /private/', 'line 2', '/private/x']) {
      assert.ok(r.body.includes(part), `body mentions ${part}:\n${r.body}`);
    }
  });

  it('answers JSON with the decision when the client accepts application/json', () => {
    const r = renderProxyResponse(denied(), { accept: 'application/json, */*', nowMs });
    const body = JSON.parse(r.body);
    assert.equal(body.status, 403);
    assert.equal(body.decision.reason, 'rule-disallow');
    assert.equal(body.decision.rule.line, 2);
  });

  it('gives 503 + Retry-After until the retry for an unreachable robots.txt', () => {
    const d = decide({ info: { ...info, state: 'unreachable', status: 500 }, robots: null }, { origin: 'http://a.example', pathAndQuery: '/', productTokens: [] });
    const r = renderProxyResponse(d, { accept: undefined, nowMs });
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '30');
  });

  it('gives 429 + Retry-After for a full queue, with the delay and queue length', () => {
    const d: Decision = { ...denied(), verdict: 'deny', reason: 'queue-full', pacing: { delayMs: 500, waitedMs: 0, queueLength: 7, retryAfterSeconds: 4 } };
    const r = renderProxyResponse(d, { accept: undefined, nowMs });
    assert.equal(r.status, 429);
    assert.equal(r.headers['retry-after'], '4');
    assert.match(r.body, /queue length: +7/);
    assert.match(r.body, /0\.5 s between requests/);
  });

  it('writes every Retry-After as delay-seconds (1*DIGIT), however long or broken the wait', () => {
    for (const retryAfterSeconds of [1e21, Infinity, NaN, -5, 0.2, 86_400.5, 2 ** 40]) {
      const d: Decision = { ...denied(), verdict: 'deny', reason: 'queue-full', pacing: { delayMs: 1, waitedMs: 0, queueLength: 1, retryAfterSeconds } };
      const value = renderProxyResponse(d, { accept: undefined, nowMs }).headers['retry-after'];
      assert.match(value ?? '', /^[1-9]\d*$/, `${retryAfterSeconds} -> ${value}`);
      assert.ok(Number(value) <= MAX_RETRY_AFTER_SECONDS);
    }
    for (const expiresAtMs of [nowMs + 1e24, Infinity, NaN, nowMs - 10_000]) {
      const d = decide({ info: { ...info, state: 'unreachable', status: 503, expiresAtMs }, robots: null }, { origin: 'http://a.example', pathAndQuery: '/', productTokens: [] });
      const r = renderProxyResponse(d, { accept: 'application/json', nowMs });
      assert.match(r.headers['retry-after'] ?? '', /^[1-9]\d*$/, `${expiresAtMs} -> ${r.headers['retry-after']}`);
      assert.equal(JSON.parse(r.body).retryAfterSeconds, Number(r.headers['retry-after']));
    }
  });

  it('toDelaySeconds rounds up to whole seconds within [1, 2^31-1]', () => {
    assert.deepEqual(
      [0, 0.001, 1, 1.2, 86_400, 1e21, Infinity, NaN, -1].map(toDelaySeconds),
      [1, 1, 1, 2, 86_400, MAX_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS, 1],
    );
  });

  it('maps every refusal reason to its status', () => {
    const table: Array<[Decision, number]> = [
      [decideWithoutRobots('bad-request'), 400],
      [decideWithoutRobots('target-private-network'), 403],
      [decideWithoutRobots('tunnel-denied'), 403],
      [decideWithoutRobots('misdirected'), 421],
      [decideWithoutRobots('internal-error'), 500],
      [{ ...decideWithoutRobots('upstream-error'), upstream: { error: 'ECONNREFUSED' } }, 502],
      [{ ...decideWithoutRobots('upstream-error'), upstream: { error: 'UND_ERR_HEADERS_TIMEOUT', timedOut: true } }, 504],
    ];
    for (const [d, status] of table) assert.equal(statusFor(d), status, d.reason);
    assert.equal(decisionHeaderValue(decideWithoutRobots('bad-request')), 'deny; reason=bad-request');
  });
});
