/**
 * What a client of an intercepted tunnel is told when the origin's certificate is refused: a
 * 502 `upstream-error` that names the fault. A certificate from an untrusted CA can be cured by
 * `upstream.caFile`; an expired one, or one for another name, cannot, and the answer must not
 * send the operator there. Real TLS origins on loopback, a name resolved to loopback by the
 * target guard's resolver, undici's ProxyAgent trusting the proxy CA.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyAgent, request } from 'undici';
import { siteHandler, startTestProxy } from '../helpers/harness.js';
import { fakeResolver } from '../helpers/resolver.js';
import { createTestPki, startTlsOrigin, writeTempFile, type TlsOrigin } from '../helpers/https-support.js';

const BOT_UA = 'ExampleBot/2.1';

describe('upstream certificates refused inside an intercepted tunnel', () => {
  let good: TlsOrigin;
  let expired: TlsOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let dispatcher: ProxyAgent;

  before(async () => {
    const pki = await createTestPki();
    // Same CA (trusted through upstream.caFile), server certificate expired an hour ago.
    const expiredPki = await createTestPki({ leafNotAfter: new Date(Date.now() - 3_600_000) });
    const handler = siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' });
    good = await startTlsOrigin(handler, { cert: pki.certPem, key: pki.keyPem });
    expired = await startTlsOrigin(handler, { cert: expiredPki.certPem, key: expiredPki.keyPem });
    const caFile = writeTempFile('upstream-ca.pem', `${pki.caPem}\n${expiredPki.caPem}`);
    // other.test is loopback too, but the origin's certificate names only localhost and 127.0.0.1.
    proxy = await startTestProxy({ upstream: { caFile } }, { resolve: fakeResolver((host) => (host === 'other.test' ? ['127.0.0.1'] : undefined)) });
    dispatcher = new ProxyAgent({ uri: proxy.proxyUrl, requestTls: { ca: proxy.ca!.certPem } });
  });

  after(async () => {
    await dispatcher?.close();
    await proxy?.close();
    await good?.close();
    await expired?.close();
  });

  async function get(url: string): Promise<{ status: number; body: string; decision: string }> {
    const r = await request(url, { dispatcher, headers: { 'user-agent': BOT_UA } });
    return { status: r.statusCode, body: await r.body.text(), decision: String(r.headers['x-robots-proxy-decision']) };
  }

  it('an expired origin certificate: 502 that says it is outside its validity, not that a CA would cure it', async () => {
    const base = `https://localhost:${expired.port}`;
    const r = await get(`${base}/page/1`);
    assert.equal(r.status, 502, r.body);
    assert.match(r.decision, /; reason=upstream-error$/);
    assert.ok(r.body.startsWith(`The TLS certificate of ${base} has expired or is not yet valid (CERT_HAS_EXPIRED)`), r.body);
    assert.doesNotMatch(r.body, /caFile/);
    assert.match(r.body, /^detail: +fetching .*robots\.txt: the upstream TLS certificate has expired or is not yet valid$/m);
    assert.deepEqual(expired.hits, [], 'nothing reached the origin');
  });

  it('a certificate for another name: 502 that says it does not name the host, not that a CA would cure it', async () => {
    const base = `https://other.test:${good.port}`;
    const r = await get(`${base}/page/2`);
    assert.equal(r.status, 502, r.body);
    assert.ok(r.body.startsWith(`The TLS certificate of ${base} does not name other.test (ERR_TLS_CERT_ALTNAME_INVALID)`), r.body);
    assert.doesNotMatch(r.body, /caFile/);
    assert.deepEqual(good.hits, []);
  });

  it('the same origin by a name its certificate has is served (the test is not vacuous)', async () => {
    const r = await get(`https://localhost:${good.port}/page/3`);
    assert.equal(r.status, 200, r.body);
  });
});
