/**
 * Redis keys of the wrong kind or with junk values (another tool writing under
 * the prefix, a hand edit, a half-restored dump): the fleet's scripts treat
 * such a key as absent and replace it, so the origin is paced fleet-wide
 * again, and one bad key neither takes the whole fleet to its
 * `onUnavailable` fallback (with `deny`: 503 for every origin) nor keeps it
 * there (a key without a TTL would never expire).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { proxyGet, siteHandler, startOrigin, startTestProxy, type TestOrigin } from '../helpers/harness.js';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from '../helpers/fleet.js';

const UA = 'Mozilla/5.0 (compatible; ExampleBot/2.1; +https://bot.example/info)';

describe('a fleet whose Redis holds junk under its keys', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  let delayed: TestOrigin;
  let plain: TestOrigin;
  let proxy: Awaited<ReturnType<typeof startTestProxy>>;
  const prefix = freshPrefix();

  before(async () => {
    redis = await startRedisServer();
    delayed = await startOrigin(siteHandler({ robots: 'User-agent: *\nCrawl-delay: 0.05\nAllow: /\n' }));
    plain = await startOrigin(siteHandler({ robots: 'User-agent: *\nAllow: /\n' }));
    proxy = await startTestProxy({ state: { backend: 'redis', redis: { url: redis.url, keyPrefix: prefix, onUnavailable: 'deny', commandTimeout: '2s' } } });
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([delayed?.close(), plain?.close()]);
    await redis?.close();
  });

  const get = async (origin: TestOrigin, path: string): Promise<number> => (await proxyGet(proxy.proxyAddress.port, `${origin.url}${path}`, { headers: { 'user-agent': UA } })).status;

  it('keys of the wrong kind and junk values are replaced: every request is served, none gets 503', async () => {
    assert.equal(await get(delayed, '/warm'), 200);
    assert.equal(await get(plain, '/warm'), 200);
    const keys = await redis.client.keys(`${prefix}*`);
    assert.ok(keys.length >= 2, `keys under the prefix: ${keys.join(', ')}`);
    const o = delayed.url;
    // Every key the fleet uses for the delayed origin, with the wrong kind; its snapshot hash with junk fields.
    for (const kind of ['slot', 'busy']) {
      await redis.client.del(`${prefix}${kind}:${o}`);
      await redis.client.sadd(`${prefix}${kind}:${o}`, 'junk');
    }
    // The right kind but no TTL (the fleet writes none of those): a pause far in the future, a lock nobody frees.
    await redis.client.set(`${prefix}pause:${o}`, '9e99');
    await redis.client.set(`${prefix}robots-lock:${o}`, 'junk');
    await redis.client.del(`${prefix}robots:${o}`);
    await redis.client.hset(`${prefix}robots:${o}`, 'next', 'not-a-number', 'data', 'junk');
    // A lock of the plain origin's of another kind.
    await redis.client.sadd(`${prefix}robots-lock:${plain.url}`, 'junk');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      statuses.push(await get(delayed, `/after/${i}`));
      statuses.push(await get(plain, `/after/${i}`));
    }
    assert.deepEqual(statuses, statuses.map(() => 200));
    // A slot hash with junk numbers is read as empty too.
    await redis.client.hset(`${prefix}slot:${o}`, 'last', 'junk', 'end', 'junk');
    assert.equal(await get(delayed, '/junk-fields'), 200);
    assert.equal(await redis.client.type(`${prefix}slot:${o}`), 'hash');
  });
});
