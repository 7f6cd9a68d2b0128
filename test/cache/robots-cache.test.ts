import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as http from 'node:http';
import { RobotsCache, type FetchRobots } from '../../src/cache/robots-cache.js';
import { RobotsFetcher } from '../../src/cache/robots-fetcher.js';
import type { RobotsSnapshot } from '../../src/policy/snapshot.js';
import { evaluate } from '../../src/robots/index.js';
import { manualClock, startOrigin, type TestOrigin } from './support.js';

const START_MS = 1_700_000_000_000;
const TTL_MS = 3_600_000;
const ERROR_RETRY_MS = 60_000;
const ROBOTS = 'User-agent: *\nDisallow: /private/\n';

const origins: TestOrigin[] = [];
const fetchers: RobotsFetcher[] = [];

/** An origin whose /robots.txt answer the test can change; each request is counted in `hits`. */
async function switchableOrigin(initial: { status: number; body?: string; delayMs?: number }) {
  const state = { ...initial };
  const o = await startOrigin((_req: http.IncomingMessage, res: http.ServerResponse) => {
    const reply = (): void => {
      res.writeHead(state.status, { 'content-type': 'text/plain' });
      res.end(state.body ?? '');
    };
    if (state.delayMs === undefined) reply();
    else setTimeout(reply, state.delayMs);
  });
  origins.push(o);
  return { ...o, state };
}

/** A cache over a real fetcher, both on one manual clock. */
function realCache(maxOrigins = 100) {
  const clock = manualClock(START_MS);
  const fetcher = new RobotsFetcher({ userAgent: 'robots-proxy-test/1.0', clock, ttlMs: TTL_MS, errorRetryMs: ERROR_RETRY_MS, timeoutMs: 10_000 });
  fetchers.push(fetcher);
  return { clock, cache: new RobotsCache({ fetch: fetcher.fetch, clock, maxOrigins }) };
}

/** A snapshot as a fetcher would make it, for fetch functions written in the test. */
function snapshotFor(origin: string, state: 'ok' | 'unavailable' | 'unreachable', nowMs: number, lifetimeMs: number): RobotsSnapshot {
  return {
    info: { url: `${origin}/robots.txt`, state, status: 200, error: undefined, fetchedAtMs: nowMs, expiresAtMs: nowMs + lifetimeMs, bytes: 0, truncated: false },
    robots: null,
  };
}

function isDisallowed(snapshot: RobotsSnapshot, path: string): boolean {
  assert.ok(snapshot.robots, `no rules in a ${snapshot.info.state} snapshot`);
  return !evaluate(snapshot.robots, ['bot'], path).allowed;
}

after(async () => {
  await Promise.all(fetchers.map((f) => f.close()));
  await Promise.all(origins.map((o) => o.close()));
});

describe('RobotsCache single flight', () => {
  it('100 concurrent gets for a new origin cause exactly one fetch; all share the result', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS, delayMs: 50 });
    const { cache } = realCache();
    const results = await Promise.all(Array.from({ length: 100 }, () => cache.get(o.origin)));
    assert.deepEqual(o.hits, ['/robots.txt']);
    assert.ok(results.every((r) => r === results[0]));
    assert.equal(results[0]?.info.state, 'ok');
    assert.equal(isDisallowed(results[0]!, '/private/x'), true);
    assert.deepEqual(cache.stats(), { hits: 0, misses: 100, fetches: 1, fetchErrors: 0, staleKept: 0, inFlight: 0, entries: 1 });
  });

  it('a fresh entry is served without fetching', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS });
    const { cache, clock } = realCache();
    const first = await cache.get(o.origin);
    clock.advance(TTL_MS - 1);
    const second = await cache.get(o.origin);
    assert.equal(second, first);
    assert.equal(o.hits.length, 1);
    assert.equal(cache.stats().hits, 1);
  });

  it('an expired entry is fetched again, once for any number of concurrent callers', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS, delayMs: 20 });
    const { cache, clock } = realCache();
    const first = await cache.get(o.origin);
    clock.advance(first.info.expiresAtMs - START_MS);
    o.state.body = 'User-agent: *\nDisallow: /new/\n';
    const results = await Promise.all(Array.from({ length: 50 }, () => cache.get(o.origin)));
    assert.equal(o.hits.length, 2);
    assert.ok(results.every((r) => r === results[0]));
    assert.equal(isDisallowed(results[0]!, '/new/x'), true);
    assert.equal(isDisallowed(results[0]!, '/private/x'), false);
  });

  it('different origins are fetched independently', async () => {
    const a = await switchableOrigin({ status: 200, body: ROBOTS });
    const b = await switchableOrigin({ status: 404 });
    const { cache } = realCache();
    const [sa, sb] = await Promise.all([cache.get(a.origin), cache.get(b.origin), cache.get(a.origin), cache.get(b.origin)]);
    assert.equal(sa?.info.state, 'ok');
    assert.equal(sb?.info.state, 'unavailable');
    assert.equal(a.hits.length, 1);
    assert.equal(b.hits.length, 1);
  });
});

