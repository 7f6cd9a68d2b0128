/**
 * The Redis snapshot flight against a private redis-server (issue 10): two
 * instances (two connections, one key prefix) refreshing one origin at once
 * fetch once, the other reads what the first stored; a stored fresh snapshot
 * costs no fetch; a holder that never finishes holds the lock no longer than
 * its lease; an instance that stores a snapshot announces it to the others,
 * whose robots cache then refreshes its copy on the next use.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RedisConnection } from '../../src/state/redis-connection.js';
import { RedisSnapshotFlight } from '../../src/state/redis-snapshots.js';
import type { FetchedEntry } from '../../src/state/types.js';
import { cacheEntryOf, RobotsCache } from '../../src/cache/robots-cache.js';
import { parseRobotsTxt } from '../../src/robots/index.js';
import type { SnapshotInfo } from '../../src/policy/decision.js';
import type { Clock } from '../../src/clock.js';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from '../helpers/fleet.js';

const quiet = { info: () => undefined, warn: () => undefined };
const ORIGIN = 'https://a.example';
const parse = (body: Buffer) => parseRobotsTxt(body);

/** A clock the test sets; timers are real (the flight waits on real time). */
function manualClock(startMs: number): Clock & { nowAt: number } {
  const clock = {
    nowAt: startMs,
    nowMs: () => clock.nowAt,
    setTimer: (fn: () => void, ms: number) => setTimeout(fn, ms),
    clearTimer: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
  };
  return clock;
}

function fetched(text: string, nowMs: number, ttlMs = 60_000): FetchedEntry {
  const body = Buffer.from(text);
  const info: SnapshotInfo = { url: `${ORIGIN}/robots.txt`, state: 'ok', status: 200, error: undefined, fetchedAtMs: nowMs, expiresAtMs: nowMs + ttlMs, bytes: body.length, truncated: false };
  return { entry: cacheEntryOf({ info, robots: parse(body), lastFailure: null }, 0), body };
}

