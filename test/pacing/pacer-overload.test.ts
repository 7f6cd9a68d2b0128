// run-tests: in-process
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Harness } from './pacing-harness.js';

const A = 'http://a.test';
const B = 'http://b.test';

describe('Pacer on upstream 429/503', () => {
  it('pauses the origin for Retry-After delta-seconds', async () => {
    const h = new Harness();
    h.request(A, 0, { serviceMs: 10, status: 429, retryAfter: '2' });
    const next = h.request(A, 0, { serviceMs: 0, maxConcurrency: 1 });
    await h.clock.advance(10);
    assert.equal(h.pacer.stats().pausedOrigins, 1);
    assert.equal(h.pacer.originStats(A)?.pausedUntilMs, h.clock.nowMs() + 2000);
    await h.clock.advance(1999);
    assert.equal(next.startMs, undefined);
    await h.clock.advance(1);
    assert.equal(next.startMs, 2010);
  });

  it('pauses the origin until a Retry-After HTTP-date (503)', async () => {
    const h = new Harness();
    const untilMs = Math.ceil(h.clock.nowMs() / 1000) * 1000 + 30_000;
    const date = new Date(untilMs).toUTCString();
    h.request(A, 0, { serviceMs: 0, status: 503, retryAfter: date });
    await h.clock.advance(0);
    const next = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(untilMs - h.clock.nowMs() - 1);
    assert.equal(next.startMs, undefined);
    await h.clock.advance(1);
    assert.equal(next.slot?.startedAtMs, untilMs);
  });

  it('caps a Retry-After pause at retryAfterCapMs', async () => {
    const h = new Harness({ retryAfterCapMs: 5000 });
    h.request(A, 0, { serviceMs: 0, status: 429, retryAfter: '86400' });
    const next = h.request(A, 0, { serviceMs: 0, maxConcurrency: 1 });
    await h.clock.advance(10_000);
    assert.equal(next.startMs, 5000);
  });

  it('refuses new requests during a pause longer than maxWait, with the pause as Retry-After', async () => {
    const h = new Harness({ maxWaitMs: 30_000 });
    h.request(A, 0, { serviceMs: 0, status: 429, retryAfter: '120' });
    await h.clock.advance(500);
    const refused = h.request(A, 0);
    await h.clock.advance(0);
    assert.deepEqual(refused.outcome, {
      granted: false,
      refusal: { reason: 'queue-full', limit: 'max-wait', retryAfterSeconds: 120, queueLength: 0, identityQueueLength: 0, delayMs: 0, expectedWaitMs: 119_500 },
    });
  });

  it('backs off exponentially with full jitter when there is no valid Retry-After', async () => {
    const draws: number[] = [];
    const h = new Harness({ backoffBaseMs: 1000, backoffCapMs: 3000, random: () => (draws.push(0.5), 0.5) });
    // Each request is answered 503 without a usable Retry-After; each starts after the previous pause.
    for (let i = 0; i < 4; i++) h.request(A, 0, { serviceMs: 0, status: 503, retryAfter: 'soon', maxConcurrency: 1 });
    const after = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(60_000);
    // Pauses: 0.5 * 1000, 0.5 * 2000, 0.5 * 3000 (capped), 0.5 * 3000.
    assert.deepEqual(h.starts(A), [0, 500, 1500, 3000, 4500]);
    assert.equal(after.startMs, 4500);
    assert.equal(draws.length, 4);
  });

  it('resets the backoff after a success', async () => {
    const h = new Harness({ backoffBaseMs: 1000, random: () => 0.5 });
    h.request(A, 0, { serviceMs: 0, status: 429, maxConcurrency: 1 });
    h.request(A, 0, { serviceMs: 0, status: 200, maxConcurrency: 1 });
    h.request(A, 0, { serviceMs: 0, status: 429, maxConcurrency: 1 });
    h.request(A, 0, { serviceMs: 0, maxConcurrency: 1 });
    await h.clock.advance(60_000);
    assert.deepEqual(h.starts(A), [0, 500, 500, 1000]);
  });

  it('counts the answers of requests already in flight as one episode', async () => {
    const h = new Harness({ maxConcurrency: 4, backoffBaseMs: 1000, random: () => 0.5 });
    for (let i = 0; i < 4; i++) h.request(A, 0, { serviceMs: 10 + i, status: 429 });
    const next = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(60_000);
    // One pause of 0.5 * 1000 from the first answer at 10 ms, not escalated by the other three.
    assert.equal(next.startMs, 510);
  });

  it('lets a later Retry-After in the same episode extend the pause', async () => {
    const h = new Harness({ maxConcurrency: 2 });
    h.request(A, 0, { serviceMs: 10, status: 429, retryAfter: '1' });
    h.request(A, 0, { serviceMs: 20, status: 429, retryAfter: '3' });
    const next = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(60_000);
    assert.equal(next.startMs, 3020);
  });

  it('recovers gradually: concurrency ramps from 1 by one per success', async () => {
    const h = new Harness({ maxConcurrency: 3 });
    h.request(A, 0, { serviceMs: 0, status: 429, retryAfter: '1' });
    await h.clock.advance(0);
    for (let i = 0; i < 9; i++) h.request(A, 0, { serviceMs: 100, status: 200 });
    await h.clock.advance(0);
    assert.equal(h.pacer.originStats(A)?.recoveryCap, 1);
    await h.clock.advance(60_000);
    // 1000: one alone; 1100: two; 1200: three (recovered) ...
    assert.deepEqual(h.starts(A), [0, 1000, 1100, 1100, 1200, 1200, 1200, 1300, 1300, 1300]);
    assert.equal(h.pacer.originStats(A)?.recoveryCap, undefined, 'recovered');
    await h.clock.advance(60_000);
    assert.equal(h.pacer.originStats(A), undefined, 'recovered and idle: dropped');
    assert.equal(h.clock.pendingTimers, 0);
  });

  it('keeps a released request without status neutral', async () => {
    const h = new Harness({ maxConcurrency: 2 });
    h.request(A, 0, { serviceMs: 0, status: 429, retryAfter: '1' });
    await h.clock.advance(0);
    h.request(A, 0, { serviceMs: 100 });
    h.request(A, 0, { serviceMs: 100 });
    await h.clock.advance(60_000);
    assert.deepEqual(h.starts(A), [0, 1000, 1100]);
  });

  it('pauses only the origin that answered 429', async () => {
    const h = new Harness();
    h.request(A, 0, { serviceMs: 0, status: 429, retryAfter: '10' });
    const other = h.request(B, 0, { serviceMs: 0 });
    await h.clock.advance(0);
    assert.equal(other.startMs, 0);
    assert.equal(h.pacer.originStats(B)?.pausedUntilMs, undefined);
    assert.notEqual(h.pacer.originStats(A)?.pausedUntilMs, undefined);
  });

  it('keeps a delayed origin spaced after the pause', async () => {
    const h = new Harness();
    h.request(A, 200, { serviceMs: 0, status: 503, retryAfter: '1' });
    for (let i = 0; i < 3; i++) h.request(A, 200, { serviceMs: 0, status: 200 });
    await h.clock.advance(60_000);
    assert.deepEqual(h.starts(A), [0, 1000, 1200, 1400]);
  });
});
