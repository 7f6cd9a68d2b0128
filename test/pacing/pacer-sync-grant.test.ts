import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Pacer } from '../../src/pacing/pacer.js';
import { CancelSignal } from '../../src/pacing/cancel-signal.js';
import type { AcquireOutcome, Slot } from '../../src/pacing/types.js';
import { FakeClock } from './fake-clock.js';

const A = 'http://a.test';

/** The outcome `acquire` returned synchronously; fails when it returned a promise. */
function syncOutcome(value: AcquireOutcome | Promise<AcquireOutcome>): AcquireOutcome {
  assert.ok(!(value instanceof Promise), 'expected the outcome itself, not a promise');
  return value;
}

function grantedSlot(value: AcquireOutcome | Promise<AcquireOutcome>): Slot {
  const outcome = syncOutcome(value);
  assert.ok(outcome.granted, 'expected a grant');
  return outcome.slot;
}

// Issue 11: a free slot costs no promise and no microtask hop.
describe('Pacer synchronous answers', () => {
  it('grants a free slot synchronously, and again after the release', () => {
    const pacer = new Pacer({ maxConcurrency: 2, maxQueue: 100, maxWaitMs: 60_000 }, new FakeClock());
    const first = grantedSlot(pacer.acquire(A, 0, { identity: 'bot' }));
    const second = grantedSlot(pacer.acquire(A, 0, { identity: 'bot' }));
    assert.equal(pacer.originStats(A)?.inFlight, 2);
    first.release();
    second.release();
    grantedSlot(pacer.acquire(A, 0, { identity: 'bot' })).release();
    pacer.close();
  });

  it('makes the request over maxConcurrency wait (a promise), and grants it at the release', async () => {
    const pacer = new Pacer({ maxConcurrency: 1, maxQueue: 100, maxWaitMs: 60_000 }, new FakeClock());
    const first = grantedSlot(pacer.acquire(A, 0, { identity: 'bot' }));
    const waiting = pacer.acquire(A, 0, { identity: 'bot' });
    assert.ok(waiting instanceof Promise, 'the second request must wait');
    assert.equal(pacer.originStats(A)?.queued, 1);
    first.release();
    const outcome = await waiting;
    assert.ok(outcome.granted);
    outcome.slot.release();
    pacer.close();
  });

  it('makes a second request to a Crawl-delay origin wait for the delay, start to start', async () => {
    const clock = new FakeClock();
    const pacer = new Pacer({ maxConcurrency: 4, maxQueue: 100, maxWaitMs: 60_000 }, clock);
    const first = grantedSlot(pacer.acquire(A, 1000, { identity: 'bot' }));
    first.release();
    const seen: { second?: AcquireOutcome } = {};
    const waiting = pacer.acquire(A, 1000, { identity: 'bot' });
    assert.ok(waiting instanceof Promise, 'the delay is not due: the request must wait');
    void waiting.then((o) => (seen.second = o));
    await clock.advance(999);
    assert.equal(seen.second, undefined, 'started before the crawl-delay passed');
    await clock.advance(1);
    const second = seen.second as AcquireOutcome | undefined; // set by the callback meanwhile
    assert.ok(second?.granted, 'not started once the crawl-delay passed');
    assert.equal(second.slot.startedAtMs - first.startedAtMs, 1000);
    second.slot.release();
    // Once the delay has passed with nothing in flight, a slot is again granted at once.
    await clock.advance(1000);
    grantedSlot(pacer.acquire(A, 1000, { identity: 'bot' })).release();
    pacer.close();
  });

  it('never lets a newcomer overtake a waiting request, even when a slot is free', async () => {
    const clock = new FakeClock();
    const pacer = new Pacer({ maxConcurrency: 4, maxQueue: 100, maxWaitMs: 60_000 }, clock);
    grantedSlot(pacer.acquire(A, 100, { identity: 'slow' })).release();
    const delayed = pacer.acquire(A, 100, { identity: 'slow' });
    assert.ok(delayed instanceof Promise);
    // Nothing is in flight and this request has no delay, but one waits ahead of it.
    const undelayed = pacer.acquire(A, 0, { identity: 'fast' });
    assert.ok(undelayed instanceof Promise, 'a request behind a waiting one must wait');
    const seen: { u?: AcquireOutcome } = {};
    void undelayed.then((o) => (seen.u = o));
    await clock.advance(100);
    const d = await delayed;
    assert.ok(d.granted);
    assert.equal(seen.u, undefined, 'a delayed request runs alone: the undelayed one waits for its release');
    await clock.advance(20);
    d.slot.release();
    await clock.advance(0);
    const u = seen.u as AcquireOutcome | undefined; // set by the callback meanwhile
    assert.ok(u?.granted, 'not started at the release of the request ahead');
    assert.equal(u.slot.waitedMs, 120);
    u.slot.release();
    pacer.close();
  });

  it('answers refusals synchronously: an aborted signal, a closed pacer, a full queue', () => {
    const pacer = new Pacer({ maxConcurrency: 1, maxQueue: 0, maxWaitMs: 60_000 }, new FakeClock());
    const signal = new CancelSignal();
    signal.abort();
    const aborted = syncOutcome(pacer.acquire(A, 0, { identity: 'bot', signal }));
    assert.ok(!aborted.granted && aborted.refusal.reason === 'aborted');
    const held = grantedSlot(pacer.acquire(A, 0, { identity: 'bot' }));
    const full = syncOutcome(pacer.acquire(A, 0, { identity: 'bot' }));
    assert.ok(!full.granted && full.refusal.reason === 'queue-full');
    held.release();
    pacer.close();
    const closed = syncOutcome(pacer.acquire(A, 0, { identity: 'bot' }));
    assert.ok(!closed.granted && closed.refusal.reason === 'closed');
  });
});
