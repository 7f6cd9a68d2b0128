/**
 * A fleet's wait for a slot another instance holds (issue 10): with the default limits
 * (`pacing.maxWait` 30 s, `state.redis.slotLease` 30 s) the holder's lease end is the latest the
 * slot can free, not the expected wait; and a release below the releaser's limits is announced to
 * a request it left waiting (one bot's Crawl-delay beside another bot's undelayed requests). Two
 * `robots-proxy serve` processes on one private redis-server per describe.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { proxyGet } from '../helpers/harness.js';
import type { ProxyProcess } from '../helpers/processes.js';
import { REDIS_SKIP } from '../helpers/redis-server.js';
import { fleetYaml, freshPrefix, sendThroughFleet, useFleet } from '../helpers/fleet.js';

describe('a fleet of two waiting for each other\'s slots with the default maxWait and slotLease', { skip: REDIS_SKIP }, () => {
  const running = useFleet(
    {
      D: { robots: 'User-agent: *\nCrawl-delay: 0.1\n' },
      C: { robots: 'User-agent: *\nAllow: /\n', paths: Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`/c/${i}`, { delayMs: 300 }])) },
    },
    (redisUrl) => fleetYaml(redisUrl, freshPrefix(), { pacing: '{ maxConcurrency: 2 }', slotLease: '30s' }),
    2,
  );

  it('a delayed origin held by the other instance: the request waits its turn (429 at once before)', async () => {
    const work = Array.from({ length: 6 }, (_, i) => ({ host: 'D', path: `/page/${i}` }));
    const results = await sendThroughFleet(running.fleet, work, (h) => running.origins.urlOf(h), { concurrency: 6 });
    assert.deepEqual(results.map((r) => `${r.path} ${r.status} ${r.decision}`).sort(), work.map((w) => `${w.path} 200 allow; reason=no-matching-rule`).sort());
  });

  it('an undelayed origin at maxConcurrency fleet-wide: the request waits for a release (429 at once before)', async () => {
    const work = Array.from({ length: 6 }, (_, i) => ({ host: 'C', path: `/c/${i}` }));
    const results = await sendThroughFleet(running.fleet, work, (h) => running.origins.urlOf(h), { concurrency: 6 });
    assert.deepEqual(results.map((r) => `${r.path} ${r.status}`).sort(), work.map((w) => `${w.path} 200`).sort());
  });
});

describe('a fleet of two: one bot\'s Crawl-delay beside another bot\'s undelayed requests at one origin', { skip: REDIS_SKIP }, () => {
  const running = useFleet(
    { M: { robots: 'User-agent: SlowBot\nCrawl-delay: 0.1\n\nUser-agent: *\nAllow: /\n', paths: { '/long': { delayMs: 500 } } } },
    (redisUrl) => fleetYaml(redisUrl, freshPrefix(), { pacing: '{ maxConcurrency: 4, maxWait: 5s }', slotLease: '30s' }),
    2,
  );

  it('the delayed request starts once the undelayed one ends: its release is announced (it waited for the lease end, 30 s, and got 429 at maxWait before)', async () => {
    const { fleet, origins } = running;
    const get = (proxy: ProxyProcess, path: string, userAgent: string) => proxyGet(proxy.proxyPort, origins.urlOf('M') + path, { headers: { 'user-agent': userAgent } });
    assert.equal((await get(fleet[0]!, '/warm', 'SlowBot/1.0')).status, 200);
    const long = get(fleet[0]!, '/long', 'OtherBot/1.0');
    await new Promise((resolve) => setTimeout(resolve, 150));
    const askedAtMs = Date.now();
    const delayed = await get(fleet[1]!, '/after', 'SlowBot/1.0');
    assert.equal(delayed.status, 200, `${delayed.status} ${String(delayed.headers['x-robots-proxy-decision'])}`);
    assert.equal((await long).status, 200);
    const hits = await origins.hits('M');
    const longHit = hits.find((h) => h.url === '/long')!;
    const afterHit = hits.find((h) => h.url === '/after')!;
    assert.ok(afterHit.atMs >= longHit.atMs + 450, 'not beside the undelayed request (500 ms at the origin)');
    assert.ok(Date.now() - askedAtMs < 4_000, `answered after ${Date.now() - askedAtMs} ms`);
  });
});
