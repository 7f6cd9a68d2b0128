/**
 * robots.txt status mapping seen through the plain-HTTP proxy (issue #3,
 * RFC 9309 §2.3.1): 2xx parsed, 4xx unavailable (allow all), 5xx / 429 /
 * timeout / connection refused unreachable (503 + Retry-After), up to 5
 * redirects followed (across origins too), 6 unavailable; expiry refetches,
 * and an unreachable refetch keeps the earlier good snapshot (§2.4), whose
 * pages still pause for a 429/503's Retry-After.
 * Real origins on loopback (each port its own origin), counted at the origin.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { closedPort, proxyRequest, waitFor, type ProxyAnswer } from '../helpers/proxy-client.js';
import { FakeClock } from '../pacing/fake-clock.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
const DISALLOW_PRIVATE = 'User-agent: *\nDisallow: /private/\n';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;
type RobotsAnswer = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * An origin whose /robots.txt is answered by `robots`, the paths in `routes`
 * by their handlers, and every other path by `page <path>`.
 */
function startSite(robots: RobotsAnswer, routes: Record<string, RobotsAnswer> = {}): Promise<TestOrigin> {
  return startOrigin((req, res) => {
    if (req.url === '/robots.txt') return robots(req, res);
    const route = routes[req.url ?? ''];
    if (route) return route(req, res);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`page ${req.url}`);
  });
}

/** Routes /hop/1 .. /hop/(count-1) redirecting to the next hop, /hop/count answering `final`. */
function hops(count: number, final: RobotsAnswer): Record<string, RobotsAnswer> {
  const routes: Record<string, RobotsAnswer> = {};
  for (let n = 1; n < count; n++) routes[`/hop/${n}`] = answerWith(302, '', { location: `/hop/${n + 1}` });
  routes[`/hop/${count}`] = final;
  return routes;
}

function answerWith(status: number, body = '', headers: Record<string, string> = {}): RobotsAnswer {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(body);
  };
}

/** Paths the origin saw other than /robots.txt. */
function pageHits(origin: TestOrigin): string[] {
  return origin.hits.filter((h) => h.url !== '/robots.txt').map((h) => h.url);
}

function get(proxy: Proxy, url: string, json = false): Promise<ProxyAnswer> {
  return proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA, ...(json ? { accept: 'application/json' } : {}) } });
}

/** Asserts a 503 robots-unreachable answer with a Retry-After and returns its parsed JSON body. */
function assertUnreachable(r: ProxyAnswer): { decision: { snapshot: { status?: number; error?: string; state: string } } } {
  assert.equal(r.status, 503, r.body.toString());
  assert.equal(r.decision, 'deny; reason=robots-unreachable');
  const retryAfter = Number(r.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `retry-after ${r.headers['retry-after']}`);
  const parsed = JSON.parse(r.body.toString());
  assert.equal(parsed.decision.reason, 'robots-unreachable');
  assert.equal(parsed.decision.snapshot.state, 'unreachable');
  assert.equal(parsed.retryAfterSeconds, retryAfter);
  return parsed;
}

