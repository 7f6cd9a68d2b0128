/**
 * Fairness between clients through the real proxy (issue 8, "Fairness between
 * clients"): each origin's queue serves client identities round-robin. Until
 * issue 8's identities exist, a client is its address (`identityOf` in
 * src/proxy/pipeline.ts), so the two clients here connect from 127.0.0.1 and
 * 127.0.0.2 (the proxy serves any loopback client today).
 * Real origin, real sockets; positions are read from the order in which the
 * origin received the requests, never from wall-clock speed.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http, { type ServerResponse } from 'node:http';
import { captureLogs, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';
import { FakeClock } from '../pacing/fake-clock.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const HEAVY = '127.0.0.1';
const LIGHT = '127.0.0.2';
const FLOOD = 200;

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** One request through the proxy from `localAddress`, on its own connection; `request` lets the caller abort it. */
function sendFrom(proxy: Proxy, localAddress: string, url: string, json = false): { request: http.ClientRequest; answer: Promise<ProxyAnswer> } {
  let request!: http.ClientRequest;
  const answer = new Promise<ProxyAnswer>((resolve, reject) => {
    request = http.request(
      {
        host: '127.0.0.1',
        port: proxy.proxyAddress.port,
        localAddress,
        path: url,
        agent: false,
        headers: { 'user-agent': UA, ...(json ? { accept: 'application/json' } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), decision: String(res.headers['x-robots-proxy-decision'] ?? '') }));
        res.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
  return { request, answer };
}

/** An origin whose robots.txt allows everything with `Crawl-delay: 1`, answering every page. */
function startCrawlDelayOrigin(): Promise<TestOrigin> {
  return startOrigin((req, res) => {
    if (req.url === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nCrawl-delay: 1\n');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url}\n`);
  });
}

function pageHits(origin: TestOrigin): string[] {
  return origin.hits.filter((h) => h.url !== '/robots.txt').map((h) => h.url);
}

describe('fairness through the proxy: a flood of 200 from one client, one request from another (real clock)', () => {
  const logs = captureLogs();
  let proxy: Proxy;
  let origin: TestOrigin;
  /** The origin holds its first page request until the test lets it go (a slot in flight, so the flood queues). */
  let releaseFirst: (() => void) | undefined;

  before(async () => {
    let isFirstPage = true;
    origin = await startOrigin((req, res: ServerResponse) => {
      if (req.url === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nCrawl-delay: 0.1\n');
      const answer = (): void => void res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url}\n`);
      if (!isFirstPage) return answer();
      isFirstPage = false;
      releaseFirst = answer;
    });
    proxy = await startTestProxy(
      {
        https: { mode: 'tunnel' },
        // Room for the flood, and no bound that could end the held first request while the flood queues.
        clients: { maxConnections: 1000, maxConnectionsPerClient: 500, idleTimeout: '5m' },
        upstream: { timeout: '5m' },
        pacing: { maxQueue: 1000, maxQueuePerIdentity: 250, maxWait: '60s', maxSlotHold: '5m' },
      },
      { logger: logs.logger },
    );
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('serves the light client after about one slot per other waiting client, not after the flood', async (t) => {
    const stats = (): { queued: number; queuedIdentities: number } => proxy.pacer.originStats(origin.url) ?? { queued: 0, queuedIdentities: 0 };
    // The flood's first request holds the origin's one slot (Crawl-delay: one in flight), so the rest queue.
    const first = sendFrom(proxy, HEAVY, `${origin.url}/heavy/first`);
    await waitFor(() => releaseFirst !== undefined, 'the first request to reach the origin');
    const flood = Array.from({ length: FLOOD }, (_, i) => sendFrom(proxy, HEAVY, `${origin.url}/heavy/${i}`));
    for (const { answer } of flood) answer.catch(() => undefined); // aborted at the end
    await waitFor(() => stats().queued === FLOOD, `${FLOOD} heavy requests to be queued`, 30_000);
    const sentAtMs = performance.now();
    const light = sendFrom(proxy, LIGHT, `${origin.url}/light`);
    await waitFor(() => stats().queued === FLOOD + 1, 'the light request to be queued');
    assert.equal(stats().queuedIdentities, 2);
    const hitsBeforeLight = pageHits(origin).length;
    releaseFirst?.();
    const answer = await light.answer;
    const lightWaitMs = performance.now() - sentAtMs;
    assert.equal(answer.status, 200);
    const hits = pageHits(origin);
    const lightAt = hits.indexOf('/light');
    const heavyBetween = hits.slice(hitsBeforeLight, lightAt).filter((url) => url.startsWith('/heavy/'));
    // Round-robin: the flood's next request (its turn came first), then light. FIFO would put light after all 200.
    assert.deepEqual(hits.slice(0, hitsBeforeLight), ['/heavy/first']);
    assert.equal(heavyBetween.length, 1, `heavy requests the origin received between light's enqueue and light: ${heavyBetween.join(', ')}`);
    assert.equal(lightAt, 2);
    const line = logs.lines.find((l) => l['url'] === `${origin.url}/light`);
    assert.equal(line?.['clientAddress'], LIGHT);
    const queueWaitMs = Number(line?.['queueWaitMs']);
    t.diagnostic(
      `light client: origin position ${lightAt} (heavy requests ahead of it after it queued: ${heavyBetween.length}; ${FLOOD} heavy queued), ` +
        `queue wait ${queueWaitMs.toFixed(1)} ms, sent-to-answer ${lightWaitMs.toFixed(1)} ms (Crawl-delay 100 ms; the first slot was held by the test)`,
    );
    // The flood leaves: its clients hang up, their requests leave the queue and are never sent.
    assert.equal((await first.answer).status, 200);
    for (const { request } of flood) request.destroy();
    await waitFor(() => stats().queued === 0, 'the flood to leave the queue');
    const sentAfter = pageHits(origin).length;
    assert.ok(sentAfter <= FLOOD + 2, 'nothing is sent twice');
    t.diagnostic(`heavy requests the origin received after the held first one, before the flood hung up: ${sentAfter - 2} of ${FLOOD}`);
  });
});

describe('per-client queue cap through the proxy (pacing.maxQueuePerIdentity, fake clock)', () => {
  const clock = new FakeClock();
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startCrawlDelayOrigin();
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, pacing: { maxQueue: 10, maxQueuePerIdentity: 2, maxWait: '1m' } }, { clock });
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('refuses a client\'s request over its cap with 429 queue-full and Retry-After; another client still queues and goes first', async () => {
    const queued = (): number => proxy.pacer.originStats(origin.url)?.queued ?? 0;
    assert.equal((await sendFrom(proxy, HEAVY, `${origin.url}/h0`).answer).status, 200);
    const h1 = sendFrom(proxy, HEAVY, `${origin.url}/h1`);
    await waitFor(() => queued() === 1, '/h1 to be queued');
    const h2 = sendFrom(proxy, HEAVY, `${origin.url}/h2`);
    await waitFor(() => queued() === 2, '/h2 to be queued');
    const refused = await sendFrom(proxy, HEAVY, `${origin.url}/h3`, true).answer;
    assert.equal(refused.status, 429);
    assert.equal(refused.decision, 'deny; reason=queue-full');
    // h1 ready 1 s after h0, h2 one more second, then h3's own second: 3 s.
    assert.equal(refused.headers['retry-after'], '3');
    const body = JSON.parse(refused.body.toString());
    assert.deepEqual(
      { limit: body.decision.pacing.limit, queueLength: body.decision.pacing.queueLength, identityQueueLength: body.decision.pacing.identityQueueLength },
      { limit: 'max-queue-per-identity', queueLength: 2, identityQueueLength: 2 },
    );
    const other = sendFrom(proxy, LIGHT, `${origin.url}/other`);
    await waitFor(() => queued() === 3, '/other to be queued');
    await clock.advance(1_000);
    assert.equal((await h1.answer).status, 200);
    await clock.advance(1_000);
    assert.equal((await other.answer).status, 200);
    await clock.advance(1_000);
    assert.equal((await h2.answer).status, 200);
    assert.deepEqual(pageHits(origin), ['/h0', '/h1', '/other', '/h2']);
  });
});

describe('identity names and client addresses are separate fairness keys (fake clock)', () => {
  const clock = new FakeClock();
  let proxy: Proxy;
  let origin: TestOrigin;

  before(async () => {
    origin = await startCrawlDelayOrigin();
    // 127.0.0.1 is the identity named "127.0.0.2" (a valid name); 127.0.0.2 itself is an anonymous client.
    proxy = await startTestProxy(
      {
        https: { mode: 'tunnel' },
        access: { clients: [{ range: '127.0.0.1/32', identity: LIGHT }, `${LIGHT}/32`] },
        pacing: { maxQueue: 10, maxQueuePerIdentity: 2, maxWait: '1m' },
      },
      { clock },
    );
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('an anonymous client at an address does not share the queue budget of an identity named like that address', async () => {
    const queued = (): number => proxy.pacer.originStats(origin.url)?.queued ?? 0;
    assert.equal((await sendFrom(proxy, HEAVY, `${origin.url}/n0`).answer).status, 200);
    const n1 = sendFrom(proxy, HEAVY, `${origin.url}/n1`);
    const n2 = sendFrom(proxy, HEAVY, `${origin.url}/n2`);
    await waitFor(() => queued() === 2, 'the named identity\'s two requests to be queued');
    assert.equal((await sendFrom(proxy, HEAVY, `${origin.url}/n3`).answer).status, 429, 'the named identity is at its cap');
    const anonymous = sendFrom(proxy, LIGHT, `${origin.url}/a0`);
    await waitFor(() => queued() === 3, 'the anonymous client\'s request to be queued (not refused as the same identity)');
    assert.equal(proxy.pacer.originStats(origin.url)?.queuedIdentities, 2);
    for (let i = 0; i < 3; i++) await clock.advance(1_000);
    assert.deepEqual([(await n1.answer).status, (await anonymous.answer).status, (await n2.answer).status], [200, 200, 200]);
    assert.deepEqual(pageHits(origin), ['/n0', '/n1', '/a0', '/n2']);
  });
});
