import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as http from 'node:http';
import { RobotsCache, type FetchRobots } from '../../src/cache/robots-cache.js';
import { RobotsFetcher } from '../../src/cache/robots-fetcher.js';
import { estimateSnapshotBytes } from '../../src/cache/snapshot-size.js';
import type { RobotsSnapshot } from '../../src/policy/snapshot.js';
import { evaluate, parseRobotsTxt } from '../../src/robots/index.js';
import { manualClock, startOrigin, type TestOrigin } from './support.js';
import { startTestProxy } from '../helpers/harness.js';
import { proxyRequest } from '../helpers/proxy-client.js';
import { fakeResolver } from '../helpers/resolver.js';
import { heapUsedAfterGc } from '../helpers/heap.js';

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
    const { bytes, ...counts } = cache.stats();
    assert.deepEqual(counts, { hits: 0, misses: 100, fetches: 1, fetchErrors: 0, staleKept: 0, tooLarge: 0, inFlight: 0, entries: 1, reservedBytes: 0, fetchesWaiting: 0, evictions: 0 });
    assert.equal(bytes, estimateSnapshotBytes(results[0]!));
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

  it('getFresh answers a fresh entry at once (a hit) and leaves a missing, expired, stale or fetching one to get', async () => {
    const o = await switchableOrigin({ status: 200, body: ROBOTS, delayMs: 20 });
    const { cache, clock } = realCache();
    assert.equal(cache.getFresh(o.origin), undefined, 'nothing cached');
    const first = cache.get(o.origin);
    assert.equal(cache.getFresh(o.origin), undefined, 'a fetch runs');
    const snapshot = await first;
    assert.equal(cache.getFresh(o.origin), snapshot);
    assert.equal(cache.stats().hits, 1);
    cache.invalidate(o.origin);
    assert.equal(cache.getFresh(o.origin), undefined, 'stale: replaced elsewhere');
    await cache.get(o.origin);
    assert.ok(cache.getFresh(o.origin) !== undefined, 'refreshed');
    clock.advance(TTL_MS);
    assert.equal(cache.getFresh(o.origin), undefined, 'expired');
    assert.equal(o.hits.length, 2, 'getFresh never fetches');
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

/** A snapshot whose parsed file has `rules` disallow rules under `/p<i>/` (about 100 bytes of estimate each). */
function bigSnapshot(origin: string, nowMs: number, rules: number): RobotsSnapshot {
  const body = 'User-agent: *\n' + Array.from({ length: rules }, (_, i) => `Disallow: /p${i}/\n`).join('');
  const robots = parseRobotsTxt(body);
  return {
    info: { url: `${origin}/robots.txt`, state: 'ok', status: 200, error: undefined, fetchedAtMs: nowMs, expiresAtMs: nowMs + TTL_MS, bytes: robots.bytesParsed, truncated: false },
    robots,
  };
}

describe('RobotsCache byte budget', () => {
  it('keeps the estimated bytes within maxBytes, dropping the least recently used origins; a dropped origin is fetched again', async () => {
    const clock = manualClock(START_MS);
    const calls: string[] = [];
    const fetch: FetchRobots = async (origin) => {
      calls.push(origin);
      return bigSnapshot(origin, clock.nowMs(), 2000);
    };
    const one = estimateSnapshotBytes(bigSnapshot('http://x.test', START_MS, 2000));
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 10_000, maxBytes: Math.floor(3.5 * one) });
    for (const name of ['a', 'b', 'c']) await cache.get(`http://${name}.test`);
    assert.equal(cache.stats().entries, 3);
    await cache.get('http://a.test'); // a is now the most recently used
    await cache.get('http://d.test'); // b goes
    assert.equal(cache.stats().entries, 3);
    assert.ok(cache.stats().bytes <= 3.5 * one);
    assert.equal(await cache.peek('http://b.test'), undefined);
    assert.equal(cache.stats().evictions, 1);
    for (let i = 0; i < 50; i++) {
      await cache.get(`http://many${i}.test`);
      assert.ok(cache.stats().bytes <= 3.5 * one, `after ${i}: ${cache.stats().bytes}`);
    }
    const again = await cache.get('http://b.test');
    assert.equal(calls.filter((c) => c === 'http://b.test').length, 2, 'fetched again after it was dropped');
    assert.equal(isDisallowed(again, '/p1999/x'), true);
    assert.equal(isDisallowed(again, '/q/x'), false);
  });

  it('a snapshot larger than the whole budget serves every request waiting for it, is not kept, and is fetched again', async () => {
    const clock = manualClock(START_MS);
    let fetches = 0;
    const fetch: FetchRobots = async (origin) => {
      fetches++;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return bigSnapshot(origin, clock.nowMs(), 5000);
    };
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 100, maxBytes: 1_048_576 });
    assert.ok(estimateSnapshotBytes(bigSnapshot('http://x.test', START_MS, 5000)) > 1_048_576);
    const results = await Promise.all(Array.from({ length: 20 }, () => cache.get('http://big.test')));
    assert.equal(fetches, 1, 'one fetch for twenty callers (single flight)');
    assert.ok(results.every((r) => r === results[0] && isDisallowed(r, '/p4999/')));
    assert.equal(await cache.peek('http://big.test'), undefined, 'not kept');
    assert.equal(cache.stats().tooLarge, 1);
    assert.ok(cache.stats().bytes <= 1_048_576);
    await cache.get('http://big.test');
    assert.equal(fetches, 2, 'fetched again by the next request');
  });

  it('fetches in flight reserve their bytes: they evict stored entries, and wait when the budget is full of them', async () => {
    const clock = manualClock(START_MS);
    const release: Array<() => void> = [];
    let running = 0;
    let mostRunning = 0;
    const fetch: FetchRobots = async (origin) => {
      running++;
      mostRunning = Math.max(mostRunning, running);
      await new Promise<void>((resolve) => release.push(resolve));
      running--;
      return snapshotFor(origin, 'unavailable', clock.nowMs(), TTL_MS);
    };
    const entry = estimateSnapshotBytes(snapshotFor('http://x.test', 'unavailable', START_MS, TTL_MS));
    const maxBytes = 100 * entry;
    const cache = new RobotsCache({ fetch, clock, maxOrigins: 1000, maxBytes, fetchReserveBytes: Math.floor(maxBytes / 3) });
    // Fill the store with 60 small entries, one at a time (each fetch reserves a third of the budget while it runs).
    for (let i = 0; i < 60; i++) {
      const got = cache.get(`http://s${i}.test`);
      await new Promise((resolve) => setImmediate(resolve));
      release.shift()!();
      await got;
    }
    assert.equal(cache.stats().entries, 60);
    // Five new origins at once: three reservations fit; the two others wait.
    const pending = Array.from({ length: 5 }, (_, i) => cache.get(`http://new${i}.test`));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(running, 3);
    assert.equal(cache.stats().fetchesWaiting, 2);
    assert.equal(cache.stats().reservedBytes, 3 * Math.floor(maxBytes / 3));
    assert.ok(cache.stats().bytes + cache.stats().reservedBytes <= maxBytes, 'stored entries made room for the fetches in flight');
    assert.ok(cache.stats().entries <= 1, `${cache.stats().entries} entries left beside three reservations`);
    while (release.length > 0 || running > 0 || cache.stats().fetchesWaiting > 0) {
      release.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const done = await Promise.all(pending);
    assert.ok(done.every((s) => s.info.state === 'unavailable'));
    assert.equal(mostRunning, 3);
    assert.deepEqual({ reserved: cache.stats().reservedBytes, waiting: cache.stats().fetchesWaiting }, { reserved: 0, waiting: 0 });
  });
});

