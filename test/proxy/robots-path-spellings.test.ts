/**
 * robots.txt rules against the escapes an origin server decodes before it routes a path
 * (`/wiki/Special%3ASearch` is served as `/wiki/Special:Search`): a real proxy (in process), a
 * real origin on loopback, real HTTP through the proxy. A rule must refuse every spelling the
 * origin serves as the path it names (README "No bypass by encoding"), and nothing may reach
 * the origin but robots.txt.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { proxyGet, siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';

describe('robots.txt rules and the reserved-character escapes an origin decodes', () => {
  let site: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    site = await startOrigin(siteHandler({ robots: 'User-agent: *\nDisallow: /wiki/Special:\nAllow: /wiki/Special%3ARandom\nDisallow: /mail/@admin\nDisallow: /p(1)\n' }));
    proxy = await startTestProxy({ pacing: { maxConcurrency: 16 } });
  });

  after(async () => {
    await proxy?.close();
    await site?.close();
  });

  const get = (path: string) => proxyGet(proxy.proxyAddress.port, `${site.url}${path}`, { headers: { 'user-agent': 'ExampleBot/1.0' } });

  it('refuses the escaped spellings of a disallowed path (before: %3A, %40, %28 passed to the origin)', async () => {
    for (const path of ['/wiki/Special:Search', '/wiki/Special%3ASearch', '/wiki/Special%3aSearch', '/mail/%40admin/x', '/p%281%29', '/x/..%2Fwiki/Special%3AX']) {
      const r = await get(path);
      assert.equal(r.status, 403, path);
      assert.equal(r.headers['x-robots-proxy-decision'], 'deny; reason=rule-disallow', path);
    }
    assert.deepEqual(site.hits.map((h) => h.url).filter((url) => url !== '/robots.txt'), []);
  });

  it('lets through the escaped spelling the site allowed itself (before: refused by the shorter Disallow of the decoded one)', async () => {
    const r = await get('/wiki/Special%3ARandom');
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-robots-proxy-decision'], 'allow; reason=rule-allow');
    assert.ok(site.hits.some((h) => h.url === '/wiki/Special%3ARandom'));
    assert.equal((await get('/wiki/Special:Random')).status, 403);
  });

  it('leaves the query as sent, and other paths alone', async () => {
    for (const path of ['/wiki/Main_Page', '/search?q=Special%3ASearch', '/wiki/Special%253ASearch']) {
      const r = await get(path);
      assert.equal(r.status, 200, path);
    }
  });
});