describe('robots.txt status mapping through the proxy', () => {
  let proxy: Proxy;
  const origins: TestOrigin[] = [];
  const site = async (robots: RobotsAnswer, routes: Record<string, RobotsAnswer> = {}): Promise<TestOrigin> => {
    const origin = await startSite(robots, routes);
    origins.push(origin);
    return origin;
  };

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, robots: { errorRetry: '5s' } });
  });
  after(async () => {
    await proxy?.close();
    await Promise.all(origins.map((o) => o.close()));
  });

  it('200: the rules apply; a disallowed path never reaches the origin', async () => {
    const origin = await site(answerWith(200, DISALLOW_PRIVATE));
    const page = await get(proxy, `${origin.url}/page`);
    assert.equal(page.status, 200);
    assert.equal(page.decision, 'allow; reason=no-matching-rule');
    assert.equal(page.body.toString(), 'page /page');
    const denied = await get(proxy, `${origin.url}/private/x`, true);
    assert.equal(denied.status, 403);
    assert.equal(denied.decision, 'deny; reason=rule-disallow');
    assert.deepEqual(JSON.parse(denied.body.toString()).decision.rule, { kind: 'disallow', pattern: '/private/', line: 2 });
    assert.deepEqual(pageHits(origin), ['/page']);
    assert.equal(origin.robotsHits(), 1);
  });

  for (const status of [404, 403]) {
    it(`${status}: robots.txt unavailable, everything allowed`, async () => {
      const origin = await site(answerWith(status, DISALLOW_PRIVATE));
      const r = await get(proxy, `${origin.url}/private/x`);
      assert.equal(r.status, 200);
      assert.equal(r.decision, 'allow; reason=robots-unavailable');
      assert.deepEqual(pageHits(origin), ['/private/x']);
      assert.equal(origin.robotsHits(), 1);
    });
  }

  for (const status of [500, 503, 429]) {
    it(`${status}: robots.txt unreachable, the page gets 503 with Retry-After and nothing goes upstream`, async () => {
      const origin = await site(answerWith(status, DISALLOW_PRIVATE));
      const answer = await get(proxy, `${origin.url}/page`, true);
      const parsed = assertUnreachable(answer);
      assert.equal(parsed.decision.snapshot.status, status);
      assert.ok(Number(answer.headers['retry-after']) <= 5, 'retried after robots.errorRetry (5s)');
      const text = await get(proxy, `${origin.url}/other`);
      assert.equal(text.status, 503);
      assert.match(String(text.headers['content-type']), /^text\/plain/);
      assert.match(text.body.toString(), /robots-unreachable/);
      assert.deepEqual(pageHits(origin), []);
      assert.equal(origin.robotsHits(), 1, 'retried only after errorRetry');
    });
  }

  it('connection refused: 503 robots-unreachable naming ECONNREFUSED', async () => {
    const port = await closedPort();
    const parsed = assertUnreachable(await get(proxy, `http://127.0.0.1:${port}/page`, true));
    assert.equal(parsed.decision.snapshot.error, 'ECONNREFUSED');
  });

  it('follows 5 redirects; the rules of the final file apply', async () => {
    // robots.txt -> /hop/1 -> ... -> /hop/5 (the file): 5 redirects.
    const origin = await site(answerWith(302, 'User-agent: *\nDisallow: /page\n', { location: '/hop/1' }), hops(5, answerWith(200, DISALLOW_PRIVATE)));
    const denied = await get(proxy, `${origin.url}/private/x`, true);
    assert.equal(denied.status, 403, denied.body.toString());
    assert.equal(denied.decision, 'deny; reason=rule-disallow');
    assert.equal(JSON.parse(denied.body.toString()).decision.rule.line, 2);
    assert.equal((await get(proxy, `${origin.url}/page`)).status, 200);
    assert.deepEqual(
      origin.hits.map((h) => h.url),
      ['/robots.txt', '/hop/1', '/hop/2', '/hop/3', '/hop/4', '/hop/5', '/page'],
    );
  });

  it('6 redirects: robots.txt unavailable, everything allowed', async () => {
    // robots.txt -> /hop/1 -> ... -> /hop/6 (the file): 6 redirects.
    const origin = await site(answerWith(302, '', { location: '/hop/1' }), hops(6, answerWith(200, DISALLOW_PRIVATE)));
    const r = await get(proxy, `${origin.url}/private/x`);
    assert.equal(r.status, 200);
    assert.equal(r.decision, 'allow; reason=robots-unavailable');
    assert.equal((await proxy.robotsCache.peek(new URL(origin.url).origin))?.info.error, 'too-many-redirects');
    // robots.txt and 5 hops followed; the 6th redirect (from /hop/5) is not.
    assert.deepEqual(
      origin.hits.map((h) => h.url),
      ['/robots.txt', '/hop/1', '/hop/2', '/hop/3', '/hop/4', '/hop/5', '/private/x'],
    );
  });

  it('follows a redirect to another origin', async () => {
    const other = await site(answerWith(404), { '/shared-robots.txt': answerWith(200, DISALLOW_PRIVATE) });
    const origin = await site(answerWith(301, '', { location: `${other.url}/shared-robots.txt` }));
    assert.equal((await get(proxy, `${origin.url}/private/x`)).decision, 'deny; reason=rule-disallow');
    assert.equal((await get(proxy, `${origin.url}/page`)).status, 200);
    assert.deepEqual(origin.hits.map((h) => h.url), ['/robots.txt', '/page']);
    assert.deepEqual(other.hits.map((h) => h.url), ['/shared-robots.txt']);
  });
});

describe('robots.txt fetch timeout through the proxy', () => {
  let proxy: Proxy;
  let origin: TestOrigin;
  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, robots: { timeout: '200ms' } });
    // robots.txt never answers; pages would.
    origin = await startSite(() => undefined);
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('a robots.txt that does not answer within robots.timeout: 503 robots-unreachable', async () => {
    const parsed = assertUnreachable(await get(proxy, `${origin.url}/page`, true));
    assert.equal(parsed.decision.snapshot.error, 'timeout');
    assert.deepEqual(pageHits(origin), []);
  });
});

