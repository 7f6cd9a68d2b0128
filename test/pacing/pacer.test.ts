import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Harness } from './pacing-harness.js';

const A = 'http://a.test';
const B = 'http://b.test';

describe('Pacer start-to-start (default model)', () => {
  it('spaces starts by exactly the delay (50 ms = crawl-delay 0.05)', async () => {
    const h = new Harness();
    for (let i = 0; i < 5; i++) h.request(A, 0.05 * 1000, { serviceMs: 0 });
    await h.clock.advance(49.999);
    assert.deepEqual(h.starts(A), [0]);
    await h.clock.advance(0.001);
    assert.deepEqual(h.starts(A), [0, 50]);
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 50, 100, 150, 200]);
  });

  it('honours fractional milliseconds', async () => {
    const h = new Harness();
    for (let i = 0; i < 4; i++) h.request(A, 12.5, { serviceMs: 0 });
    await h.clock.advance(100);
    assert.deepEqual(h.starts(A), [0, 12.5, 25, 37.5]);
  });

  it('never starts early when timers wake early: it re-arms', async () => {
    const h = new Harness();
    h.clock.earlyMs = 5;
    for (let i = 0; i < 4; i++) h.request(A, 50, { serviceMs: 0 });
    await h.clock.advance(45);
    assert.deepEqual(h.starts(A), [0], 'a timer woke at 45 ms and must not start the next request');
    await h.clock.advance(500);
    assert.deepEqual(h.starts(A), [0, 50, 100, 150]);
  });

  it('keeps one request in flight while a delay is in force: the next waits for the release', async () => {
    const h = new Harness();
    for (let i = 0; i < 3; i++) h.request(A, 50, { serviceMs: 200 });
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 200, 400]);
    assert.equal(h.maxInFlight.get(A), 1);
  });

  it('starts at previous start + delay when responses are faster than the delay', async () => {
    const h = new Harness();
    for (let i = 0; i < 3; i++) h.request(A, 50, { serviceMs: 30 });
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 50, 100]);
  });

  it('spaces each request by its own delay (agents with different crawl-delays)', async () => {
    const h = new Harness();
    h.request(A, 100, { serviceMs: 5 });
    h.request(A, 20, { serviceMs: 5 });
    h.request(A, 100, { serviceMs: 5 });
    h.request(A, 0, { serviceMs: 5 });
    await h.clock.advance(1000);
    // 2nd: 0 + 20; 3rd: 20 + 100; 4th has no delay but waits for the 3rd (delayed, runs alone) to end.
    assert.deepEqual(h.starts(A), [0, 20, 120, 125]);
  });

  it('is FIFO within an origin: an undelayed request waits behind a delayed one', async () => {
    const h = new Harness();
    const first = h.request(A, 100, { serviceMs: 0 });
    const second = h.request(A, 100, { serviceMs: 0 });
    const third = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(99);
    assert.equal(second.startMs, undefined);
    assert.equal(third.startMs, undefined);
    await h.clock.advance(1);
    assert.deepEqual([first.startMs, second.startMs, third.startMs], [0, 100, 100]);
  });

  it('paces two origins independently', async () => {
    const h = new Harness();
    for (let i = 0; i < 3; i++) {
      h.request(A, 100, { serviceMs: 0 });
      h.request(B, 30, { serviceMs: 0 });
    }
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 100, 200]);
    assert.deepEqual(h.starts(B), [0, 30, 60]);
  });
});

describe('Pacer without a delay', () => {
  it('caps in-flight requests at maxConcurrency, with no spacing', async () => {
    const h = new Harness({ maxConcurrency: 3 });
    for (let i = 0; i < 7; i++) h.request(A, 0, { serviceMs: 100 });
    await h.clock.advance(0);
    assert.deepEqual(h.starts(A), [0, 0, 0]);
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 0, 0, 100, 100, 100, 200]);
    assert.equal(h.maxInFlight.get(A), 3);
  });

  it('honours a per-call maxConcurrency override', async () => {
    const h = new Harness({ maxConcurrency: 8 });
    for (let i = 0; i < 3; i++) h.request(A, 0, { serviceMs: 100, maxConcurrency: 1 });
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 100, 200]);
    assert.equal(h.maxInFlight.get(A), 1);
  });

  it('does not overlap a delayed request in flight', async () => {
    const h = new Harness({ maxConcurrency: 4 });
    const delayed = h.request(A, 50, { serviceMs: 300 });
    const free = h.request(A, 0, { serviceMs: 0 });
    await h.clock.advance(1000);
    assert.equal(delayed.startMs, 0);
    assert.equal(free.startMs, 300);
  });
});

describe('Pacer end-to-start', () => {
  it('starts at previous end + delay, one in flight', async () => {
    const h = new Harness({ model: 'end-to-start' });
    for (let i = 0; i < 3; i++) h.request(A, 50, { serviceMs: 30 });
    await h.clock.advance(1000);
    assert.deepEqual(h.starts(A), [0, 80, 160]);
    assert.equal(h.maxInFlight.get(A), 1);
  });
});

describe('Pacer window', () => {
  it('allows windowMs / delay starts in any window, one in flight', async () => {
    const h = new Harness({ model: 'window', windowMs: 1000 });
    for (let i = 0; i < 9; i++) h.request(A, 250, { serviceMs: 10 });
    await h.clock.advance(5000);
    assert.deepEqual(h.starts(A), [0, 10, 20, 30, 1000, 1010, 1020, 1030, 2000]);
    assert.equal(h.maxInFlight.get(A), 1);
  });

  it('falls back to one start per delay when the delay is at least the window', async () => {
    const h = new Harness({ model: 'window', windowMs: 1000 });
    for (let i = 0; i < 3; i++) h.request(A, 1500, { serviceMs: 0 });
    await h.clock.advance(5000);
    assert.deepEqual(h.starts(A), [0, 1500, 3000]);
  });
});
