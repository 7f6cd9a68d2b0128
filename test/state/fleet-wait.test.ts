/**
 * A fleet's wait for a slot another instance holds, with the default limits (`pacing.maxWait` 30 s,
 * `state.redis.slotLease` 30 s): the holder's lease end is the latest the slot can free, not the
 * expected wait. Two `robots-proxy serve` processes on one private redis-server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOriginsProcess, type OriginsProcess, type ProxyProcess } from '../helpers/processes.js';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { fleetYaml, freshPrefix, sendThroughFleet, startFleet } from '../helpers/fleet.js';

describe('a fleet of two waiting for each other\'s slots with the default maxWait and slotLease', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  let origins: OriginsProcess;
  let fleet: ProxyProcess[] = [];

  before(async () => {
    redis = await startRedisServer();
    [origins, fleet] = await Promise.all([
      startOriginsProcess({
        D: { robots: 'User-agent: *\nCrawl-delay: 0.1\n' },
        C: { robots: 'User-agent: *\nAllow: /\n', paths: Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`/c/${i}`, { delayMs: 300 }])) },
      }),
      startFleet(fleetYaml(redis.url, freshPrefix(), { pacing: '{ maxConcurrency: 2 }', slotLease: '30s' }), 2),
    ]);
  });

  after(async () => {
    await Promise.all(fleet.map((p) => p.close()));
    await origins?.close();
    await redis?.close();
  });

  it('a delayed origin held by the other instance: the request waits its turn (429 at once before)', async () => {
    const work = Array.from({ length: 6 }, (_, i) => ({ host: 'D', path: `/page/${i}` }));
    const results = await sendThroughFleet(fleet, work, (h) => origins.urlOf(h), { concurrency: 6 });
    assert.deepEqual(results.map((r) => `${r.path} ${r.status} ${r.decision}`).sort(), work.map((w) => `${w.path} 200 allow; reason=no-matching-rule`).sort());
  });

  it('an undelayed origin at maxConcurrency fleet-wide: the request waits for a release (429 at once before)', async () => {
    const work = Array.from({ length: 6 }, (_, i) => ({ host: 'C', path: `/c/${i}` }));
    const results = await sendThroughFleet(fleet, work, (h) => origins.urlOf(h), { concurrency: 6 });
    assert.deepEqual(results.map((r) => `${r.path} ${r.status}`).sort(), work.map((w) => `${w.path} 200`).sort());
  });
});
