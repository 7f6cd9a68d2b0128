/**
 * How the robots.txt fetch's failures reach a client through the real proxy (RFC 9309 §2.3.1,
 * DESIGN.md "The proxy's own responses"): a connection error is an unreachable robots.txt (503 +
 * Retry-After, complete disallow); only a certificate the proxy does not trust is the 502 that
 * names `upstream.caFile`. Real parts: a proxy in process, origins on loopback.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { captureLogs, siteHandler, startOrigin, startTestProxy, type LogCapture, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest } from '../helpers/proxy-client.js';

const UA = 'ExampleBot/1.0';

describe('an https target whose port does not speak TLS', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let plain: TestOrigin;
  let logs: LogCapture;

  before(async () => {
    logs = captureLogs();
    proxy = await startTestProxy({}, { logger: logs.logger });
    plain = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private\n' }));
  });
  after(async () => {
    await proxy?.close();
    await plain?.close();
  });

  it('is robots-unreachable (503 + Retry-After, the TLS error named), not an untrusted certificate to cure with upstream.caFile', async () => {
    const url = `https://127.0.0.1:${plain.port}/page`;
    const r = await proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA } });
    const body = r.body.toString();
    assert.equal(r.status, 503, body);
    assert.equal(r.decision, 'deny; reason=robots-unreachable');
    assert.equal(r.headers['retry-after'], '60', 'retried after robots.errorRetry (1m)');
    assert.match(body, /ERR_SSL_WRONG_VERSION_NUMBER/);
    assert.doesNotMatch(body, /caFile|not trusted/);
    const line = logs.lines.find((l) => l['msg'] === 'request' && l['url'] === url);
    assert.equal((line?.['decision'] as { reason?: string } | undefined)?.reason, 'robots-unreachable');
    assert.equal(plain.hits.length, 0, 'no HTTP request reached the plain origin');
  });
});
