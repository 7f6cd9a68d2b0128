/**
 * What an instance says when the fleet's Redis does not answer (README "Running a fleet", "When
 * Redis is unreachable"): the start warning named neither the error nor the fallback ("pacing falls
 * back until it does"), so an operator with a wrong `state.redis.url` could not tell what was wrong
 * nor what the instance did meanwhile. A real connection to a loopback port nothing listens on.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { RedisConnection } from '../../src/state/redis-connection.js';
import { fallbackClause } from '../../src/state/fallback-text.js';

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the fleet-state lines say what fails and what the instance does meanwhile', () => {
  it('names the fallback of each onUnavailable mode, with the factor fleetSize gives', () => {
    assert.equal(
      fallbackClause({ fleetSize: 2, redis: { onUnavailable: 'local' } }),
      'this instance paces alone, every delay x 2 and maxConcurrency / 2 (state.redis.onUnavailable: local, state.fleetSize: 2), and fetches robots.txt alone',
    );
    assert.equal(fallbackClause({ fleetSize: 3, redis: { onUnavailable: 'deny' } }), 'requests are answered 503 fleet-unavailable with Retry-After (state.redis.onUnavailable: deny)');
  });

  it('a Redis that does not answer at start: the warning names the URL, the connection error and the fallback', async () => {
    const port = await closedPort();
    const lines: Array<Record<string, unknown>> = [];
    const push = (level: string) => (fields: object, msg: string) => void lines.push({ level, ...fields, msg });
    const connection = new RedisConnection({
      url: `redis://:secret@127.0.0.1:${port}`,
      keyPrefix: 'fallback-text-test:',
      commandTimeoutMs: 200,
      logger: { info: push('info'), warn: push('warn') },
      fallback: fallbackClause({ fleetSize: 2, redis: { onUnavailable: 'local' } }),
    });
    try {
      await connection.start();
      const start = lines.find((l) => l['event'] === 'fleet-state');
      assert.ok(start, 'a fleet-state line at start');
      assert.equal(start['level'], 'warn');
      assert.equal(start['err'], `connect ECONNREFUSED 127.0.0.1:${port}`);
      assert.equal(
        start['msg'],
        `Redis (redis://:***@127.0.0.1:${port}) does not answer at start (connect ECONNREFUSED 127.0.0.1:${port}); until it does, ` +
          'this instance paces alone, every delay x 2 and maxConcurrency / 2 (state.redis.onUnavailable: local, state.fleetSize: 2), and fetches robots.txt alone',
      );
      assert.ok(!String(start['msg']).includes('secret'), 'the password is not logged');
    } finally {
      await connection.close();
    }
  });
});