describe('RobotsCache keeps a good snapshot while robots.txt is unreachable (RFC 9309 §2.4)', () => {
  it('serves the previous rules, records the failure, retries with backoff, recovers', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS });
    const { cache, clock } = realCache();
    const good = await cache.get(o.origin);
    assert.equal(good.lastFailure, null);

    clock.advance(TTL_MS);
    o.state.status = 503;
    const stale = await cache.get(o.origin);
    assert.equal(o.hits.length, 2);
    assert.equal(stale.info, good.info);
    assert.equal(stale.robots, good.robots);
    assert.equal(isDisallowed(stale, '/private/x'), true);
    assert.equal(stale.lastFailure?.state, 'unreachable');
    assert.equal(stale.lastFailure?.status, 503);
    assert.equal(stale.lastFailure?.expiresAtMs, START_MS + TTL_MS + ERROR_RETRY_MS);

    clock.advance(ERROR_RETRY_MS - 1);
    assert.equal(await cache.get(o.origin), stale);
    assert.equal(o.hits.length, 2, 'retried before the retry time');

    clock.advance(1);
    const again = await cache.get(o.origin);
    assert.equal(o.hits.length, 3);
    assert.equal(again.robots, good.robots);
    const secondFailure = again.lastFailure;
    assert.ok(secondFailure);
    assert.equal(secondFailure.expiresAtMs - secondFailure.fetchedAtMs, 2 * ERROR_RETRY_MS, 'backoff doubles');
    assert.equal(cache.stats().staleKept, 2);

    clock.advance(2 * ERROR_RETRY_MS);
    o.state.status = 200;
    o.state.body = 'User-agent: *\nDisallow: /\n';
    const recovered = await cache.get(o.origin);
    assert.equal(recovered.lastFailure, null);
    assert.equal(isDisallowed(recovered, '/anything'), true);
  });

  it('unreachable without an earlier good snapshot is served as unreachable', async () => {
    const o = await switchableOrigin({ status: 500 });
    const { cache } = realCache();
    const snapshot = await cache.get(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.robots, null);
    assert.equal(snapshot.lastFailure, null);
  });

  it('a 4xx after a good snapshot replaces it (the file is gone: allow all)', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS });
    const { cache, clock } = realCache();
    await cache.get(o.origin);
    clock.advance(TTL_MS);
    o.state.status = 404;
    const snapshot = await cache.get(o.origin);
    assert.equal(snapshot.info.state, 'unavailable');
    assert.equal(snapshot.robots, null);
    assert.equal(snapshot.lastFailure, null);
  });

  it('an earlier 4xx is not kept over unreachable: disallow all', async () => {
    const o = await switchableOrigin({ status: 404 });
    const { cache, clock } = realCache();
    await cache.get(o.origin);
    clock.advance(TTL_MS);
    o.state.status = 503;
    const snapshot = await cache.get(o.origin);
    assert.equal(snapshot.info.state, 'unreachable');
    assert.equal(snapshot.lastFailure, null);
  });
});

