/**
 * A fleet whose Redis stops mid-run and comes back (issue 10). With
 * `onUnavailable: local` and `fleetSize: 3`, each instance paces alone at
 * three times the delay, so the three together stay within the site's rate;
 * with `deny`, requests get 503 `fleet-unavailable` with Retry-After. Both
 * answer every request meanwhile, and both rejoin when Redis is back.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOriginsProcess, type OriginsProcess, type ProxyProcess } from '../helpers/processes.js';
import { REDIS_SKIP, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { fleetYaml, freshPrefix, sendThroughFleet, startFleet } from '../helpers/fleet.js';
import { assertStartSpacing, onFirstProcessClock, seenStarts, sentStarts } from '../helpers/spacing.js';

const DELAY_MS = 100;

/** Resolves once every instance logged that Redis answers again. */
async function rejoined(fleet: readonly ProxyProcess[], sinceIndex: number[]): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const done = fleet.every((p, i) => p.logs.slice(sinceIndex[i]).some((l) => l['event'] === 'fleet-state' && l['available'] === true));
    if (done) return;
    if (Date.now() > deadline) throw new Error('an instance did not rejoin');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a fleet of three whose Redis stops and starts again', { skip: REDIS_SKIP }, () => {
  let redis: RedisServer;
  let origins: OriginsProcess;
  let local: ProxyProcess[] = [];
  let deny: ProxyProcess[] = [];

  before(async () => {
    redis = await startRedisServer();
    [origins, local, deny] = await Promise.all([
      startOriginsProcess({ L: { robots: `User-agent: *\nCrawl-delay: ${DELAY_MS / 1000}\n` }, D: { robots: 'User-agent: *\nAllow: /\n' } }),
      startFleet(fleetYaml(redis.url, freshPrefix(), { onUnavailable: 'local' })),
      startFleet(fleetYaml(redis.url, freshPrefix(), { onUnavailable: 'deny' })),
    ]);
    // Every instance has its robots snapshots before Redis goes.
    await sendThroughFleet(local, [0, 1, 2].map((i) => ({ host: 'L', path: `/warm/${i}` })), (h) => origins.urlOf(h), { concurrency: 3 });
    await sendThroughFleet(deny, [0, 1, 2].map((i) => ({ host: 'D', path: `/warm/${i}` })), (h) => origins.urlOf(h), { concurrency: 3 });
  });

  after(async () => {
    await Promise.all([...local, ...deny].map((p) => p.close()));
    await origins?.close();
    await redis?.close();
  });

  it('local: the three together stay within the site\'s rate while Redis is down, and pace fleet-wide again once it is back', async () => {
    await redis.stop();
    const outage = Array.from({ length: 24 }, (_, i) => ({ host: 'L', path: `/down/${i}` }));
    const down = await sendThroughFleet(local, outage, (h) => origins.urlOf(h), { concurrency: 12 });
    assert.deepEqual(down.map((r) => r.status), outage.map(() => 200), 'every request answered while Redis was down');
    const seenDown = seenStarts(await origins.hits('L'), '/down/');
    assert.equal(seenDown.length, 24);
    // Each instance alone at 3 x the delay, so the three together stay within one per DELAY_MS: judged on each
    // instance's own starts as it sent them (its access log, buffered up to 100 ms), as assertStartSpacing does
    // everywhere; the origin's arrival times add scheduling (a late first arrival shortens the span) and are
    // checked only for order and count.
    const sentDown = (p: ProxyProcess): ReturnType<typeof sentStarts> => sentStarts(p.logs, origins.urlOf('L'), '/down/');
    for (const deadline = Date.now() + 5_000; local.reduce((n, p) => n + sentDown(p).length, 0) < outage.length && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(local.reduce((n, p) => n + sentDown(p).length, 0), outage.length, 'every start is in an access log');
    for (const p of local) {
      const sent = sentDown(p);
      const paths = new Set(sent.map((s) => s.path));
      assertStartSpacing(sent, seenDown.filter((s) => paths.has(s.path)), 3 * DELAY_MS);
    }
    for (const p of local) assert.ok(p.logs.some((l) => l['event'] === 'fleet-state' && l['available'] === false), 'the fallback is logged');

    const marks = local.map((p) => p.logs.length);
    await redis.restart();
    await rejoined(local, marks);
    const back = Array.from({ length: 15 }, (_, i) => ({ host: 'L', path: `/back/${i}` }));
    const results = await sendThroughFleet(local, back, (h) => origins.urlOf(h), { concurrency: 6 });
    assert.deepEqual(results.map((r) => r.status), back.map(() => 200));
    // Access lines are buffered for up to 100 ms.
    const sentBack = (): ReturnType<typeof sentStarts> => local.flatMap((p) => sentStarts(p.logs, origins.urlOf('L'), '/back/'));
    for (const deadline = Date.now() + 5_000; sentBack().length < back.length && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
    // The three instances' starts on one clock (instance 0's): each logs on its own.
    const sent = onFirstProcessClock(local.map((p) => ({ logs: p.logs, starts: sentStarts(p.logs, origins.urlOf('L'), '/back/') })));
    // Fleet-wide again: one per DELAY_MS for the three together (not three times that each).
    const seenBack = seenStarts(await origins.hits('L'), '/back/');
    try {
      assertStartSpacing(sent, seenBack, DELAY_MS);
    } catch (error) {
      // Name the cause a spacing failure here cannot show (session 27's CI kept only part of it): which
      // instance sent each start, and any instance that lost Redis meanwhile and paced alone.
      const t0 = Math.min(...sent.map((s) => s.atMs));
      const byInstance = local.flatMap((p, i) =>
        onFirstProcessClock([{ logs: local[0]!.logs, starts: [] }, { logs: p.logs, starts: sentStarts(p.logs, origins.urlOf('L'), '/back/') }]).map((s) => ({ i, ms: s.atMs - t0 })),
      );
      const aheadMs = local.map((p) => Number(p.logs.find((l) => l['event'] === 'listening')?.['epochAheadOfMonotonicMs']));
      const fallbacks = local.flatMap((p, i) => p.logs.slice(marks[i]).filter((l) => l['event'] === 'fleet-state' && l['available'] === false).map((l) => `instance ${i}: ${String(l['why'])}`));
      (error as Error).message += `\nstarts (instance@ms): ${byInstance.sort((x, y) => x.ms - y.ms).map((s) => `${s.i}@${s.ms.toFixed(0)}`).join(' ')}` +
        `\nRedis lost since the restart: ${fallbacks.length === 0 ? 'never' : fallbacks.join('; ')}` +
        `\neach instance's log clock less instance 0's, ms (compensated above): ${aheadMs.map((ms) => (ms - aheadMs[0]!).toFixed(3)).join(' ')}`;
      throw error;
    }
    const spanBackMs = Math.max(...sent.map((s) => s.atMs)) - Math.min(...sent.map((s) => s.atMs));
    assert.ok(spanBackMs < 14 * DELAY_MS * 3, `15 starts took ${Math.round(spanBackMs)} ms: still paced alone`);
  });

  it('deny: 503 fleet-unavailable with Retry-After while Redis is down, 200 once it is back', async () => {
    await redis.stop();
    const down = await sendThroughFleet(deny, [0, 1, 2, 3, 4, 5].map((i) => ({ host: 'D', path: `/down/${i}` })), (h) => origins.urlOf(h), { concurrency: 6 });
    for (const r of down) {
      assert.equal(r.status, 503);
      assert.equal(r.decision, 'deny; reason=fleet-unavailable');
      assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
    }
    assert.deepEqual((await origins.hits('D')).filter((h) => h.url.startsWith('/down/')), [], 'nothing reached the origin');
    const marks = deny.map((p) => p.logs.length);
    await redis.restart();
    await rejoined(deny, marks);
    const back = await sendThroughFleet(deny, [0, 1, 2].map((i) => ({ host: 'D', path: `/back/${i}` })), (h) => origins.urlOf(h), { concurrency: 3 });
    assert.deepEqual(back.map((r) => r.status), [200, 200, 200]);
  });
});