describe('RedisSnapshotFlight', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  const connections: RedisConnection[] = [];
  before(async () => {
    redis = await startRedisServer();
  });
  after(async () => {
    await Promise.all(connections.map((c) => c.close()));
    await redis?.close();
  });

  async function instances(count: number, clock: Clock, lockLeaseMs = 5_000, keyPrefix = freshPrefix()): Promise<RedisSnapshotFlight[]> {
    return Promise.all(
      Array.from({ length: count }, async () => {
        const connection = new RedisConnection({ url: redis.url, keyPrefix, commandTimeoutMs: 2_000, logger: quiet });
        connections.push(connection);
        const flight = new RedisSnapshotFlight(connection, { lockLeaseMs, retainMs: 60_000, parse, clock, logger: quiet });
        await connection.start();
        await flight.start();
        return flight;
      }),
    );
  }

  it('fetches once for two instances refreshing together; a fresh stored snapshot costs no fetch', async () => {
    const clock = manualClock(1_000_000);
    const [a, b, c] = await instances(3, clock);
    let fetches = 0;
    const fetchHere = async (): Promise<FetchedEntry> => {
      fetches++;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return fetched('User-agent: *\nDisallow: /x\n', clock.nowMs());
    };
    const [ea, eb] = await Promise.all([a!.refresh(ORIGIN, undefined, fetchHere), b!.refresh(ORIGIN, undefined, fetchHere)]);
    assert.equal(fetches, 1);
    assert.deepEqual(ea.snapshot.robots, eb.snapshot.robots);
    assert.deepEqual(ea.snapshot.info, eb.snapshot.info);
    const ec = await c!.refresh(ORIGIN, undefined, fetchHere);
    assert.equal(fetches, 1, 'the stored snapshot was fresh');
    assert.deepEqual(ec.snapshot.info, ea.snapshot.info);
  });

  it('takes over after the lock\'s lease when the fetching instance never finishes', async () => {
    const clock = manualClock(2_000_000);
    const [a, b] = await instances(2, clock, 500);
    void a!.refresh(ORIGIN, undefined, () => new Promise<FetchedEntry>(() => undefined)); // a dead fetcher
    await new Promise((resolve) => setTimeout(resolve, 50));
    const startedAtMs = Date.now();
    let fetches = 0;
    const entry = await b!.refresh(ORIGIN, undefined, async () => {
      fetches++;
      return fetched('User-agent: *\nAllow: /\n', clock.nowMs());
    });
    assert.equal(fetches, 1);
    assert.equal(entry.snapshot.info.state, 'ok');
    assert.ok(Date.now() - startedAtMs <= 500 + 1_500, `took over after ${Date.now() - startedAtMs} ms`);
  });

  it('announces a stored snapshot: another instance\'s robots cache refreshes its fresh copy on the next use', async () => {
    const clock = manualClock(3_000_000);
    const keyPrefix = freshPrefix();
    const [a, b] = await instances(2, clock, 5_000, keyPrefix);
    let version = 1;
    const fetchesA: number[] = [];
    const cacheA = new RobotsCache({
      fetch: async () => {
        fetchesA.push(version);
        const { entry, body } = fetched(`User-agent: *\nDisallow: /v${version}\n`, clock.nowMs(), 3_600_000);
        return { ...entry.snapshot, body };
      },
      clock,
      maxOrigins: 10,
      flight: a!,
    });
    const first = await cacheA.get(ORIGIN);
    assert.equal(first.robots?.groups[0]?.rules[0]?.pattern, '/v1');
    // Another instance stores a newer snapshot (as after an outage, when copies differ: here the stored one is gone).
    await redis.client.del(`${keyPrefix}robots:${ORIGIN}`);
    version = 2;
    const announced = new Promise<void>((resolve) => a!.onNewer(() => resolve()));
    await b!.refresh(ORIGIN, undefined, async () => fetched('User-agent: *\nDisallow: /v2\n', clock.nowMs() + 1, 3_600_000)).catch(() => undefined);
    await announced;
    const second = await cacheA.get(ORIGIN);
    assert.equal(second.robots?.groups[0]?.rules[0]?.pattern, '/v2', 'the newer snapshot, read from Redis');
    assert.deepEqual(fetchesA, [1], 'no fetch of its own');
  });
  it('frees a fetch lock a stalled Redis gave after the caller gave up on it: another instance leads at once, not after the lease', { timeout: 30_000 }, async () => {
    const clock = manualClock(5_000_000);
    const [a, b] = await instances(2, clock, 10_000);
    let fetches = 0;
    const fetchHere = async (): Promise<FetchedEntry> => {
      fetches++;
      return fetched('User-agent: *\nAllow: /\n', clock.nowMs());
    };
    // Command timeout 2 s (instances()): the lock request is sent, not answered; the script runs on resume.
    redis.signal('SIGSTOP');
    let entry;
    try {
      entry = await a!.refresh(ORIGIN, undefined, fetchHere);
    } finally {
      redis.signal('SIGCONT');
    }
    assert.equal(entry.snapshot.info.state, 'ok', 'fetched alone');
    assert.equal(fetches, 1);
    for (const deadline = Date.now() + 5_000; !connections.every((c) => c.isAvailable) && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const startedAtMs = Date.now();
    await b!.refresh(ORIGIN, undefined, fetchHere);
    assert.equal(fetches, 2);
    assert.ok(Date.now() - startedAtMs < 3_000, `led after ${Date.now() - startedAtMs} ms: the lock's lease is 10 s`);
  });

  it('a stored snapshot it cannot read (a foreign or damaged record, with its TTL and a fresh "next") is fetched once for the fleet and replaced', { timeout: 30_000 }, async () => {
    const clock = manualClock(4_000_000);
    const keyPrefix = freshPrefix();
    const [a, b, c, d] = await instances(4, clock, 5_000, keyPrefix);
    let fetches = 0;
    const fetchHere = async (): Promise<FetchedEntry> => {
      fetches++;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return fetched('User-agent: *\nDisallow: /x\n', clock.nowMs(), 3_600_000);
    };
    await a!.refresh(ORIGIN, undefined, fetchHere);
    assert.equal(fetches, 1);
    // Another version's record (or a damaged one): the fleet's hash, its TTL and its "next" kept, the data unreadable.
    const key = `${keyPrefix}robots:${ORIGIN}`;
    await redis.client.hset(key, 'data', 'j{"v":2,"info":{}}');
    assert.ok((await redis.client.pttl(key)) > 0);
    const [eb, ec] = await Promise.all([b!.refresh(ORIGIN, undefined, fetchHere), c!.refresh(ORIGIN, undefined, fetchHere)]);
    assert.equal(fetches, 2, 'one fetch for the two instances (each fetched alone before, and left the record as it was)');
    assert.deepEqual(eb.snapshot.info, ec.snapshot.info);
    await d!.refresh(ORIGIN, undefined, fetchHere);
    assert.equal(fetches, 2, 'the record was replaced: a third instance reads it');
    // Unreadable and fresh for ever ("next" beyond any time): fetched alone, not asked again and again.
    await redis.client.hset(key, 'next', '1e999', 'data', 'junk');
    await d!.refresh(ORIGIN, undefined, fetchHere);
    assert.equal(fetches, 3);
  });
});