describe('robots.txt expiry through the proxy (fake clock)', () => {
  const clock = new FakeClock();
  let proxy: Proxy;
  const origins: TestOrigin[] = [];
  const HOUR_MS = 3_600_000;

  /** A site whose robots.txt answer can be switched while it runs. */
  const switchableSite = async (initial: { status: number; body: string }) => {
    const current = { ...initial };
    const origin = await startSite((_req, res) => answerWith(current.status, current.body)(_req, res));
    origins.push(origin);
    return { origin, current };
  };

  before(async () => {
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, robots: { ttl: '1h', errorRetry: '1m' } }, { clock });
  });
  after(async () => {
    await proxy?.close();
    await Promise.all(origins.map((o) => o.close()));
  });

  it('uses the snapshot until robots.ttl, then fetches again and applies the new rules', async () => {
    const { origin, current } = await switchableSite({ status: 200, body: 'User-agent: *\nDisallow: /a/\n' });
    assert.equal((await get(proxy, `${origin.url}/a/1`)).status, 403);
    current.body = 'User-agent: *\nDisallow: /b/\n';
    await clock.advance(HOUR_MS - 1000);
    assert.equal((await get(proxy, `${origin.url}/a/1`)).status, 403, 'still the first file before ttl');
    assert.equal(origin.robotsHits(), 1);
    await clock.advance(2000);
    const a = await get(proxy, `${origin.url}/a/1`);
    assert.equal(a.status, 200);
    assert.equal(a.decision, 'allow; reason=no-matching-rule');
    assert.equal((await get(proxy, `${origin.url}/b/1`)).decision, 'deny; reason=rule-disallow');
    assert.equal(origin.robotsHits(), 2);
    assert.deepEqual(pageHits(origin), ['/a/1']);
  });

  it('an unreachable refetch keeps the earlier good snapshot, and retries after errorRetry', async () => {
    const { origin, current } = await switchableSite({ status: 200, body: DISALLOW_PRIVATE });
    assert.equal((await get(proxy, `${origin.url}/private/x`)).decision, 'deny; reason=rule-disallow');
    current.status = 500;
    current.body = 'oops';
    await clock.advance(HOUR_MS + 1000);
    const denied = await get(proxy, `${origin.url}/private/x`);
    assert.equal(denied.status, 403);
    assert.equal(denied.decision, 'deny; reason=rule-disallow', 'the old rules, not robots-unreachable');
    const page = await get(proxy, `${origin.url}/page`);
    assert.equal(page.status, 200);
    assert.equal(page.decision, 'allow; reason=no-matching-rule');
    assert.equal(origin.robotsHits(), 2);
    await clock.advance(30_000);
    await get(proxy, `${origin.url}/page`);
    assert.equal(origin.robotsHits(), 2, 'no refetch within errorRetry');
    await clock.advance(31_000);
    assert.equal((await get(proxy, `${origin.url}/private/y`)).decision, 'deny; reason=rule-disallow');
    assert.equal(origin.robotsHits(), 3, 'retried after errorRetry');
    assert.deepEqual(pageHits(origin), ['/page', '/page']);
  });
});

