/**
 * The Redis slot store against a private redis-server (issue 10): the
 * reservation script's spacing on the server's clock, one delayed request in
 * flight, maxConcurrency, pauses, release announcements, lease expiry; and a
 * server that stops answering (SIGSTOP) with its connection open: every call
 * gives up within the command timeout, and the store is available again once
 * the server answers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RedisConnection } from '../../src/state/redis-connection.js';
import { RedisSlotStore } from '../../src/state/redis-slots.js';
import type { SlotLease } from '../../src/state/types.js';
import { StateUnavailableError } from '../../src/errors.js';
import { REDIS_SKIP, useRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from '../helpers/fleet.js';

const quiet = { info: () => undefined, warn: () => undefined };
const ORIGIN = 'https://a.example';

const opened: RedisConnection[] = [];

async function open(redis: RedisServer, leaseMs = 30_000, commandTimeoutMs = 300, keyPrefix = freshPrefix()): Promise<{ connection: RedisConnection; slots: RedisSlotStore; keyPrefix: string }> {
  const connection = new RedisConnection({ url: redis.url, keyPrefix, commandTimeoutMs, logger: quiet });
  opened.push(connection);
  const slots = new RedisSlotStore(connection, { slotLeaseMs: leaseMs, logger: quiet });
  await connection.start();
  await slots.start();
  return { connection, slots, keyPrefix };
}

describe('RedisSlotStore', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  useRedisServer(opened, (server) => (redis = server));

  it('spaces delayed starts on the server\'s clock and runs one delayed request at a time', async () => {
    const { connection, slots } = await open(redis);
    const request = { origin: ORIGIN, delayMs: 200, maxConcurrency: 4, isEndToStart: false };
    const first = await slots.reserve(request);
    assert.ok(first.granted && first.startInMs === 0);
    const busy = await slots.reserve(request);
    assert.ok(!busy.granted && busy.why === 'busy', 'one delayed request in flight');
    assert.equal((await slots.reserve({ ...request, delayMs: 0 })).granted, false, 'nor an undelayed one beside it');
    slots.release((first as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await slots.reserve(request);
    assert.ok(second.granted, 'free again after the release');
    assert.ok(second.startInMs > 100 && second.startInMs <= 200, `reserved ${second.startInMs} ms ahead: the previous start plus the delay`);
    await connection.close();
  });

  it('allows maxConcurrency undelayed requests and announces a release to a waiter', async () => {
    const { connection, slots } = await open(redis);
    const request = { origin: ORIGIN, delayMs: 0, maxConcurrency: 2, isEndToStart: false };
    const leases = [await slots.reserve(request), await slots.reserve(request)];
    assert.ok(leases.every((l) => l.granted));
    assert.equal((await slots.reserve(request)).granted, false);
    const announced = new Promise<void>((resolve) => slots.onFree(ORIGIN, resolve));
    slots.release((leases[0] as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await announced;
    assert.equal((await slots.reserve(request)).granted, true);
    await connection.close();
  });

  it('shares a pause, and frees a lease nobody releases once it ends', async () => {
    const { connection, slots, keyPrefix } = await open(redis, 300);
    const request = { origin: ORIGIN, delayMs: 50, maxConcurrency: 1, isEndToStart: false };
    const held = await slots.reserve(request);
    assert.ok(held.granted);
    // The holder dies: no release, no renewal (its store is closed without releasing).
    await slots.close();
    const other = await open(redis, 300, 300, keyPrefix);
    const blocked = await other.slots.reserve(request);
    assert.ok(!blocked.granted && blocked.retryInMs <= 300);
    await new Promise((resolve) => setTimeout(resolve, blocked.retryInMs + 20));
    const after = await other.slots.reserve(request);
    assert.ok(after.granted, 'free once the lease ended');
    other.slots.release((after as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 1_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const paused = await other.slots.reserve(request);
    assert.ok(!paused.granted && paused.why === 'paused' && paused.retryInMs > 800 && paused.retryInMs <= 1_000);
    await Promise.all([connection.close(), other.connection.close()]);
  });

  it('gives up within the command timeout on a server that stopped answering, and recovers', async () => {
    const { connection, slots } = await open(redis, 30_000, 300);
    assert.equal(connection.isAvailable, true);
    redis.signal('SIGSTOP');
    try {
      const startedAtMs = Date.now();
      await assert.rejects(slots.reserve({ origin: ORIGIN, delayMs: 0, maxConcurrency: 1, isEndToStart: false }), StateUnavailableError);
      assert.ok(Date.now() - startedAtMs < 1_500, `gave up after ${Date.now() - startedAtMs} ms`);
      assert.equal(slots.isAvailable, false);
      // Known to be down: the next call fails at once, without a round trip.
      const again = Date.now();
      await assert.rejects(slots.reserve({ origin: ORIGIN, delayMs: 0, maxConcurrency: 1, isEndToStart: false }), StateUnavailableError);
      assert.ok(Date.now() - again < 50);
    } finally {
      redis.signal('SIGCONT');
    }
    const deadline = Date.now() + 5_000;
    while (!slots.isAvailable && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(slots.isAvailable, true, 'available again once the server answers');
    await connection.close();
  });
});
