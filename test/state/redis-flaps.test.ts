/**
 * A fleet's Redis that comes and goes more than once (issue 10, "When Redis is unreachable"): down
 * at start then up, killed and started again three times in a row, stalled (SIGSTOP) and resumed
 * twice. After each return the stores are fleet-wide again by themselves (a reservation is a real
 * round trip), each change is one `fleet-state` line (`available: false`, then `available: true`),
 * and while Redis is known to be down no request costs a round trip: the connection is re-probed
 * by its own timers (reconnects at most a second apart, a ping every 500 ms on a stalled server),
 * never per request. A private redis-server per file, started, killed and stalled by the test.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RedisConnection } from '../../src/state/redis-connection.js';
import { RedisSlotStore } from '../../src/state/redis-slots.js';
import type { SlotLease } from '../../src/state/types.js';
import { StateUnavailableError } from '../../src/errors.js';
import { REDIS_SKIP, startRedisServer, useRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from '../helpers/fleet.js';

const ORIGIN = 'https://flaps.example';
const REQUEST = { origin: ORIGIN, delayMs: 0, maxConcurrency: 8, isEndToStart: false };

/** The `fleet-state` lines a connection logged, in order. */
interface StateLines {
  lines: Record<string, unknown>[];
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
}

function stateLines(): StateLines {
  const lines: Record<string, unknown>[] = [];
  const push = (level: string) => (fields: object, msg: string) => void lines.push({ level, ...fields, msg });
  return { lines, logger: { info: push('info'), warn: push('warn') } };
}

const opened: RedisConnection[] = [];

