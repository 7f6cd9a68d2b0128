/**
 * Per-origin pacing seen through the plain-HTTP proxy (issue #3): upstream
 * 429/503 with Retry-After (seconds or HTTP-date, capped) pause the origin; a
 * client that disconnects while queued sends nothing upstream; `maxWait` and
 * `maxQueue` give 429 + Retry-After with reason `queue-full`.
 * Crawl-delay is an extension (RFC 9309 §2.2.4); Retry-After is RFC 9110 §10.2.3.
 * Real origins and sockets; the fake clock controls time where the waits are long.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { captureLogs, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, sleep, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';
import { FakeClock } from '../pacing/fake-clock.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/**
 * An origin with `robots` as robots.txt whose /overloaded answers `status`
 * with `Retry-After: <retryAfter()>` the first time and 200 afterwards; every
 * other path answers 200 at once.
 */
function startPacedSite(robots: string, overload?: { status: number; retryAfter: () => string }): Promise<TestOrigin> {
  let isOverloaded = overload !== undefined;
  return startOrigin((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(robots);
    } else if (req.url === '/overloaded' && isOverloaded && overload) {
      isOverloaded = false;
      res.writeHead(overload.status, { 'content-type': 'text/plain', 'retry-after': overload.retryAfter() }).end('slow down');
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url}`);
    }
  });
}

function pageHits(origin: TestOrigin): string[] {
  return origin.hits.filter((h) => h.url !== '/robots.txt').map((h) => h.url);
}

function get(proxy: Proxy, url: string, json = false): Promise<ProxyAnswer> {
  return proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA, ...(json ? { accept: 'application/json' } : {}) } });
}

function queuedAt(proxy: Proxy, origin: TestOrigin): number {
  return proxy.pacer.originStats(origin.url)?.queued ?? 0;
}

describe('upstream Retry-After in seconds pauses the origin (real clock)', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' } });
    origin = await startPacedSite('User-agent: *\nAllow: /\n', { status: 429, retryAfter: () => '1' });
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('passes the 429 on, then holds the next request until Retry-After has passed', async () => {
    const first = await get(proxy, `${origin.url}/overloaded`);
    assert.equal(first.status, 429);
    assert.equal(first.headers['retry-after'], '1');
    assert.equal(first.decision, 'allow; reason=rule-allow');
    const second = await get(proxy, `${origin.url}/next`);
    assert.equal(second.status, 200);
    const hits = origin.hits.filter((h) => h.url !== '/robots.txt');
    assert.deepEqual(hits.map((h) => h.url), ['/overloaded', '/next']);
    const gapMs = hits[1]!.atMs - hits[0]!.atMs;
    // The pause counts from the proxy's receipt of the 429, after the origin's hit: no tolerance needed beyond the 1 ms send allowance.
    assert.ok(gapMs >= 998, `second request ${gapMs.toFixed(1)} ms after the 429`);
  });
});

describe('pacing through the proxy (fake clock)', () => {
  const clock = new FakeClock();
  const logs = captureLogs();
  let proxy: Proxy;
  const origins: TestOrigin[] = [];
  const site = async (robots: string, overload?: { status: number; retryAfter: () => string }): Promise<TestOrigin> => {
    const origin = await startPacedSite(robots, overload);
    origins.push(origin);
    return origin;
  };

  before(async () => {
    proxy = await startTestProxy(
      { https: { mode: 'tunnel' }, pacing: { maxWait: '3s', maxQueue: 2, maxRetryAfter: '1m' } },
      { clock, logger: logs.logger },
    );
  });
  after(async () => {
    await proxy?.close();
    await Promise.all(origins.map((o) => o.close()));
  });

  /** Sends a request that will wait in the queue; resolves once the pacer holds it. */
  async function enqueue(origin: TestOrigin, path: string, expectedQueued: number): Promise<{ answer: Promise<ProxyAnswer> }> {
    const answer = get(proxy, `${origin.url}${path}`);
    await waitFor(() => queuedAt(proxy, origin) === expectedQueued, `${path} to be queued`);
    return { answer };
  }

  it('an upstream 503 with an HTTP-date Retry-After holds the origin until that date', async () => {
    const origin = await site('User-agent: *\nAllow: /\n', { status: 503, retryAfter: () => new Date(clock.nowMs() + 2_000).toUTCString() });
    const first = await get(proxy, `${origin.url}/overloaded`);
    assert.equal(first.status, 503);
    assert.equal(first.decision, 'allow; reason=rule-allow', 'the upstream 503 is passed on, not a robots decision');
    const { answer } = await enqueue(origin, '/next', 1);
    // The fake clock starts on a whole second, so the date is exactly 2 s ahead.
    await clock.advance(1_900);
    await sleep(100);
    assert.deepEqual(pageHits(origin), ['/overloaded'], 'nothing sent before the date');
    await clock.advance(100);
    assert.equal((await answer).status, 200);
    assert.deepEqual(pageHits(origin), ['/overloaded', '/next']);
  });

  it('caps a long Retry-After at pacing.maxRetryAfter', async () => {
    const origin = await site('User-agent: *\nAllow: /\n', { status: 429, retryAfter: () => '86400' });
    assert.equal((await get(proxy, `${origin.url}/overloaded`)).status, 429);
    // The wait until the cap (1 min) exceeds maxWait (3 s): refused at once, Retry-After says when.
    const refused = await get(proxy, `${origin.url}/next`, true);
    assert.equal(refused.status, 429);
    assert.equal(refused.decision, 'deny; reason=queue-full');
    assert.equal(refused.headers['retry-after'], '60');
    await clock.advance(58_000);
    const { answer } = await enqueue(origin, '/later', 1);
    await clock.advance(2_000);
    assert.equal((await answer).status, 200);
    assert.deepEqual(pageHits(origin), ['/overloaded', '/later']);
  });

  it('a client that disconnects while queued leaves the queue and nothing goes upstream', async () => {
    const origin = await site('User-agent: *\nCrawl-delay: 1\n');
    assert.equal((await get(proxy, `${origin.url}/first`)).status, 200);
    const req = http.request({ host: '127.0.0.1', port: proxy.proxyAddress.port, path: `${origin.url}/second`, headers: { 'user-agent': UA }, agent: false });
    req.on('error', () => undefined);
    req.end();
    await waitFor(() => queuedAt(proxy, origin) === 1, '/second to be queued');
    req.destroy();
    await waitFor(() => queuedAt(proxy, origin) === 0, '/second to leave the queue');
    await clock.advance(5_000);
    await sleep(200);
    assert.deepEqual(pageHits(origin), ['/first'], 'the abandoned request was never sent');
    // The queue still works after the abandon.
    assert.equal((await get(proxy, `${origin.url}/third`)).status, 200);
    assert.deepEqual(pageHits(origin), ['/first', '/third']);
    const line = logs.lines.find((l) => l['msg'] === 'request' && l['url'] === `${origin.url}/second`);
    assert.ok(line, 'the abandoned request is audited');
    assert.equal(line['clientAborted'], true);
    assert.equal(line['upstreamStatus'], null);
    assert.equal(line['error'], 'CLIENT_ABORTED');
  });

  it('a wait longer than pacing.maxWait: 429 queue-full with Retry-After, nothing sent', async () => {
    const origin = await site('User-agent: *\nCrawl-delay: 5\n');
    assert.equal((await get(proxy, `${origin.url}/first`)).status, 200);
    const refused = await get(proxy, `${origin.url}/second`, true);
    assert.equal(refused.status, 429);
    assert.equal(refused.decision, 'deny; reason=queue-full');
    assert.equal(refused.headers['retry-after'], '5');
    const body = JSON.parse(refused.body.toString());
    assert.equal(body.decision.reason, 'queue-full');
    assert.equal(body.decision.pacing.delayMs, 5000);
    assert.equal(body.retryAfterSeconds, 5);
    assert.deepEqual(pageHits(origin), ['/first']);
  });

  it('a full queue (pacing.maxQueue): 429 queue-full at once; the queued ones still go through', async () => {
    const origin = await site('User-agent: *\nCrawl-delay: 1\n');
    assert.equal((await get(proxy, `${origin.url}/first`)).status, 200);
    const second = await enqueue(origin, '/second', 1);
    const third = await enqueue(origin, '/third', 2);
    const refused = await get(proxy, `${origin.url}/fourth`, true);
    assert.equal(refused.status, 429);
    assert.equal(refused.decision, 'deny; reason=queue-full');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(JSON.parse(refused.body.toString()).decision.pacing.queueLength, 2);
    await clock.advance(1_000);
    assert.equal((await second.answer).status, 200);
    await clock.advance(1_000);
    assert.equal((await third.answer).status, 200);
    assert.deepEqual(pageHits(origin), ['/first', '/second', '/third']);
  });
});
