import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { collectGarbage } from '../helpers/heap.js';
import { CancelSignal } from '../../src/pacing/cancel-signal.js';
import { Pacer } from '../../src/pacing/pacer.js';
import { FakeClock, flushMicrotasks } from './fake-clock.js';

const A = 'http://a.test';

/**
 * Queues one request behind another at `pacer`, lets it start and releases it; its hold callback
 * closes over a marker object, as the pipeline's closes over the request. Returns a WeakRef to the marker.
 */
async function queueGrantRelease(pacer: Pacer): Promise<WeakRef<object>> {
  const marker = { request: 'the queued one' };
  const first = await pacer.acquire(A, 0, { identity: 'bot' });
  assert.ok(first.granted);
  const waiting = pacer.acquire(A, 0, { identity: 'bot', signal: new CancelSignal(), onHoldExceeded: () => void marker, limits: () => ({ delayMs: 0 }) });
  assert.equal(pacer.originStats(A)?.queued, 1, 'the second request waits');
  first.slot.release();
  const second = await waiting;
  assert.ok(second.granted);
  second.slot.release();
  return new WeakRef(marker);
}

describe('Pacer: what it keeps of a finished request', () => {
  it('a queued request, granted and released, is not kept alive by the pacer (no reference left in its records)', async () => {
    const clock = new FakeClock();
    const pacer = new Pacer({ maxConcurrency: 1, maxWaitMs: 60_000, maxQueue: 100, idleRetentionMs: 60_000 }, clock);
    const marker = await queueGrantRelease(pacer);
    await flushMicrotasks();
    collectGarbage();
    // The pacer (and the origin's state, retained for idleRetentionMs) live on; the request must not.
    assert.ok(pacer.originStats(A) !== undefined, 'the origin state is still held');
    assert.equal(marker.deref(), undefined, 'the finished request is still reachable from the pacer');
    pacer.close();
  });
});