async function open(redis: RedisServer, logger: StateLines['logger']): Promise<{ connection: RedisConnection; slots: RedisSlotStore }> {
  const connection = new RedisConnection({ url: redis.url, keyPrefix: freshPrefix(), commandTimeoutMs: 300, logger });
  opened.push(connection);
  const slots = new RedisSlotStore(connection, { slotLeaseMs: 30_000, logger });
  await connection.start();
  await slots.start();
  return { connection, slots };
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !condition(); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The `available` values of the `fleet-state` lines that say Redis changed (the first `true` is the connection at start; the start warning has none). */
function changes(state: StateLines): boolean[] {
  return state.lines.filter((l) => l['event'] === 'fleet-state' && typeof l['available'] === 'boolean').map((l) => l['available'] as boolean);
}

/** A reservation that is a round trip to Redis (granted, released at once). */
async function reservesFleetWide(connection: RedisConnection, slots: RedisSlotStore): Promise<void> {
  const before = connection.stats().roundTrips;
  const reservation = await slots.reserve(REQUEST);
  assert.ok(reservation.granted, 'granted by Redis');
  assert.equal(connection.stats().roundTrips, before + 1, 'one round trip');
  slots.release((reservation as { lease: SlotLease }).lease, { sentAgoMs: 0, pauseMs: 0 });
}

/** While Redis is known to be down: `count` requests fail at once, and none costs a round trip. */
async function failWithoutRoundTrips(connection: RedisConnection, slots: RedisSlotStore, count: number): Promise<void> {
  const before = connection.stats().roundTrips;
  for (let i = 0; i < count; i++) await assert.rejects(slots.reserve(REQUEST), StateUnavailableError);
  assert.equal(connection.stats().roundTrips, before, 'no round trip per request while Redis is down');
}

describe('a fleet Redis that comes and goes', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  useRedisServer(opened, (server) => (redis = server));

  it('down at start: falls back, then is fleet-wide by itself once Redis answers, and says so', async () => {
    await redis.stop();
    const state = stateLines();
    const { connection, slots } = await open(redis, state.logger);
    assert.equal(connection.isAvailable, false);
    assert.ok(state.lines.some((l) => l['event'] === 'fleet-state' && l['level'] === 'warn'), 'the start warning');
    await failWithoutRoundTrips(connection, slots, 20);
    await redis.restart();
    await until(() => connection.isAvailable, 'Redis to be available again');
    assert.deepEqual(changes(state), [true]);
    assert.equal(state.lines.at(-1)?.['level'], 'info');
    await reservesFleetWide(connection, slots);
    await connection.close();
  });

  it('killed and started again three times: each fall and each return is logged once, and each return is fleet-wide', async () => {
    const state = stateLines();
    const { connection, slots } = await open(redis, state.logger);
    await reservesFleetWide(connection, slots);
    for (let flap = 1; flap <= 3; flap++) {
      await redis.stop();
      await until(() => !connection.isAvailable, `flap ${flap}: the fall to be seen`);
      await failWithoutRoundTrips(connection, slots, 20);
      await redis.restart();
      await until(() => connection.isAvailable, `flap ${flap}: the return`);
      await reservesFleetWide(connection, slots);
      assert.deepEqual(changes(state), [true, ...Array.from({ length: flap }, () => [false, true]).flat()], `flap ${flap}: one line per change`);
    }
    assert.equal(connection.stats().unavailableEpisodes, 3);
    await connection.close();
  });

  it('a server that answers but refuses writes (a read-only replica after a failover): unavailable once, not back at every probe, back once writable', { timeout: 30_000 }, async () => {
    const primary = await startRedisServer();
    const replica = await startRedisServer();
    try {
      const state = stateLines();
      const { connection, slots } = await open(replica, state.logger);
      await reservesFleetWide(connection, slots);
      await replica.client.call('REPLICAOF', '127.0.0.1', String(primary.port));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await assert.rejects(slots.reserve(REQUEST), StateUnavailableError, 'READONLY');
      assert.equal(connection.isAvailable, false);
      // Two seconds: four probes. Each found PING answered and said "answers again" before, and the next command failed.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      assert.deepEqual(changes(state), [true, false], 'one change: no flapping while the server refuses writes');
      assert.equal(connection.isAvailable, false);
      await replica.client.call('REPLICAOF', 'NO', 'ONE');
      await until(() => connection.isAvailable, 'the return once writable');
      await reservesFleetWide(connection, slots);
      assert.deepEqual(changes(state), [true, false, true]);
      await connection.close();
    } finally {
      await Promise.all([replica.close(), primary.close()]);
    }
  });

  it('stalled and resumed twice: a probe finds each return; requests meanwhile send nothing and the probes stay few', async () => {
    const state = stateLines();
    const { connection, slots } = await open(redis, state.logger);
    await reservesFleetWide(connection, slots);
    for (let stall = 1; stall <= 2; stall++) {
      const pingsBefore = await pingCalls(redis);
      const stoppedAtMs = performance.now();
      redis.signal('SIGSTOP');
      try {
        await assert.rejects(slots.reserve(REQUEST), StateUnavailableError, 'the first call times out');
        assert.equal(connection.isAvailable, false);
        // 1.5 s stalled, 100 requests meanwhile: none is sent, only the probes' pings (one per 500 ms).
        for (let i = 0; i < 10; i++) {
          await failWithoutRoundTrips(connection, slots, 10);
          await new Promise((resolve) => setTimeout(resolve, 150));
        }
      } finally {
        redis.signal('SIGCONT');
      }
      const stalledMs = performance.now() - stoppedAtMs;
      await until(() => connection.isAvailable, `stall ${stall}: the return`);
      await reservesFleetWide(connection, slots);
      // The pings sent while stalled, answered now; the reserve above adds none. Bounded by the
      // probe's interval over the stall as it lasted (about 1.8 s / 500 ms, plus the one that found
      // the return), not by the requests: a loaded machine stretches the stall's sleeps, and with
      // them the pings a correct probe sends (the bound was a fixed 6).
      const pings = (await pingCalls(redis)) - pingsBefore;
      const maxPings = Math.ceil(stalledMs / 500) + 2;
      assert.ok(pings >= 1 && pings <= maxPings, `${pings} pings for one stall of ${stalledMs.toFixed(0)} ms (at most ${maxPings})`);
      assert.deepEqual(changes(state), [true, ...Array.from({ length: stall }, () => [false, true]).flat()], `stall ${stall}: one line per change`);
    }
    await connection.close();
  });
});

/** PINGs the server has answered since it started (INFO commandstats). */
/** Probes the server ran: the probe is a plain EVAL (the fleet's own scripts are sent by their SHA). */
async function pingCalls(redis: RedisServer): Promise<number> {
  const info = await redis.client.info('commandstats');
  return Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0);
}
