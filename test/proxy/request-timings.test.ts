/**
 * The access line's timings when a request waits (issue 11): the steps a request takes at once
 * on arrival share one clock reading, and a request that waited in its origin's queue reads the
 * clock again when it goes upstream, so its upstream time does not include its queue wait.
 * Real origin, real proxy, real clock.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { captureLogs, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { proxyRequest, waitFor } from '../helpers/proxy-client.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';
/** How long the origin holds the first page request, ms. */
const HOLD_MS = 300;

describe('timings of a queued request (real clock)', () => {
  const logs = captureLogs();
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  let origin: TestOrigin;
  let releaseFirst: (() => void) | undefined;

  before(async () => {
    let isFirstPage = true;
    origin = await startOrigin((req, res: ServerResponse) => {
      if (req.url === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      const answer = (): void => void res.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${req.url}\n`);
      if (!isFirstPage) return answer();
      isFirstPage = false;
      releaseFirst = answer;
    });
    proxy = await startTestProxy({ https: { mode: 'tunnel' }, pacing: { maxConcurrency: 1 } }, { logger: logs.logger });
  });
  after(async () => {
    await proxy?.close();
    await origin?.close();
  });

  it('counts the queue wait in queueWaitMs and durationMs, not in upstreamMs', async () => {
    const headers = { 'user-agent': UA };
    const first = proxyRequest(proxy.proxyAddress.port, `${origin.url}/first`, { headers });
    await waitFor(() => releaseFirst !== undefined, 'the first request to reach the origin');
    const second = proxyRequest(proxy.proxyAddress.port, `${origin.url}/second`, { headers });
    await waitFor(() => (proxy.pacer.originStats(origin.url)?.queued ?? 0) === 1, 'the second request to queue');
    setTimeout(() => releaseFirst?.(), HOLD_MS);
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200);
    await waitFor(() => logs.lines.filter((l) => typeof l['url'] === 'string' && (l['url'] as string).startsWith(origin.url)).length >= 2, 'both access lines');
    const lineOf = (path: string): Record<string, unknown> => logs.lines.find((l) => l['url'] === `${origin.url}${path}`) ?? {};
    const [held, queued] = [lineOf('/first'), lineOf('/second')];
    // The first was held at the origin: its time is upstream time.
    assert.ok(Number(held['upstreamMs']) >= HOLD_MS - 5, `first: upstreamMs ${held['upstreamMs']}`);
    assert.ok(Number(held['durationMs']) >= Number(held['upstreamMs']), `first: durationMs ${held['durationMs']}`);
    // The second waited for the first's slot, then was answered at once.
    assert.ok(Number(queued['queueWaitMs']) >= HOLD_MS - 5, `second: queueWaitMs ${queued['queueWaitMs']}`);
    assert.ok(Number(queued['upstreamMs']) < HOLD_MS / 2, `second: upstreamMs ${queued['upstreamMs']} must not hold the queue wait`);
    assert.ok(Number(queued['durationMs']) >= Number(queued['queueWaitMs']), `second: durationMs ${queued['durationMs']}`);
  });
});
