// run-tests: in-process
/**
 * Pacer.reconfigure: a configuration reload swaps the options in without
 * losing a waiter or an origin's timing (issue #7 item 6).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Harness } from './pacing-harness.js';

const A = 'http://a.test';
const BASE = { maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000 };

describe('Pacer.reconfigure', () => {
  it('keeps every waiter, in order, and the timing of the origin', async () => {
    const h = new Harness(BASE);
    const traces = [0, 1, 2, 3].map(() => h.request(A, 1000, { serviceMs: 0 }));
    await h.clock.advance(500);
    assert.deepEqual(h.starts(A), [0]);
    h.pacer.reconfigure({ ...BASE, maxConcurrency: 8, maxQueue: 2 });
    assert.equal(h.pacer.stats().queued, 3, 'a smaller maxQueue evicts nobody');
    await h.clock.advance(5000);
    assert.deepEqual(h.starts(A), [0, 1000, 2000, 3000], 'spacing counted from the start before the reload');
    assert.ok(traces.every((t) => t.outcome?.granted));
  });

  it('recomputes a queued request\'s delay through its limits, both ways', async () => {
    const h = new Harness(BASE);
    let minDelayMs = 1000;
    const limits = (): { delayMs: number } => ({ delayMs: Math.max(100, minDelayMs) });
    h.request(A, 1000, { serviceMs: 0, limits });
    h.request(A, 1000, { serviceMs: 0, limits });
    h.request(A, 1000, { serviceMs: 0, limits });
    await h.clock.advance(200);
    minDelayMs = 0; // the operator lowers the minimum: the crawl-delay (100) is what is left
    h.pacer.reconfigure(BASE);
    await h.clock.advance(0);
    assert.deepEqual(h.starts(A), [0, 200], 'the head was due at 100 and starts at once');
    minDelayMs = 3000; // and raises it again: the last waiter is held
    h.pacer.reconfigure(BASE);
    await h.clock.advance(10_000);
    assert.deepEqual(h.starts(A), [0, 200, 3200]);
  });

  it('keeps the queued delay of a request without limits', async () => {
    const h = new Harness(BASE);
    h.request(A, 1000, { serviceMs: 0 });
    h.request(A, 1000, { serviceMs: 0 });
    await h.clock.advance(10);
    h.pacer.reconfigure({ ...BASE, maxConcurrency: 1 });
    await h.clock.advance(5000);
    assert.deepEqual(h.starts(A), [0, 1000]);
  });

  it('starts queued requests at once when maxConcurrency is raised', async () => {
    const h = new Harness({ ...BASE, maxConcurrency: 1 });
    const traces = [0, 1, 2].map(() => h.request(A, 0));
    await h.clock.advance(0);
    assert.equal(h.pacer.stats().inFlight, 1);
    h.pacer.reconfigure({ ...BASE, maxConcurrency: 3 });
    await h.clock.advance(0);
    assert.equal(h.pacer.stats().inFlight, 3);
    assert.equal(h.pacer.stats().queued, 0);
    assert.deepEqual(traces.map((t) => t.startMs), [0, 0, 0]);
  });

  it('applies a lower maxWait and maxQueue to later arrivals only', async () => {
    const h = new Harness(BASE);
    h.request(A, 1000, { serviceMs: 0 });
    h.request(A, 1000, { serviceMs: 0 });
    await h.clock.advance(0);
    h.pacer.reconfigure({ ...BASE, maxWaitMs: 1500 });
    const refused = h.request(A, 1000, { serviceMs: 0 });
    await h.clock.advance(0);
    assert.equal(refused.outcome?.granted, false);
    assert.equal(refused.outcome && !refused.outcome.granted && refused.outcome.refusal.reason, 'queue-full');
    await h.clock.advance(3000);
    assert.deepEqual(h.starts(A), [0, 1000]);
  });

  it('counts the latest start when the model becomes window, so the switch opens no burst', async () => {
    const h = new Harness(BASE);
    h.request(A, 400, { serviceMs: 0 });
    await h.clock.advance(100);
    h.pacer.reconfigure({ ...BASE, model: 'window', windowMs: 1000 });
    // A 1000 ms window allows 2 starts of delay 400: one was at 0, so one more now, then at 1000.
    [0, 1, 2].forEach(() => h.request(A, 400, { serviceMs: 0 }));
    await h.clock.advance(3000);
    assert.deepEqual(h.starts(A), [0, 100, 1000, 1100]);
  });

  it('refuses options out of bounds and keeps the running ones', async () => {
    const h = new Harness(BASE);
    assert.throws(() => h.pacer.reconfigure({ ...BASE, maxConcurrency: 0 }), RangeError);
    [0, 1, 2, 3, 4].forEach(() => h.request(A, 0));
    await h.clock.advance(0);
    assert.equal(h.pacer.stats().inFlight, 4);
  });

  it('does nothing after close', async () => {
    const h = new Harness(BASE);
    h.pacer.close();
    h.pacer.reconfigure({ ...BASE, maxConcurrency: 2 });
    assert.deepEqual(await h.pacer.acquire(A, 0, { identity: 'c' }), { granted: false, refusal: { reason: 'closed' } });
  });
});
