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
import type { SlotLease, SlotRequest } from '../../src/state/types.js';
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

/** Two instances (connections) on one fresh key prefix, lease 30 s, command timeout 300 ms. */
async function twoInstances(redis: RedisServer): Promise<[Awaited<ReturnType<typeof open>>, Awaited<ReturnType<typeof open>>]> {
  const keyPrefix = freshPrefix();
  return [await open(redis, 30_000, 300, keyPrefix), await open(redis, 30_000, 300, keyPrefix)];
}

/** Waits until both stores answer again, then asserts `other` is granted `request` at once (not busy until a lease ends). */
async function assertFreeOnceBack(slots: RedisSlotStore, other: { slots: RedisSlotStore }, request: SlotRequest): Promise<void> {
  for (const deadline = Date.now() + 5_000; !(slots.isAvailable && other.slots.isAvailable) && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(slots.isAvailable && other.slots.isAvailable, 'available again');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const next = await other.slots.reserve(request);
  assert.ok(next.granted, `the origin is free (it was busy until the lease end before): ${JSON.stringify(next)}`);
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
    const releasedAtMs = performance.now();
    slots.release((first as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await slots.reserve(request);
    assert.ok(second.granted, 'free again after the release');
    // The previous start (its release, sentAgoMs 0) plus the delay, judged on this process's clock
    // from the release: load only makes the reservation later and startInMs shorter (it was
    // `startInMs > 100`, which a 50 ms sleep that a loaded machine stretched past 100 ms failed).
    const secondStartMs = performance.now() + second.startInMs;
    assert.ok(secondStartMs - releasedAtMs >= 200 - 1, `starts ${(secondStartMs - releasedAtMs).toFixed(1)} ms after the previous one: the delay is 200 ms`);
    assert.ok(second.startInMs <= 200, `reserved ${second.startInMs} ms ahead: at most the delay`);
    await connection.close();
  });

  it('does not reserve a delayed start later than maxStartInMs: answers later, and the next start stays where it was', async () => {
    const { connection, slots } = await open(redis);
    const request = { origin: ORIGIN + ':8443', delayMs: 10_000, maxConcurrency: 4, isEndToStart: false };
    const first = await slots.reserve(request);
    assert.ok(first.granted && first.startInMs === 0);
    slots.release((first as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const later = await slots.reserve({ ...request, maxStartInMs: 5_000 });
    assert.ok(!later.granted && later.why === 'later' && later.retryInMs > 9_000 && later.retryInMs <= 10_000, JSON.stringify(later));
    // Nothing was taken: the next reservation (any start accepted) is the one the refused request would have had.
    const next = await slots.reserve(request);
    assert.ok(next.granted && next.startInMs > 9_000 && next.startInMs <= 10_000, JSON.stringify(next));
    await connection.close();
  });

  // The reservation schedules a start on the server's clock; the holder starts when its reply has
  // arrived and the wait is over, later under load (a late reply, a busy event loop). The release
  // carries how long ago the request really left (sentAgoMs), and the script moves `last` to that
  // (never earlier): the next start, on any instance, is a full delay after the real one.
  it('spaces the next start, on another instance, a full delay after a late holder\'s real start', async () => {
    const DELAY_MS = 100;
    const LATE_MS = 150;
    const a = await open(redis);
    const b = await open(redis, 30_000, 300, a.keyPrefix);
    const request = { origin: ORIGIN, delayMs: DELAY_MS, maxConcurrency: 1, isEndToStart: false };
    const first = await a.slots.reserve(request);
    assert.ok(first.granted);
    a.slots.release(first.lease, { sentAgoMs: 0, pauseMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const late = await a.slots.reserve(request);
    assert.ok(late.granted);
    // A leaves LATE_MS after its scheduled start, and its exchange takes 20 ms.
    await new Promise((resolve) => setTimeout(resolve, late.startInMs + LATE_MS));
    const sentAtMs = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const freed = new Promise<void>((resolve) => b.slots.onFree(ORIGIN, resolve));
    a.slots.release(late.lease, { sentAgoMs: performance.now() - sentAtMs, pauseMs: 0 });
    await freed;
    const next = await b.slots.reserve(request);
    assert.ok(next.granted);
    // B starts `startInMs` after it has the reply (FleetPacer's wait), on this process's clock.
    const nextStartMs = performance.now() + next.startInMs;
    // 1 ms: the script's times are written with three decimals, and the two clocks (Redis's TIME,
    // this process's monotonic one) may disagree by a rounding; load only makes B later.
    assert.ok(nextStartMs - sentAtMs >= DELAY_MS - 1, `the next start ${(nextStartMs - sentAtMs).toFixed(1)} ms after the late holder's real start (delay ${DELAY_MS} ms)`);
    await Promise.all([a.connection.close(), b.connection.close()]);
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

  it('announces a release below maxConcurrency to a request it left waiting: a delayed one, or one under a lower maxConcurrency (each waited for the lease end before)', { timeout: 20_000 }, async () => {
    const [{ connection, slots }, waiter] = await twoInstances(redis);
    const origin = ORIGIN + ':8444';
    const undelayed = { origin, delayMs: 0, maxConcurrency: 4, isEndToStart: false };
    const leases = [await slots.reserve(undelayed), await slots.reserve(undelayed)];
    assert.ok(leases.every((l) => l.granted));
    let notices = 0;
    const unsubscribe = waiter.slots.onFree(origin, () => notices++);
    // Two in flight, below their maxConcurrency 4: nobody waits, nothing is announced.
    slots.release((leases[0] as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(notices, 0);
    // A delayed request (another bot's Crawl-delay) waits for nothing in flight.
    const delayed = await waiter.slots.reserve({ ...undelayed, delayMs: 1_000 });
    assert.ok(!delayed.granted && delayed.why === 'busy' && delayed.retryInMs > 20_000, 'busy until the lease end, as far as the answer says');
    const announced = new Promise<void>((resolve) => waiter.slots.onFree(origin, resolve));
    slots.release((leases[1] as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await announced;
    assert.equal(notices, 1);
    assert.ok((await waiter.slots.reserve({ ...undelayed, delayMs: 1_000 })).granted);
    // A request under a lower maxConcurrency (a policy rule's 1) beside two undelayed ones under 4.
    const origin2 = ORIGIN + ':8445';
    const two = [await slots.reserve({ ...undelayed, origin: origin2 }), await slots.reserve({ ...undelayed, origin: origin2 })];
    assert.ok(two.every((l) => l.granted));
    assert.equal((await waiter.slots.reserve({ ...undelayed, origin: origin2, maxConcurrency: 1 })).granted, false);
    const announced2 = new Promise<void>((resolve) => waiter.slots.onFree(origin2, resolve));
    slots.release((two[0] as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
    await announced2;
    unsubscribe();
    await Promise.all([connection.close(), waiter.connection.close()]);
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
    const releasedAtMs = performance.now();
    other.slots.release((after as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 1_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const paused = await other.slots.reserve(request);
    assert.ok(!paused.granted && paused.why === 'paused' && paused.retryInMs <= 1_000, JSON.stringify(paused));
    // The pause ends 1 s after the release, on this process's clock (not `retryInMs > 800`: a loaded
    // machine can take longer than 200 ms between the release and the reservation).
    const pauseEndMs = performance.now() + paused.retryInMs;
    assert.ok(pauseEndMs - releasedAtMs >= 1_000 - 1, `the pause ends ${(pauseEndMs - releasedAtMs).toFixed(1)} ms after the release`);
    await Promise.all([connection.close(), other.connection.close()]);
  });

  it('sends a release Redis did not take (stalled) again once it answers: the origin is not busy until the lease ends', { timeout: 20_000 }, async () => {
    const [{ connection, slots }, other] = await twoInstances(redis);
    const origin = ORIGIN + ':8446';
    const request = { origin, delayMs: 100, maxConcurrency: 4, isEndToStart: false };
    const held = await slots.reserve(request);
    assert.ok(held.granted);
    redis.signal('SIGSTOP');
    try {
      // The first command after the stall times out; the release after it is not even sent (known down).
      await assert.rejects(slots.reserve({ ...request, origin: ORIGIN + ':8447' }), StateUnavailableError);
      assert.equal(slots.isAvailable, false);
      slots.release((held as { lease: SlotLease }).lease, { sentAgoMs: 50, pauseMs: 0 });
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      redis.signal('SIGCONT');
    }
    await assertFreeOnceBack(slots, other, request);
    await Promise.all([connection.close(), other.connection.close()]);
  });

  it('releases a reservation a stalled Redis made after the caller gave up on it: the origin is not busy until the lease ends', { timeout: 20_000 }, async () => {
    const [{ connection, slots }, other] = await twoInstances(redis);
    const request = { origin: ORIGIN + ':8448', delayMs: 100, maxConcurrency: 4, isEndToStart: false };
    redis.signal('SIGSTOP');
    try {
      // Sent, not answered in time: the script runs once the server resumes, and makes the reservation.
      await assert.rejects(slots.reserve(request), StateUnavailableError);
    } finally {
      redis.signal('SIGCONT');
    }
    await assertFreeOnceBack(slots, other, request);
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
      // Known to be down: the next call fails at once, without a round trip (counted, not timed).
      const roundTrips = connection.stats().roundTrips;
      await assert.rejects(slots.reserve({ origin: ORIGIN, delayMs: 0, maxConcurrency: 1, isEndToStart: false }), StateUnavailableError);
      assert.equal(connection.stats().roundTrips, roundTrips, 'no command sent to a server known to be down');
    } finally {
      redis.signal('SIGCONT');
    }
    const deadline = Date.now() + 5_000;
    while (!slots.isAvailable && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(slots.isAvailable, true, 'available again once the server answers');
    await connection.close();
  });
});