describe('robots.txt answered 429 or 503 with Retry-After (fake clock; issue 7 item 2)', () => {
  const clock = new FakeClock();
  const proxies: Proxy[] = [];
  const origins: TestOrigin[] = [];

  /** A site whose robots.txt answers `status` with `Retry-After: retryAfter` until `current.status` is changed. */
  const overloadedSite = async (status: number, retryAfter: string) => {
    const current = { status, body: '' };
    const origin = await startSite((_req, res) => {
      const headers: Record<string, string> = current.status === status ? { 'retry-after': retryAfter } : {};
      answerWith(current.status, current.body, headers)(_req, res);
    });
    origins.push(origin);
    return { origin, current };
  };
  const proxyWith = async (config: Record<string, unknown>): Promise<Proxy> => {
    const proxy = await startTestProxy({ https: { mode: 'tunnel' }, ...config }, { clock });
    proxies.push(proxy);
    return proxy;
  };

  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(origins.map((o) => o.close()));
  });

  it('errorRetry 2s, 429 with Retry-After: 10: no robots.txt request before 10 s; each 503 says how long is left', async () => {
    const proxy = await proxyWith({ robots: { errorRetry: '2s' } });
    const { origin, current } = await overloadedSite(429, '10');
    const retryAfters: string[] = [];
    for (const stepMs of [0, 2_000, 4_000, 3_999]) {
      await clock.advance(stepMs);
      const r = await get(proxy, `${origin.url}/page`, true);
      assertUnreachable(r);
      retryAfters.push(String(r.headers['retry-after']));
    }
    assert.deepEqual(retryAfters, ['10', '8', '4', '1'], 'at 0 s, 2 s, 6 s and 9.999 s');
    assert.equal(origin.robotsHits(), 1, 'robots.txt not asked again before its Retry-After');
    current.status = 200;
    current.body = 'User-agent: *\nDisallow: /private/\n';
    await clock.advance(1);
    const page = await get(proxy, `${origin.url}/page`);
    assert.equal(page.status, 200, 'fetched again at 10 s, and allowed');
    assert.equal(origin.robotsHits(), 2);
    assert.deepEqual(pageHits(origin), ['/page']);
  });

  it('default config, 503 with Retry-After: 3600: not asked again at 60 s; capped at pacing.maxRetryAfter (10m)', async () => {
    const proxy = await proxyWith({});
    const { origin } = await overloadedSite(503, '3600');
    const first = await get(proxy, `${origin.url}/a`, true);
    assertUnreachable(first);
    assert.equal(first.headers['retry-after'], '600');
    await clock.advance(60_000);
    const r = await get(proxy, `${origin.url}/a`, true);
    assert.equal(r.headers['retry-after'], '540');
    await clock.advance(600_000 - 60_000 - 1);
    assertUnreachable(await get(proxy, `${origin.url}/a`, true));
    assert.equal(origin.robotsHits(), 1);
    await clock.advance(1);
    assertUnreachable(await get(proxy, `${origin.url}/a`, true));
    assert.equal(origin.robotsHits(), 2, 'asked again once the capped Retry-After passed');
  });

  it('a good snapshot kept while robots.txt answers 503 with Retry-After: 300: its pages pause 300 s, and it is not refetched before', async () => {
    const proxy = await proxyWith({ robots: { ttl: '1h', errorRetry: '2s' } });
    const { origin, current } = await overloadedSite(503, '300');
    current.status = 200;
    current.body = DISALLOW_PRIVATE;
    assert.equal((await get(proxy, `${origin.url}/private/x`)).decision, 'deny; reason=rule-disallow');
    current.status = 503;
    await clock.advance(3_600_000);
    assert.equal((await get(proxy, `${origin.url}/private/x`)).decision, 'deny; reason=rule-disallow', 'the kept rules');
    assert.equal(origin.robotsHits(), 2);
    // The kept rules allow /page, but the origin has just said "unavailable, retry in 300 s": the
    // page waits for that pause like after a page's own 503 (longer than pacing.maxWait: 429 at once).
    const paused = await get(proxy, `${origin.url}/page`, true);
    assert.equal(paused.status, 429);
    assert.equal(JSON.parse(paused.body.toString()).decision.reason, 'queue-full');
    assert.equal(paused.headers['retry-after'], '300');
    await clock.advance(299_999);
    const page = get(proxy, `${origin.url}/page`);
    await waitFor(() => proxy.pacer.originStats(origin.url)?.queued === 1, 'the page queued for the last millisecond of the pause');
    assert.equal(origin.robotsHits(), 2, 'not asked again before its Retry-After');
    await clock.advance(1);
    assert.equal((await page).status, 200);
    assert.deepEqual(pageHits(origin), ['/page'], 'the page went out when the pause ended');
    current.status = 200;
    await get(proxy, `${origin.url}/page`);
    assert.equal(origin.robotsHits(), 3);
  });

  it('pacing.maxRetryAfter 2h: Retry-After: 3600 is honoured in full, and clients are told 3600', async () => {
    const proxy = await proxyWith({ pacing: { maxRetryAfter: '2h' } });
    const { origin } = await overloadedSite(503, '3600');
    assert.equal((await get(proxy, `${origin.url}/a`, true)).headers['retry-after'], '3600');
    await clock.advance(3_600_000 - 1);
    assertUnreachable(await get(proxy, `${origin.url}/a`, true));
    assert.equal(origin.robotsHits(), 1);
    await clock.advance(1);
    await get(proxy, `${origin.url}/a`, true);
    assert.equal(origin.robotsHits(), 2);
  });
});
