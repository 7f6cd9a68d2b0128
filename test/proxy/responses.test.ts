// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_RETRY_AFTER_SECONDS, isCertificateError, renderProxyResponse, statusFor, decisionHeaderValue, SHUTDOWN_RETRY_AFTER_SECONDS, toDelaySeconds } from '../../src/proxy/responses.js';
import { clientErrorStatus } from '../../src/proxy/raw-response.js';
import { decide, decideWithoutRobots } from '../../src/policy/decide.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import type { Decision } from '../../src/policy/decision.js';

const nowMs = Date.UTC(2026, 10, 30, 12, 0, 0);
const requestId = '0123456789ab-1';
/** What Chromium and Firefox send for a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const info = { url: 'http://a.example/robots.txt', status: 200, error: undefined, fetchedAtMs: nowMs - 5000, expiresAtMs: nowMs + 30_000, bytes: 40, truncated: false };

function denied(): Decision {
  const robots = parseRobotsTxt('User-agent: *\nDisallow: /private/\n');
  return decide({ info: { ...info, state: 'ok' }, robots }, { origin: 'http://a.example', pathAndQuery: '/private/x', productTokens: ['ExampleBot'] });
}

describe('renderProxyResponse', () => {
  it('explains a disallow in text/plain: robots.txt, fetch time, token, group, rule, line, path', () => {
    const r = renderProxyResponse(denied(), { accept: undefined, nowMs, requestId });
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow');
    assert.match(r.headers['content-type']!, /^text\/plain/);
    for (const part of ['http://a.example/robots.txt', new Date(info.fetchedAtMs).toISOString(), 'ExampleBot', 'user-agent: *', 'disallow: /private/', 'line 2', '/private/x']) {
      assert.ok(r.body.includes(part), `body mentions ${part}:\n${r.body}`);
    }
  });

  it('answers JSON with the decision when the client accepts application/json', () => {
    const r = renderProxyResponse(denied(), { accept: 'application/json, */*', nowMs, requestId });
    const body = JSON.parse(r.body);
    assert.equal(body.status, 403);
    assert.equal(body.decision.reason, 'rule-disallow');
    assert.equal(body.decision.rule.line, 2);
    assert.equal(body.requestId, requestId);
    assert.equal(body.time, new Date(nowMs).toISOString());
  });

  it('names the request id and the time in the header and every body', () => {
    for (const accept of [undefined, '*/*', 'application/json', BROWSER_ACCEPT]) {
      const r = renderProxyResponse(denied(), { accept, nowMs, requestId });
      assert.equal(r.headers['x-robots-proxy-request-id'], requestId, String(accept));
      assert.ok(r.body.includes(requestId), `${accept}: ${r.body}`);
      assert.ok(r.body.includes('2026-11-30T12:00:00.000Z'), `${accept}: ${r.body}`);
    }
    assert.match(renderProxyResponse(denied(), { accept: undefined, nowMs, requestId }).body, /quote the request id/);
  });

  it('negotiates the format by Accept and its q-values; text/plain when nothing fits', () => {
    const typeFor = (accept: string | undefined) => renderProxyResponse(denied(), { accept, nowMs, requestId }).headers['content-type'];
    assert.match(typeFor(undefined)!, /^text\/plain/);
    assert.match(typeFor('*/*')!, /^text\/plain/, 'curl, wget and most bots');
    assert.match(typeFor('image/png')!, /^text\/plain/);
    assert.match(typeFor(BROWSER_ACCEPT)!, /^text\/html/);
    assert.match(typeFor('application/json')!, /^application\/json/);
    assert.match(typeFor('text/html;q=0.5, application/json')!, /^application\/json/);
    assert.match(typeFor('application/json;q=0.1, text/plain')!, /^text\/plain/);
  });

  it('renders HTML for browsers with every value escaped and nothing that runs', () => {
    const evil = `<script>alert(1)</script>"'&<img src=x onerror=alert(2)>`;
    const d: Decision = {
      ...denied(),
      origin: `http://${evil}`,
      path: `/${evil}`,
      group: evil,
      agentTokens: [evil],
      productToken: evil,
      rule: { kind: 'disallow', pattern: evil, line: 7 },
      detail: evil,
      upstream: { error: evil },
      snapshot: { ...denied().snapshot!, url: `http://${evil}/robots.txt`, error: evil },
    };
    const r = renderProxyResponse(d, { accept: BROWSER_ACCEPT, nowMs, requestId: `${requestId}<b>` });
    assert.equal(r.status, 403);
    assert.match(r.headers['content-type']!, /^text\/html; charset=utf-8$/);
    assert.match(r.headers['content-security-policy']!, /default-src 'none'/);
    assert.ok(!r.body.includes('<script'), r.body);
    assert.ok(!r.body.includes('<img'), r.body);
    assert.ok(!r.body.includes('<b>'), r.body);
    assert.ok(r.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;&lt;img src=x onerror=alert(2)&gt;'), r.body);
    // Only the page's own markup: every tag in the body is one the renderer writes.
    const tags = new Set([...r.body.matchAll(/<\/?([a-zA-Z!][a-zA-Z0-9]*)/g)].map((m) => m[1]!.toLowerCase()));
    assert.deepEqual([...tags].sort(), ['!doctype', 'body', 'h1', 'head', 'html', 'meta', 'p', 'style', 'table', 'td', 'th', 'title', 'tr']);
    assert.match(r.body, /<h1>403 Forbidden<\/h1>/);
    assert.match(r.body, /<th>rule<\/th><td>disallow: .*\(line 7\)<\/td>/);
  });

  it('names the setting that allows a private target', () => {
    const d = decideWithoutRobots('target-private-network', { origin: 'http://127.0.0.1:8000', detail: '127.0.0.1 is a loopback, private, link-local or other non-public address' });
    const r = renderProxyResponse(d, { accept: undefined, nowMs, requestId });
    assert.equal(r.status, 403);
    assert.match(r.body, /upstream\.allowPrivateNetworks: true/);
    assert.match(r.body, /config\/local\.yaml/);
    assert.doesNotMatch(r.body, /127\.0\.0\.1 is 127\.0\.0\.1/);
  });

  it('gives the HTTP parser refusals their own status with the reason bad-request', () => {
    assert.equal(clientErrorStatus('HPE_HEADER_OVERFLOW'), 431);
    assert.equal(clientErrorStatus('ERR_HTTP_REQUEST_TIMEOUT'), 408);
    assert.equal(clientErrorStatus('HPE_INVALID_METHOD'), 400);
    assert.equal(clientErrorStatus(undefined), 400);
    const r = renderProxyResponse(decideWithoutRobots('bad-request', { detail: 'malformed request: HPE_HEADER_OVERFLOW' }), { accept: undefined, nowMs, requestId, status: 431 });
    assert.equal(r.status, 431);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=bad-request');
  });

  it('gives 503 + Retry-After until the retry for an unreachable robots.txt', () => {
    const d = decide({ info: { ...info, state: 'unreachable', status: 500 }, robots: null }, { origin: 'http://a.example', pathAndQuery: '/', productTokens: [] });
    const r = renderProxyResponse(d, { accept: undefined, nowMs, requestId });
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '30');
  });

  it('gives 429 + Retry-After for a full queue, with the delay and queue length', () => {
    const d: Decision = { ...denied(), verdict: 'deny', reason: 'queue-full', pacing: { delayMs: 500, waitedMs: 0, queueLength: 7, retryAfterSeconds: 4 } };
    const r = renderProxyResponse(d, { accept: undefined, nowMs, requestId });
    assert.equal(r.status, 429);
    assert.equal(r.headers['retry-after'], '4');
    assert.match(r.body, /queue length: +7/);
    assert.match(r.body, /0\.5 s between requests/);
  });

  it('names the queue limit that refused, and the client\'s own share of the queue', () => {
    const pacing = { delayMs: 100, waitedMs: 0, queueLength: 30, identityQueueLength: 20, limit: 'max-queue-per-identity' as const, retryAfterSeconds: 3 };
    const d: Decision = { ...denied(), verdict: 'deny', reason: 'queue-full', pacing };
    const r = renderProxyResponse(d, { accept: undefined, nowMs, requestId });
    assert.equal(r.status, 429);
    assert.match(r.body, /yours in it: +20/);
    assert.match(r.body, /limit: +max-queue-per-identity: pacing\.maxQueuePerIdentity \(/);
    const json = JSON.parse(renderProxyResponse(d, { accept: 'application/json', nowMs, requestId }).body);
    assert.equal(json.decision.pacing.limit, 'max-queue-per-identity');
    assert.equal(json.limit.setting, 'pacing.maxQueuePerIdentity');
  });

  it('writes every Retry-After as delay-seconds (1*DIGIT), however long or broken the wait', () => {
    for (const retryAfterSeconds of [1e21, Infinity, NaN, -5, 0.2, 86_400.5, 2 ** 40]) {
      const d: Decision = { ...denied(), verdict: 'deny', reason: 'queue-full', pacing: { delayMs: 1, waitedMs: 0, queueLength: 1, retryAfterSeconds } };
      const value = renderProxyResponse(d, { accept: undefined, nowMs, requestId }).headers['retry-after'];
      assert.match(value ?? '', /^[1-9]\d*$/, `${retryAfterSeconds} -> ${value}`);
      assert.ok(Number(value) <= MAX_RETRY_AFTER_SECONDS);
    }
    for (const expiresAtMs of [nowMs + 1e24, Infinity, NaN, nowMs - 10_000]) {
      const d = decide({ info: { ...info, state: 'unreachable', status: 503, expiresAtMs }, robots: null }, { origin: 'http://a.example', pathAndQuery: '/', productTokens: [] });
      const r = renderProxyResponse(d, { accept: 'application/json', nowMs, requestId });
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

  it('gives 503 + Retry-After while shutting down, as text and as JSON', () => {
    const d = decideWithoutRobots('proxy-shutting-down', { origin: 'http://example.test', detail: 'draining' });
    const text = renderProxyResponse(d, { accept: undefined, nowMs, requestId });
    assert.equal(text.status, 503);
    assert.equal(text.headers['retry-after'], String(SHUTDOWN_RETRY_AFTER_SECONDS));
    assert.equal(text.headers['x-robots-proxy-decision'], 'deny; reason=proxy-shutting-down');
    assert.match(text.body, /shutting down/);
    const json = renderProxyResponse(d, { accept: 'application/json', nowMs, requestId });
    assert.equal(JSON.parse(json.body).retryAfterSeconds, SHUTDOWN_RETRY_AFTER_SECONDS);
  });

  it('maps every refusal reason to its status', () => {
    const table: Array<[Decision, number]> = [
      [decideWithoutRobots('bad-request'), 400],
      [decideWithoutRobots('target-private-network'), 403],
      [decideWithoutRobots('tunnel-denied'), 403],
      [decideWithoutRobots('misdirected'), 421],
      [decideWithoutRobots('internal-error'), 500],
      [decideWithoutRobots('transfer-coding-not-implemented'), 501],
      [decideWithoutRobots('proxy-shutting-down'), 503],
      [{ ...decideWithoutRobots('upstream-error'), upstream: { error: 'ECONNREFUSED' } }, 502],
      [{ ...decideWithoutRobots('upstream-error'), upstream: { error: 'UND_ERR_HEADERS_TIMEOUT', timedOut: true } }, 504],
    ];
    for (const [d, status] of table) assert.equal(statusFor(d), status, d.reason);
    assert.equal(decisionHeaderValue(decideWithoutRobots('bad-request')), 'deny; reason=bad-request');
  });

  it("makes a policy rule's decision header once per rule, and a reloaded policy's rule gets its own", async () => {
    const { compilePolicy } = await import('../../src/policy/operator-policy.js');
    const { validateConfig } = await import('../../src/config/index.js');
    const request = { identity: null, productTokens: ['ExampleBot'], origin: 'https://www.example.com', pathAndQuery: '/', method: 'GET' };
    const ruleOf = (name: string) => compilePolicy(validateConfig({ policy: { rules: [{ name, origin: 'https://www.example.com', action: 'pace', minDelay: '1s' }] } }).policy.rules).match(request)!;
    const base = decideWithoutRobots('rule-allow');
    const before = ruleOf('crawl-slowly');
    const first = decisionHeaderValue({ ...base, verdict: 'allow', reason: 'rule-allow', policy: before.facts });
    assert.equal(first, 'allow; reason=rule-allow; rule=crawl-slowly');
    assert.equal(decisionHeaderValue({ ...base, verdict: 'allow', reason: 'rule-allow', policy: before.facts }), first);
    assert.equal(decisionHeaderValue({ ...base, verdict: 'allow', reason: 'no-matching-rule', policy: before.facts }), 'allow; reason=no-matching-rule; rule=crawl-slowly');
    assert.equal(decisionHeaderValue({ ...base, verdict: 'deny', reason: 'rule-allow', policy: before.facts }), 'deny; reason=rule-allow; rule=crawl-slowly');
    // A reload compiles the policy anew: the renamed rule's facts are new objects, with their own value.
    const after = ruleOf('crawl-gently');
    assert.equal(decisionHeaderValue({ ...base, verdict: 'allow', reason: 'rule-allow', policy: after.facts }), 'allow; reason=rule-allow; rule=crawl-gently');
    assert.equal(decisionHeaderValue({ ...base, verdict: 'allow', reason: 'rule-allow', policy: before.facts }), first);
  });

  it('spells the decision header the same whether its value is made once per reason or per request', () => {
    // The plain values are made once per (verdict, reason) and reused: the same reason under the
    // other verdict, or with a rule or a would-deny, must not get the cached value.
    const base = decideWithoutRobots('rule-allow');
    const spelled = (d: Decision): string =>
      `${d.verdict}; reason=${d.reason}` + (d.policy !== undefined ? `; rule=${d.policy.rule}` : '') + (d.wouldDeny !== undefined ? `; would-deny=${d.wouldDeny}` : '');
    const cases: Decision[] = [
      { ...base, verdict: 'allow', reason: 'rule-allow' },
      { ...base, verdict: 'deny', reason: 'rule-allow' },
      { ...base, verdict: 'allow', reason: 'rule-allow', wouldDeny: 'rule-disallow' },
      { ...base, verdict: 'deny', reason: 'operator-policy', policy: { rule: 'r1', action: 'deny' } as Decision['policy'] },
      { ...base, verdict: 'allow', reason: 'operator-policy', policy: { rule: 'r2', action: 'allow' } as Decision['policy'], wouldDeny: 'rule-disallow' },
      { ...base, verdict: 'deny', reason: 'operator-policy' },
    ];
    for (let round = 0; round < 2; round++) for (const d of cases) assert.equal(decisionHeaderValue(d), spelled(d));
    assert.equal(decisionHeaderValue({ ...base, verdict: 'deny', reason: 'rule-allow' }), 'deny; reason=rule-allow');
    assert.equal(decisionHeaderValue({ ...base, verdict: 'allow', reason: 'rule-allow' }), 'allow; reason=rule-allow');
  });
});

describe('isCertificateError', () => {
  it('holds for Node\'s certificate verification codes, which upstream.caFile may cure', () => {
    for (const code of [
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'UNABLE_TO_GET_ISSUER_CERT',
      'CERT_HAS_EXPIRED',
      'CERT_NOT_YET_VALID',
      'CERT_UNTRUSTED',
      'INVALID_CA',
      'HOSTNAME_MISMATCH',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ]) {
      assert.equal(isCertificateError(code), true, code);
    }
  });

  it('does not hold for TLS protocol failures and other connection errors (robots.txt unreachable: 503)', () => {
    for (const code of [
      'ERR_SSL_WRONG_VERSION_NUMBER',
      'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
      'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
      'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
      'ERR_SSL_PACKET_LENGTH_TOO_LONG',
      'ERR_TLS_HANDSHAKE_TIMEOUT',
      'ECONNRESET',
      'ECONNREFUSED',
      'timeout',
      undefined,
    ]) {
      assert.equal(isCertificateError(code), false, String(code));
    }
  });
});