describe('RobotsCache failures of the fetch function', () => {
  it('a fetch that rejects resolves every caller with an unreachable snapshot and is retried later', async () => {
    const clock = manualClock(START_MS);
    let calls = 0;
    const fetch: FetchRobots = async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      throw new Error('bug in fetch');
    };
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 10, errorRetryMs: 1000 });
    const results = await Promise.all(Array.from({ length: 20 }, () => cache.get('http://a.test')));
    assert.equal(calls, 1);
    for (const r of results) {
      assert.equal(r.info.state, 'unreachable');
      assert.equal(r.info.error, 'fetch-failed');
      assert.equal(r.info.expiresAtMs, START_MS + 1000);
    }
    assert.equal(cache.stats().inFlight, 0);
    assert.equal(cache.stats().fetchErrors, 1);
    await cache.get('http://a.test');
    assert.equal(calls, 1, 'the failure is cached until its retry time');
    clock.advance(1000);
    const retried = await cache.get('http://a.test');
    assert.equal(calls, 2);
    assert.equal(retried.info.expiresAtMs - retried.info.fetchedAtMs, 2000);
  });

  it('a fetch that throws synchronously or resolves garbage still resolves callers', async () => {
    const clock = manualClock(START_MS);
    const throwing = new RobotsCache({ fetch: () => { throw new Error('sync'); }, clock, maxOrigins: 10 });
    assert.equal((await throwing.get('http://a.test')).info.state, 'unreachable');
    const garbage = new RobotsCache({ fetch: async () => undefined as unknown as RobotsSnapshot, clock, maxOrigins: 10 });
    assert.equal((await garbage.get('http://a.test')).info.state, 'unreachable');
  });

  it('passes the count of consecutive failures to the fetch function', async () => {
    const clock = manualClock(START_MS);
    const seen: number[] = [];
    const fetch: FetchRobots = async (origin, context) => {
      seen.push(context.consecutiveFailures);
      return snapshotFor(origin, seen.length < 3 ? 'unreachable' : 'ok', clock.nowMs(), 10);
    };
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 10 });
    for (let i = 0; i < 4; i++) {
      await cache.get('http://a.test');
      clock.advance(10);
    }
    assert.deepEqual(seen, [0, 1, 2, 0]);
  });
});

describe('RobotsCache bound and inspection', () => {
  it('keeps at most maxOrigins entries, dropping the least recently used', async () => {
    const clock = manualClock(START_MS);
    const calls: string[] = [];
    const fetch: FetchRobots = async (origin) => {
      calls.push(origin);
      return snapshotFor(origin, 'unavailable', clock.nowMs(), TTL_MS);
    };
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 2 });
    await cache.get('http://a.test');
    await cache.get('http://b.test');
    await cache.get('http://a.test'); // a is now the most recently used
    await cache.get('http://c.test'); // evicts b
    assert.equal(cache.stats().entries, 2);
    assert.equal(await cache.peek('http://b.test'), undefined);
    assert.ok(await cache.peek('http://a.test'));
    await cache.get('http://b.test');
    assert.deepEqual(calls, ['http://a.test', 'http://b.test', 'http://c.test', 'http://b.test']);
  });

  it('peek never fetches and does not count', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS });
    const { cache, clock } = realCache();
    assert.equal(await cache.peek(o.origin), undefined);
    const fetched = await cache.get(o.origin);
    clock.advance(2 * TTL_MS);
    assert.equal(await cache.peek(o.origin), fetched, 'an expired entry is still shown');
    assert.equal(await cache.nextFetchAtMs(o.origin), fetched.info.expiresAtMs);
    assert.equal(o.hits.length, 1);
    assert.deepEqual({ hits: cache.stats().hits, misses: cache.stats().misses }, { hits: 0, misses: 1 });
  });
});
