/**
 * `/explain` decides a URL as the proxy decides a request for it: a fully qualified host
 * (`x.example.com.`) is the origin without the dot, for the policy's host globs as for the proxy
 * (parseProxyTarget). Real parts: a proxy in process, its admin API and proxy port over HTTP.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { proxyGet, startTestProxy } from '../helpers/harness.js';

describe('/explain and the trailing dot of a host', () => {
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    proxy = await startTestProxy({ policy: { rules: [{ name: 'no-admin', origin: '*.example.com', path: '/admin', action: 'deny' }] } });
  });

  after(async () => {
    await proxy?.close();
  });

  it('gives the decision the proxy gives: the deny rule of the host glob, on the origin without the dot', async () => {
    const url = 'http://X.Example.COM./admin/x';
    const proxied = await proxyGet(proxy.proxyAddress.port, url, { headers: { 'user-agent': 'ExampleBot/1.0' } });
    assert.equal(proxied.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=no-admin');
    const explained = (await (await fetch(`${proxy.adminUrl}/explain?url=${encodeURIComponent(url)}&ua=ExampleBot`)).json()) as Record<string, unknown>;
    assert.equal(explained['reason'], 'operator-policy');
    assert.deepEqual(explained['policy'], { rule: 'no-admin', action: 'deny' });
    assert.equal(explained['origin'], 'http://x.example.com');
  });

  for (const url of ['http://127.0.0.1:0/x', 'http:///x', 'http://user:secret@127.0.0.1:9/x']) {
    it(`explains ${url} as the 400 bad-request the proxy answers, and fetches no robots.txt for it`, async () => {
      const proxied = await proxyGet(proxy.proxyAddress.port, url, { headers: { 'user-agent': 'ExampleBot/1.0' } }).catch(() => undefined);
      if (proxied !== undefined) assert.equal(proxied.headers['x-robots-proxy-decision'], 'deny; reason=bad-request');
      const answer = await fetch(`${proxy.adminUrl}/explain?url=${encodeURIComponent(url)}&ua=ExampleBot`);
      assert.equal(answer.status, 200);
      const explained = (await answer.json()) as Record<string, unknown>;
      assert.equal(explained['verdict'], 'deny');
      assert.equal(explained['reason'], 'bad-request');
      assert.equal(explained['snapshot'], null);
      const origin = url.startsWith('http:///') ? 'http://x' : 'http://127.0.0.1:0';
      assert.equal((await fetch(`${proxy.adminUrl}/robots?origin=${encodeURIComponent(origin)}`)).status, 404, 'no robots.txt fetched');
    });
  }
});
