// run-tests: in-process
/**
 * `Pacer.applyOverload`: an origin whose robots.txt answered 429/503 is paused as by a page's
 * 429/503 (`overload.ts`): Retry-After (delta-seconds, HTTP-date) capped at retryAfterCapMs, else
 * full-jitter backoff, then the gradual recovery; any other status pauses nothing. Fake clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Harness } from './pacing-harness.js';

const A = 'http://a.test';
const B = 'http://b.test';

describe('Pacer.applyOverload (robots.txt answered 429/503)', () => {
  it('429 with Retry-After delta-seconds: the next page waits for it; the end is returned', async () => {
    const h = new Harness();
    const untilMs = h.pacer.applyOverload(A, { status: 429, retryAfter: '3' });
    assert.equal(untilMs, h.clock.nowMs() + 3000);
    assert.equal(h.pacer.originStats(A)?.pausedUntilMs, untilMs);
    assert.equal(h.pacer.stats().pausedOrigins, 1);
    const page = h.request(A, 0, { serviceMs: 0 });
    const other = h.request(B, 0, { serviceMs: 0 });
    await h.clock.advance(2999);
    assert.equal(page.startMs, undefined, 'still paused');
    assert.equal(other.startMs, 0, 'another origin is not paused');
    await h.clock.advance(1);
    assert.equal(page.startMs, 3000);
  });

  it('503 with an HTTP-date: paused until that date', async () => {
    const h = new Harness();
    const dateMs = Math.ceil(h.clock.nowMs() / 1000) * 1000 + 20_000;
    assert.equal(h.pacer.applyOverload(A, { status: 503, retryAfter: new Date(dateMs).toUTCString() }), dateMs);
    const page = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(dateMs - h.clock.nowMs() - 1);
    assert.equal(page.startMs, undefined);
    await h.clock.advance(1);
    assert.equal(page.slot?.startedAtMs, dateMs);
  });

  it('caps the Retry-After at retryAfterCapMs', () => {
    const h = new Harness({ retryAfterCapMs: 5000 });
    assert.equal(h.pacer.applyOverload(A, { status: 503, retryAfter: '86400' }), h.clock.nowMs() + 5000);
  });

  it('without a usable Retry-After: full-jitter backoff, doubling per robots.txt answer', () => {
    const h = new Harness({ backoffBaseMs: 1000, backoffCapMs: 60_000, random: () => 0.5 });
    const t0 = h.clock.nowMs();
    assert.equal(h.pacer.applyOverload(A, { status: 503 }), t0 + 500);
    assert.equal(h.pacer.applyOverload(A, { status: 429, retryAfter: 'soon' }), t0 + 1000, 'second attempt: 0.5 * 2000');
  });

  it('500, 404, 200 and no answer pause nothing and leave no state', () => {
    const h = new Harness();
    for (const status of [500, 502, 404, 200, undefined]) {
      assert.equal(h.pacer.applyOverload(A, { status, retryAfter: '60' }), undefined, String(status));
    }
    assert.equal(h.pacer.originStats(A), undefined);
    assert.equal(h.pacer.stats().pausedOrigins, 0);
  });

  it('never shortens a longer pause a page already set', async () => {
    const h = new Harness();
    h.request(A, 0, { serviceMs: 0, status: 429, retryAfter: '60' });
    await h.clock.advance(0);
    const pageUntilMs = h.pacer.originStats(A)?.pausedUntilMs;
    assert.equal(pageUntilMs, h.clock.nowMs() + 60_000);
    assert.equal(h.pacer.applyOverload(A, { status: 503, retryAfter: '2' }), pageUntilMs);
  });

  it('recovers gradually: after the pause, concurrency 1, then one more per success', async () => {
    const h = new Harness({ maxConcurrency: 3 });
    h.pacer.applyOverload(A, { status: 503, retryAfter: '1' });
    const pages = Array.from({ length: 4 }, () => h.request(A, 0, { serviceMs: 100, status: 200 }));
    await h.clock.advance(5000);
    // 1 alone at 1000, then 2 together at 1100 (cap 2), then the last at 1200 (cap 3 = full).
    assert.deepEqual(pages.map((p) => p.startMs), [1000, 1100, 1100, 1200]);
    assert.equal(h.pacer.originStats(A)?.recoveryCap, undefined, 'fully recovered');
  });

  it('does nothing after close()', () => {
    const h = new Harness();
    h.pacer.close();
    assert.equal(h.pacer.applyOverload(A, { status: 429, retryAfter: '3' }), undefined);
  });
});
