import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CancelSignal } from '../../src/pacing/cancel-signal.js';
import { Pacer } from '../../src/pacing/pacer.js';
import type { AbortSignalLike } from '../../src/pacing/types.js';
import { FakeClock } from './fake-clock.js';
import { Harness } from './pacing-harness.js';

const A = 'http://a.test';
const B = 'http://b.test';

describe('Pacer refusals', () => {
  it('refuses at once when the expected wait exceeds maxWaitMs, with Retry-After', async () => {
    const h = new Harness({ maxWaitMs: 2500 });
    const traces = [0, 1, 2, 3].map(() => h.request(A, 1000, { serviceMs: 0 }));
    await h.clock.advance(0);
    assert.equal(traces[0]?.startMs, 0);
    assert.equal(traces[1]?.outcome, undefined, 'expected wait 1000 ms: queued');
    assert.equal(traces[2]?.outcome, undefined, 'expected wait 2000 ms: queued');
    assert.deepEqual(traces[3]?.outcome, {
      granted: false,
      refusal: { reason: 'queue-full', limit: 'max-wait', retryAfterSeconds: 3, queueLength: 2, identityQueueLength: 2, delayMs: 1000, expectedWaitMs: 3000 },
    });
    await h.clock.advance(5000);
    assert.deepEqual(h.starts(A), [0, 1000, 2000]);
  });

  it('rounds Retry-After up to whole seconds', async () => {
    const h = new Harness({ maxWaitMs: 100 });
    h.request(A, 50, { serviceMs: 0 });
    h.request(A, 50, { serviceMs: 0 });
    h.request(A, 50, { serviceMs: 0 });
    const refused = h.request(A, 50, { serviceMs: 0 });
    await h.clock.advance(0);
    assert.equal(refused.outcome?.granted, false);
    const refusal = refused.outcome && !refused.outcome.granted ? refused.outcome.refusal : undefined;
    assert.equal(refusal?.reason, 'queue-full');
    assert.equal(refusal?.reason === 'queue-full' && refusal.expectedWaitMs, 150);
    assert.equal(refusal?.reason === 'queue-full' && refusal.retryAfterSeconds, 1);
  });

  it('estimates the wait from the delays of the requests ahead, each its own', async () => {
    for (const [maxWaitMs, isRefused] of [[960, false], [959, true]] as const) {
      const h = new Harness({ maxWaitMs });
      h.request(A, 100, { serviceMs: 0 });
      h.request(A, 300, { serviceMs: 0 });
      h.request(A, 0, { serviceMs: 0 });
      await h.clock.advance(40);
      // The head (300) is ready at 0 + 300, 260 ms from now; then the 0-delay one; then this one's 700.
      const trace = h.request(A, 700, { serviceMs: 0 });
      await h.clock.advance(0);
      if (!isRefused) {
        assert.equal(trace.outcome, undefined, `maxWait ${maxWaitMs}: queued`);
        continue;
      }
      assert.deepEqual(trace.outcome, {
        granted: false,
        refusal: { reason: 'queue-full', limit: 'max-wait', retryAfterSeconds: 1, queueLength: 2, identityQueueLength: 2, delayMs: 700, expectedWaitMs: 960 },
      });
    }
  });

  it('refuses when maxQueue requests already wait', async () => {
    const h = new Harness({ maxConcurrency: 1, maxQueue: 2 });
    const traces = [0, 1, 2, 3].map(() => h.request(A, 0, { serviceMs: 100 }));
    await h.clock.advance(0);
    assert.equal(traces[0]?.startMs, 0);
    assert.deepEqual(traces[3]?.outcome, {
      granted: false,
      refusal: { reason: 'queue-full', limit: 'max-queue', retryAfterSeconds: 1, queueLength: 2, identityQueueLength: 2, delayMs: 0, expectedWaitMs: 0 },
    });
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 100, 200]);
  });

  it('with maxQueue 0 grants only what can start at once', async () => {
    const h = new Harness({ maxConcurrency: 1, maxQueue: 0 });
    const first = h.request(A, 0, { serviceMs: 100 });
    const second = h.request(A, 0, { serviceMs: 100 });
    await h.clock.advance(0);
    assert.equal(first.startMs, 0);
    assert.equal(second.outcome?.granted, false);
  });

  it('rejects a delay that is not a finite number >= 0', async () => {
    const pacer = new Pacer({ maxConcurrency: 1, maxWaitMs: 0, maxQueue: 0 }, new FakeClock());
    await assert.rejects(Promise.resolve(pacer.acquire(A, Number.NaN, { identity: 'c' })), RangeError);
    await assert.rejects(Promise.resolve(pacer.acquire(A, -1, { identity: 'c' })), RangeError);
    await assert.rejects(Promise.resolve(pacer.acquire(A, Infinity, { identity: 'c' })), RangeError);
    await assert.rejects(Promise.resolve(pacer.acquire(A, 0, { identity: 'c', maxConcurrency: 0 })), RangeError);
    assert.throws(() => new Pacer({ maxConcurrency: 0, maxWaitMs: 0, maxQueue: 0 }, new FakeClock()), RangeError);
    assert.throws(() => new Pacer({ maxConcurrency: 1, maxWaitMs: -1, maxQueue: 0 }, new FakeClock()), RangeError);
  });
});

