/**
 * An overload pause without a slot (the origin's robots.txt answered 429/503) on Redis, against a
 * private redis-server: `FleetPacer.applyOverload` on one instance pauses the origin for another
 * instance's fleet pacer; `RedisSlotStore.pause` never shortens a longer pause and replaces junk
 * under the pause key (the guards of a release's pause); with Redis down, a `fleet-state` warning
 * and the local pause, never a throw.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../src/clock.js';
import { FleetPacer } from '../../src/pacing/fleet-pacer.js';
import { Pacer } from '../../src/pacing/pacer.js';
import type { PacingOptions } from '../../src/pacing/pacing-options.js';
import { RedisConnection } from '../../src/state/redis-connection.js';
import { RedisSlotStore } from '../../src/state/redis-slots.js';
import type { SlotReservation } from '../../src/state/types.js';
import { REDIS_SKIP, useRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from '../helpers/fleet.js';

const ORIGIN = 'https://a.example';
const OPTIONS: PacingOptions = { maxConcurrency: 4, maxWaitMs: 60_000, maxQueue: 100 };
const REQUEST = { origin: ORIGIN, delayMs: 0, maxConcurrency: 4, isEndToStart: false };

interface Warning {
  fields: Record<string, unknown>;
  message: string;
}

const opened: RedisConnection[] = [];

async function open(redis: RedisServer, keyPrefix: string, warnings: Warning[] = []): Promise<{ connection: RedisConnection; slots: RedisSlotStore }> {
  const logger = { info: () => undefined, warn: (fields: object, message: string) => void warnings.push({ fields: fields as Record<string, unknown>, message }) };
  const connection = new RedisConnection({ url: redis.url, keyPrefix, commandTimeoutMs: 300, logger });
  opened.push(connection);
  const slots = new RedisSlotStore(connection, { slotLeaseMs: 30_000, logger });
  await connection.start();
  await slots.start();
  return { connection, slots };
}

function fleetPacer(slots: RedisSlotStore): FleetPacer {
  return new FleetPacer(new Pacer(OPTIONS, systemClock), { slots, fleetSize: 2, onUnavailable: 'local', pacing: OPTIONS, clock: systemClock });
}

function pausedFor(reservation: SlotReservation): number {
  assert.ok(!reservation.granted && reservation.why === 'paused', JSON.stringify(reservation));
  return reservation.retryInMs;
}

describe('robots.txt overload pause on Redis', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  useRedisServer(opened, (server) => (redis = server));

  it('one instance applies it, another instance finds the origin paused', async () => {
    const prefix = freshPrefix();
    const a = await open(redis, prefix);
    const b = await open(redis, prefix);
    const pacerA = fleetPacer(a.slots);
    const pacerB = fleetPacer(b.slots);
    const untilMs = pacerA.applyOverload(ORIGIN, { status: 503, retryAfter: '2' });
    assert.ok(untilMs !== undefined && untilMs > Date.now() + 1_500, 'paused locally');
    assert.equal(pacerA.originStats(ORIGIN)?.pausedUntilMs, untilMs);
    assert.equal(pacerB.originStats(ORIGIN), undefined, 'B has no local state: the pause it sees is the fleet\'s');
    const deadline = Date.now() + 2_000;
    let reservation = await b.slots.reserve(REQUEST);
    while (reservation.granted && Date.now() < deadline) {
      b.slots.release(reservation.lease, { sentAgoMs: undefined, pauseMs: 0 });
      await new Promise((resolve) => setTimeout(resolve, 10));
      reservation = await b.slots.reserve(REQUEST);
    }
    const leftMs = pausedFor(reservation);
    assert.ok(leftMs > 1_000 && leftMs <= 2_000, `B sees ${leftMs} ms left`);
    // B's fleet pacer holds its page until the pause ends.
    const startedAtMs = Date.now();
    const outcome = await pacerB.acquire(ORIGIN, 0, { identity: 'c' });
    assert.ok(outcome.granted);
    assert.ok(Date.now() - startedAtMs >= leftMs - 700, `waited ${Date.now() - startedAtMs} ms`);
    outcome.slot.release({ status: 200 });
    pacerA.close();
    pacerB.close();
  });

  it('never shortens a longer pause; junk under the pause key is replaced', async () => {
    const prefix = freshPrefix();
    const { connection, slots } = await open(redis, prefix);
    await slots.pause(ORIGIN, 10_000);
    await slots.pause(ORIGIN, 1_000);
    assert.ok(pausedFor(await slots.reserve(REQUEST)) > 9_000, 'the longer pause kept');
    const key = connection.key('pause', ORIGIN);
    assert.ok((await redis.client.pttl(key)) > 9_000, 'the key expires with the longer pause');
    // A hash (another writer's), then a string without TTL (a hand edit): each dropped, the pause set.
    await redis.client.del(key);
    await redis.client.hset(key, 'x', '1');
    await slots.pause(ORIGIN, 3_000);
    const left = pausedFor(await slots.reserve(REQUEST));
    assert.ok(left > 2_000 && left <= 3_000, `${left}`);
    await redis.client.set(key, '9e99');
    await slots.pause(ORIGIN, 3_000);
    const again = pausedFor(await slots.reserve(REQUEST));
    assert.ok(again > 2_000 && again <= 3_000, `${again}`);
    await slots.pause(ORIGIN, 0);
    await slots.pause(ORIGIN, -5);
    assert.ok((await redis.client.pttl(key)) > 2_000, 'no pause of 0 or less touches it');
  });

  it('Redis down: a fleet-state warning and the local pause, never a throw', async () => {
    const warnings: Warning[] = [];
    const { connection, slots } = await open(redis, freshPrefix(), warnings);
    const pacer = fleetPacer(slots);
    await connection.close();
    // Not available now: the store's call fails at once.
    await slots.pause(ORIGIN, 1_000);
    const untilMs = pacer.applyOverload(ORIGIN, { status: 429, retryAfter: '4' });
    assert.ok(untilMs !== undefined && untilMs > Date.now() + 3_000, 'paused locally all the same');
    await new Promise((resolve) => setImmediate(resolve));
    const pauses = warnings.filter((w) => w.fields['event'] === 'fleet-state' && w.fields['origin'] === ORIGIN);
    assert.equal(pauses.length, 2, JSON.stringify(warnings));
    const pauseMs = Number(pauses[1]?.fields['pauseMs']);
    assert.ok(pauseMs > 3_900 && pauseMs <= 4_000, `the pause not shared: ${pauseMs} ms`);
    pacer.close();
  });
});
