/**
 * Queued requests through the proxy, with no delay (issue 11): at
 * `pacing.maxConcurrency: 1` a request waits as a record in the origin's queue
 * and its exchange is told its slot by the pacer (`Pacer.acquireFor`, the
 * exchange is the taker). Waiting requests start in arrival order when slots
 * free; a client that disconnects while queued leaves the queue, sends nothing
 * upstream, is audited as aborted and holds no slot. Real origin and sockets,
 * real clock.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { captureLogs, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

describe('queued requests told their slot through the exchange (maxConcurrency 1, no delay)', () => {
  const logs = captureLogs();
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let origin: TestOrigin;
  /** Answers held by the origin until the test lets them go (path -> end the response). */
  const held = new Map<string, () => void>();

  before(async () => {
    origin = await startOrigin((req, res) => {
      if (req.url === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      const url = req.url ?? '';
      if (url.startsWith('/hold')) {
        return void held.set(url, () => {
          held.delete(url);
          res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${url}`);
        });
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url}`);
    });
    proxy = await startTestProxy({ pacing: { maxConcurrency: 1, maxQueue: 50 } }, { logger: logs.logger });
  });
  after(async () => {
    for (const end of [...held.values()]) end();
    await proxy?.close();
    await origin?.close();
  });

  const get = (path: string): Promise<ProxyAnswer> => proxyRequest(proxy.proxyAddress.port, `${origin.url}${path}`, { headers: { 'user-agent': UA } });
  const queued = (): number => proxy.pacer.originStats(origin.url)?.queued ?? 0;
  const inFlight = (): number => proxy.pacer.originStats(origin.url)?.inFlight ?? 0;
  const pageHits = (): string[] => origin.hits.filter((h) => h.url !== '/robots.txt').map((h) => h.url);

  it('starts waiting requests in arrival order as the slot frees', { timeout: 20_000 }, async () => {
    const first = get('/hold/1');
    await waitFor(() => held.has('/hold/1'), '/hold/1 to reach the origin');
    const waiting: Array<Promise<ProxyAnswer>> = [];
    for (let i = 1; i <= 5; i++) {
      waiting.push(get(`/q/${i}`));
      await waitFor(() => queued() === i, `/q/${i} to be queued`);
    }
    held.get('/hold/1')?.();
    assert.equal((await first).status, 200);
    const answers = await Promise.all(waiting);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
    assert.deepEqual(pageHits(), ['/hold/1', '/q/1', '/q/2', '/q/3', '/q/4', '/q/5']);
    await waitFor(() => inFlight() === 0, 'every slot to be released');
    const line = logs.lines.find((l) => l['msg'] === 'request' && l['url'] === `${origin.url}/q/5`);
    assert.ok(line, '/q/5 is audited');
    assert.equal(line['status'], 200);
    assert.equal(typeof line['queueWaitMs'], 'number');
  });

  it('a client that disconnects while queued leaves the queue, sends nothing and holds no slot', { timeout: 20_000 }, async () => {
    const first = get('/hold/2');
    await waitFor(() => held.has('/hold/2'), '/hold/2 to reach the origin');
    const req = http.request({ host: '127.0.0.1', port: proxy.proxyAddress.port, path: `${origin.url}/gone`, headers: { 'user-agent': UA }, agent: false });
    req.on('error', () => undefined);
    req.end();
    await waitFor(() => queued() === 1, '/gone to be queued');
    const next = get('/after');
    await waitFor(() => queued() === 2, '/after to be queued');
    req.destroy();
    await waitFor(() => queued() === 1, '/gone to leave the queue');
    assert.equal(inFlight(), 1);
    held.get('/hold/2')?.();
    assert.equal((await first).status, 200);
    assert.equal((await next).status, 200);
    await waitFor(() => inFlight() === 0, 'every slot to be released');
    assert.ok(!pageHits().includes('/gone'), 'the abandoned request was sent');
    await waitFor(() => logs.lines.some((l) => l['msg'] === 'request' && l['url'] === `${origin.url}/gone`), '/gone to be audited');
    const line = logs.lines.find((l) => l['msg'] === 'request' && l['url'] === `${origin.url}/gone`) as Record<string, unknown>;
    assert.equal(line['clientAborted'], true);
    assert.equal(line['upstreamStatus'], null);
    assert.equal(line['error'], 'CLIENT_ABORTED');
    assert.equal(proxy.pipeline.requestsInFlight, 0);
    // The origin's queue still works.
    assert.equal((await get('/later')).status, 200);
  });
});
