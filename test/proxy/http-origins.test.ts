/** One origin however its host is spelled; the admin API is not reachable through the proxy. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOrigin, siteHandler, startTestProxy, proxyGet, type TestOrigin } from '../helpers/harness.js';

describe('origins and the proxy\'s own listeners', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }));
    proxy = await startTestProxy();
  });

  after(async () => {
    await proxy.close();
    await origin.close();
  });

  it('treats a trailing-dot host as the same origin (one robots.txt, one queue)', async () => {
    const plain = await proxyGet(proxy.proxyAddress.port, `http://localhost:${origin.port}/a`);
    const dotted = await proxyGet(proxy.proxyAddress.port, `http://localhost.:${origin.port}/b`);
    const denied = await proxyGet(proxy.proxyAddress.port, `http://localhost.:${origin.port}/private/x`);
    assert.equal(plain.status, 200);
    assert.equal(dotted.status, 200);
    assert.equal(denied.status, 403);
    assert.equal(origin.robotsHits(), 1);
    assert.equal(origin.hits.find((h) => h.url === '/b')?.headers.host, `localhost:${origin.port}`);
  });

  it('refuses requests aimed at its own admin listener', async () => {
    const r = await proxyGet(proxy.proxyAddress.port, `${proxy.adminUrl}/metrics`);
    assert.equal(r.status, 400);
    assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=bad-request');
  });
});
