/**
 * The slot hold bound kept with one timer per pacer (hold-list.ts): slots
 * expire in grant order, a release touches no timer, a timer that wakes for a
 * slot released meanwhile re-arms for the oldest one still held.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HoldList, type HeldSlot } from '../../src/pacing/hold-list.js';
import { FakeClock } from './fake-clock.js';

interface TestSlot extends HeldSlot {
  name: string;
}

function slotAt(name: string, startedAtMs: number): TestSlot {
  return { name, startedAtMs, holdPrev: undefined, holdNext: undefined, isHeld: false };
}

describe('HoldList', () => {
  it('expires each slot held past the bound once, in grant order, with at most one timer', async () => {
    const clock = new FakeClock(0);
    const expired: Array<[string, number]> = [];
    const holds = new HoldList<TestSlot>(clock, 1000, (slot) => expired.push([slot.name, clock.nowMs()]));
    const slots = ['s0', 's1', 's2', 's3'].map((name, i) => slotAt(name, i * 100));
    for (const slot of slots) {
      await clock.advanceTo(slot.startedAtMs);
      holds.add(slot);
      assert.equal(clock.pendingTimers, 1, 'one timer, however many slots');
    }
    holds.remove(slots[0]!); // the oldest, released in time: its timer stays, finds nothing due
    holds.remove(slots[2]!);
    assert.equal(clock.pendingTimers, 1);
    await clock.advanceTo(5000);
    assert.deepEqual(expired, [['s1', 1100], ['s3', 1300]]);
    assert.equal(clock.pendingTimers, 0, 'nothing held: no timer');
    assert.equal(slots[1]!.isHeld, false);
  });

  it('re-arms when a timer wakes early, and arms again for slots added later', async () => {
    const clock = new FakeClock(0);
    clock.earlyMs = 5;
    const expired: Array<[string, number]> = [];
    const holds = new HoldList<TestSlot>(clock, 1000, (slot) => expired.push([slot.name, clock.nowMs()]));
    holds.add(slotAt('s0', 0));
    await clock.advanceTo(999);
    assert.deepEqual(expired, [], 'woke at 995: nothing due yet');
    await clock.advanceTo(1000);
    assert.deepEqual(expired, [['s0', 1000]]);
    await clock.advanceTo(2000);
    holds.add(slotAt('s1', 2000));
    await clock.advanceTo(3000);
    assert.deepEqual(expired, [['s0', 1000], ['s1', 3000]]);
  });

  it('arms for the oldest slot still held after a handler adds one', async () => {
    const clock = new FakeClock(0);
    const expired: string[] = [];
    let holds: HoldList<TestSlot> | undefined;
    holds = new HoldList<TestSlot>(clock, 1000, (slot) => {
      expired.push(slot.name);
      // The freed slot lets the next request start: it is held from now.
      if (slot.name === 's0') holds?.add(slotAt('next', clock.nowMs()));
    });
    holds.add(slotAt('s0', 0));
    await clock.advanceTo(500);
    holds.add(slotAt('s1', 500));
    await clock.advanceTo(1499);
    assert.deepEqual(expired, ['s0']);
    await clock.advanceTo(1500);
    assert.deepEqual(expired, ['s0', 's1'], 's1 expires at its own bound, not at the later one of the slot added meanwhile');
    await clock.advanceTo(2000);
    assert.deepEqual(expired, ['s0', 's1', 'next']);
  });

  it('clear() forgets every slot and its timer', async () => {
    const clock = new FakeClock(0);
    const expired: string[] = [];
    const holds = new HoldList<TestSlot>(clock, 1000, (slot) => expired.push(slot.name));
    const slot = slotAt('s0', 0);
    holds.add(slot);
    holds.clear();
    assert.equal(clock.pendingTimers, 0);
    assert.equal(slot.isHeld, false);
    await clock.advanceTo(5000);
    assert.deepEqual(expired, []);
  });
});