/** The two kinds of abort signal acquire takes: a standard AbortSignal, and the proxy's CancelSignal. */
const SIGNAL_KINDS: Array<[name: string, make: () => { signal: AbortSignalLike; abort: () => void }]> = [
  ['AbortController', () => {
    const controller = new AbortController();
    return { signal: controller.signal, abort: () => controller.abort() };
  }],
  ['CancelSignal', () => {
    const signal = new CancelSignal();
    return { signal, abort: () => signal.abort() };
  }],
];

for (const [kind, makeSignal] of SIGNAL_KINDS) {
  describe(`Pacer abort (${kind})`, () => {
    it('removes an aborted waiter; the next one moves up and it never gets a slot', async () => {
      const h = new Harness();
      const controller = makeSignal();
      h.request(A, 1000, { serviceMs: 0 });
      const aborted = h.request(A, 1000, { serviceMs: 0, signal: controller.signal });
      const next = h.request(A, 1000, { serviceMs: 0 });
      await h.clock.advance(500);
      assert.equal(h.pacer.originStats(A)?.queued, 2);
      controller.abort();
      await h.clock.advance(0);
      assert.deepEqual(aborted.outcome, { granted: false, refusal: { reason: 'aborted' } });
      assert.equal(h.pacer.originStats(A)?.queued, 1);
      await h.clock.advance(500);
      assert.equal(next.startMs, 1000, 'takes the aborted request\'s turn');
      await h.clock.advance(5000);
      assert.equal(aborted.slot, undefined);
      assert.deepEqual(h.starts(A), [0, 1000]);
    });

    it('starts the next request at once when the head it waited behind aborts', async () => {
      const h = new Harness();
      const controller = makeSignal();
      h.request(A, 1000, { serviceMs: 0 });
      h.request(A, 1000, { serviceMs: 0, signal: controller.signal });
      const next = h.request(A, 200, { serviceMs: 0 });
      await h.clock.advance(500);
      assert.equal(next.startMs, undefined);
      controller.abort();
      await h.clock.advance(0);
      assert.equal(next.startMs, 500, 'its own 200 ms since the last start have passed');
    });

    it('refuses at once with an already aborted signal', async () => {
      const h = new Harness();
      const controller = makeSignal();
      controller.abort();
      const trace = h.request(A, 0, { serviceMs: 0, signal: controller.signal });
      await h.clock.advance(0);
      assert.deepEqual(trace.outcome, { granted: false, refusal: { reason: 'aborted' } });
      assert.equal(h.pacer.stats().origins, 0);
    });

    it('ignores an abort after the slot was granted', async () => {
      const h = new Harness();
      const controller = makeSignal();
      const trace = h.request(A, 100, { signal: controller.signal });
      await h.clock.advance(0);
      controller.abort();
      assert.equal(h.pacer.originStats(A)?.inFlight, 1);
      h.end(trace);
      assert.equal(h.pacer.originStats(A)?.inFlight, 0);
    });
  });
}

