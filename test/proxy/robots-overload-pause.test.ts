/**
 * A robots.txt answered 429 or 503 pauses the origin's pages (RFC 9309 §2.3.1.4; DESIGN.md
 * "Pacing semantics": an origin that says "too many requests" or "unavailable" does not then get
 * the bot's pages at full speed), through the real proxy on the real clock: in report mode (the
 * pages are forwarded, would-deny) and in enforce mode with a kept snapshot whose rules allow the
 * page. The `robots-fetch` log line carries `pausedUntilMs`, and `/metrics` shows the origin
 * paused. A robots.txt 500 pauses nothing. Times are the origin's own receive times.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { captureLogs, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest } from '../helpers/proxy-client.js';

const UA = 'ExampleBot/2.1';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/** A site whose robots.txt answers `robots.status` (with `robots.headers`, `robots.body`), pages 200. */
async function startSite(robots: { status: number; body: string; headers: Record<string, string> }): Promise<TestOrigin> {
  return startOrigin((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/robots.txt') {
      res.writeHead(robots.status, { 'content-type': 'text/plain', ...robots.headers });
      res.end(robots.body);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`page ${req.url}`);
  });
}

/** When the origin received `path` (its `n`-th hit on that path, 1-based), `performance.now()` ms. */
function hitAt(origin: TestOrigin, path: string, n = 1): number {
  const hits = origin.hits.filter((h) => h.url === path);
  const hit = hits[n - 1];
  assert.ok(hit, `${path} hit ${n} of ${hits.length}`);
  return hit.atMs;
}

function robotsFetchLines(lines: Array<Record<string, unknown>>, origin: TestOrigin): Array<Record<string, unknown>> {
  return lines.filter((l) => l['event'] === 'robots-fetch' && l['origin'] === origin.url);
}

async function pausedGauge(proxy: Proxy, origin: TestOrigin): Promise<string | undefined> {
  const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text();
  return text.split('\n').find((line) => line.startsWith(`robots_proxy_origin_paused{origin="${origin.url}"}`));
}

describe('robots.txt answered 429/503 pauses the origin\'s pages', () => {
  const proxies: Proxy[] = [];
  const origins: TestOrigin[] = [];
  const start = async (config: Record<string, unknown>): Promise<{ proxy: Proxy; lines: Array<Record<string, unknown>> }> => {
    const logs = captureLogs();
    const proxy = await startTestProxy({ https: { mode: 'tunnel' }, ...config }, { logger: logs.logger });
    proxies.push(proxy);
    return { proxy, lines: logs.lines };
  };
  const site = async (robots: { status: number; body: string; headers: Record<string, string> }): Promise<TestOrigin> => {
    const origin = await startSite(robots);
    origins.push(origin);
    return origin;
  };
  const get = (proxy: Proxy, url: string) => proxyRequest(proxy.proxyAddress.port, url, { headers: { 'user-agent': UA } });

  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(origins.map((o) => o.close()));
  });

  it('report mode, robots.txt 429 with Retry-After: 3: the first page waits 3 s; log line and gauge show the pause', async () => {
    const { proxy, lines } = await start({ enforcement: 'report' });
    const origin = await site({ status: 429, body: '', headers: { 'retry-after': '3' } });
    const page = get(proxy, `${origin.url}/a`);
    // While the page waits, it is queued at a paused origin.
    const deadline = Date.now() + 2_000;
    while (robotsFetchLines(lines, origin).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(await pausedGauge(proxy, origin), `robots_proxy_origin_paused{origin="${origin.url}"} 1`);
    const answer = await page;
    assert.equal(answer.status, 200);
    assert.equal(answer.decision, 'allow; reason=report-only; would-deny=robots-unreachable');
    const waitedMs = hitAt(origin, '/a') - hitAt(origin, '/robots.txt');
    assert.ok(waitedMs >= 2_900, `the page reached the origin ${waitedMs.toFixed(0)} ms after robots.txt`);
    const [line] = robotsFetchLines(lines, origin);
    const robots = line?.['robots'] as { fetchedAtMs: number; status: number };
    assert.equal(robots.status, 429);
    const pausedUntilMs = line?.['pausedUntilMs'];
    assert.equal(typeof pausedUntilMs, 'number');
    assert.ok(Number.isInteger(pausedUntilMs), `whole ms, as every time in the log: ${String(pausedUntilMs)}`);
    assert.ok(Math.abs((pausedUntilMs as number) - robots.fetchedAtMs - 3_000) <= 5, `pausedUntilMs ${String(pausedUntilMs)} vs fetchedAtMs ${robots.fetchedAtMs}`);
  });

  it('enforce mode, an allow rule kept while the refetch answers 503 with Retry-After: 2: the page waits 2 s', async () => {
    const { proxy, lines } = await start({ robots: { ttl: '1s' } });
    const robots = { status: 200, body: 'User-agent: *\nAllow: /\nDisallow: /private/\n', headers: {} as Record<string, string> };
    const origin = await site(robots);
    const first = await get(proxy, `${origin.url}/a`);
    assert.equal(first.decision, 'allow; reason=rule-allow');
    robots.status = 503;
    robots.body = '';
    robots.headers = { 'retry-after': '2' };
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const second = await get(proxy, `${origin.url}/b`);
    assert.equal(second.status, 200);
    assert.equal(second.decision, 'allow; reason=rule-allow', 'the kept snapshot\'s rule');
    assert.equal(origin.robotsHits(), 2, 'refetched once');
    const waitedMs = hitAt(origin, '/b') - hitAt(origin, '/robots.txt', 2);
    assert.ok(waitedMs >= 1_900, `the page reached the origin ${waitedMs.toFixed(0)} ms after the 503`);
    const fetches = robotsFetchLines(lines, origin);
    assert.equal(fetches.length, 2);
    assert.equal(fetches[0]?.['pausedUntilMs'], undefined, 'a 200 pauses nothing');
    assert.equal(typeof fetches[1]?.['pausedUntilMs'], 'number');
  });

  it('report mode, robots.txt 500: nothing is paused', async () => {
    const { proxy, lines } = await start({ enforcement: 'report' });
    const origin = await site({ status: 500, body: '', headers: { 'retry-after': '3' } });
    const answer = await get(proxy, `${origin.url}/a`);
    assert.equal(answer.decision, 'allow; reason=report-only; would-deny=robots-unreachable');
    const [line] = robotsFetchLines(lines, origin);
    assert.equal((line?.['robots'] as { status: number }).status, 500);
    assert.equal(line?.['pausedUntilMs'], undefined);
    assert.equal(proxy.pacer.originStats(origin.url)?.pausedUntilMs, undefined);
    assert.notEqual(await pausedGauge(proxy, origin), `robots_proxy_origin_paused{origin="${origin.url}"} 1`);
  });
});
