/**
 * `access.clients` end to end: with the allowed range 127.0.0.1/32, a client whose connections
 * come from a second loopback address (127.0.0.2) gets 403 `client-not-allowed` for an
 * absolute-form request and for a CONNECT, before anything is fetched; it is logged and counted.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { connectFrom } from '../helpers/proxy-client.js';
import { captureLogs, startOrigin, startTestProxy, siteHandler, type LogCapture, type TestOrigin } from '../helpers/harness.js';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

function get(port: number, url: string, localAddress: string) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: url, localAddress, agent: false, headers: { 'user-agent': 'ExampleBot/1.0' } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('access.clients: a client outside the allowed ranges', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  let logs: LogCapture;

  before(async () => {
    origin = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    logs = captureLogs();
    proxy = await startTestProxy({ access: { clients: ['127.0.0.1/32'] }, log: { level: 'info' } }, { logger: logs.logger });
  });

  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('gets 403 client-not-allowed for absolute-form requests and CONNECT, with nothing fetched upstream', async () => {
    const port = proxy.proxyAddress.port;
    const refused = await get(port, `${origin.url}/page`, '127.0.0.2');
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['x-robots-proxy-decision'], 'deny; reason=client-not-allowed');
    assert.match(refused.body, /127\.0\.0\.2 is in none of the ranges/);
    const head = await connectFrom(port, `127.0.0.1:${origin.port}`, '127.0.0.2');
    assert.match(head, /^HTTP\/1\.1 403 /);
    assert.match(head, /x-robots-proxy-decision: deny; reason=client-not-allowed/i);
    assert.equal(origin.hits.length, 0, 'no robots.txt fetch, no page');

    const allowed = await get(port, `${origin.url}/page`, '127.0.0.1');
    assert.equal(allowed.status, 200);

    const lines = logs.lines.filter((l) => l['msg'] === 'request' && l['clientAddress'] === '127.0.0.2');
    assert.deepEqual(lines.map((l) => [l['method'], (l['decision'] as { reason: string }).reason, l['status']]), [
      ['GET', 'client-not-allowed', 403],
      ['CONNECT', 'client-not-allowed', 403],
    ]);
    const metrics = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
    assert.match(metrics, /robots_proxy_requests_total\{verdict="deny",reason="client-not-allowed"\} 2\b/);
  });

  it('applies a reloaded range to the next request', async () => {
    proxy.reload({ ...proxy.currentConfig(), access: { ...proxy.currentConfig().access, clients: [{ range: '127.0.0.0/8' }] } });
    assert.equal((await get(proxy.proxyAddress.port, `${origin.url}/now-allowed`, '127.0.0.2')).status, 200);
  });
});
