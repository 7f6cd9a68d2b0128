/**
 * `Pacer.acquireFor`: a waiting request is a record told its answer through a
 * {@link SlotTaker} method (issue 11: no promise, no closures per waiter). The
 * answers at once (grant, refusal) are returned and the taker is never called;
 * a waiting request's answer (grant, `aborted`, `closed`) comes once, from the
 * pacer's one delivery microtask, never from inside `acquireFor` or a release,
 * in the order decided. A client that leaves while queued, or after its grant
 * but before the delivery, holds no slot.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Pacer } from '../../src/pacing/pacer.js';
import { CancelSignal } from '../../src/pacing/cancel-signal.js';
import type { AcquireOutcome, Slot, SlotTaker } from '../../src/pacing/types.js';
import { FakeClock, flushMicrotasks } from './fake-clock.js';

const A = 'http://a.test';

/** A taker that records what it was told, and when (`log`, shared between takers). */
class RecordingTaker implements SlotTaker {
  readonly told: AcquireOutcome[] = [];
  constructor(
    readonly name: string,
    readonly log: string[] = [],
  ) {}

  takeSlot(outcome: AcquireOutcome): void {
    this.told.push(outcome);
    this.log.push(`${this.name}:${outcome.granted ? 'granted' : outcome.refusal.reason}`);
  }

  /** The one answer it was told; fails unless it was told exactly once. */
  get only(): AcquireOutcome {
    assert.equal(this.told.length, 1, `${this.name} told ${this.told.length} times`);
    return this.told[0] as AcquireOutcome;
  }

  get slot(): Slot {
    const outcome = this.only;
    assert.ok(outcome.granted, `${this.name} was refused`);
    return outcome.slot;
  }
}

function grantedAtOnce(outcome: AcquireOutcome | undefined): Slot {
  assert.ok(outcome !== undefined, 'expected an answer at once');
  assert.ok(outcome.granted, 'expected a grant at once');
  return outcome.slot;
}

function pacerOf(options: { maxConcurrency?: number; maxQueue?: number; maxQueuePerIdentity?: number } = {}, clock = new FakeClock()): Pacer {
  return new Pacer({ maxConcurrency: 1, maxQueue: 100, maxWaitMs: 60_000, ...options }, clock);
}

