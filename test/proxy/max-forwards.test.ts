/**
 * Max-Forwards on TRACE and OPTIONS (RFC 9110 §7.6.2): at 0 the proxy must not
 * forward the request but answer as its final recipient; above 0 it forwards
 * the request with the value decremented. Other methods ignore the field.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { proxyGet, siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

describe('Max-Forwards on TRACE and OPTIONS', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    proxy = await startTestProxy();
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  const pageHits = (path: string) => origin.hits.filter((h) => h.url === path);

  it('OPTIONS with Max-Forwards: 0 is answered by the proxy (200, Allow), never forwarded', async () => {
    const r = await proxyGet(proxy.proxyAddress.port, `${origin.url}/opt0`, { method: 'OPTIONS', headers: { 'user-agent': UA, 'max-forwards': '0' } });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['allow']), /OPTIONS/);
    assert.match(String(r.headers['x-robots-proxy-decision']), /reason=max-forwards/);
    assert.equal(pageHits('/opt0').length, 0);
  });

  it('TRACE with Max-Forwards: 0 is echoed by the proxy as message/http without credentials, never forwarded', async () => {
    const r = await proxyGet(proxy.proxyAddress.port, `${origin.url}/trace0?q=1`, {
      method: 'TRACE',
      headers: { 'user-agent': UA, 'max-forwards': '0', 'proxy-authorization': 'Basic c2VjcmV0OnNlY3JldA==', cookie: 'session=secret', 'x-probe': 'echo-me' },
    });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^message\/http/);
    assert.match(r.body, /^TRACE \/trace0\?q=1 HTTP\/1\.1\r\n/);
    assert.match(r.body, /x-probe: echo-me/i);
    assert.doesNotMatch(r.body, /secret|c2VjcmV0/);
    assert.equal(pageHits('/trace0?q=1').length, 0);
  });

  it('OPTIONS with Max-Forwards: 3 is forwarded with Max-Forwards: 2', async () => {
    const r = await proxyGet(proxy.proxyAddress.port, `${origin.url}/opt3`, { method: 'OPTIONS', headers: { 'user-agent': UA, 'max-forwards': '3' } });
    assert.equal(r.status, 200);
    const hits = pageHits('/opt3');
    assert.equal(hits.length, 1);
    assert.equal(hits[0]!.headers['max-forwards'], '2');
  });

  it('GET with Max-Forwards: 0 is forwarded unchanged (the field applies to TRACE and OPTIONS only)', async () => {
    const r = await proxyGet(proxy.proxyAddress.port, `${origin.url}/get0`, { headers: { 'user-agent': UA, 'max-forwards': '0' } });
    assert.equal(r.status, 200);
    assert.equal(pageHits('/get0')[0]?.headers['max-forwards'], '0');
  });
});
