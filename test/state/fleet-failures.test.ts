/**
 * A fleet's failures (issue 10), with three `robots-proxy serve` processes on
 * one private redis-server: an instance killed (SIGKILL) while it holds a
 * delayed origin's slot, or the robots.txt fetch lock, holds the others up no
 * longer than the lease (2 s here); an upstream 429 seen by one instance
 * pauses the origin for all three.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { proxyGet } from '../helpers/harness.js';
import { startOriginsProcess, type OriginsProcess, type ProxyProcess, type RemoteHit } from '../helpers/processes.js';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { fleetYaml, freshPrefix, startFleet } from '../helpers/fleet.js';

const UA = 'ExampleBot/2.1';
const LEASE_MS = 2_000;
/** Scheduling slack on a loaded machine: process start-up is done, but timers and sockets lag. */
const SLACK_MS = 2_000;

async function hitsUntil(origins: OriginsProcess, name: string, done: (hits: RemoteHit[]) => boolean, timeoutMs = 15_000): Promise<RemoteHit[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const hits = await origins.hits(name);
    if (done(hits)) return hits;
    if (Date.now() > deadline) throw new Error(`origin ${name}: condition not met; hits ${JSON.stringify(hits.map((h) => h.url))}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function get(proxy: ProxyProcess, url: string): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return proxyGet(proxy.proxyPort, url, { headers: { 'user-agent': UA } });
}

describe('a fleet of three when an instance dies, and under an upstream 429', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  let origins: OriginsProcess;
  let fleet: ProxyProcess[] = [];

  before(async () => {
    redis = await startRedisServer();
    [origins, fleet] = await Promise.all([
      startOriginsProcess({
        S: { robots: 'User-agent: *\nCrawl-delay: 0.05\n', paths: { '/slow': { delayMs: 30_000 } } },
        R: { robots: 'User-agent: *\nAllow: /\n', robotsFirstDelayMs: 30_000 },
        P: { robots: 'User-agent: *\nAllow: /\n', paths: { '/limit': { status: 429, retryAfter: '2' } } },
      }),
      // Four instances: two tests kill one each.
      startFleet(fleetYaml(redis.url, freshPrefix(), { slotLease: `${LEASE_MS}ms`, robotsLockLease: `${LEASE_MS}ms` }), 4),
    ]);
  });

  after(async () => {
    await Promise.all(fleet.map((p) => p.close()));
    await origins?.close();
    await redis?.close();
  });

  it('an upstream 429 with Retry-After: 2 seen by one instance pauses the origin for every instance', async () => {
    const [a, b, c] = [fleet[1]!, fleet[2]!, fleet[3]!];
    // Snapshot first, so the pause is the only thing between the requests.
    assert.equal((await get(a, origins.urlOf('P') + '/page/warm')).status, 200);
    const limited = await get(a, origins.urlOf('P') + '/limit');
    assert.equal(limited.status, 429);
    const answers = await Promise.all([a, b, c].flatMap((p, i) => [get(p, `${origins.urlOf('P')}/page/${i}a`), get(p, `${origins.urlOf('P')}/page/${i}b`)]));
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 200, 200, 200]);
    const hits = await origins.hits('P');
    const limitAtMs = hits.find((h) => h.url === '/limit')!.atMs;
    const after429 = hits.filter((h) => h.url.startsWith('/page/') && h.url !== '/page/warm');
    assert.equal(after429.length, 6);
    // Retry-After 2 s, less the time the 429 took to travel back and the timers' rounding.
    for (const h of after429) assert.ok(h.atMs - limitAtMs >= 1_900, `${h.url} reached P ${Math.round(h.atMs - limitAtMs)} ms after the 429`);
  });

  it('a killed instance holding a delayed origin\'s slot holds the others up no longer than the lease', async () => {
    const [victim, b, c] = [fleet[0]!, fleet[2]!, fleet[3]!];
    assert.equal((await get(b, origins.urlOf('S') + '/page/warm')).status, 200);
    void get(victim, origins.urlOf('S') + '/slow').catch(() => undefined);
    await hitsUntil(origins, 'S', (hits) => hits.some((h) => h.url === '/slow'));
    const pages = [get(b, origins.urlOf('S') + '/page/1'), get(c, origins.urlOf('S') + '/page/2')];
    // Crawl-delay: the slot is the whole fleet's, so nothing else starts while /slow runs.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual((await origins.hits('S')).filter((h) => h.url === '/page/1' || h.url === '/page/2'), [], 'nothing started while the slot was held');
    const killedAtMs = Date.now();
    victim.kill('SIGKILL');
    await victim.exited;
    const answers = await Promise.all(pages);
    assert.deepEqual(answers.map((r) => r.status), [200, 200]);
    const hits = (await origins.hits('S')).filter((h) => h.url === '/page/1' || h.url === '/page/2');
    assert.equal(hits.length, 2);
    for (const h of hits) assert.ok(h.atMs - killedAtMs <= LEASE_MS + SLACK_MS, `${h.url} started ${Math.round(h.atMs - killedAtMs)} ms after the kill`);
  });

  it('a killed instance holding the robots.txt lock holds the others up no longer than the lease', async () => {
    const [victim, b, c] = [fleet[1]!, fleet[2]!, fleet[3]!];
    void get(victim, origins.urlOf('R') + '/page/0').catch(() => undefined);
    await hitsUntil(origins, 'R', (hits) => hits.some((h) => h.url === '/robots.txt'));
    const pages = [get(b, origins.urlOf('R') + '/page/1'), get(c, origins.urlOf('R') + '/page/2')];
    await new Promise((resolve) => setTimeout(resolve, 300));
    const killedAtMs = Date.now();
    victim.kill('SIGKILL');
    await victim.exited;
    const answers = await Promise.all(pages);
    assert.deepEqual(answers.map((r) => r.status), [200, 200]);
    const hits = await origins.hits('R');
    // The dead instance's fetch, and one more for the two survivors together.
    assert.equal(hits.filter((h) => h.url === '/robots.txt').length, 2);
    for (const h of hits.filter((x) => x.url.startsWith('/page/'))) {
      assert.ok(h.atMs - killedAtMs <= LEASE_MS + SLACK_MS, `${h.url} started ${Math.round(h.atMs - killedAtMs)} ms after the kill`);
    }
  });
});
