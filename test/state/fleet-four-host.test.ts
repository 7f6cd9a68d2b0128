/**
 * The four-host scenario (issue #3) through a fleet (issue 10): three
 * `robots-proxy serve` processes sharing one private redis-server, the
 * client's requests spread over them. The fleet fetches each robots.txt once,
 * sends nothing disallowed, and spaces B's requests (Crawl-delay 0.05) by
 * 50 ms fleet-wide, judged by the same jitter-tolerant helper as the
 * single-instance run, on the three instances' access logs together.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertStartSpacing, onFirstProcessClock, seenStarts, sentStarts } from '../helpers/spacing.js';
import { assertNothingPrivateUpstream, assertPagesServed, assertPrivateDenied, assertRobotsFetchedOnce } from '../helpers/four-host.js';
import { startOriginsProcess, type OriginsProcess, type ProxyProcess, type RemoteHit } from '../helpers/processes.js';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { fleetYaml, freshPrefix, sendThroughFleet, startFleet, type FleetResult } from '../helpers/fleet.js';

const NAMES = ['A', 'B', 'C', 'D'] as const;

describe('four-host scenario through a fleet of three on Redis', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  let origins: OriginsProcess;
  let proxies: ProxyProcess[] = [];
  let results: FleetResult[] = [];
  const hits: Record<string, RemoteHit[]> = {};

  before(async () => {
    redis = await startRedisServer();
    const disallow = 'User-agent: *\nDisallow: /private/\n';
    [origins, proxies] = await Promise.all([
      startOriginsProcess({
        A: { robots: disallow, pageDelayMs: 10 },
        B: { robots: disallow + 'Crawl-delay: 0.05\n', pageDelayMs: 10 },
        C: { robots: disallow, pageDelayMs: 10 },
        D: { robotsStatus: 404, robots: 'not found', pageDelayMs: 10 },
      }),
      startFleet(fleetYaml(redis.url, freshPrefix())),
    ]);
    const work: Array<{ host: string; path: string }> = [];
    for (let i = 0; i < 60; i++) for (const host of NAMES) work.push({ host, path: `/page/${i}?q=${i}` });
    for (let i = 0; i < 27; i++) work.splice(i * 9, 0, { host: NAMES[i % 3]!, path: `/private/${i}` });
    results = await sendThroughFleet(proxies, work, (host) => origins.urlOf(host));
    for (const name of NAMES) hits[name] = await origins.hits(name);
    await Promise.all(proxies.map((p, i) => p.waitForAccessLines(results.filter((r) => r.instance === i).length)));
  });

  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await origins?.close();
    await redis?.close();
  });

  it('spreads the requests over the three instances', () => {
    assert.deepEqual([0, 1, 2].map((i) => results.filter((r) => r.instance === i).length > 80), [true, true, true]);
  });

  it('fetches each origin\'s robots.txt once for the whole fleet', () => {
    assertRobotsFetchedOnce(hits);
  });

  it('sends nothing under /private/ to any origin', () => {
    assertNothingPrivateUpstream(hits);
  });

  it('answers all 27 private URLs with 403 naming the rule', () => {
    assertPrivateDenied(results);
  });

  it('answers every page with 200 and the origin\'s body', () => {
    assertPagesServed(results, hits);
  });

  it('spaces the starts at B by 50 ms fleet-wide, and B saw none before it was sent', () => {
    // The instances' starts on one clock (the first's): each logs on its own.
    const sent = onFirstProcessClock(proxies.map((p) => ({ logs: p.logs, starts: sentStarts(p.logs, origins.urlOf('B'), '/page/') })));
    assert.equal(sent.length, 60);
    for (const p of proxies) assert.ok(sentStarts(p.logs, origins.urlOf('B'), '/page/').length > 0, 'every instance sent some of B\'s pages');
    const seen = seenStarts(hits['B']!, '/page/');
    assert.equal(seen.length, 60);
    assertStartSpacing(sent, seen, 50);
  });
});
