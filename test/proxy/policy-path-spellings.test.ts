/**
 * Policy rules' `path` against the spellings an origin server resolves to another path
 * (`//admin/x`, `/%2Fadmin/x`, `/x/..%2Fadmin/x`): a real proxy (in process), a real origin on
 * loopback, real HTTP through the proxy. A `deny` (or `pace`) rule must match what the origin
 * will serve, as robots.txt rules do (README "No bypass by encoding"); an `allow` or `report`
 * rule must not exempt a path that resolves outside it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { proxyGet, siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';

const UA = 'ExampleBot/1.0';

describe('policy path rules and the paths an origin resolves', () => {
  let site: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    site = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /private/\n' }));
    proxy = await startTestProxy({
      pacing: { maxConcurrency: 16 },
      policy: {
        rules: [
          { name: 'no-admin', origin: site.url, path: '/admin', action: 'deny' },
          { name: 'consent-public', origin: site.url, path: '/public/', action: 'allow' },
          { name: 'try-shadow', origin: site.url, path: '/shadow/', action: 'report' },
        ],
      },
    });
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  const get = (path: string) => proxyGet(proxy.proxyAddress.port, `${site.url}${path}`, { headers: { 'user-agent': UA } });

  it('a deny rule refuses every spelling the origin may resolve into its path, and nothing reaches the origin', async () => {
    for (const path of ['/admin/x', '//admin/x', '/%2Fadmin/x', '/x/..%2Fadmin/x', '/x/../admin/x', '/a%5C..%5Cadmin/x', '/admin;v=1/x', '/x/..;/admin/x']) {
      const r = await get(path);
      assert.equal(r.status, 403, path);
      assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=operator-policy; rule=no-admin', path);
    }
    assert.ok(!site.hits.some((h) => /admin/i.test(h.url)), `origin saw ${site.hits.map((h) => h.url).join(', ')}`);
  });

  it('an allow or report rule exempts only paths that resolve inside it: robots.txt decides the others', async () => {
    const inside = await get('/public//page');
    assert.equal(inside.headers['x-robots-proxy-decision'], 'allow; reason=operator-allow; rule=consent-public');
    for (const path of ['/public/..%2Fprivate/x', '/public/%2E%2E/private/x', '/shadow/..%2Fprivate/x', '/public/..;/private/x']) {
      const r = await get(path);
      assert.equal(r.status, 403, path);
      assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow', path);
    }
    assert.ok(!site.hits.some((h) => /private/.test(h.url)), `origin saw ${site.hits.map((h) => h.url).join(', ')}`);
  });
});