describe('RobotsCache byte budget through a real proxy', () => {
  const heapUsed = heapUsedAfterGc;

  /** A robots.txt of about 150 KB (8,000 rules) for `host`: its own paths disallowed, /open/ allowed. */
  const bigRobots = (host: string): string =>
    'User-agent: *\nAllow: /open/\n' + Array.from({ length: 8000 }, (_, i) => `Disallow: /${host.slice(0, 8)}/section-${i}/page\n`).join('');

  it('heap stays flat over many origins with big robots.txt files, and decisions stay right after eviction', async () => {
    const robotsHits = new Map<string, number>();
    const site = await startOrigin((req, res) => {
      const host = String(req.headers.host).split(':')[0]!;
      if (req.url === '/robots.txt') {
        robotsHits.set(host, (robotsHits.get(host) ?? 0) + 1);
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(bigRobots(host));
      }
      res.end('page');
    });
    origins.push(site);
    const cacheBytes = 16 * 1024 * 1024;
    const proxy = await startTestProxy(
      { https: { mode: 'tunnel' }, robots: { cacheBytes: '16MiB' } },
      { resolve: fakeResolver((hostname) => (hostname.endsWith('.test') ? ['127.0.0.1'] : undefined)) },
    );
    try {
      const visit = async (i: number): Promise<void> => {
        const host = `site${i}.test`;
        const denied = await proxyRequest(proxy.proxyAddress.port, `http://${host}:${site.port}/${host.slice(0, 8)}/section-7999/page`, { headers: { 'user-agent': 'MemBot/1.0' } });
        assert.equal(denied.status, 403, host);
        const open = await proxyRequest(proxy.proxyAddress.port, `http://${host}:${site.port}/open/x`, { headers: { 'user-agent': 'MemBot/1.0' } });
        assert.equal(open.status, 200, host);
      };
      const one = estimateSnapshotBytes({ info: {} as never, robots: parseRobotsTxt(bigRobots('site0.test')) });
      assert.ok(one > 2 * 1024 * 1024, `one snapshot is estimated at ${one} bytes`);
      for (let i = 0; i < 20; i++) await visit(i);
      const early = heapUsed();
      for (let i = 20; i < 150; i++) {
        await visit(i);
        assert.ok(proxy.robotsCache.stats().bytes <= cacheBytes);
      }
      const late = heapUsed();
      // Without the byte bound, 130 more origins keep about 130 x 3 MB.
      assert.ok(late - early < 40 * 1024 * 1024, `heap grew by ${((late - early) / 1048576).toFixed(1)} MiB over 130 origins`);
      const stats = proxy.robotsCache.stats();
      assert.ok(stats.entries <= Math.floor(cacheBytes / one) && stats.entries >= 1, `${stats.entries} entries`);
      assert.ok(stats.evictions >= 150 - stats.entries);
      // The first origin was dropped long ago: its robots.txt is fetched again and decides as before.
      await visit(0);
      assert.equal(robotsHits.get('site0.test'), 2);
    } finally {
      await proxy.close();
    }
  });
});