describe('Pacer lifecycle and memory', () => {
  it('drops an idle origin once its delay has passed, leaving no timer behind', async () => {
    const h = new Harness({ idleRetentionMs: 0 });
    h.request(A, 100, { serviceMs: 10 });
    h.request(B, 0, { serviceMs: 10 });
    await h.clock.advance(10);
    assert.equal(h.pacer.originStats(B), undefined, 'no delay: dropped at release');
    assert.notEqual(h.pacer.originStats(A), undefined, 'still constrains the next start');
    await h.clock.advance(89);
    const late = h.request(A, 100, { serviceMs: 0 });
    await h.clock.advance(0);
    assert.equal(late.startMs, undefined, 'state kept: the delay still holds at 99 ms');
    await h.clock.advance(1);
    assert.equal(late.startMs, 100);
    await h.clock.advance(99);
    assert.equal(h.pacer.stats().origins, 1);
    await h.clock.advance(1);
    assert.equal(h.pacer.stats().origins, 0);
    assert.equal(h.clock.pendingTimers, 0);
  });

  it('remembers an idle origin for idleRetentionMs, so a longer delay is spaced from another agent\'s start', async () => {
    const h = new Harness({ idleRetentionMs: 60_000 });
    h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(1);
    const slow = h.request(A, 333, { serviceMs: 0 });
    await h.clock.advance(331);
    assert.equal(slow.startMs, undefined);
    await h.clock.advance(1);
    assert.equal(slow.startMs, 333);
    await h.clock.advance(60_000 - 1);
    assert.equal(h.pacer.stats().origins, 1);
    await h.clock.advance(1);
    assert.equal(h.pacer.stats().origins, 0);
    assert.equal(h.clock.pendingTimers, 0);
  });

  it('reports per-origin and total queue and in-flight figures', async () => {
    const h = new Harness({ maxConcurrency: 2 });
    for (let i = 0; i < 3; i++) h.request(A, 100);
    for (let i = 0; i < 5; i++) h.request(B, 0);
    await h.clock.advance(0);
    const stats = h.pacer.stats();
    assert.deepEqual(
      { origins: stats.origins, queued: stats.queued, inFlight: stats.inFlight, pausedOrigins: stats.pausedOrigins },
      { origins: 2, queued: 5, inFlight: 3, pausedOrigins: 0 },
    );
    assert.deepEqual(h.pacer.originStats(A), {
      origin: A, queued: 2, queuedIdentities: 1, inFlight: 1, pausedUntilMs: undefined, lastStartMs: h.clock.nowMs(), recoveryCap: undefined,
    });
    assert.equal(h.pacer.originStats(B)?.queued, 3);
    h.pacer.close();
  });

  it('close() refuses every waiter, clears every timer and refuses later calls', async () => {
    const h = new Harness();
    const first = h.request(A, 100, { serviceMs: 0 });
    h.request(B, 0, { maxConcurrency: 1 });
    const waiting = [h.request(A, 100), h.request(B, 0, { maxConcurrency: 1 })];
    await h.clock.advance(0);
    assert.equal(h.clock.pendingTimers, 1, 'A waits on a timer');
    assert.equal(h.pacer.stats().queued, 2);
    h.pacer.close();
    await h.clock.advance(0);
    for (const trace of waiting) assert.deepEqual(trace.outcome, { granted: false, refusal: { reason: 'closed' } });
    assert.equal(h.clock.pendingTimers, 0);
    assert.equal(h.pacer.stats().origins, 0);
    assert.equal(first.startMs, 0);
    const second = h.traces[1];
    assert.ok(second?.slot);
    h.end(second); // harmless after close
    assert.equal(h.clock.pendingTimers, 0);
    assert.deepEqual(await h.pacer.acquire(A, 0, { identity: 'c' }), { granted: false, refusal: { reason: 'closed' } });
  });
});
