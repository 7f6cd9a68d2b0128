/**
 * `maxSlotHoldMs`: no holder keeps an origin's start slot past the bound
 * (issue 7, "a slot hog"). The pacer reclaims the slot, tells the holder once,
 * and the next requests keep their crawl-delay spacing, counted from the
 * hog's start; a late 429 from the hog's exchange still pauses the origin.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Pacer } from '../../src/pacing/pacer.js';
import type { Slot } from '../../src/pacing/types.js';
import { FakeClock } from './fake-clock.js';

const A = 'http://a.test';

function pacerWith(clock: FakeClock, maxSlotHoldMs: number): Pacer {
  return new Pacer({ maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000, maxSlotHoldMs }, clock);
}

/** Acquires and resolves with the slot and the grant time, ms after `t0`. */
async function grant(pacer: Pacer, clock: FakeClock, t0: number, delayMs: number, onHoldExceeded?: (heldMs: number) => void): Promise<{ slot: Slot; atMs: number }> {
  const outcome = await pacer.acquire(A, delayMs, { identity: 'client', ...(onHoldExceeded ? { onHoldExceeded } : {}) });
  assert.ok(outcome.granted, 'granted');
  return { slot: outcome.slot, atMs: clock.nowMs() - t0 };
}

describe('Pacer slot hold bound (maxSlotHoldMs)', () => {
  it('reclaims a delayed slot held past the bound; the queue goes on at the crawl-delay pace', async () => {
    const clock = new FakeClock();
    const t0 = clock.nowMs();
    const pacer = pacerWith(clock, 5000);
    const held: number[] = [];
    // The hog: delay 1 s, never released by its holder.
    const hog = await grant(pacer, clock, t0, 1000, (heldMs) => held.push(heldMs));
    const starts: number[] = [];
    const others = [1, 2, 3].map(() =>
      Promise.resolve(pacer.acquire(A, 1000, { identity: 'client' })).then((outcome) => {
        assert.ok(outcome.granted);
        starts.push(clock.nowMs() - t0);
        outcome.slot.release({ status: 200 });
      }),
    );
    await clock.advance(4999);
    assert.deepEqual(starts, [], 'nothing starts while the hog holds the slot (a delayed request runs alone)');
    assert.deepEqual(held, []);
    await clock.advance(1);
    assert.deepEqual(held, [5000], 'the holder is told once, with the time it held the slot');
    await clock.advance(10_000);
    await Promise.all(others);
    // Start-to-start: the first waits for the reclaim (5000 > 0 + 1000), then one per second.
    assert.deepEqual(starts, [5000, 6000, 7000]);
    assert.equal(hog.atMs, 0);
    assert.deepEqual(held, [5000], 'told once');
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0, 'the reclaimed slot is not counted in flight');
    // The holder's own release afterwards changes nothing (no double free).
    hog.slot.release({ status: 200 });
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0);
    pacer.close();
  });

  it('bounds undelayed slots too: a hog holding maxConcurrency slots frees them at the bound', async () => {
    const clock = new FakeClock();
    const t0 = clock.nowMs();
    const pacer = new Pacer({ maxConcurrency: 2, maxWaitMs: 1e9, maxQueue: 1000, maxSlotHoldMs: 3000 }, clock);
    await grant(pacer, clock, t0, 0);
    await grant(pacer, clock, t0, 0);
    let startedAt: number | undefined;
    const third = Promise.resolve(pacer.acquire(A, 0, { identity: 'client' })).then((o) => {
      assert.ok(o.granted);
      startedAt = clock.nowMs() - t0;
      o.slot.release();
    });
    await clock.advance(2999);
    assert.equal(startedAt, undefined);
    await clock.advance(1);
    await third;
    assert.equal(startedAt, 3000);
    pacer.close();
  });

  it('a slot released in time is never reclaimed, and its timer is cleared', async () => {
    const clock = new FakeClock();
    const t0 = clock.nowMs();
    const pacer = pacerWith(clock, 5000);
    let told = 0;
    const { slot } = await grant(pacer, clock, t0, 1000, () => (told += 1));
    await clock.advance(4000);
    slot.release({ status: 200 });
    await clock.advance(10_000);
    assert.equal(told, 0);
    pacer.close();
    assert.equal(clock.pendingTimers, 0, 'no timer left behind');
  });

  it('a late 429 from a reclaimed slot still pauses the origin (its Retry-After counts)', async () => {
    const clock = new FakeClock();
    const t0 = clock.nowMs();
    const pacer = pacerWith(clock, 2000);
    const hog = await grant(pacer, clock, t0, 1000);
    await clock.advance(2000); // reclaimed
    hog.slot.release({ status: 429, retryAfter: '30' });
    let grantedAt: number | undefined;
    const pending = Promise.resolve(pacer.acquire(A, 1000, { identity: 'client' })).then((o) => {
      assert.ok(o.granted);
      grantedAt = clock.nowMs() - t0;
      o.slot.release({ status: 200 });
    });
    await clock.advance(31_999 - (clock.nowMs() - t0));
    assert.equal(grantedAt, undefined, 'paused until 2000 + 30 s');
    await clock.advance(1);
    await pending;
    assert.equal(grantedAt, 32_000);
    pacer.close();
  });

  it('0 means no bound (the default)', async () => {
    const clock = new FakeClock();
    const t0 = clock.nowMs();
    const pacer = pacerWith(clock, 0);
    let told = 0;
    await grant(pacer, clock, t0, 1000, () => (told += 1));
    assert.equal(clock.pendingTimers, 0, 'no hold timer armed');
    await clock.advance(3_600_000);
    assert.equal(told, 0);
    assert.equal(pacer.originStats(A)?.inFlight, 1);
    pacer.close();
  });

  it('refuses a negative bound', () => {
    assert.throws(() => pacerWith(new FakeClock(), -1), RangeError);
  });
});

describe('Pacer slot hold bound across a reconfiguration', () => {
  it('keeps the bound a slot was granted under; slots granted later get the new one', async () => {
    const clock = new FakeClock();
    const t0 = clock.nowMs();
    const pacer = new Pacer({ maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000, maxSlotHoldMs: 5000 }, clock);
    const told: Array<[string, number]> = [];
    await grant(pacer, clock, t0, 0, (heldMs) => told.push(['before', heldMs]));
    pacer.reconfigure({ maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000, maxSlotHoldMs: 1000 });
    await grant(pacer, clock, t0, 0, (heldMs) => told.push(['after', heldMs]));
    await clock.advance(1000);
    assert.deepEqual(told, [['after', 1000]]);
    await clock.advance(4000);
    assert.deepEqual(told, [['after', 1000], ['before', 5000]]);
    pacer.reconfigure({ maxConcurrency: 4, maxWaitMs: 1e9, maxQueue: 1000, maxSlotHoldMs: 0 });
    await grant(pacer, clock, t0, 0, () => told.push(['unbounded', 0]));
    await clock.advance(60_000);
    assert.equal(told.length, 2, 'no bound after the reload to 0');
    pacer.close();
    assert.equal(clock.pendingTimers, 0);
  });
});
