/**
 * The identify stage of the pipeline, end to end (issues 12 and 7 item 4):
 * real headers through a real proxy to a real origin on loopback; the
 * Decision in the JSON 403 says which candidate decided and keeps them all.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest } from '../helpers/proxy-client.js';

const ROBOTS = [
  'User-agent: ExampleScan',
  'Disallow: /scan-only/',
  '',
  'User-agent: Example',
  'Allow: /',
  '',
  'User-agent: MJ12bot',
  'Disallow: /mj/',
  '',
  'User-agent: ExampleBot',
  'Disallow: /bot-only/',
  '',
  'User-agent: python-requests',
  'Disallow: /',
  '',
  'User-agent: *',
  'Disallow: /star/',
  '',
].join('\n');

interface JsonDecision {
  decision: { reason: string; productToken: string | null; agentTokens: string[]; group: string | null; rule: { line: number } | null };
}

describe('pipeline: the product token from real headers decides', () => {
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;

  before(async () => {
    origin = await startOrigin((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url === '/robots.txt' ? ROBOTS : `page ${req.url}`);
    });
    proxy = await startTestProxy();
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  async function get(path: string, userAgent: string): Promise<{ status: number; body: JsonDecision }> {
    const r = await proxyRequest(proxy.proxyAddress.port, origin.url + path, { headers: { 'user-agent': userAgent, accept: 'application/json' } });
    return { status: r.status, body: r.status === 403 ? (JSON.parse(r.body.toString()) as JsonDecision) : ({} as JsonDecision) };
  }

  it('a name among platform words takes its own group', async () => {
    const ua = 'Mozilla/5.0 (X11; ExampleScan; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36';
    const denied = await get('/scan-only/a', ua);
    assert.equal(denied.status, 403);
    assert.equal(denied.body.decision.productToken, 'ExampleScan');
    assert.deepEqual(denied.body.decision.agentTokens, ['ExampleScan']);
    assert.equal(denied.body.decision.rule?.line, 2);
    assert.equal((await get('/star/a', ua)).status, 200, 'its own group, not *, applies');
  });

  it('Example2Bot gets the * group, not Example', async () => {
    const denied = await get('/star/a', 'Example2Bot/3.1');
    assert.equal(denied.status, 403);
    assert.equal(denied.body.decision.productToken, null);
    assert.equal(denied.body.decision.group, '*');
    assert.deepEqual(denied.body.decision.agentTokens, ['Example2Bot']);
  });

  it('MJ12bot takes the MJ12bot group', async () => {
    const denied = await get('/mj/a', 'Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)');
    assert.equal(denied.status, 403);
    assert.equal(denied.body.decision.productToken, 'MJ12bot');
  });

  it("the crawler's own name beats the library's", async () => {
    const ua = 'python-requests/2.31 ExampleBot/1.0';
    assert.equal((await get('/page', ua)).status, 200, "python-requests' Disallow: / does not apply");
    const denied = await get('/bot-only/a', ua);
    assert.equal(denied.status, 403);
    assert.equal(denied.body.decision.productToken, 'ExampleBot');
    assert.deepEqual(denied.body.decision.agentTokens, ['ExampleBot', 'python-requests']);
  });

  it('never forwards what it refused', () => {
    const forwarded = origin.hits.map((h) => h.url).filter((u) => u !== '/robots.txt');
    assert.deepEqual(forwarded.sort(), ['/page', '/star/a']);
    assert.equal(origin.robotsHits(), 1, 'robots.txt fetched once for the origin');
  });
});