describe('Pacer.acquireFor (a waiting request is a record with a taker)', () => {
  it('grants a free slot at once and never calls the taker', async () => {
    const pacer = pacerOf();
    const taker = new RecordingTaker('t');
    const slot = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, taker));
    assert.equal(pacer.originStats(A)?.inFlight, 1);
    slot.release();
    await flushMicrotasks();
    assert.equal(taker.told.length, 0);
    pacer.close();
  });

  it('queues a request over maxConcurrency, and tells its taker the grant after the release returns, once', async () => {
    const pacer = pacerOf();
    const first = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('first')));
    const taker = new RecordingTaker('second');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, taker), undefined, 'the second request must wait');
    assert.equal(pacer.originStats(A)?.queued, 1);
    first.release({ status: 200 });
    assert.equal(taker.told.length, 0, 'told from inside the release');
    assert.equal(pacer.originStats(A)?.inFlight, 1, 'the slot is granted at the release');
    await Promise.resolve();
    const slot = taker.slot;
    assert.equal(slot.origin, A);
    assert.equal(slot.delayMs, 0);
    slot.release();
    await flushMicrotasks();
    assert.equal(taker.told.length, 1);
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0);
    pacer.close();
  });

  it('answers a request over a queue bound at once with its refusal and Retry-After; the taker is never called', async () => {
    const pacer = pacerOf({ maxQueue: 1 });
    const held = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held')));
    const queued = new RecordingTaker('queued');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, queued), undefined);
    const refusedTaker = new RecordingTaker('refused');
    const refused = pacer.acquireFor(A, 0, { identity: 'other' }, refusedTaker);
    assert.ok(refused !== undefined && !refused.granted);
    assert.equal(refused.refusal.reason, 'queue-full');
    assert.ok(refused.refusal.reason === 'queue-full' && refused.refusal.limit === 'max-queue' && refused.refusal.retryAfterSeconds >= 1);
    held.release();
    await flushMicrotasks();
    assert.equal(refusedTaker.told.length, 0);
    queued.slot.release();
    pacer.close();
  });

  it('refuses per identity (maxQueuePerIdentity) at once, and lets another identity wait', async () => {
    const pacer = pacerOf({ maxQueuePerIdentity: 1 });
    const held = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held')));
    const queued = new RecordingTaker('queued');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, queued), undefined);
    const refused = pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('refused'));
    assert.ok(refused !== undefined && !refused.granted && refused.refusal.reason === 'queue-full' && refused.refusal.limit === 'max-queue-per-identity');
    const other = new RecordingTaker('other');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'other' }, other), undefined);
    held.release();
    await flushMicrotasks();
    queued.slot.release();
    await flushMicrotasks();
    other.slot.release();
    pacer.close();
  });

  it('a request cancelled while queued leaves the queue, its taker is told aborted once, and the next one gets the slot', async () => {
    const pacer = pacerOf();
    const log: string[] = [];
    const held = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held', log)));
    const signal = new CancelSignal();
    const leaving = new RecordingTaker('leaving', log);
    const staying = new RecordingTaker('staying', log);
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot', signal }, leaving), undefined);
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, staying), undefined);
    signal.abort();
    assert.equal(pacer.originStats(A)?.queued, 1, 'the cancelled request is still queued');
    assert.equal(leaving.told.length, 0, 'told from inside the abort');
    await Promise.resolve();
    assert.equal(leaving.only.granted, false);
    held.release();
    await flushMicrotasks();
    staying.slot.release();
    await flushMicrotasks();
    assert.deepEqual(log, ['leaving:aborted', 'staying:granted']);
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0, 'a slot leaked');
    pacer.close();
  });

  it('a request cancelled after its grant but before the delivery: the pacer takes the slot back and tells it aborted', async () => {
    const pacer = pacerOf();
    const log: string[] = [];
    const held = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held', log)));
    const signal = new CancelSignal();
    const leaving = new RecordingTaker('leaving', log);
    const next = new RecordingTaker('next', log);
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot', signal }, leaving), undefined);
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, next), undefined);
    held.release();
    assert.equal(pacer.originStats(A)?.inFlight, 1, 'granted at the release');
    signal.abort(); // the client leaves in the same turn, before the answer reaches it
    await flushMicrotasks();
    assert.deepEqual(log, ['leaving:aborted', 'next:granted']);
    assert.equal(pacer.originStats(A)?.inFlight, 1, 'only the next request holds a slot');
    next.slot.release();
    await flushMicrotasks();
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0);
    pacer.close();
  });

  it('a request cancelled after its slot reached it keeps the slot until it releases it', async () => {
    const pacer = pacerOf();
    const held = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held')));
    const signal = new CancelSignal();
    const taker = new RecordingTaker('taker');
    const after = new RecordingTaker('after');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot', signal }, taker), undefined);
    held.release();
    await flushMicrotasks();
    const slot = taker.slot;
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, after), undefined);
    signal.abort();
    await flushMicrotasks();
    assert.equal(taker.told.length, 1, 'told again after the abort');
    assert.equal(after.told.length, 0, 'the abort freed a slot its holder still holds');
    assert.equal(pacer.originStats(A)?.inFlight, 1);
    slot.release();
    slot.release(); // a second release does nothing
    await flushMicrotasks();
    after.slot.release();
    await flushMicrotasks();
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0);
    pacer.close();
  });

  it('tells grants in release order: FIFO within an identity, round-robin between identities, several in one turn', async () => {
    const pacer = pacerOf({ maxConcurrency: 3 });
    const log: string[] = [];
    const held = [0, 1, 2].map((i) => grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'x' }, new RecordingTaker(`held${i}`, log))));
    const takers = [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
      ['a3', 'a'],
      ['b2', 'b'],
    ].map(([name, identity]) => {
      const taker = new RecordingTaker(name as string, log);
      assert.equal(pacer.acquireFor(A, 0, { identity: identity as string }, taker), undefined);
      return taker;
    });
    // Three releases in one turn: three grants, told together after the turn, in the order granted.
    for (const slot of held) slot.release();
    assert.deepEqual(log, []);
    await Promise.resolve();
    assert.deepEqual(log, ['a1:granted', 'b1:granted', 'a2:granted']);
    for (const taker of takers.slice(0, 3)) taker.slot.release();
    await flushMicrotasks();
    assert.deepEqual(log, ['a1:granted', 'b1:granted', 'a2:granted', 'b2:granted', 'a3:granted']);
    for (const taker of takers.slice(3)) taker.slot.release();
    pacer.close();
  });

  it('spaces a Crawl-delay origin for takers as for promises', async () => {
    const clock = new FakeClock();
    const pacer = pacerOf({ maxConcurrency: 4 }, clock);
    grantedAtOnce(pacer.acquireFor(A, 1000, { identity: 'bot' }, new RecordingTaker('first'))).release();
    const second = new RecordingTaker('second');
    assert.equal(pacer.acquireFor(A, 1000, { identity: 'bot' }, second), undefined);
    await clock.advance(999);
    assert.equal(second.told.length, 0, 'started before the crawl-delay passed');
    await clock.advance(1);
    assert.equal(second.slot.startedAtMs - clock.nowMs(), 0);
    assert.equal(second.slot.waitedMs, 1000);
    second.slot.release();
    pacer.close();
  });

  it('close tells every waiting taker closed; later calls answer closed at once', async () => {
    const pacer = pacerOf();
    const held = grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held')));
    const waiting = new RecordingTaker('waiting');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, waiting), undefined);
    pacer.close();
    await flushMicrotasks();
    const told = waiting.only;
    assert.ok(!told.granted && told.refusal.reason === 'closed');
    const late = pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('late'));
    assert.ok(late !== undefined && !late.granted && late.refusal.reason === 'closed');
    held.release();
  });

  it('throws RangeError at once for bad limits, and answers an aborted signal at once', () => {
    const pacer = pacerOf();
    assert.throws(() => pacer.acquireFor(A, -1, { identity: 'bot' }, new RecordingTaker('bad')), RangeError);
    assert.throws(() => pacer.acquireFor(A, 0, { identity: 'bot', maxConcurrency: 0 }, new RecordingTaker('bad')), RangeError);
    const signal = new CancelSignal();
    signal.abort();
    const aborted = pacer.acquireFor(A, 0, { identity: 'bot', signal }, new RecordingTaker('aborted'));
    assert.ok(aborted !== undefined && !aborted.granted && aborted.refusal.reason === 'aborted');
    pacer.close();
  });

  it('a taker that throws does not keep the answers after it from their takers', async () => {
    const pacer = pacerOf({ maxConcurrency: 2 });
    const held = [0, 1].map(() => grantedAtOnce(pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('held'))));
    const thrower: SlotTaker = {
      takeSlot(outcome) {
        if (outcome.granted) outcome.slot.release();
        throw new Error('taker bug');
      },
    };
    const after = new RecordingTaker('after');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, thrower), undefined);
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, after), undefined);
    const uncaught: unknown[] = [];
    const listeners = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', (error) => uncaught.push(error));
    try {
      for (const slot of held) slot.release();
      await flushMicrotasks();
    } finally {
      process.removeAllListeners('uncaughtException');
      for (const listener of listeners) process.on('uncaughtException', listener);
    }
    assert.equal(after.slot.origin, A);
    assert.deepEqual(uncaught.map((e) => (e as Error).message), ['taker bug']);
    after.slot.release();
    pacer.close();
  });
});

// Issue 11: a grant allocates nothing but its slot; the slot is its own `{ granted: true, slot }`.
describe('Pacer grants: the slot is its own grant', () => {
  it('answers a free slot and a queued grant with the slot itself, and the slot still releases once', async () => {
    const pacer = new Pacer({ maxConcurrency: 1, maxQueue: 100, maxWaitMs: 60_000 }, new FakeClock());
    const first = pacer.acquireFor(A, 0, { identity: 'bot' }, new RecordingTaker('first'));
    assert.ok(first?.granted === true, 'a free slot is granted at once');
    assert.equal(first.slot, first, 'the grant at once is the slot itself (no outcome object)');
    const taker = new RecordingTaker('second');
    assert.equal(pacer.acquireFor(A, 0, { identity: 'bot' }, taker), undefined, 'the second request waits');
    first.slot.release();
    await flushMicrotasks();
    const told = taker.only;
    assert.ok(told.granted);
    assert.equal(told.slot, told, 'the queued grant is the slot itself');
    assert.equal(pacer.originStats(A)?.inFlight, 1);
    told.slot.release();
    told.slot.release(); // a second release is a no-op
    assert.equal(pacer.originStats(A)?.inFlight ?? 0, 0);
    pacer.close();
  });
});
